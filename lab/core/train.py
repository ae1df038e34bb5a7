"""The one training loop of the lab: minibatch Adam (or AdamW) with a cosine learning rate, seeded, routed.

A training *mode* decides the route of every step (sequential, LayerShuffle, LayerDrop...), drawn from a
generator of its own so that a mode that draws nothing (sequential, LayerDrop with p = 0) trains exactly like
the ordinary loop. The loop knows nothing of any UI: it reports through a progress callback, and it can keep
copies of the weights at chosen epochs (checkpoints; epoch 0 is the initial draw).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from lab.core import streams
from lab.core.data import Split
from lab.core.models.base import Route, RoutedModel, accuracy
from lab.core.routes import looped, sample_route
from lab.runtime.progress import Progress, silent

OPTIMIZERS = ("adam", "adamw")


@dataclass(frozen=True)
class TrainConfig:
    """How a model is trained. `seed` fixes the initial weights, the batch order and the sampled routes."""

    epochs: int = 12
    batch: int = 256
    lr: float = 3e-3
    weight_decay: float = 0.0
    seed: int = 0
    mode: str = "sequential"  # sequential | looped | shuffle | layerdrop: a sampler of lab/core/routes.py: SAMPLERS
    drop_p: float = 0.0  # LayerDrop rate (mode="layerdrop")
    checkpoints: tuple[int, ...] = (0, 1, 2, 3, 5)  # epochs after which weights are kept; the end is always kept
    # The defaults below reproduce the original loop bit for bit (plain Adam, L2 through `weight_decay`, no
    # warm-up, torch's per-tensor optimizer step); the ViT recipe in `lab.core.recipes` changes them.
    optimizer: str = "adam"  # adam | adamw (decoupled decay, applied to weight matrices only)
    warmup: float = 0.0  # fraction of all steps with a linear warm-up before the cosine decay
    fused: bool = False  # torch's fused optimizer kernel: faster, but not bitwise equal to the per-tensor step
    # Looped depth (Saunshi et al. 2025; mode="looped"): the model's k blocks run `loops` times in order on every
    # step and in the held-out accuracy, (0..k-1) * loops: k blocks of shared weights, k x loops block runs.
    loops: int = 1
    # Early-exit loss (LayerSkip, Elhoushi et al. 2024): the loss is the mean of the head's cross-entropy after every
    # slot of the route, slot s (1-based) weighted s / sum(1..S), rising with depth; False: the model's own loss.
    early_exit: bool = False

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch < 1 or self.lr <= 0:
            raise ValueError("epochs and batch must be >= 1 and lr > 0")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
        if not 0.0 <= self.warmup < 1.0:
            raise ValueError(f"the warm-up fraction must be in [0, 1), got {self.warmup}")
        if self.weight_decay < 0:
            raise ValueError(f"weight decay must be >= 0, got {self.weight_decay}")
        if not 0.0 <= self.drop_p < 1.0:
            raise ValueError(f"LayerDrop rate must be in [0, 1), got {self.drop_p}")
        if not 1 <= self.loops <= 16:
            raise ValueError(f"loops must be between 1 and 16, got {self.loops}")
        if self.loops > 1 and self.mode != "looped":
            raise ValueError("loops > 1 needs mode='looped'")


@dataclass
class TrainLog:
    """What a training run records besides the weights."""

    loss: list[float] = field(default_factory=list)  # mean training loss per epoch
    test_acc: list[float] = field(default_factory=list)  # held-out accuracy (full route) per epoch
    seconds: float = 0.0
    checkpoints: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)


RouteSampler = Callable[[torch.Generator], Route]


def eval_route(cfg: TrainConfig, n_blocks: int) -> Optional[Route]:
    """The route a trained model is evaluated on: the looped route in mode "looped", else the full route (None)."""
    return looped(n_blocks, cfg.loops) if cfg.mode == "looped" else None


def route_sampler(cfg: TrainConfig, n_blocks: int) -> RouteSampler:
    """The per-step route drawing of a training config: its mode's sampler (`lab/core/routes.py: SAMPLERS`) on the
    trained route (the blocks in order; looped, `loops` times)."""
    route = looped(n_blocks, cfg.loops)
    return lambda gen: sample_route(cfg.mode, route, gen, cfg.drop_p)


def early_exit_loss(model: RoutedModel, x: torch.Tensor, y: torch.Tensor,
                    route: Optional[Route] = None) -> torch.Tensor:
    """LayerSkip's early-exit loss: the head's cross-entropy after every slot s = 1..S of the route, weighted
    s / (1 + ... + S) (rising with depth, the last slot heaviest), summed."""
    logits, states = model.states(x, route)
    n = len(states) - 1
    if n == 0:
        return torch.nn.functional.cross_entropy(logits, y)
    total = n * (n + 1) / 2
    loss = logits.new_zeros(())
    for s in range(1, n + 1):
        out = logits if s == n else model.readout(states[s])
        loss = loss + (s / total) * torch.nn.functional.cross_entropy(out, y)
    return loss


def cosine(step: int, total: int) -> float:
    """Cosine learning-rate factor: 1 at the start, 0 at `total` steps."""
    return 0.5 * (1 + math.cos(math.pi * min(step, total) / total))


def lr_factor(step: int, total: int, warmup_steps: int) -> float:
    """Learning-rate factor: linear warm-up over `warmup_steps`, then cosine to 0 at `total` steps.

    Without warm-up this is exactly `cosine(step, total)`, so default configs train as they always did.
    """
    if warmup_steps <= 0:
        return cosine(step, total)
    if step < warmup_steps:
        return (step + 1) / warmup_steps  # never 0: the first step already moves the weights a little
    return cosine(step - warmup_steps, total - warmup_steps)


def make_optimizer(model: RoutedModel, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The optimizer of a training config (see `TrainConfig.optimizer`)."""
    fused = True if cfg.fused else None  # None leaves torch's default choice, as the original loop did
    if cfg.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, fused=fused)
    # AdamW as ViTs are usually trained: decay the weight matrices, not biases, norms, CLS token or positions
    # (decaying those only pulls the stream's offsets towards zero, which no one wants).
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim == 2]
    rest = [p for p in params if p.ndim != 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, fused=fused)


def _snapshot(model: RoutedModel) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def train(
    model: RoutedModel,
    train_split: Split,
    cfg: TrainConfig,
    test_split: Optional[Split] = None,
    progress: Progress = silent,
    sampler: Optional[RouteSampler] = None,
) -> TrainLog:
    """Train `model` in place; its initial weights must already be drawn (see `zoo.build`)."""
    sampler = sampler or route_sampler(cfg, model.n_blocks)
    loss_of = model.loss if not cfg.early_exit else (lambda x, y, r: early_exit_loss(model, x, y, r))
    test_route = eval_route(cfg, model.n_blocks)
    n = len(train_split)
    steps_per_epoch = math.ceil(n / cfg.batch)
    total = cfg.epochs * steps_per_epoch
    opt = make_optimizer(model, cfg)
    warm = round(cfg.warmup * total)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, warm))
    batch_gen = streams.generator("train.batches", cfg.seed)
    route_gen = streams.generator("train.routes", cfg.seed)
    log = TrainLog()
    keep = set(cfg.checkpoints)
    if 0 in keep:
        log.checkpoints[0] = _snapshot(model)
    t0 = time.perf_counter()
    model.train()
    for epoch in range(1, cfg.epochs + 1):
        order = torch.randperm(n, generator=batch_gen)
        total_loss = 0.0
        for s in range(steps_per_epoch):
            idx = order[s * cfg.batch : (s + 1) * cfg.batch]
            loss = loss_of(train_split.x[idx], train_split.y[idx], sampler(route_gen))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total_loss += float(loss.detach()) * len(idx)
        log.loss.append(total_loss / n)
        if test_split is not None:
            log.test_acc.append(accuracy(model, test_split.x, test_split.y, test_route))
            model.train()
        if epoch in keep or epoch == cfg.epochs:
            log.checkpoints[epoch] = _snapshot(model)
        # the held-out accuracy so far: while a newcomer waits for the first model, the bar already shows a number
        held = f", held-out accuracy {100 * log.test_acc[-1]:.1f} %" if log.test_acc else ""
        progress(epoch / cfg.epochs, f"training: epoch {epoch}/{cfg.epochs}, loss {log.loss[-1]:.3f}{held}")
    model.eval()
    log.seconds = time.perf_counter() - t0
    return log
