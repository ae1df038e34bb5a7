"""The searches among selection methods (lab/ops/selection.py): greedy, exhaustive optimum, block influence.

Each scores cuts on a *probe* split and returns block indices in the model's original numbering, whatever the
model; reported accuracies use the held-out test split.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import torch
import torch.nn.functional as F

from lab.core import metrics
from lab.core.models.base import RoutedModel, accuracy, evaluating, logits_of
from lab.core.routes import without

MAX_SUBSETS = 20_000  # the exhaustive search refuses beyond this many subsets (C(n, k))


def route_accuracy(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, dropped: Sequence[int]) -> float:
    """Accuracy with the given blocks removed from the full route."""
    return accuracy(model, x, y, without(model.n_blocks, dropped))


def route_score(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, dropped: Sequence[int]) -> tuple[float, float]:
    """(accuracy, -cross-entropy) with the given blocks removed: larger is better, compared as a tuple, so that
    equal accuracies (frequent on a small probe set near 100 %) are told apart by the loss, not by block index."""
    logits = logits_of(model, x, without(model.n_blocks, dropped))
    return metrics.accuracy(logits, y), -float(F.cross_entropy(logits.double(), y))


def greedy(model: RoutedModel, k: int, x: torch.Tensor, y: torch.Tensor) -> list[int]:
    """k rounds; each deletes the remaining block whose removal (on top of earlier ones) hurts least on (x, y):
    highest probe accuracy, ties broken by the lower probe loss (then the lower index, only for exact ties).

    Returned in the order picked, so the first j entries are greedy's answer for j deletions.
    """
    _check_k(model, k)
    dropped: list[int] = []
    for _ in range(k):
        best, best_score = -1, (-1.0, -math.inf)
        for c in range(model.n_blocks):
            if c in dropped:
                continue
            score = route_score(model, x, y, dropped + [c])
            if score > best_score:
                best, best_score = c, score
        dropped.append(best)
    return dropped


def optimal(model: RoutedModel, k: int, x: torch.Tensor, y: torch.Tensor) -> list[int]:
    """The k-subset whose removal keeps the highest accuracy on (x, y) (ties: lower loss), by trying every subset."""
    _check_k(model, k)
    n_sub = math.comb(model.n_blocks, k)
    if n_sub > MAX_SUBSETS:
        raise ValueError(f"the exhaustive search would try {n_sub} subsets; use k closer to 0 or {model.n_blocks}")
    best, best_score = [], (-1.0, -math.inf)
    for sub in itertools.combinations(range(model.n_blocks), k):
        score = route_score(model, x, y, sub)
        if score > best_score:  # ties in accuracy broken by the probe loss, as greedy's
            best, best_score = list(sub), score
    return best


@torch.no_grad()
def block_influence(model: RoutedModel, x: torch.Tensor) -> list[float]:
    """ShortGPT's block influence per block on the full route (lab/core/metrics.block_influence: 1 - cos(input,
    output) per token, averaged over tokens and inputs). A block that barely turns its input is cheap to delete."""
    with evaluating(model):
        _, states = model.states(x)
    return [float(metrics.block_influence(states[i], states[i + 1]).mean()) for i in range(model.n_blocks)]


def lowest_influence(model: RoutedModel, k: int, x: torch.Tensor) -> list[int]:
    """The k blocks of lowest block influence."""
    _check_k(model, k)
    bi = block_influence(model, x)
    return sorted(sorted(range(model.n_blocks), key=lambda i: (bi[i], i))[:k])


def _check_k(model: RoutedModel, k: int) -> None:
    if not 0 <= k <= model.n_blocks:
        raise ValueError(f"cannot delete {k} blocks: the model has {model.n_blocks} (choose 0..{model.n_blocks})")
