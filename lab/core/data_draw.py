"""A training seed's own draw of the data: what a new experiment would redraw besides the weights and batch order.

A recipe claim pooled over training seeds says it generalises over trainings; with one training set shared by every
seed it would generalise over one data set only. So each training seed trains on its own *stratified bootstrap* of
the task's training split: within each class, as many inputs as the class has, drawn with replacement by the seed
(the named stream "data.draw"). The probe and test splits stay as the task built them, disjoint from every draw:
a pool over seeds pairs the seeds' per-input scores on the same held-out inputs (lab/estimates.py: over_design),
and a search that compares models of different seeds on the probe split (IOT's best order) scores them on inputs
none of them trained on.

Why a bootstrap and not a fresh sample: most tasks are finite sets (digits, the tables, a user's CSV); MNIST-1D's
package standardises over the whole generated set, so a regenerated training set would be scaled unlike the fixed
test set. A bootstrap is the one draw every task supports. Its price: about 63 % of a draw's inputs are distinct
(1 - 1/e), so a model sees fewer distinct inputs than the whole split, a little below the accuracy it would reach
on the split itself.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from lab.core import streams
from lab.core.data import Dataset, Split

STREAM = "data.draw"
WORDS = ("each training seed trains on its own stratified bootstrap of the training split (drawn with replacement, "
         "class counts kept); the probe and test splits are fixed and disjoint from every draw")

_cache: dict[tuple[int, int], tuple[Dataset, Dataset]] = {}
_lock = threading.Lock()
_CACHE_MAX = 32


def indices(y: torch.Tensor, seed: int) -> np.ndarray:
    """The training rows of seed `seed`'s draw: per class, as many rows as the class has, drawn with replacement,
    in the original order of classes (the batch order is the trainer's own draw)."""
    labels = y.numpy()
    rng = np.random.default_rng(streams.seed_of(STREAM, seed))
    out = np.empty(labels.size, dtype=np.int64)
    for c in np.unique(labels):
        where = np.flatnonzero(labels == c)
        out[where] = rng.choice(where, size=where.size, replace=True)
    return out


def drawn(data: Dataset, seed: int) -> Dataset:
    """`data` with the training split replaced by seed `seed`'s draw (probe and test as they are). Cached per
    process on the data set's identity (the loaders cache theirs): do not modify the tensors."""
    key = (id(data), int(seed))
    with _lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] is data:
        return hit[1]
    rows = torch.from_numpy(indices(data.train.y, seed))
    out = Dataset(name=data.name, train=Split(data.train.x[rows], data.train.y[rows]), probe=data.probe,
                  test=data.test, n_features=data.n_features, n_classes=data.n_classes)
    with _lock:
        if len(_cache) >= _CACHE_MAX:
            _cache.clear()
        _cache[key] = (data, out)  # holding `data` keeps its id from being reused by another set
    return out
