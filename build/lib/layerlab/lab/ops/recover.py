"""Recovery after surgery: fine-tune the cut network with cross-entropy, or distil it from the uncut teacher.

The student is trained in place on its own route; the teacher (for KD) always runs its full route.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

import torch
import torch.nn.functional as F

from lab.core import streams
from lab.core.data import Dataset
from lab.core.models.base import RoutedModel, accuracy, logits_of
from lab.core.train import cosine
from lab.runtime import quick
from lab.runtime.progress import Progress, silent

RECOVERIES = ("none", "ce", "kd")


@dataclass(frozen=True)
class RecoveryConfig:
    """How a cut network is healed. `kd` matches the teacher's softened outputs; `ce` the labels."""

    method: str = "kd"
    steps: int = 500
    lr: float = 1e-3
    batch: int = 256
    temperature: float = 2.0
    eval_every: int = 25
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in RECOVERIES:
            raise ValueError(f"unknown recovery {self.method!r}; choose one of {', '.join(RECOVERIES)}")
        if not 0 <= self.steps <= 20_000:
            raise ValueError(f"recovery steps must be between 0 and 20000, got {self.steps}")
        if self.temperature <= 0:
            raise ValueError("the distillation temperature must be positive")


@dataclass
class RecoveryLog:
    steps: list[int] = field(default_factory=list)  # steps at which held-out accuracy was measured
    test_acc: list[float] = field(default_factory=list)


def kd_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Hinton's distillation loss: KL(teacher || student) of temperature-softened outputs, times T^2."""
    t = temperature
    return F.kl_div(F.log_softmax(student_logits / t, 1), F.log_softmax(teacher_logits / t, 1),
                    log_target=True, reduction="batchmean") * t * t


def recover(student: RoutedModel, route: Sequence[int], data: Dataset, cfg: RecoveryConfig,
            teacher: Optional[RoutedModel] = None, progress: Progress = silent) -> RecoveryLog:
    """Train `student` (in place) on `route` for cfg.steps steps; returns its held-out accuracy curve."""
    log = RecoveryLog()
    route = tuple(route)
    cfg = replace(cfg, steps=quick.steps(cfg.steps))
    log.steps.append(0)
    log.test_acc.append(accuracy(student, data.test.x, data.test.y, route))
    if cfg.method == "none" or cfg.steps == 0:
        return log
    if cfg.method == "kd" and teacher is None:
        raise ValueError("distillation needs a teacher")
    params = [p for p in student.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine(s, cfg.steps))
    gen = streams.generator("recover.batches", cfg.seed)
    x, y = data.train.x, data.train.y
    # The teacher is frozen: its logits on the training inputs are computed once, not at every step.
    target = logits_of(teacher, x) if cfg.method == "kd" else None
    student.train()
    for step in range(1, cfg.steps + 1):
        idx = torch.randint(0, len(y), (cfg.batch,), generator=gen)
        out = student(x[idx], route)
        if cfg.method == "kd":
            loss = kd_loss(out, target[idx], cfg.temperature)
        else:
            loss = F.cross_entropy(out, y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % cfg.eval_every == 0 or step == cfg.steps:
            log.steps.append(step)
            log.test_acc.append(accuracy(student, data.test.x, data.test.y, route))
            student.train()
            progress(step / cfg.steps, f"recovery ({cfg.method}): step {step}/{cfg.steps}")
    student.eval()
    return log
