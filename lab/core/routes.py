"""Routes: which blocks run, in which order. Helpers to build and sample them."""

from __future__ import annotations

from typing import Sequence

import torch

from lab.core.models.base import Route


def without(n_blocks: int, dropped: Sequence[int]) -> tuple[int, ...]:
    """The full route minus the dropped blocks; indices always refer to the original numbering."""
    gone = set(int(i) for i in dropped)
    bad = [i for i in gone if not 0 <= i < n_blocks]
    if bad:
        raise ValueError(f"cannot drop blocks {sorted(bad)}: the model has blocks 0..{n_blocks - 1}")
    return tuple(i for i in range(n_blocks) if i not in gone)


def evenly_spaced(n_blocks: int, k: int) -> tuple[int, ...]:
    """k of n block indices spread evenly (every other block when k is about n/2), sorted."""
    if not 0 <= k <= n_blocks:
        raise ValueError(f"cannot pick {k} of {n_blocks} blocks")
    return tuple(sorted({min(n_blocks - 1, round((j + 0.5) * n_blocks / k - 0.5)) for j in range(k)}))


def random_permutation(n_blocks: int, gen: torch.Generator) -> tuple[int, ...]:
    """A uniformly random order of all blocks."""
    return tuple(int(i) for i in torch.randperm(n_blocks, generator=gen))


def layerdrop_route(n_blocks: int, p: float, gen: torch.Generator) -> tuple[int, ...]:
    """Each block skipped independently with probability p (one draw per block for the whole batch)."""
    keep = torch.rand(n_blocks, generator=gen) >= p
    return tuple(int(i) for i in torch.nonzero(keep).flatten())


def sample_route(mode: str, n_blocks: int, gen: torch.Generator, p: float = 0.0) -> Route:
    """The route of one training step under a training mode."""
    if mode == "sequential":
        return tuple(range(n_blocks))
    if mode == "shuffle":
        return random_permutation(n_blocks, gen)
    if mode == "layerdrop":
        return layerdrop_route(n_blocks, p, gen)
    raise ValueError(f"unknown training mode {mode!r}")
