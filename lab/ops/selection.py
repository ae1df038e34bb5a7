"""Which blocks to remove: one dispatcher, one meaning per method name, for deletion and pruning alike.

Every method answers "which k blocks to drop" in the model's original numbering, sorted; the cut model is the
full route without them, so a cut never touches a weight. Data-driven methods score on the *probe* split;
reported accuracies use the held-out test split.

greedy         k rounds of trial deletion on the probe set (search.greedy)
optimal        the best k-subset on the probe set, by brute force (search.optimal)
evenly-spaced  k blocks spread evenly over the depth (routes.evenly_spaced)
every-other    Fan et al.'s LayerDrop rule: drop depths d = 0 (mod s) (prune.every_other)
influence      the k blocks of lowest block influence, ShortGPT (search.lowest_influence)
first, last    the first or the last k blocks, contiguously
random         k blocks drawn uniformly; evaluate() reports the mean over several draws; `outcomes` averages
               every k-subset exactly when there are at most MAX_EXACT of them (C(7, k) <= 35 always is)
"""

from __future__ import annotations

import base64
import itertools
import math
from typing import Any, Optional

import numpy as np
import torch

from lab import estimates
from lab.core import streams
from lab.core.data import Dataset
from lab.core.models.base import RoutedModel, accuracy, correct
from lab.core.routes import evenly_spaced, without
from lab.ops import prune, search

METHODS = ("greedy", "optimal", "evenly-spaced", "every-other", "influence", "first", "last", "random")
LABELS = {"greedy": "greedy", "optimal": "optimal (brute force)", "evenly-spaced": "evenly spaced",
          "every-other": "every other (LayerDrop rule)", "influence": "lowest block influence",
          "first": "first blocks", "last": "last blocks", "random": "random"}
MAX_EXACT = 35  # random selection is averaged over every k-subset up to this many (C(7, 3) = 35), else sampled
RANDOM_DRAWS = 8  # random subsets drawn when there are more than MAX_EXACT


def to_drop(method: str, model: RoutedModel, k: int, x: torch.Tensor, y: torch.Tensor, seed: int = 0) -> list[int]:
    """The k blocks a named method drops (sorted); (x, y) is the probe set of the data-driven methods."""
    n = model.n_blocks
    if not 0 <= k <= n:
        raise ValueError(f"cannot remove {k} blocks: the model has {n} (choose 0..{n})")
    if method == "greedy":
        return sorted(search.greedy(model, k, x, y))
    if method == "optimal":
        return search.optimal(model, k, x, y)
    if method == "evenly-spaced":
        return list(evenly_spaced(n, k))
    if method == "every-other":
        return prune.every_other(n, n - k)
    if method == "influence":
        return search.lowest_influence(model, k, x)
    if method in ("first", "last"):
        return prune.contiguous(n, n - k, method)
    if method == "random":
        return search.random_subset(n, k, seed)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


def evaluate(model: RoutedModel, data: Dataset, method: str, k: int, seed: int, draws: int = 1,
             first: Optional[list[int]] = None) -> dict[str, Any]:
    """Probe and held-out accuracy of one method's cut, averaged over `draws` random draws (stream select.draw).

    `first`, when given, is the method's answer for draw 0 computed elsewhere (a greedy order's prefix).
    """
    m, n = model, model.n_blocks
    picks, test, probe = [], [], []
    for j in range(draws):
        dropped = first if (first is not None and j == 0) else \
            to_drop(method, m, k, data.probe.x, data.probe.y, seed=streams.seed_of("select.draw", seed, j))
        route = without(n, dropped)
        picks.append(dropped)
        test.append(accuracy(m, data.test.x, data.test.y, route))
        probe.append(accuracy(m, data.probe.x, data.probe.y, route))
    return {"dropped": picks[0], "kept": prune.kept(n, picks[0]), "test_acc": sum(test) / draws,
            "probe_acc": sum(probe) / draws, "test_min": min(test), "test_max": max(test), "draws": draws}


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
    test = [float(r.mean()) for r in right]
    probe = [accuracy(model, data.probe.x, data.probe.y, without(n, s)) for s in subsets]
    out = {"dropped": sorted(subsets[0]), "kept": prune.kept(n, sorted(subsets[0])), "test_acc": sum(test) / len(test),
           "probe_acc": sum(probe) / len(probe), "test_min": min(test), "test_max": max(test), "draws": len(subsets),
           "exact": exact}
    if len(subsets) == 1:
        out["outcomes"] = estimates.pack(right[0])
    else:
        out["outcomes"] = pack_counts(np.sum(right, axis=0), len(subsets))
        if not exact:
            out["draw_accs"] = test
    return out
