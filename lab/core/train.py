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
from lab.core.routes import sample_route
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
    mode: str = "sequential"  # sequential | shuffle | layerdrop (others may be added by experiments)
    drop_p: float = 0.0  # LayerDrop rate (mode="layerdrop")
    checkpoints: tuple[int, ...] = (0, 1, 2, 3, 5)  # epochs after which weights are kept; the end is always kept
    # The defaults below reproduce the original loop bit for bit (plain Adam, L2 through `weight_decay`, no
    # warm-up, torch's per-tensor optimizer step); the ViT recipe in `lab.core.recipes` changes them.
    optimizer: str = "adam"  # adam | adamw (decoupled decay, applied to weight matrices only)
    warmup: float = 0.0  # fraction of all steps with a linear warm-up before the cosine decay
    fused: bool = False  # torch's fused optimizer kernel: faster, but not bitwise equal to the per-tensor step

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


@dataclass
class TrainLog:
    """What a training run records besides the weights."""

    loss: list[float] = field(default_factory=list)  # mean training loss per epoch
    test_acc: list[float] = field(default_factory=list)  # held-out accuracy (full route) per epoch
    seconds: float = 0.0
    checkpoints: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)


RouteSampler = Callable[[torch.Generator], Route]


def route_sampler(cfg: TrainConfig, n_blocks: int) -> RouteSampler:
    """The per-step route drawing of a training config."""
    return lambda gen: sample_route(cfg.mode, n_blocks, gen, cfg.drop_p)


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
            loss = model.loss(train_split.x[idx], train_split.y[idx], sampler(route_gen))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total_loss += float(loss.detach()) * len(idx)
        log.loss.append(total_loss / n)
        if test_split is not None:
            log.test_acc.append(accuracy(model, test_split.x, test_split.y))
            model.train()
        if epoch in keep or epoch == cfg.epochs:
            log.checkpoints[epoch] = _snapshot(model)
        progress(epoch / cfg.epochs, f"training: epoch {epoch}/{cfg.epochs}, loss {log.loss[-1]:.3f}")
    model.eval()
    log.seconds = time.perf_counter() - t0
    return log
