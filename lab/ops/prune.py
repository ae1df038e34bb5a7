"""Pruning a trained model to r of its N blocks at inference, with no fine-tuning: the LayerDrop strategies.

Every strategy returns the blocks to *drop* (original numbering, sorted); the pruned model is the full route
without them, so pruning is a route and never touches a weight. lab/ops/selection.py dispatches them by name.

every-other  Fan et al.'s rule: pruning at rate p drops the blocks at depth d with d = 0 (mod floor(1/p)).
             Depth counts from 1 as in the paper, so block i sits at depth i + 1: at p = 0.5 the rule keeps blocks
             0, 2, 4, ... (fairseq's own example keeps layers 0,2,4,...,14 of 16). For a target r whose rate the
             rule cannot hit exactly, the depths are cut into N - r equal windows and the last depth of each is
             dropped: the same rule when N/(N - r) is a whole number, and block 0 always stays.
greedy       trial deletion on the probe set (search.greedy).
influence    lowest block influence, ShortGPT (search.lowest_influence).
first, last  the first or the last N - r blocks, contiguously: the paper's worst case.
random       N - r blocks drawn uniformly; experiments report the mean over several draws.
"""

from __future__ import annotations

import math

STRATEGIES = ("every-other", "greedy", "influence", "first", "last", "random")  # lab/ops/selection.py runs them


def p_star(keep: int, n_blocks: int) -> float:
    """The paper's rule of thumb: train with p* = 1 - r/N to prune to r of N blocks (N(1 - p) run on average)."""
    _check_keep(keep, n_blocks)
    return 1.0 - keep / n_blocks


def every_other_by_rate(n_blocks: int, p: float) -> list[int]:
    """The blocks Fan et al.'s rule drops at pruning rate p: depth d = i + 1 with d = 0 (mod floor(1/p))."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"the pruning rate must be in (0, 1], got {p}")
    stride = math.floor(1.0 / p + 1e-9)  # 1e-9: 1/0.2 is 4.999... in floating point
    return [i for i in range(n_blocks) if (i + 1) % stride == 0]


def every_other(n_blocks: int, keep: int) -> list[int]:
    """Blocks to drop to keep `keep`: the rate rule when it drops exactly N - r blocks, else N - r depths spread evenly.

    The spread drops depths ceil(j N / k) for j = 1..k (k = N - r), the last depth of each of k equal windows of
    1..N: with N/k a whole number s these are s, 2s, ..., exactly the depths d = 0 (mod s) of the rate rule, and
    like the rule it never drops depth 1 (block 0) while any block is kept. (Rounding instead of ceil would drop
    block 0 at r = 2 of 8, and the ViT's first block turns out to be the one it cannot lose.)
    """
    _check_keep(keep, n_blocks)
    k = n_blocks - keep
    if k == 0:
        return []
    rule = every_other_by_rate(n_blocks, k / n_blocks)
    if len(rule) == k:
        return rule
    # j N / k steps by N/k >= 1, so the depths are distinct; integer arithmetic keeps ceil exact.
    return sorted(-(-j * n_blocks // k) - 1 for j in range(1, k + 1))


def contiguous(n_blocks: int, keep: int, where: str) -> list[int]:
    """Drop the first (where="first") or the last (where="last") N - r blocks."""
    _check_keep(keep, n_blocks)
    k = n_blocks - keep
    if where == "first":
        return list(range(k))
    if where == "last":
        return list(range(keep, n_blocks))
    raise ValueError(f"where must be 'first' or 'last', got {where!r}")


def kept(n_blocks: int, dropped: list[int]) -> list[int]:
    """The complement of `dropped`: the blocks that still run, in order."""
    gone = set(dropped)
    return [i for i in range(n_blocks) if i not in gone]


def _check_keep(keep: int, n_blocks: int) -> None:
    if not 0 <= keep <= n_blocks:
        raise ValueError(f"cannot keep {keep} blocks: the model has {n_blocks} (choose 0..{n_blocks})")
