"""Instance-wise layer reordering (IOT, Zhu et al. 2021): one set of shared weights, M candidate orders, and a
light predictor that picks, per input, the order to run.

The observation behind it: models that differ only in layer order score about the same on average, yet single
inputs prefer different orders (`observe` measures this: accuracy per order, the share of inputs for which each
order is the best, and the oracle that may pick the best order per input).

Orders are data. A candidate *order* is a route of steps (`models.base.Step`): a tuple of `Step(block, variant)`.
  - block orders (`space="blocks"`): the steps are a permutation of the blocks, all in their standard variant;
    candidate 0 is the trained (identity) order, the other M - 1 are distinct permutations fixed by the seed.
  - shared sub-layer orders (`space="shared"`, the paper's space, ViT only): ONE permutation of the sub-layers,
    shared by every block (Zhu et al. reorder a decoder's three sub-layers: 3! = 6 orders). A ViT block has two
    sub-layers (attention, MLP), so this space holds exactly 2 orders: attention first in every block (candidate
    0, the trained order) or MLP first in every block. It is degenerate here (M = 2 only), and kept as such.
  - per-block sub-layer orders (`space="sublayers"`, the lab's extension, ViT only): the blocks run in their
    trained order and each block independently runs attention first ("") or MLP first ("mlp_first"). With D
    blocks there are 2^D such orders; candidate 0 is the standard one (all ""), the others are drawn. This is
    NOT the paper's space (the paper shares one sub-layer order across all blocks).
Both are plain tuples of frozen dataclasses, so they hash, compare and serialise (`order_label`) like routes do.

Training (`train_iot`), per batch: the stem runs once and every candidate order runs from its output (shared
stem computation). The predictor, a linear layer on the pooled stem output (mean over tokens for the ViT, the
stem output itself for the MLP), gives M logits; the loss is
    sum_m w_m(x) * CE_m(x)  +  explore * KL(uniform || mean_batch p)  +  exploit * mean_x H(p(x))
with w = Gumbel-softmax(log p, tau) (soft; plain softmax(log p / tau) with Gumbel off). Gradients: the shared
weights get each order's loss weighted by w; the predictor learns only through w (which orders have lower loss
for this input) and the two auxiliary terms. Its input is detached, so routing never reshapes the stem the
orders share. The predictor starts at zero (uniform choice), and with M = 1 both auxiliary terms are exactly 0
and w is exactly 1: IOT training is then the ordinary training loop (`lab.core.train.train`) on that order, step for
step. Inference runs every input only in its argmax order.

The comparison with the baselines (`compare`) and the stored pieces are in `lab/experiments/iot/experiment.py`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from lab.core import metrics, streams
from lab.core.data import Dataset, Split
from lab.core.models.base import RoutedModel, Step, evaluating
from lab.core.models.vit import MLP_FIRST
from lab.core.routes import random_order
from lab.core.train import TrainConfig, lr_factor, make_optimizer
from lab.core.zoo import ModelSpec, build
from lab.runtime.progress import Progress, silent

Order = tuple[Step, ...]
SPACES = ("blocks", "shared", "sublayers")
SHARED_ORDERS = 2  # the ViT block's two sub-layers in either order, the same in every block


TAU = 1.0  # temperature of the (Gumbel-)softmax weights of the order losses
PREDICTOR_LR = 1.0  # the predictor's learning rate as a multiple of the recipe's


# -- candidate orders ----------------------------------------------------------------------------------------
def identity_order(n_blocks: int) -> Order:
    return tuple(Step(b) for b in range(n_blocks))


def block_orders(n_blocks: int, m: int, seed: int) -> list[Order]:
    """The identity and m - 1 other distinct permutations of the blocks, fixed by the seed."""
    if m > math.factorial(n_blocks):
        raise ValueError(f"{n_blocks} blocks have only {math.factorial(n_blocks)} orders; asked for {m}")
    gen = streams.generator("iot.block-orders", seed, n_blocks)
    out = [tuple(range(n_blocks))]
    while len(out) < m:
        p = random_order(n_blocks, "include", gen)
        if p not in out:
            out.append(p)
    return [tuple(Step(b) for b in p) for p in out]


def sublayer_orders(n_blocks: int, m: int, seed: int) -> list[Order]:
    """The standard order and m - 1 other distinct per-block sub-layer orders (blocks in trained order)."""
    if m > 2**n_blocks:
        raise ValueError(f"{n_blocks} blocks have only {2**n_blocks} sub-layer orders; asked for {m}")
    gen = streams.generator("iot.sublayer-orders", seed, n_blocks)
    masks = [0]
    while len(masks) < m:
        k = int(torch.randint(1, 2**n_blocks, (1,), generator=gen))
        if k not in masks:
            masks.append(k)
    return [tuple(Step(b, MLP_FIRST if k >> b & 1 else "") for b in range(n_blocks)) for k in masks]


def shared_sublayer_orders(n_blocks: int, m: int, seed: int = 0) -> list[Order]:
    """The paper's space for a two-sub-layer block: every block attention first, then every block MLP first (the
    seed draws nothing: there are only these two)."""
    if m > SHARED_ORDERS:
        raise ValueError(f"one sub-layer order shared by every block: a ViT block has 2 sub-layers, so only "
                         f"{SHARED_ORDERS} orders exist (attention first or MLP first); asked for {m}")
    return [tuple(Step(b, variant) for b in range(n_blocks)) for variant in ("", MLP_FIRST)[:m]]


def candidate_orders(space: str, m: int, seed: int, n_blocks: int) -> list[Order]:
    """The M candidates of an order space, fixed by the seed: index 0 is always the ordinary (trained) order."""
    if space not in SPACES:
        raise ValueError(f"unknown order space {space!r}; choose one of {', '.join(SPACES)}")
    fn = {"blocks": block_orders, "shared": shared_sublayer_orders, "sublayers": sublayer_orders}[space]
    return fn(n_blocks, m, seed)


def order_label(order: Order, space: str = "blocks") -> str:
    """A short readable name: '0 1 2 3' for block orders, 'A M A A' (attention or MLP first) for sub-layer orders."""
    if space in ("sublayers", "shared") or any(s.variant for s in order):
        return " ".join("M" if s.variant == MLP_FIRST else "A" for s in order)
    return " ".join(str(s.block) for s in order)


# -- the predictor -------------------------------------------------------------------------------------------
def pooled(h: torch.Tensor) -> torch.Tensor:
    """The stem output as one vector per input: the mean over normalised tokens for a token model, else itself.

    Why normalise first: the ViT's stem is linear, so the plain token mean is the projection of the mean patch
    plus a constant, 4 numbers per image; a linear predictor on it learned nothing (choice entropy stayed at
    log M for 20 epochs, measured). A parameter-free LayerNorm per token keeps the pooled vector input-specific.
    """
    return F.layer_norm(h, h.shape[-1:]).mean(dim=1) if h.dim() == 3 else h


class Predictor(nn.Module):
    """A linear layer on the pooled stem output -> M order logits; zero-initialised, so it starts uniform."""

    def __init__(self, width: int, m: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, m)
        nn.init.zeros_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.fc(pooled(h))


def stem_width(model: RoutedModel, x: torch.Tensor) -> int:
    with torch.no_grad():
        return int(pooled(model.embed(x[:1])).shape[-1])


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


# -- running orders ------------------------------------------------------------------------------------------
def run_order(model: RoutedModel, h0: torch.Tensor, order: Order) -> torch.Tensor:
    """Logits of one order from a stem output (the stem is shared by all orders)."""
    return model.readout(model.run_steps(h0, order))


@torch.no_grad()
def order_logits(model: RoutedModel, x: torch.Tensor, orders: Sequence[Order], batch: int = 2048) -> torch.Tensor:
    """Logits of every order on every input, (M, N, C), in evaluation mode."""
    with evaluating(model):
        parts = []
        for i in range(0, len(x), batch):
            h0 = model.embed(x[i : i + batch])
            parts.append(torch.stack([run_order(model, h0, o) for o in orders]))
        return torch.cat(parts, dim=1)


@torch.no_grad()
def iot_predict(
    model: RoutedModel, predictor: Predictor, x: torch.Tensor, orders: Sequence[Order], batch: int = 2048
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """IOT inference: logits with every input run only in its argmax order; also the choices and probabilities."""
    with evaluating(model):
        logits, choice, probs = [], [], []
        for i in range(0, len(x), batch):
            h0 = model.embed(x[i : i + batch])
            p = torch.softmax(predictor(h0), dim=1)
            c = p.argmax(1)
            out: Optional[torch.Tensor] = None
            for j, o in enumerate(orders):
                sel = torch.nonzero(c == j).flatten()
                if len(sel) == 0:
                    continue
                lj = run_order(model, h0[sel], o)
                if out is None:
                    out = lj.new_empty(len(h0), lj.shape[1])
                out[sel] = lj
            assert out is not None
            logits.append(out)
            choice.append(c)
            probs.append(p)
        return torch.cat(logits), torch.cat(choice), torch.cat(probs)


def observe(logits: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
    """Part 1, the observation, from per-order logits (M, N, C): who is right in which order.

    `best_share[m]`: share of inputs whose lowest loss is order m's; `oracle_acc`: an input counts as right when
    any order gets it right; `best_single_acc`: the best order's accuracy on the same inputs (never above it).
    """
    m = logits.shape[0]
    loss = torch.stack([F.cross_entropy(logits[j], y, reduction="none") for j in range(m)])  # (M, N)
    right = metrics.correct(logits, y)  # (M, N)
    best = loss.argmin(0)
    acc = right.float().mean(1)
    return {
        "order_acc": [float(a) for a in acc],
        "order_loss": [float(v) for v in loss.mean(1)],
        "best_share": [float((best == j).float().mean()) for j in range(m)],
        "oracle_acc": float(right.any(0).float().mean()),
        "best_single_acc": float(acc.max()),
        "oracle_order": best,  # per input (a tensor, for agreement); callers drop it from plain results
    }


# -- training ------------------------------------------------------------------------------------------------
@dataclass
class IOTLog:
    """Per-epoch curves of an IOT training and its cost."""

    loss: list[float]  # total training loss (task + auxiliary terms), mean per epoch
    task_loss: list[float]  # the weighted order losses alone
    test_acc: list[float]  # held-out accuracy of IOT inference (argmax order per input)
    choice_entropy: list[float]  # mean per-input entropy of the choice probabilities (held out), nats
    top_share: list[float]  # share of held-out inputs whose argmax is the most chosen order
    choice_share: list[list[float]]  # per epoch, the share of held-out inputs choosing each order
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    steps: int = 0
    block_runs: int = 0  # blocks run in training (M per step and block): the compute that dominates


def _choice_stats(model: RoutedModel, predictor: Predictor, split: Split, orders: Sequence[Order]) -> dict[str, Any]:
    logits, choice, probs = iot_predict(model, predictor, split.x, orders)
    m = len(orders)
    share = [float((choice == j).float().mean()) for j in range(m)]
    ent = float(-(probs * torch.log(probs.clamp_min(1e-12))).sum(1).mean())
    return {"acc": metrics.accuracy(logits, split.y), "share": share, "entropy": ent}


def train_iot(
    model: RoutedModel,
    predictor: Predictor,
    train_split: Split,
    orders: Sequence[Order],
    tc: TrainConfig,
    test_split: Optional[Split] = None,
    progress: Progress = silent,
    *,
    explore: float = 1.0,
    exploit: float = 0.1,
    gumbel: bool = True,
    tau: float = TAU,
    predictor_lr: float = PREDICTOR_LR,
) -> IOTLog:
    """Train the shared weights and the predictor in place under all candidate orders (see the module doc).

    Batch order, optimiser and schedule are those of `lab.core.train.train` (the recipe's Adam or AdamW, warm-up and
    cosine, the same batch stream), so with one order this is the ordinary loop. Gumbel noise has a stream of its
    own. `explore` and `exploit` weigh the two auxiliary terms; `gumbel` adds Gumbel noise to the order weights
    (off: softmax(log p / tau)); the predictor learns at `predictor_lr` times the recipe's rate.
    """
    if tau <= 0 or predictor_lr <= 0 or explore < 0 or exploit < 0:
        raise ValueError("IOT training needs tau > 0, predictor_lr > 0 and loss weights >= 0")
    m = len(orders)
    n = len(train_split)
    steps_per_epoch = math.ceil(n / tc.batch)
    total = tc.epochs * steps_per_epoch
    # One optimiser, two groups: the model's group is the recipe's own optimiser (Adam or AdamW, fused or not),
    # and Adam-type updates treat each parameter on its own, so the model's updates are those of the ordinary
    # loop; the predictor's gradients are exactly zero when M = 1 and it never moves.
    # A faster predictor: its only task signal is the small gap between the orders' losses, averaged over noisy
    # Gumbel draws, and on a task the model fits (digits) that gap shrinks before the predictor has moved.
    opt = make_optimizer(model, tc)
    opt.add_param_group({"params": list(predictor.parameters()), "lr": tc.lr * predictor_lr,
                         "weight_decay": tc.weight_decay})
    warm = round(tc.warmup * total)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, warm))
    batch_gen = streams.generator("train.batches", tc.seed)  # the same batches as lab.core.train.train
    gumbel_gen = streams.generator("iot.gumbel", tc.seed)
    log_m = math.log(m)
    log = IOTLog([], [], [], [], [], [])
    t0, c0 = time.perf_counter(), time.thread_time()
    model.train()
    predictor.train()
    for epoch in range(1, tc.epochs + 1):
        perm = torch.randperm(n, generator=batch_gen)
        sums = [0.0, 0.0]
        for s in range(steps_per_epoch):
            idx = perm[s * tc.batch : (s + 1) * tc.batch]
            x, y = train_split.x[idx], train_split.y[idx]
            h0 = model.embed(x)
            logp = torch.log_softmax(predictor(h0.detach()), dim=1)  # (B, M)
            if gumbel and m > 1:
                u = torch.rand(logp.shape, generator=gumbel_gen).clamp(1e-10, 1 - 1e-10)
                w = torch.softmax((logp - torch.log(-torch.log(u))) / tau, dim=1)
            else:
                w = torch.softmax(logp / tau, dim=1)
            ce = torch.stack([F.cross_entropy(run_order(model, h0, o), y, reduction="none") for o in orders], 1)
            task_loss = (w * ce).sum(1).mean()
            p = logp.exp()
            # KL(u || p_bar) = -log M - mean_m log p_bar_m; 0 when the batch uses every order equally (and M = 1)
            explore_loss = -log_m - torch.log(p.mean(0).clamp_min(1e-12)).mean()
            exploit_loss = -(p * logp).sum(1).mean()  # mean per-input entropy; 0 when every choice is certain
            loss = task_loss + explore * explore_loss + exploit * exploit_loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            sums[0] += float(loss.detach()) * len(idx)
            sums[1] += float(task_loss.detach()) * len(idx)
        log.loss.append(sums[0] / n)
        log.task_loss.append(sums[1] / n)
        if test_split is not None:
            st = _choice_stats(model, predictor, test_split, orders)
            log.test_acc.append(st["acc"])
            log.choice_entropy.append(st["entropy"])
            log.choice_share.append(st["share"])
            log.top_share.append(max(st["share"]))
            model.train()
            predictor.train()
        held = f", held-out accuracy {100 * log.test_acc[-1]:.1f} %" if log.test_acc else ""
        progress(epoch / tc.epochs, f"IOT training: epoch {epoch}/{tc.epochs}, loss {log.loss[-1]:.3f}{held}")
    model.eval()
    predictor.eval()
    log.seconds = time.perf_counter() - t0
    log.cpu_seconds = time.thread_time() - c0
    log.steps = total
    log.block_runs = total * sum(len(o) for o in orders)
    return log


def train_fixed(spec: ModelSpec, order: Order, data: Dataset,
                progress: Progress = silent) -> tuple[RoutedModel, IOTLog]:
    """A model trained alone in one fixed order, with the recipe of `spec` (M = 1 IOT training is exactly the
    ordinary loop run in that order, sub-layer variants included)."""
    model = build(spec.model, spec.train.seed)
    log = train_iot(model, Predictor(stem_width(model, data.test.x), 1), data.train, [order], spec.train,
                    progress=progress)
    return model, log
