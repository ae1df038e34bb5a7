"""Small shared fixtures for the science tests: a tiny task and quickly trained tiny models."""

from __future__ import annotations

from functools import lru_cache

import torch

from lab.core.data import Dataset, SyntheticConfig, synthetic
from lab.core.models import MLP, MLPConfig
from lab.core.train import TrainConfig, train

SMALL_TASK = SyntheticConfig(n_train=4000, n_probe=600, n_test=1000, seed=3)


def small_data() -> Dataset:
    return synthetic(SMALL_TASK)


@lru_cache(maxsize=8)
def small_mlp(arch: str, blocks: int = 4, width: int = 48, epochs: int = 4, seed: int = 0) -> MLP:
    """A small MLP trained on the small task (cached: treat it as read-only)."""
    torch.manual_seed(seed)
    m = MLP(MLPConfig(arch=arch, width=width, blocks=blocks))
    train(m, small_data().train, TrainConfig(epochs=epochs, seed=seed, checkpoints=()))
    return m
