"""Named random streams: every random draw in the lab comes from `generator(stream, seed, ...)`.

Why names: a draw that reuses another's seed is correlated with it (the batch order would repeat the route
order, a "fresh" re-draw would equal the model's own initial weights). Giving every use its own stream, derived
from the run's seed in one table, keeps them apart and makes each one easy to find.

The derivations of the existing streams are fixed, since every stored number and every test depends on them;
a new stream needs only a name: by default it is seeded from a hash of its name and the seed.
"""

from __future__ import annotations

import hashlib
from typing import Callable

import torch

# stream name -> seed of the generator, from the run's seed and the stream's salt (e.g. a depth or a draw index)
_DERIVED: dict[str, Callable[..., int]] = {
    "train.batches": lambda seed: seed * 7919 + 1,  # minibatch order of the training loop
    "train.routes": lambda seed: seed * 7919 + 2,  # per-step route of a training mode (shuffle, LayerDrop)
    "recover.batches": lambda seed: seed * 104_729 + 17,  # minibatches of fine-tuning / distillation
    "select.draw": lambda seed, j=0: seed * 1000 + j,  # random deletion / pruning subsets, draw j
    "orders.random": lambda seed, depth: 1_000_003 * depth + seed,  # random orders a model is tested on
    "orders.prune": lambda seed, depth: 7_000_003 * depth + seed,  # random subsets of the pruning curve
    "orders.features": lambda seed, depth: 9_000_011 * depth + seed,  # orders whose features feed the probe
    "init.redraw": lambda seed: seed + 1_000_003,  # a fresh draw of a model's weights, never its own t = 0
    "init.student": lambda seed: seed + 10_000,  # a randomly initialised student of the teacher's shape
    "iot.block-orders": lambda seed, n_blocks: 1_000_033 * n_blocks + seed,  # IOT's candidate block orders
    "iot.sublayer-orders": lambda seed, n_blocks: 2_000_029 * n_blocks + seed,  # IOT's candidate sub-layer orders
}

MAX_SEED = 2**31 - 1


def seed_of(stream: str, seed: int, *salt: int) -> int:
    """The integer seed of a named stream for a run's seed (and salt, such as a depth or a draw index)."""
    derive = _DERIVED.get(stream)
    if derive is not None:
        return int(derive(seed, *salt))
    text = ":".join([stream, str(seed), *map(str, salt)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "big") % MAX_SEED


def generator(stream: str, seed: int, *salt: int) -> torch.Generator:
    """A torch generator for one named stream of one run."""
    return torch.Generator().manual_seed(seed_of(stream, seed, *salt))
