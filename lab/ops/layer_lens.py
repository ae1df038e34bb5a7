"""Reading every layer: the logit lens, a tuned lens, commitment depth, block influence and angular distances.

All of it works on any `RoutedModel` through `states(x, route)` (the hidden state after the stem and after every
slot) and the model's own `readout` (the ViT: final LayerNorm and linear head on the CLS token; the MLPs: the
linear head), so it needs no model-specific code except where a method reads what the head reads (`head_rows`).

- Logit lens (nostalgebraist 2020): the readout applied to the state after every slot. After the last slot it is
  the model itself, exactly (the same function on the same tensor).
- Tuned lens (Belrose et al. 2023): one affine map per slot, h -> h A + b, then the same readout. Belrose et al.
  train each map by gradient descent on the KL to the final prediction; here it is the closed-form least-squares map
  from the state the head reads at slot s onto the final one (a small ridge term), fitted on the training split.
  At the last slot that map is the identity, so the tuned lens there is the model too.
- Commitment depth of an input: the first slot from which the lens's arg-max stays the final answer.
- Block influence (Men et al. 2024, ShortGPT): 1 - cos(input, output) of the block at each slot, per input and
  per token, averaged.
- Angular distance (Gromov et al. 2024): arccos(cos(h_l, h_{l+n})) / pi between the state at slot l and n slots
  later, for every l and n; computed as 2 atan2(|u - v|, |u + v|) of the unit vectors, which is exactly 0 for a
  state and itself (arccos of a rounded 1 is not).
- Rank agreement: Spearman's rho with average ranks, its bootstrap error over the inputs, and an exact
  permutation p-value over the blocks.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from lab.core import metrics
from lab.core.models import RoutedModel
from lab.core.models.base import Route, evaluating

RIDGE = 1e-8  # relative to the mean diagonal of X^T X: keeps the normal equations solvable (a dead ReLU unit is a
# zero column), moves the map by ~nothing


@torch.no_grad()
def slot_states(model: RoutedModel, x: torch.Tensor, route: Optional[Route] = None,
                batch: int = 4096) -> list[torch.Tensor]:
    """The hidden state after the stem and after every slot of the route (len(route) + 1 tensors), in eval mode."""
    with evaluating(model):
        parts = [model.states(x[i:i + batch], route)[1] for i in range(0, len(x), batch)]
    return [torch.cat([p[s] for p in parts]) for s in range(len(parts[0]))]


@torch.no_grad()
def lens_logits(model: RoutedModel, states: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The logit lens: the model's own readout applied to every state."""
    return [model.readout(h) for h in states]


def head_rows(h: torch.Tensor) -> torch.Tensor:
    """The rows the readout reads: the CLS token (position 0) of a token state (B, T, W), the state itself for a
    vector state (B, W). Both of the lab's heads read exactly these."""
    return h[:, 0] if h.dim() == 3 else h


# -- per-slot statistics ----------------------------------------------------------------------------------------
def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the softmax, per input, in nats."""
    logp = F.log_softmax(logits.double(), dim=-1)
    return -(logp.exp() * logp).sum(-1)


def kl(final: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """KL(final || lens) per input, in nats: how far the lens's distribution is from the model's final one."""
    lp, lq = F.log_softmax(final.double(), dim=-1), F.log_softmax(logits.double(), dim=-1)
    return (lp.exp() * (lp - lq)).sum(-1)


def per_slot(logits: Sequence[torch.Tensor], y: torch.Tensor, final: Optional[torch.Tensor] = None) -> dict[str, Any]:
    """Held-out accuracy, mean entropy, mean KL to the final prediction (the last slot's logits unless given) and
    agreement with the final arg-max, per slot; plus the per-input KL (for noise estimates)."""
    final = logits[-1] if final is None else final
    top = final.argmax(1)
    kls = [kl(final, lg) for lg in logits]
    return {"acc": [float((lg.argmax(1) == y).double().mean()) for lg in logits],
            "entropy": [float(entropy(lg).mean()) for lg in logits],
            "kl": [float(k.mean()) for k in kls],
            "agree": [float((lg.argmax(1) == top).double().mean()) for lg in logits],
            "kl_each": kls}


def commitment(preds: torch.Tensor) -> torch.Tensor:
    """Commitment depth per input from a (slots, inputs) tensor of arg-max answers whose last row is the final
    answer: the first slot s such that the answer at every slot from s on equals the final one. Never after the
    last slot (the last row always agrees with itself)."""
    agree = preds == preds[-1]
    stays = agree.flip(0).long().cumprod(0).flip(0)  # 1 where every later slot agrees too
    return preds.shape[0] - stays.sum(0)


# -- the tuned lens -------------------------------------------------------------------------------------------
@torch.no_grad()
def fit_affine(x: torch.Tensor, y: torch.Tensor, ridge: float = RIDGE) -> tuple[torch.Tensor, torch.Tensor]:
    """Least-squares affine map x A + b ~ y (rows are inputs), with a small relative ridge on A (not on b)."""
    x, y = x.double(), y.double()
    xa = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1)
    gram = xa.T @ xa
    w = x.shape[1]
    lam = ridge * float(gram.diagonal()[:w].mean().clamp_min(1e-12))
    reg = torch.eye(w + 1, dtype=x.dtype) * lam
    reg[w, w] = 0.0
    sol = torch.linalg.solve(gram + reg, xa.T @ y)
    return sol[:w].float(), sol[w].float()


@torch.no_grad()
def fit_tuned_lens(states: Sequence[torch.Tensor]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One affine map per slot, from what the head reads at that slot onto what it reads after the last slot."""
    target = head_rows(states[-1])
    return [fit_affine(head_rows(h), target) for h in states]


@torch.no_grad()
def tuned_logits(model: RoutedModel, states: Sequence[torch.Tensor],
                 maps: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
    """The tuned lens: every state through its slot's map (per token), then the model's readout."""
    return [model.readout(h @ a + b) for h, (a, b) in zip(states, maps, strict=True)]


# -- geometry of the stream (the metrics themselves: lab/core/metrics.py) ---------------------------------------
def angular_triangle(states: Sequence[torch.Tensor]) -> list[list[Optional[torch.Tensor]]]:
    """Per-input angular distance between slot l and slot l + n: `out[n - 1][l]`, None where l + n is past the end."""
    k = len(states)
    return [[metrics.angular_distance(states[i], states[i + n]) if i + n < k else None for i in range(k - 1)]
            for n in range(1, k)]


def bootstrap_rho(score: np.ndarray, cost: np.ndarray, draws: int, gen: np.random.Generator) -> float:
    """Standard error of rho(mean score per item, mean cost per item) under resampling the inputs (rows)."""
    n = score.shape[0]
    vals = []
    for _ in range(draws):
        idx = gen.integers(0, n, n)
        r = metrics.spearman(score[idx].mean(0), cost[idx].mean(0))
        if not math.isnan(r):
            vals.append(r)
    return float(np.std(vals, ddof=1)) if len(vals) > 1 else float("nan")
