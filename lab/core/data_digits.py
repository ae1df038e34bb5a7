"""scikit-learn's 8x8 handwritten digits (1,797 images, shipped with scikit-learn: no download).

Three fixed, disjoint stratified splits: 1,100 train / 300 probe / 397 test. The images are stored flat (64
features, pixel values scaled to [0, 1]) so an MLP reads them as they are and the ViT reshapes them to 8x8 itself.
The *probe* split (what searches such as greedy deletion and a choice of the best model score on) is held out from
training, so a choice made on it is not a choice of the model that memorised it, and searches never look at the
test split, which stays the only source of reported accuracies.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from lab.core.data import Dataset, Split

N_TEST = 397
N_PROBE = 300
SPLIT_SEED = 0  # the split is part of the task, not of a model seed: every model sees the same split


@lru_cache(maxsize=1)
def digits() -> Dataset:
    """The digits task (cached per process; the tensors must not be modified)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    raw = load_digits()
    x = (raw.data / 16.0).astype(np.float32)  # pixel counts are 0..16
    y = raw.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=N_TEST, stratify=y, random_state=SPLIT_SEED)
    x_tr, x_pr, y_tr, y_pr = train_test_split(x_tr, y_tr, test_size=N_PROBE, stratify=y_tr,
                                              random_state=SPLIT_SEED)
    t = lambda a, dt: torch.tensor(a, dtype=dt)  # noqa: E731
    return Dataset(
        name="digits",
        train=Split(t(x_tr, torch.float32), t(y_tr, torch.int64)),
        probe=Split(t(x_pr, torch.float32), t(y_pr, torch.int64)),
        test=Split(t(x_te, torch.float32), t(y_te, torch.int64)),
        n_features=64,
        n_classes=10,
    )
