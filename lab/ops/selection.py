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
random         k blocks drawn uniformly; evaluate() reports the mean over several draws
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from lab.core import streams
from lab.core.data import Dataset
from lab.core.models.base import RoutedModel, accuracy
from lab.core.routes import evenly_spaced, without
from lab.ops import prune, search

METHODS = ("greedy", "optimal", "evenly-spaced", "every-other", "influence", "first", "last", "random")
LABELS = {"greedy": "greedy", "optimal": "optimal (brute force)", "evenly-spaced": "evenly spaced",
          "every-other": "every other (LayerDrop rule)", "influence": "lowest block influence",
          "first": "first blocks", "last": "last blocks", "random": "random"}


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
