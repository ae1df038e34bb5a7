"""MNIST-1D (Greydanus and Kobak, "Scaling down deep learning with MNIST-1D", ICML 2024), generated locally.

The `mnist1d` package's `make_dataset` builds the set from its ten 1-D digit templates (padding, shear,
translation, correlated and i.i.d. noise) with a seed; its download path and its pickles are never used, so
nothing touches the network or writes a file. Each input is a sequence of 40 values (float32, standardised by
the package over the whole set), labels 0..9 (int64). The package draws from numpy's and `random`'s *global*
generators (`set_seed` reseeds both): both states are saved and restored around the generation, and one lock
serialises it, so the lab's other draws are unaffected and two threads never interleave their draws.

Two sizes:
- `mnist1d`: the published set (the package's default arguments: 5,000 samples, train_split 0.8, seed 42):
  4,000 train / 1,000 test (here 3,500 train, 500 probe). The published baselines: logistic regression 32 %,
  MLP 68 %, CNN 94 %, GRU 91 %, human 96 %. With 1,000 test inputs an accuracy's binomial standard error is up
  to 1.6 pts.
- `mnist1d-large`: the same generator with 24,000 samples and train_split 0.5: 12,000 train / 12,000 test, so a
  held-out accuracy's binomial standard error is at most sqrt(0.25 / 12,000) = 0.46 pts (0.42 at 70 %).

As for the digits, the *probe* split (what searches such as greedy deletion score on) is a fixed stratified,
seeded 500 (1,000) of the package's training signals, held out from training: 3,500 (11,000) train. Searches never
look at the test split, and a choice made on the probe split is not a choice of the model that trained on it.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from lab.core.data import Dataset, Split

N_FEATURES = 40
N_CLASSES = 10
SPLIT_SEED = 0  # the probe draw is part of the task, not of a model seed


@dataclass(frozen=True)
class Mnist1dSize:
    """One size of MNIST-1D: the package's arguments that change, and the probe's size."""

    num_samples: int
    train_split: float
    n_probe: int
    seed: int = 42  # the package's default seed (the published set)


SIZES = {
    "mnist1d": Mnist1dSize(num_samples=5_000, train_split=0.8, n_probe=500),
    "mnist1d-large": Mnist1dSize(num_samples=24_000, train_split=0.5, n_probe=1_000),
}

_GENERATE = threading.Lock()  # the package draws from process-global generators: one generation at a time


def _make_dataset():
    """The package's `make_dataset` and `get_dataset_args`, imported with a display-free matplotlib backend."""
    # mnist1d imports matplotlib.pyplot at import time; on a server without a display choose Agg first (unless
    # the process already chose a backend, e.g. a notebook's inline one).
    if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
        import matplotlib

        matplotlib.use("Agg")
    from mnist1d.data import get_dataset_args, make_dataset

    return make_dataset, get_dataset_args


def generate(size: Mnist1dSize) -> dict[str, np.ndarray]:
    """The package's arrays (`x`, `y`, `x_test`, `y_test`) for `size`, leaving numpy's and random's global state
    as they were. Nothing is downloaded, read or written."""
    make_dataset, get_dataset_args = _make_dataset()
    args = get_dataset_args()
    args.num_samples, args.train_split, args.seed = size.num_samples, size.train_split, size.seed
    with _GENERATE:
        np_state, py_state = np.random.get_state(), random.getstate()
        try:
            raw = make_dataset(args)
        finally:
            np.random.set_state(np_state)
            random.setstate(py_state)
    return {k: raw[k] for k in ("x", "y", "x_test", "y_test")}


def mnist1d_task() -> Dataset:
    """The task `mnist1d` (lab/core/tasks.py): the published 4,000 / 1,000, as 3,500 train / 500 probe / 1,000 test."""
    return mnist1d("mnist1d")


def mnist1d_large_task() -> Dataset:
    """The task `mnist1d-large` (lab/core/tasks.py): 11,000 train / 1,000 probe / 12,000 test."""
    return mnist1d("mnist1d-large")


@lru_cache(maxsize=2)
def mnist1d(name: str = "mnist1d") -> Dataset:
    """MNIST-1D of size `name` ("mnist1d" or "mnist1d-large"; cached per process: do not modify the tensors)."""
    from sklearn.model_selection import train_test_split

    try:
        size = SIZES[name]
    except KeyError:
        raise ValueError(f"unknown MNIST-1D size {name!r}; known: {sorted(SIZES)}") from None
    raw = generate(size)
    x_tr, y_tr = raw["x"].astype(np.float32), raw["y"].astype(np.int64)
    x_te, y_te = raw["x_test"].astype(np.float32), raw["y_test"].astype(np.int64)
    x_tr, x_pr, y_tr, y_pr = train_test_split(x_tr, y_tr, test_size=size.n_probe, stratify=y_tr,
                                              random_state=SPLIT_SEED)
    t = lambda a, dt: torch.tensor(a, dtype=dt)  # noqa: E731
    return Dataset(
        name=name,
        train=Split(t(x_tr, torch.float32), t(y_tr, torch.int64)),
        probe=Split(t(x_pr, torch.float32), t(y_pr, torch.int64)),
        test=Split(t(x_te, torch.float32), t(y_te, torch.int64)),
        n_features=N_FEATURES,
        n_classes=N_CLASSES,
    )
