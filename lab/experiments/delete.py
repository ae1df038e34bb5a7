"""Delete layers: remove k blocks from a trained plain or residual MLP, then optionally recover.

`run(cfg)` answers one question (this architecture, this k, this selection, this recovery);
`sweep(cfg)` draws the whole picture for both architectures (every k, before and after recovery);
`student_init(cfg)` compares a student initialised from every other teacher block with a random init.
All three go through the store, so a repeated call is a file read.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from typing import Any

from .. import presets, search, selection, streams
from ..experiment import check, entry, param, seed_param
from ..models import accuracy, per_class_accuracy
from ..progress import Progress, span
from ..recipes import MLP_DEPTH, MLP_EPOCHS, MLP_WIDTH, mlp_spec
from ..recover import RECOVERIES, RecoveryConfig, recover
from ..routes import without
from ..zoo import ModelSpec, Trained, build, trained

ARCHS = ("plain", "residual")
ARCH_LABELS = {"plain": "plain MLP", "residual": "residual MLP"}
SELECTIONS = ("greedy", "optimal", "evenly-spaced", "influence", "random")
RECOVERY_LABELS = {"none": "none", "ce": "fine-tune (cross-entropy)", "kd": "distil from the teacher (KD)"}
RANDOM_DRAWS = 5  # random selection: accuracy is the mean over this many draws


@dataclass(frozen=True)
class DeleteConfig:
    """One deletion experiment. Defaults: the classroom run (residual, 2 deleted, greedy, KD 500 steps)."""

    arch: str = param("residual", "plain: each layer feeds the next. residual: each block adds to a running sum.",
                      label="Architecture", choices=ARCHS, labels=ARCH_LABELS)
    k: int = param(2, "How many hidden blocks to delete (the stem and the head always stay).", label="Blocks deleted",
                   lo=0, hi=MLP_DEPTH - 1)
    select: str = param("greedy", "How the deleted blocks are chosen (scored on a probe split, never the test split).",
                        label="Selection", choices=SELECTIONS, labels=selection.LABELS)
    recovery: str = param("kd", "After the cut: nothing, fine-tune on the labels, or distil from the uncut teacher.",
                          label="Recovery", choices=RECOVERIES, labels=RECOVERY_LABELS)
    steps: int = param(500, "Recovery steps (minibatches of 256).", label="Recovery steps", lo=0, hi=20_000)
    seed: int = seed_param()
    depth: int = param(MLP_DEPTH, "Hidden layers of the teacher.", lo=2, hi=16, cli=False)
    width: int = param(MLP_WIDTH, "Width of the teacher.", lo=4, hi=1024, cli=False)
    epochs: int = param(MLP_EPOCHS, "Training epochs of the teacher.", lo=1, hi=200, cli=False)

    def __post_init__(self) -> None:
        check(self)
        n_blocks = self.depth - 1
        if not 0 <= self.k <= n_blocks:
            raise ValueError(f"k={self.k} is out of range: the {self.depth}-layer MLP has {n_blocks} deletable "
                             f"blocks, so choose k in 0..{n_blocks}")
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates recovery and steps

    @property
    def spec(self) -> ModelSpec:
        return mlp_spec(self.arch, self.seed, self.depth, self.width, self.epochs)

    @property
    def recovery_cfg(self) -> RecoveryConfig:
        return RecoveryConfig(method=self.recovery, steps=self.steps, seed=self.seed)


def _cut_and_recover(t: Trained, dropped: list[int], rc: RecoveryConfig, progress: Progress) -> dict[str, Any]:
    data = t.data
    route = without(t.model.n_blocks, dropped)
    student = copy.deepcopy(t.model)  # never change the shared teacher
    t0 = time.perf_counter()
    log = recover(student, route, data, rc, teacher=t.model, progress=progress)
    return {
        "route": list(route),
        "cut_acc": log.test_acc[0],
        "recovered_acc": log.test_acc[-1],
        "curve_steps": log.steps,
        "curve_acc": log.test_acc,
        "recovery_seconds": time.perf_counter() - t0,
        "student": student,
    }


def _compare_selections(t: Trained, k: int, seed: int) -> dict[str, dict[str, Any]]:
    """Every selection method at this k, without recovery: probe and held-out accuracy of its cut."""
    return {m: selection.evaluate(t.model, t.data, m, k, seed, RANDOM_DRAWS if m == "random" else 1)
            for m in SELECTIONS}


@entry("delete")
def run(cfg: DeleteConfig, progress: Progress) -> dict[str, Any]:
    """One deletion experiment (cached). Accuracies are held-out unless their name says probe."""
    t = trained(cfg.spec, span(progress, 0.0, 0.6))
    d, m = t.data, t.model
    dropped = selection.to_drop(cfg.select, m, cfg.k, d.probe.x, d.probe.y, streams.seed_of("select.draw", cfg.seed))
    # Nothing was cut when k = 0, so there is nothing to recover (and KD would only train the teacher further).
    rc = cfg.recovery_cfg if cfg.k > 0 else replace(cfg.recovery_cfg, method="none")
    rec = _cut_and_recover(t, dropped, rc, span(progress, 0.6, 1.0))
    student = rec.pop("student")
    single = [search.route_accuracy(m, d.test.x, d.test.y, [i]) for i in range(m.n_blocks)]
    return {
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
        "single_block_acc": single,
        "selections": _compare_selections(t, cfg.k, cfg.seed),
        "block_influence": search.block_influence(m, d.probe.x),
        "train_seconds": t.info["seconds"],
    }


@dataclass(frozen=True)
class SweepConfig:
    """Both architectures, every k from 0 to all blocks, one selection method and one recovery."""

    select: str = "greedy"
    recovery: str = "kd"
    steps: int = 500
    seed: int = 0
    depth: int = 8
    width: int = 128
    epochs: int = 12

    @classmethod
    def of(cls, cfg: DeleteConfig) -> "SweepConfig":
        return cls(cfg.select, cfg.recovery, cfg.steps, cfg.seed, cfg.depth, cfg.width, cfg.epochs)


@entry("delete-sweep")
def sweep(cfg: SweepConfig, progress: Progress) -> dict[str, Any]:
    """Accuracy against blocks deleted, before and after recovery, for plain and residual (cached)."""
    out: dict[str, Any] = {"config": cfg, "archs": {}}
    n_blocks = cfg.depth - 1
    n_jobs = len(ARCHS) * (n_blocks + 1)
    job = 0
    for arch in ARCHS:
        t = trained(mlp_spec(arch, cfg.seed, cfg.depth, cfg.width, cfg.epochs),
                    span(progress, job / n_jobs, (job + 1) / n_jobs))
        d, m = t.data, t.model
        order = search.greedy(m, n_blocks, d.probe.x, d.probe.y) if cfg.select == "greedy" else None
        rows = []
        for k in range(n_blocks + 1):
            dropped = order[:k] if order is not None else selection.to_drop(
                cfg.select, m, k, d.probe.x, d.probe.y, streams.seed_of("select.draw", cfg.seed))
            # Only the end point is plotted here, so skip the intermediate evaluations (a third of the time).
            rc = RecoveryConfig(method=cfg.recovery if k > 0 else "none", steps=cfg.steps, seed=cfg.seed,
                                eval_every=max(cfg.steps, 1))
            rec = _cut_and_recover(t, list(dropped), rc, span(progress, job / n_jobs, (job + 1) / n_jobs))
            rows.append({"k": k, "dropped": sorted(dropped), "cut_acc": rec["cut_acc"],
                         "recovered_acc": rec["recovered_acc"]})
            job += 1
        out["archs"][arch] = {
            "base_acc": accuracy(m, d.test.x, d.test.y),
            "single_block_acc": [search.route_accuracy(m, d.test.x, d.test.y, [i]) for i in range(m.n_blocks)],
            "rows": rows,
        }
        out["chance"] = d.chance
    return out


@entry("delete-student")
def student_init(cfg: DeleteConfig, progress: Progress) -> dict[str, Any]:
    """DistilBERT-style student (every other teacher block, then KD) against the same shape from scratch."""
    t = trained(cfg.spec, span(progress, 0.0, 0.4))
    keep = tuple(range(0, t.model.n_blocks, 2))  # every other teacher block: 0, 2, 4, 6
    dropped = [i for i in range(t.model.n_blocks) if i not in keep]
    rc = replace(cfg.recovery_cfg, method="kd")
    inherited = _cut_and_recover(t, dropped, rc, span(progress, 0.4, 0.7))
    fresh = build(t.spec.model, streams.seed_of("init.student", cfg.seed))  # same shape, weights from a random init
    d = t.data
    t0 = time.perf_counter()
    log = recover(fresh, keep, d, rc, teacher=t.model, progress=span(progress, 0.7, 1.0))
    return {
        "config": cfg,
        "kept": list(keep),
        "base_acc": accuracy(t.model, d.test.x, d.test.y),
        "inherited": {"start_acc": inherited["cut_acc"], "final_acc": inherited["recovered_acc"],
                      "curve_steps": inherited["curve_steps"], "curve_acc": inherited["curve_acc"]},
        "random_init": {"start_acc": log.test_acc[0], "final_acc": log.test_acc[-1],
                        "curve_steps": log.steps, "curve_acc": log.test_acc,
                        "seconds": time.perf_counter() - t0},
    }


# -- the page's complete settings: its controls, presets, and what a setting needs (lab/presets.py) -----------
CONTROLS = {"arch": "residual", "k": 2, "select": "greedy", "recovery": "kd", "steps": 500, "seed": 0}
PRESETS = (
    presets.preset(CONTROLS, "plain1", "Plain, 1 deleted",
                   "Delete one block of a plain net, no recovery. Pin it, then switch the architecture to residual.",
                   arch="plain", k=1, recovery="none"),
    presets.preset(CONTROLS, "res4", "Residual, 4 deleted", "Four of seven blocks gone, no recovery: step k from 1 "
                   "to 6 and watch the gradual decline the plain net never shows.", arch="residual", k=4,
                   recovery="none"),
    presets.preset(CONTROLS, "kd6", "Plain, 6 deleted, distil", "Six blocks cut from the plain net, then 500 steps "
                   "of distillation: does the architecture that collapsed come back?", arch="plain", k=6,
                   recovery="kd", steps=500),
    presets.preset(CONTROLS, "opt3", "Greedy vs optimum, k = 3", "The exhaustive optimum of 3 deletions, no "
                   "recovery: better than greedy on held-out data, or only on the probe?", arch="residual", k=3,
                   select="optimal", recovery="none"),
)


def config_of(settings: dict[str, Any]) -> DeleteConfig:
    """The experiment config of a complete page setting."""
    return DeleteConfig(**{k: settings[k] for k in ("arch", "k", "select", "recovery", "steps", "seed")})


def needs(settings: dict[str, Any]) -> list[presets.Need]:
    """What the page computes for a setting, with rough seconds each (teacher training dominates)."""
    cfg = config_of(settings)
    return [presets.Need("this deletion", run, cfg, 20 + cfg.steps / 50 + (30 if cfg.select == "optimal" else 0)),
            presets.Need("the sweep over k", sweep, SweepConfig.of(cfg), 60 + cfg.steps / 10)]
