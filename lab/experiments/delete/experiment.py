"""Delete layers: remove k blocks from a trained plain or residual MLP, then optionally recover.

`run(cfg)` answers one question (this architecture, this k, this selection, this recovery);
`sweep(cfg)` draws the whole picture for both architectures (every k, before and after recovery);
`race(cfg)` recovers the same cut by fine-tuning and by distillation side by side (which reaches the teacher first);
`shallow(cfg)` trains the one-block MLP from scratch by the teacher's recipe (what 6 of 7 deletions leave);
`student_init(cfg)` compares a student initialised from every other teacher block with a random init.
All go through the store, so a repeated call is a file read. Every accuracy a claim compares keeps its per-input
held-out outcomes under `outcomes` (lab/estimates.pack), so claims pair accuracies measured on the same inputs;
the claims themselves are declared in claims.py and computed when a result is read (this module does not import it,
so rewording a claim recomputes no result).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

from lab import estimates
from lab.core import streams
from lab.core.model_registry import labels
from lab.core.models import accuracy, correct, per_class_accuracy
from lab.core.page_models import mlp_spec
from lab.core.recipes import MLP_BLOCKS, MLP_EPOCHS, MLP_WIDTH
from lab.core.routes import without
from lab.core.task_fit import check_task, on_task
from lab.core.zoo import ModelSpec, Trained, build, trained
from lab.experiment import check, entry, param, seed_param, task_param
from lab.ops import search, selection
from lab.ops.recover import RECOVERIES, RecoveryConfig, recover
from lab.runtime.progress import Progress, span

ARCHS = ("plain", "residual")  # names of lab/core/model_registry.MODELS
SELECTIONS = ("greedy", "optimal", "evenly-spaced", "influence", "random")
RECOVERY_LABELS = {"none": "none", "ce": "fine-tune (cross-entropy)", "kd": "distil from the teacher (KD)"}
SHALLOW_BLOCKS = 1  # what deleting 6 of 7 blocks leaves: stem, one block, head


@dataclass(frozen=True)
class DeleteConfig:
    """One deletion experiment. Defaults: the classroom run (residual, 2 deleted, greedy, KD 500 steps)."""

    arch: str = param("residual", "plain: each layer feeds the next. residual: each block adds to a running sum.",
                      label="Architecture", choices=ARCHS, labels=labels(ARCHS))
    k: int = param(2, "How many hidden blocks to delete (the stem and the head always stay).", label="Blocks deleted",
                   lo=0, hi=MLP_BLOCKS)
    select: str = param("greedy", "How the deleted blocks are chosen (scored on a probe split, never the test split).",
                        label="Selection", choices=SELECTIONS, labels=selection.LABELS)
    recovery: str = param("kd", "After the cut: nothing, fine-tune on the labels, or distil from the uncut teacher.",
                          label="Recovery", choices=RECOVERIES, labels=RECOVERY_LABELS)
    steps: int = param(500, "Recovery steps (minibatches of 256).", label="Recovery steps", lo=0, hi=20_000)
    seed: int = seed_param()
    blocks: int = param(MLP_BLOCKS, "Blocks of the teacher.", lo=1, hi=15, cli=False)
    width: int = param(MLP_WIDTH, "Width of the teacher.", lo=4, hi=1024, cli=False)
    epochs: int = param(MLP_EPOCHS, "Training epochs of the teacher.", lo=1, hi=200, cli=False)
    task: str = task_param("synthetic")

    def __post_init__(self) -> None:
        check(self)
        check_task(self.task, "mlp")
        n_blocks = self.blocks
        if not 0 <= self.k <= n_blocks:
            raise ValueError(f"k={self.k} is out of range: the {n_blocks}-block MLP has {n_blocks} deletable "
                             f"blocks, so choose k in 0..{n_blocks}")
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates recovery and steps

    @property
    def spec(self) -> ModelSpec:
        return on_task(mlp_spec(self.arch, self.seed, self.blocks, self.width, self.epochs), self.task)

    @property
    def recovery_cfg(self) -> RecoveryConfig:
        return RecoveryConfig(method=self.recovery, steps=self.steps, seed=self.seed)


def _outcomes(m: Any, d: Any, route: Optional[Sequence[int]] = None) -> str:
    """Per-input held-out right/wrong of a model on a route, packed (lab/estimates.pack)."""
    return estimates.pack(correct(m, d.test.x, d.test.y, route))


def _cut_and_recover(t: Trained, dropped: list[int], rc: RecoveryConfig, progress: Progress,
                     curve_outcomes: bool = False) -> dict[str, Any]:
    """Cut, then recover a copy of the teacher. With `curve_outcomes`, the per-input held-out outcomes at every
    curve step too (read by the progress callback, which `recover` calls right after each evaluation)."""
    data = t.data
    route = without(t.model.n_blocks, dropped)
    student = copy.deepcopy(t.model)  # never change the shared teacher
    seen: list[str] = []

    def watch(frac: float, msg: str) -> None:
        if curve_outcomes:
            seen.append(_outcomes(student, data, route))
        progress(frac, msg)

    cut = _outcomes(student, data, route)
    t0 = time.perf_counter()
    log = recover(student, route, data, rc, teacher=t.model, progress=watch)
    out = {
        "route": list(route),
        "cut_acc": log.test_acc[0],
        "recovered_acc": log.test_acc[-1],
        "curve_steps": log.steps,
        "curve_acc": log.test_acc,
        "recovery_seconds": time.perf_counter() - t0,
        "outcomes": {"cut": cut, "recovered": _outcomes(student, data, route)},
        "student": student,
    }
    if curve_outcomes:
        if len(seen) != len(log.steps) - 1:  # recover's evaluations and its progress calls must coincide
            raise RuntimeError(f"recovery curve steps {log.steps} but {len(seen)} progress calls")
        out["outcomes"]["curve"] = [cut] + seen
    return out


def _compare_selections(t: Trained, k: int, seed: int) -> dict[str, dict[str, Any]]:
    """Every selection method at this k, without recovery: probe and held-out accuracy of its cut, with per-input
    outcomes (random: every k-subset when C(n, k) <= selection.MAX_EXACT)."""
    return {m: selection.outcomes(t.model, t.data, m, k, streams.seed_of("select.draw", seed)) for m in SELECTIONS}


@dataclass(frozen=True)
class DeleteResult:
    """`run`'s answer: one deletion (accuracies held-out unless their name says probe). Field names are the stored
    keys."""

    config: DeleteConfig
    base_acc: float
    base_probe_acc: float
    chance: float
    n_blocks: int
    dropped: list[int]
    cut_probe_acc: float
    route: list[int]
    cut_acc: float
    recovered_acc: float
    curve_steps: list[int]
    curve_acc: list[float]
    recovery_seconds: float
    outcomes: dict[str, Any]  # packed per-input outcomes: "cut", "recovered", "base", "single" (one per block)
    per_class: dict[str, list[float]]  # "base", "cut", "recovered": accuracy within each class
    single_block_acc: list[float]
    selections: dict[str, dict[str, Any]]  # by selection method: its cut's probe and held-out accuracy (a table)
    block_influence: list[float]
    train_seconds: float
    n_test: int


@entry("delete", result=DeleteResult)
def run(cfg: DeleteConfig, progress: Progress) -> DeleteResult:
    """One deletion experiment (cached). Accuracies are held-out unless their name says probe."""
    t = trained(cfg.spec, span(progress, 0.0, 0.6))
    d, m = t.data, t.model
    dropped = selection.to_drop(cfg.select, m, cfg.k, d.probe.x, d.probe.y, streams.seed_of("select.draw", cfg.seed))
    # Nothing was cut when k = 0, so there is nothing to recover (and KD would only train the teacher further).
    rc = cfg.recovery_cfg if cfg.k > 0 else replace(cfg.recovery_cfg, method="none")
    rec = _cut_and_recover(t, dropped, rc, span(progress, 0.6, 1.0))
    student = rec.pop("student")
    single = [_outcomes(m, d, without(m.n_blocks, [i])) for i in range(m.n_blocks)]
    rec["outcomes"] = {**rec["outcomes"], "base": _outcomes(m, d), "single": single}
    out = DeleteResult(**{
        "config": cfg,
        "base_acc": accuracy(m, d.test.x, d.test.y),
        "base_probe_acc": accuracy(m, d.probe.x, d.probe.y),
        "chance": d.chance,
        "n_blocks": m.n_blocks,
        "dropped": sorted(dropped),
        "cut_probe_acc": search.route_accuracy(m, d.probe.x, d.probe.y, dropped),
        **rec,
        "per_class": {
            "base": per_class_accuracy(m, d.test.x, d.test.y, d.n_classes),
            "cut": per_class_accuracy(m, d.test.x, d.test.y, d.n_classes, rec["route"]),
            "recovered": per_class_accuracy(student, d.test.x, d.test.y, d.n_classes, rec["route"]),
        },
        "single_block_acc": [float(estimates.unpack(o).mean()) for o in single],
        "selections": _compare_selections(t, cfg.k, cfg.seed),
        "block_influence": search.block_influence(m, d.probe.x),
        "train_seconds": t.info["seconds"],
        "n_test": len(d.test.y),
    })
    return out


@dataclass(frozen=True)
class SweepConfig:
    """Both architectures, every k from 0 to all blocks, one selection method and one recovery."""

    select: str = "greedy"
    recovery: str = "kd"
    steps: int = 500
    seed: int = 0
    blocks: int = MLP_BLOCKS  # the recipe's MLP (lab/core/recipes.py), as DeleteConfig's defaults
    width: int = MLP_WIDTH
    epochs: int = MLP_EPOCHS
    task: str = "synthetic"

    @classmethod
    def of(cls, cfg: DeleteConfig) -> "SweepConfig":
        return cls(cfg.select, cfg.recovery, cfg.steps, cfg.seed, cfg.blocks, cfg.width, cfg.epochs, cfg.task)


@dataclass(frozen=True)
class SweepRow:
    """One k of the sweep: the blocks deleted and the held-out accuracy of the cut, before and after recovery."""

    k: int
    dropped: list[int]
    cut_acc: float
    recovered_acc: float


@dataclass(frozen=True)
class SweepArch:
    """One architecture of the sweep."""

    base_acc: float
    single_block_acc: list[float]
    rows: list[SweepRow]  # k = 0 .. all blocks
    outcomes: dict[str, Any]  # packed per-input outcomes: "base", "single", "cut" and "recovered" (one per k)


@dataclass(frozen=True)
class SweepResult:
    """`sweep`'s answer. Field names are the stored keys."""

    config: SweepConfig
    archs: dict[str, SweepArch]  # by architecture
    chance: float
    n_test: int


@entry("delete-sweep", result=SweepResult)
def sweep(cfg: SweepConfig, progress: Progress) -> SweepResult:
    """Accuracy against blocks deleted, before and after recovery, for plain and residual (cached)."""
    archs: dict[str, SweepArch] = {}
    chance, n_test = 0.0, 0
    n_blocks = cfg.blocks
    n_jobs = len(ARCHS) * (n_blocks + 1)
    job = 0
    for arch in ARCHS:
        t = trained(on_task(mlp_spec(arch, cfg.seed, cfg.blocks, cfg.width, cfg.epochs), cfg.task),
                    span(progress, job / n_jobs, (job + 1) / n_jobs))
        d, m = t.data, t.model
        order = search.greedy(m, n_blocks, d.probe.x, d.probe.y) if cfg.select == "greedy" else None
        rows, cut, recovered = [], [], []
        for k in range(n_blocks + 1):
            dropped = order[:k] if order is not None else selection.to_drop(
                cfg.select, m, k, d.probe.x, d.probe.y, streams.seed_of("select.draw", cfg.seed))
            # Only the end point is plotted here, so skip the intermediate evaluations (a third of the time).
            rc = RecoveryConfig(method=cfg.recovery if k > 0 else "none", steps=cfg.steps, seed=cfg.seed,
                                eval_every=max(cfg.steps, 1))
            rec = _cut_and_recover(t, list(dropped), rc, span(progress, job / n_jobs, (job + 1) / n_jobs))
            rows.append(SweepRow(k=k, dropped=sorted(dropped), cut_acc=rec["cut_acc"],
                                 recovered_acc=rec["recovered_acc"]))
            cut.append(rec["outcomes"]["cut"])
            recovered.append(rec["outcomes"]["recovered"])
            job += 1
        single = [_outcomes(m, d, without(m.n_blocks, [i])) for i in range(m.n_blocks)]
        archs[arch] = SweepArch(
            base_acc=accuracy(m, d.test.x, d.test.y),
            single_block_acc=[float(estimates.unpack(o).mean()) for o in single],
            rows=rows,
            outcomes={"base": _outcomes(m, d), "single": single, "cut": cut, "recovered": recovered},
        )
        chance, n_test = d.chance, len(d.test.y)
    return SweepResult(config=cfg, archs=archs, chance=chance, n_test=n_test)


@dataclass(frozen=True)
class RaceConfig:
    """The same cut recovered by fine-tuning (CE) and by distillation (KD), curves measured at the same steps."""

    arch: str = "residual"
    k: int = 2
    select: str = "greedy"
    steps: int = 500
    seed: int = 0
    blocks: int = MLP_BLOCKS
    width: int = MLP_WIDTH
    epochs: int = MLP_EPOCHS
    task: str = "synthetic"

    @classmethod
    def of(cls, cfg: DeleteConfig) -> "RaceConfig":
        return cls(cfg.arch, cfg.k, cfg.select, cfg.steps, cfg.seed, cfg.blocks, cfg.width, cfg.epochs, cfg.task)


@dataclass(frozen=True)
class Curve:
    """Held-out accuracy at the recovery steps."""

    curve_steps: list[int]
    curve_acc: list[float]


@dataclass(frozen=True)
class RaceResult:
    """`race`'s answer: CE and KD from the same cut. Field names are the stored keys."""

    config: RaceConfig
    dropped: list[int]
    base_acc: float
    n_test: int
    outcomes: dict[str, Any]  # packed per-input outcomes: "base", and "ce" / "kd" (one per curve step)
    ce: Curve
    kd: Curve


@entry("delete-race", result=RaceResult)
def race(cfg: RaceConfig, progress: Progress) -> RaceResult:
    """CE against KD from the same cut, same steps, same batches: held-out curves with per-input outcomes."""
    t = trained(on_task(mlp_spec(cfg.arch, cfg.seed, cfg.blocks, cfg.width, cfg.epochs), cfg.task),
                span(progress, 0.0, 0.5))
    d, m = t.data, t.model
    dropped = selection.to_drop(cfg.select, m, cfg.k, d.probe.x, d.probe.y, streams.seed_of("select.draw", cfg.seed))
    outcomes: dict[str, Any] = {"base": _outcomes(m, d)}
    curves: dict[str, Curve] = {}
    for i, method in enumerate(("ce", "kd")):
        rc = RecoveryConfig(method=method if cfg.k > 0 else "none", steps=cfg.steps, seed=cfg.seed)
        rec = _cut_and_recover(t, dropped, rc, span(progress, 0.5 + 0.25 * i, 0.75 + 0.25 * i), curve_outcomes=True)
        curves[method] = Curve(curve_steps=rec["curve_steps"], curve_acc=rec["curve_acc"])
        outcomes[method] = rec["outcomes"]["curve"]
    return RaceResult(config=cfg, dropped=sorted(dropped), base_acc=accuracy(m, d.test.x, d.test.y),
                      n_test=len(d.test.y), outcomes=outcomes, ce=curves["ce"], kd=curves["kd"])


@dataclass(frozen=True)
class ShallowConfig:
    """The one-block MLP (stem, one block, head) trained from scratch by the teacher's recipe."""

    arch: str = "residual"
    seed: int = 0
    width: int = MLP_WIDTH
    epochs: int = MLP_EPOCHS
    task: str = "synthetic"

    @classmethod
    def of(cls, cfg: DeleteConfig) -> "ShallowConfig":
        return cls(cfg.arch, cfg.seed, cfg.width, cfg.epochs, cfg.task)


@dataclass(frozen=True)
class ShallowResult:
    """`shallow`'s answer. Field names are the stored keys."""

    config: ShallowConfig
    blocks: int
    acc: float
    chance: float
    n_test: int
    train_seconds: float
    outcomes: dict[str, str]  # packed per-input outcomes: "model"


@entry("delete-shallow", result=ShallowResult)
def shallow(cfg: ShallowConfig, progress: Progress) -> ShallowResult:
    """Held-out accuracy of the one-block MLP trained from scratch (its own stored model), with its outcomes."""
    t = trained(on_task(mlp_spec(cfg.arch, cfg.seed, SHALLOW_BLOCKS, cfg.width, cfg.epochs), cfg.task), progress)
    d, m = t.data, t.model
    return ShallowResult(config=cfg, blocks=SHALLOW_BLOCKS, acc=accuracy(m, d.test.x, d.test.y), chance=d.chance,
                         n_test=len(d.test.y), train_seconds=t.info["seconds"], outcomes={"model": _outcomes(m, d)})


@dataclass(frozen=True)
class StudentCurve:
    """A student's KD: held-out accuracy at its start, at its end and at the curve's steps."""

    start_acc: float
    final_acc: float
    curve_steps: list[int]
    curve_acc: list[float]


@dataclass(frozen=True)
class RandomInitCurve(StudentCurve):
    """The student from a random init, with its distillation's wall clock."""

    seconds: float


@dataclass(frozen=True)
class StudentResult:
    """`student_init`'s answer. Field names are the stored keys."""

    config: DeleteConfig
    kept: list[int]
    base_acc: float
    inherited: StudentCurve
    random_init: RandomInitCurve
    n_test: int


def student_blocks(n_blocks: int) -> tuple[int, ...]:
    """The teacher blocks a DistilBERT-style student starts from: every other one (0, 2, 4, 6 of 7)."""
    return tuple(range(0, n_blocks, 2))


@entry("delete-student", result=StudentResult)
def student_init(cfg: DeleteConfig, progress: Progress) -> StudentResult:
    """DistilBERT-style student (every other teacher block, then KD) against the same shape from scratch."""
    t = trained(cfg.spec, span(progress, 0.0, 0.4))
    keep = student_blocks(t.model.n_blocks)
    dropped = [i for i in range(t.model.n_blocks) if i not in keep]
    rc = replace(cfg.recovery_cfg, method="kd")
    inherited = _cut_and_recover(t, dropped, rc, span(progress, 0.4, 0.7))
    fresh = build(t.spec.model, streams.seed_of("init.student", cfg.seed))  # same shape, weights from a random init
    d = t.data
    t0 = time.perf_counter()
    log = recover(fresh, keep, d, rc, teacher=t.model, progress=span(progress, 0.7, 1.0))
    return StudentResult(
        config=cfg,
        kept=list(keep),
        base_acc=accuracy(t.model, d.test.x, d.test.y),
        inherited=StudentCurve(start_acc=inherited["cut_acc"], final_acc=inherited["recovered_acc"],
                               curve_steps=inherited["curve_steps"], curve_acc=inherited["curve_acc"]),
        random_init=RandomInitCurve(start_acc=log.test_acc[0], final_acc=log.test_acc[-1],
                                    curve_steps=log.steps, curve_acc=log.test_acc,
                                    seconds=time.perf_counter() - t0),
        n_test=len(d.test.y),
    )


