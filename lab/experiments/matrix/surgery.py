"""The surgery battery of Train x take apart: every operation on a frozen routed ViT, no retraining.

A model runs a *route* (its trained order: blocks 0..5, or a looped model's blocks 0..k-1 run L times). A *block*
is a distinct weight block; a *slot* one run of a block on the route. The route changes are the route algebra's
(`lab/core/routes.py`: skip, swap, random, slots removed), which works on looped routes as on plain ones. How each
operation reads on a looped model:
- delete block b: every run of b leaves the route; swap, random order, last quarter and the influence order act on
  the route's runs (slots);
- a sub-layer deleted, or a block replaced by its linear fit, at every run of that block (the fit is pooled over
  the block's runs);
- an early exit after a slot reads the head there.

Every accuracy comes with its per-input right/wrong outcomes, so two numbers on the same held-out inputs can be
compared paired (lab/estimates.py).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from lab.core import metrics, streams
from lab.core.models import RoutedModel
from lab.core.models.base import Step, evaluating, logits_of
from lab.ops import layer_lens as lens

Linear = tuple[torch.Tensor, torch.Tensor]  # (A, b): h -> h A + b, per token


@torch.no_grad()
def logits_on(model: RoutedModel, x: torch.Tensor, steps: Sequence[Any],
              linear: Optional[dict[int, Linear]] = None, batch: int = 4096) -> torch.Tensor:
    """Logits of the route of `steps` (ints or `Step`s) in evaluation mode; a block named in `linear` is replaced at
    every run by its affine map. Without `linear` and with plain ints this is `logits_of(model, x, route)`."""
    if not linear and all(isinstance(s, int) for s in steps):
        return logits_of(model, x, tuple(steps), batch)
    with evaluating(model):
        out = []
        for i in range(0, len(x), batch):
            h = model.embed(x[i:i + batch])
            for slot, st in enumerate(steps):
                b = st.block if isinstance(st, Step) else int(st)
                if linear and b in linear:
                    a, c = linear[b]
                    h = h @ a + c
                else:
                    h = model.run_steps(h, (st,), slot)
            out.append(model.readout(h))
        return torch.cat(out)


def outcomes(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, steps: Sequence[Any],
             linear: Optional[dict[int, Linear]] = None) -> torch.Tensor:
    """Per-input right/wrong (bool) of a route of steps."""
    return metrics.correct(logits_on(model, x, steps, linear), y)


def quarter(n_slots: int) -> int:
    """How many slots "the last quarter" deletes: n / 4 rounded half up, at least 1 (6 slots: 2)."""
    return max(1, int(n_slots / 4 + 0.5))


@torch.no_grad()
def influence(model: RoutedModel, x: torch.Tensor, route: Sequence[int]) -> list[float]:
    """ShortGPT's block influence 1 - cos(input, output) of the run at every slot, averaged over tokens and inputs."""
    states = lens.slot_states(model, x, tuple(route))
    return [float(metrics.block_influence(states[s], states[s + 1]).mean()) for s in range(len(route))]


def influence_slots(scores: Sequence[float], k: int) -> list[int]:
    """The k slots of lowest influence (ties: the later slot first, so a tie falls back to the reverse order)."""
    order = sorted(range(len(scores)), key=lambda s: (scores[s], -s))
    return sorted(order[:k])


def r2(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Share of the target's variance (about its per-feature mean) that `pred` explains: 1 - SSE / SST."""
    t = target.double()
    sse = float(((t - pred.double()) ** 2).sum())
    sst = float(((t - t.mean(0)) ** 2).sum())
    return 1.0 - sse / sst if sst > 0 else float("nan")


# Bootstrap draws of a block's R^2 over the training inputs: an se to about 5 % (over the MLP's 28,000 inputs, one
# thread: 0.15 s a block, where 1,000 draws took 0.71 s).
R2_DRAWS = 200


def r2_se(pred: torch.Tensor, target: torch.Tensor, groups: torch.Tensor, gen: torch.Generator,
          draws: int = R2_DRAWS) -> float:
    """The standard error of `r2(pred, target)` as an estimate of the map's R^2 on inputs like these: the inputs
    (`groups`: the input of each row, e.g. the digit a token belongs to; every run of a looped block pooled) resampled
    with replacement, `draws` times (a cluster bootstrap: tokens of one input are not independent). The fit and the
    target's mean are held fixed; the fit's own optimism, about (1 - R^2) x (width + 1) / rows, is far below it here
    (tests/test_matrix_nulls.py)."""
    t = target.double()
    k = int(groups.max()) + 1
    sse = torch.zeros(k, dtype=torch.float64).index_add_(0, groups, ((t - pred.double()) ** 2).sum(1))
    sst = torch.zeros(k, dtype=torch.float64).index_add_(0, groups, ((t - t.mean(0)) ** 2).sum(1))
    pick = torch.randint(0, k, (draws, k), generator=gen)
    boot = 1.0 - sse[pick].sum(1) / sst[pick].sum(1)
    return float(boot.std())


def train_states(model: RoutedModel, x_train: torch.Tensor, route: Sequence[int]) -> list[torch.Tensor]:
    """The states `fit_linear` fits on: after the stem and after every slot of the route, on the training inputs."""
    return lens.slot_states(model, x_train, tuple(route))


@torch.no_grad()
def fit_linear(model: RoutedModel, x_train: torch.Tensor, route: Sequence[int],
               block: int, seed: int = 0, states: Optional[list[torch.Tensor]] = None
               ) -> tuple[Linear, dict[str, float]]:
    """The least-squares affine map of `block` (every token, every run of the block on the route, pooled) fitted on
    the training inputs, with its linearity: R^2 of the block's output and of its update (output - input), and
    both R^2's standard errors over the training inputs (`r2_se`; `seed` seeds its bootstrap). `states`:
    `train_states(model, x_train, route)` when the caller fits several blocks (one pass for all of them)."""
    if states is None:
        states = train_states(model, x_train, route)
    slots = [s for s, b in enumerate(route) if b == block]
    n, w = states[0].shape[0], states[0].shape[-1]
    tokens = states[0][0].numel() // w  # rows per input and run
    xin = torch.cat([states[s].reshape(-1, w) for s in slots])
    xout = torch.cat([states[s + 1].reshape(-1, w) for s in slots])
    inputs = torch.arange(len(xin)) // tokens % n  # the input of every row (the runs are stacked)
    return affine_fit(xin, xout, inputs, streams.generator("matrix.r2-bootstrap", seed, block))


def affine_fit(xin: torch.Tensor, xout: torch.Tensor, inputs: torch.Tensor,
               gen: torch.Generator) -> tuple[Linear, dict[str, float]]:
    """The least-squares affine map from the rows `xin` to the rows `xout`, with R^2 of the output and of the update
    (output - input), and each R^2's standard error over the inputs (`inputs`: the input of every row). The update's
    R^2 is the one the residual path does not inflate: a block whose output is its input plus a small nonlinear
    update has an output R^2 near 1 whatever the update does (the matrix's `linear` claim judges the update)."""
    a, c = lens.fit_affine(xin, xout)
    pred = (xin.double() @ a.double() + c.double())
    upd_pred, upd = pred - xin.double(), xout.double() - xin.double()
    out = {"r2": r2(pred, xout), "r2_update": r2(upd_pred, upd), "r2_se": r2_se(pred, xout, inputs, gen)}
    out["r2_update_se"] = r2_se(upd_pred, upd, inputs, gen)  # drawn after the output's: its draws stay as they were
    return (a, c), out


@torch.no_grad()
def exits(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, route: Sequence[int]) -> list[torch.Tensor]:
    """Per-input right/wrong of the head read after the stem and after every slot (the last is the model)."""
    states = lens.slot_states(model, x, tuple(route))
    return [metrics.correct(lg, y) for lg in lens.lens_logits(model, states)]


