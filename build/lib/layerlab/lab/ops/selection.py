"""Which blocks to remove: the table of selection methods, for deletion and pruning alike, in one place.

Every method answers "which k blocks to drop" in the model's original numbering, sorted; the cut model is the
full route without them, so a cut never touches a weight. Data-driven methods score on the *probe* split;
reported accuracies use the held-out test split. `METHODS` maps each name to its label and its function
`pick(model, k, x, y, seed)`; `to_drop` checks k and calls it. The rules that need no data are written here; the
searches that score cuts on the probe set are lab/ops/search.py's.

greedy         k rounds of trial deletion on the probe set (search.greedy)
optimal        the best k-subset on the probe set, by brute force (search.optimal)
evenly-spaced  k blocks spread evenly over the depth (routes.evenly_spaced)
every-other    Fan et al.'s LayerDrop rule: drop depths d = 0 (mod s) (every_other)
influence      the k blocks of lowest block influence, ShortGPT (search.lowest_influence)
first, last    the first or the last k blocks, contiguously: the LayerDrop paper's worst case (contiguous)
random         k blocks drawn uniformly (random_subset); `outcomes` averages every k-subset exactly when there are
               at most MAX_EXACT of them (C(7, k) <= 35 always is), else RANDOM_DRAWS draws
"""

from __future__ import annotations

import base64
import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
import torch

from lab import estimates
from lab.core import streams
from lab.core.data import Dataset
from lab.core.models.base import RoutedModel, accuracy, correct
from lab.core.routes import evenly_spaced, without
from lab.ops import search

MAX_EXACT = 35  # random selection is averaged over every k-subset up to this many (C(7, 3) = 35), else sampled
RANDOM_DRAWS = 8  # random subsets drawn when there are more than MAX_EXACT


# -- the rules that need no data -----------------------------------------------------------------------------------
def every_other_by_rate(n_blocks: int, p: float) -> list[int]:
    """The blocks Fan et al.'s rule drops at pruning rate p: depth d = i + 1 with d = 0 (mod floor(1/p)).

    Depth counts from 1 as in the paper, so block i sits at depth i + 1: at p = 0.5 the rule keeps blocks 0, 2, 4,
    ... (fairseq's own example keeps layers 0,2,4,...,14 of 16)."""
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


def random_subset(n_blocks: int, k: int, seed: int) -> list[int]:
    """k blocks drawn uniformly at random."""
    gen = torch.Generator().manual_seed(seed)
    return sorted(int(i) for i in torch.randperm(n_blocks, generator=gen)[:k])


def kept(n_blocks: int, dropped: list[int]) -> list[int]:
    """The complement of `dropped`: the blocks that still run, in order."""
    gone = set(dropped)
    return [i for i in range(n_blocks) if i not in gone]


def _check_keep(keep: int, n_blocks: int) -> None:
    if not 0 <= keep <= n_blocks:
        raise ValueError(f"cannot keep {keep} blocks: the model has {n_blocks} (choose 0..{n_blocks})")


# -- the table ------------------------------------------------------------------------------------------------------
Pick = Callable[[RoutedModel, int, torch.Tensor, torch.Tensor, int], list[int]]


@dataclass(frozen=True)
class Method:
    """A selection method: its name, its label on the pages, and `pick(model, k, x, y, seed)`, the k blocks it
    drops (sorted); (x, y) is the probe set of the data-driven methods, `seed` draws the random one."""

    name: str
    label: str
    pick: Pick


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("greedy", "greedy", lambda m, k, x, y, seed: sorted(search.greedy(m, k, x, y))),
    Method("optimal", "optimal (brute force)", lambda m, k, x, y, seed: search.optimal(m, k, x, y)),
    Method("evenly-spaced", "evenly spaced", lambda m, k, x, y, seed: list(evenly_spaced(m.n_blocks, k))),
    Method("every-other", "every other (LayerDrop rule)",
           lambda m, k, x, y, seed: every_other(m.n_blocks, m.n_blocks - k)),
    Method("influence", "lowest block influence", lambda m, k, x, y, seed: search.lowest_influence(m, k, x)),
    Method("first", "first blocks", lambda m, k, x, y, seed: contiguous(m.n_blocks, m.n_blocks - k, "first")),
    Method("last", "last blocks", lambda m, k, x, y, seed: contiguous(m.n_blocks, m.n_blocks - k, "last")),
    Method("random", "random", lambda m, k, x, y, seed: random_subset(m.n_blocks, k, seed)),
)}
LABELS = {name: m.label for name, m in METHODS.items()}


def to_drop(method: str, model: RoutedModel, k: int, x: torch.Tensor, y: torch.Tensor, seed: int = 0) -> list[int]:
    """The k blocks a named method drops (sorted); (x, y) is the probe set of the data-driven methods."""
    n = model.n_blocks
    if not 0 <= k <= n:
        raise ValueError(f"cannot remove {k} blocks: the model has {n} (choose 0..{n})")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return METHODS[method].pick(model, k, x, y, seed)


# -- held-out outcomes of a method's cut ------------------------------------------------------------------------------
def pack_counts(counts: Any, total: int) -> str:
    """Per-input counts 0..total (how many of `total` routes got the input right) as text: 'n/total:' then the
    base64 of one byte per input. The per-input share count / total is a random comparator's per-input score."""
    c = np.asarray(counts, dtype=np.int64).reshape(-1)
    if not 0 < total < 256 or c.min(initial=0) < 0 or c.max(initial=0) > total:
        raise ValueError(f"counts must lie in 0..{total} (and total in 1..255)")
    return f"{c.size}/{total}:" + base64.b64encode(c.astype(np.uint8).tobytes()).decode("ascii")


def unpack_counts(text: str) -> np.ndarray:
    """The per-input shares (count / total) `pack_counts` wrote, as float64."""
    head, b64 = text.split(":", 1)
    n, total = (int(v) for v in head.split("/"))
    c = np.frombuffer(base64.b64decode(b64, validate=True), dtype=np.uint8)
    if c.size != n:
        raise ValueError(f"packed counts hold {c.size} inputs, not {n}")
    return c.astype(np.float64) / total


def scores(text: str) -> np.ndarray:
    """Per-input scores of a stored outcome: right/wrong (`estimates.pack`) or shares (`pack_counts`)."""
    return unpack_counts(text) if "/" in text.split(":", 1)[0] else estimates.unpack(text).astype(np.float64)


def outcomes(model: RoutedModel, data: Dataset, method: str, k: int, seed: int,
             first: Optional[list[int]] = None) -> dict[str, Any]:
    """One method's cut with its per-input held-out outcomes (for paired comparisons). `random` is every k-subset
    when there are at most MAX_EXACT (exact: the per-input share of subsets that get it right, no draw error) and
    RANDOM_DRAWS draws otherwise (their accuracies under `draw_accs`, for their variance). `first`: a deterministic
    method's answer computed elsewhere (a greedy order's prefix)."""
    n = model.n_blocks
    if method == "random":
        exact = math.comb(n, k) <= MAX_EXACT
        subsets = [list(s) for s in itertools.combinations(range(n), k)] if exact else [
            to_drop(method, model, k, data.probe.x, data.probe.y, seed=streams.seed_of("select.draw", seed, j))
            for j in range(RANDOM_DRAWS)]
    else:
        exact, subsets = True, [first if first is not None else
                                to_drop(method, model, k, data.probe.x, data.probe.y, seed=seed)]
    right = [correct(model, data.test.x, data.test.y, without(n, s)).numpy() for s in subsets]
    test = [estimates.accuracy(r).value for r in right]
    probe = [accuracy(model, data.probe.x, data.probe.y, without(n, s)) for s in subsets]
    out = {"dropped": sorted(subsets[0]), "kept": kept(n, sorted(subsets[0])), "test_acc": sum(test) / len(test),
           "probe_acc": sum(probe) / len(probe), "test_min": min(test), "test_max": max(test), "draws": len(subsets),
           "exact": exact}
    if len(subsets) == 1:
        out["outcomes"] = estimates.pack(right[0])
    else:
        out["outcomes"] = pack_counts(np.sum(right, axis=0), len(subsets))
        if not exact:
            out["draw_accs"] = test
    return out
