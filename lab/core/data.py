"""Data sets of the lab, generated locally and seeded (no downloads).

`synthetic`: the 12-feature, 20-class task the MLP experiments use: every class is a mixture of a few
Gaussian clusters whose noise overlaps the neighbours, so a small MLP learns it well but not perfectly, and
depth beyond two hidden layers is spare: exactly the situation in which deleting layers is interesting.
Splits: train (what models fit), probe (what searches such as greedy deletion score on) and test
(held out: every accuracy the lab reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch


@dataclass(frozen=True)
class Split:
    """Inputs and integer labels of one split."""

    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return int(self.y.shape[0])


@dataclass(frozen=True)
class Dataset:
    """Train / probe / test splits of one task, with its shape."""

    name: str
    train: Split
    probe: Split
    test: Split
    n_features: int
    n_classes: int

    @property
    def chance(self) -> float:
        """Accuracy of always guessing the most frequent test class."""
        counts = torch.bincount(self.test.y, minlength=self.n_classes)
        return float(counts.max()) / len(self.test)


@dataclass(frozen=True)
class SyntheticConfig:
    """The synthetic classification task (defaults: the classroom task of the Delete page)."""

    n_features: int = 12
    n_classes: int = 20
    n_train: int = 28_000
    n_probe: int = 2_000
    n_test: int = 4_000
    modes: int = 3  # Gaussian clusters per class: several make the classes non-convex
    spread: float = 1.5  # distance scale of the cluster centres: larger = easier
    seed: int = 0  # the task's seed; the same task serves every model seed


def _sample(rng: np.random.Generator, centres: np.ndarray, n: int, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, n_classes, n)
    mode = rng.integers(0, centres.shape[1], n)
    x = centres[y, mode] + rng.normal(0, 1, (n, centres.shape[2]))
    return x, y


def synthetic_task() -> Dataset:
    """The task `synthetic` (lab/core/tasks.py): the default synthetic set."""
    return synthetic(SyntheticConfig())


@lru_cache(maxsize=4)
def synthetic(cfg: SyntheticConfig = SyntheticConfig()) -> Dataset:
    """Generate the synthetic task (cached per process; the tensors must not be modified)."""
    n = cfg.n_train + cfg.n_probe + cfg.n_test
    rng = np.random.default_rng(cfg.seed)
    centres = rng.normal(0, cfg.spread, (cfg.n_classes, cfg.modes, cfg.n_features))
    # Unit-variance noise around the centres overlaps neighbouring classes: that caps the best accuracy.
    x, y = _sample(rng, centres, n, cfg.n_classes)
    xt = torch.tensor(x, dtype=torch.float32)
    yt = torch.tensor(y, dtype=torch.int64)
    a, b = cfg.n_train, cfg.n_train + cfg.n_probe
    return Dataset(
        name="synthetic",
        train=Split(xt[:a], yt[:a]),
        probe=Split(xt[a:b], yt[a:b]),
        test=Split(xt[b:], yt[b:]),
        n_features=cfg.n_features,
        n_classes=cfg.n_classes,
    )
