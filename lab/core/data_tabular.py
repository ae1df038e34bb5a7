"""Tables of numbers as tasks: scikit-learn's bundled tabular sets, and the splits every table gets.

`wine` (178 wines x 13 chemical measurements, 3 cultivars) and `breast-cancer` (569 tumours x 30 features of a
cell-nucleus image, malignant or benign) ship with scikit-learn (no download): ready-made examples of "your own
data" (lab/core/data_csv.py makes an uploaded CSV a task the same way).

`tabular_dataset` is the one recipe of a table: three disjoint stratified, seeded splits (test 25 %, probe 15 %,
train the remaining 60 %, rounded), then every feature standardised with the *training* split's mean and standard
deviation only (a constant training column is divided by 1), float32 inputs and int64 labels 0..k-1.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from lab.core.data import Dataset, Split

TEST_FRACTION = 0.25
PROBE_FRACTION = 0.15
SPLIT_SEED = 0  # the split is part of the task, not of a model seed


def split_sizes(n: int) -> tuple[int, int, int]:
    """(train, probe, test) sizes of a table of `n` rows."""
    n_test = int(round(n * TEST_FRACTION))
    n_probe = int(round(n * PROBE_FRACTION))
    return n - n_test - n_probe, n_probe, n_test


def tabular_dataset(name: str, x: np.ndarray, y: np.ndarray, n_classes: int, seed: int = SPLIT_SEED) -> Dataset:
    """Stratified, seeded train / probe / test splits of (x, y), standardised with the training split's statistics.

    `y` holds labels 0..n_classes-1, every class at least twice in each split's share (a class of 10 rows is
    enough: lab/core/data_csv.py's bound)."""
    from sklearn.model_selection import train_test_split

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n_train, n_probe, n_test = split_sizes(len(y))
    x_rest, x_te, y_rest, y_te = train_test_split(x, y, test_size=n_test, stratify=y, random_state=seed)
    x_tr, x_pr, y_tr, y_pr = train_test_split(x_rest, y_rest, test_size=n_probe, stratify=y_rest, random_state=seed)
    mean = x_tr.mean(axis=0)
    std = x_tr.std(axis=0)
    std[std == 0] = 1.0  # a constant training column: centred, not scaled
    f = lambda a: torch.tensor((a - mean) / std, dtype=torch.float32)  # noqa: E731
    i = lambda a: torch.tensor(a, dtype=torch.int64)  # noqa: E731
    return Dataset(
        name=name,
        train=Split(f(x_tr), i(y_tr)),
        probe=Split(f(x_pr), i(y_pr)),
        test=Split(f(x_te), i(y_te)),
        n_features=int(x.shape[1]),
        n_classes=int(n_classes),
    )


LOADERS = {"wine": "load_wine", "breast-cancer": "load_breast_cancer"}


def wine_task() -> Dataset:
    """The task `wine` (lab/core/tasks.py)."""
    return sklearn_table("wine")


def breast_cancer_task() -> Dataset:
    """The task `breast-cancer` (lab/core/tasks.py)."""
    return sklearn_table("breast-cancer")


@lru_cache(maxsize=2)
def sklearn_table(name: str) -> Dataset:
    """scikit-learn's bundled table `name` ("wine" or "breast-cancer") as a task (cached per process)."""
    import sklearn.datasets

    try:
        loader = getattr(sklearn.datasets, LOADERS[name])
    except KeyError:
        raise ValueError(f"unknown bundled table {name!r}; known: {sorted(LOADERS)}") from None
    raw = loader()
    return tabular_dataset(name, raw.data, raw.target, len(raw.target_names))
