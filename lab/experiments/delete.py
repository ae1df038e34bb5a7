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

from .. import search
from ..models import MLPConfig, accuracy, per_class_accuracy
from ..progress import Progress, silent, span
from ..recover import RecoveryConfig, recover
from ..routes import without
from ..store import Store, default_store
from ..train import TrainConfig
from ..zoo import ModelSpec, Trained, build, trained

ARCHS = ("plain", "residual")
RANDOM_DRAWS = 5  # random selection: accuracy is the mean over this many draws


@dataclass(frozen=True)
class DeleteConfig:
    """One deletion experiment. Defaults: the classroom run (residual, 2 deleted, greedy, KD 500 steps)."""

    arch: str = "residual"
    k: int = 2
    select: str = "greedy"
    recovery: str = "kd"
    steps: int = 500
    seed: int = 0
    depth: int = 8
    width: int = 128
    epochs: int = 12

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ValueError(f"unknown arch {self.arch!r}; choose plain or residual")
        if self.select not in search.SELECTIONS:
            raise ValueError(f"unknown selection {self.select!r}; choose one of {', '.join(search.SELECTIONS)}")
        n_blocks = self.depth - 1
        if not 0 <= self.k <= n_blocks:
            raise ValueError(f"k={self.k} is out of range: the {self.depth}-layer MLP has {n_blocks} deletable "
                             f"blocks, so choose k in 0..{n_blocks}")
        if not 0 <= self.seed <= 2**31 - 1:
            raise ValueError("the seed must be a non-negative integer")
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates recovery and steps

    @property
    def spec(self) -> ModelSpec:
        return teacher_spec(self.arch, self.seed, self.depth, self.width, self.epochs)

    @property
    def recovery_cfg(self) -> RecoveryConfig:
        return RecoveryConfig(method=self.recovery, steps=self.steps, seed=self.seed)


def teacher_spec(arch: str, seed: int, depth: int = 8, width: int = 128, epochs: int = 12) -> ModelSpec:
    """The teacher of the Delete experiments."""
    return ModelSpec(MLPConfig(arch=arch, width=width, depth=depth), TrainConfig(epochs=epochs, seed=seed))


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
    d, m = t.data, t.model
    out: dict[str, dict[str, Any]] = {}
    for method in search.SELECTIONS:
        draws = RANDOM_DRAWS if method == "random" else 1
        probe, test, picks = [], [], []
        for j in range(draws):
            dropped = search.select(method, m, k, d.probe.x, d.probe.y, seed=seed * 1000 + j)
            picks.append(dropped)
            probe.append(search.route_accuracy(m, d.probe.x, d.probe.y, dropped))
            test.append(search.route_accuracy(m, d.test.x, d.test.y, dropped))
        mean = lambda v: sum(v) / len(v)  # noqa: E731
        out[method] = {"dropped": picks[0], "probe_acc": mean(probe), "test_acc": mean(test),
                       "test_min": min(test), "test_max": max(test), "draws": draws}
    return out


def _run(cfg: DeleteConfig, progress: Progress) -> dict[str, Any]:
    t = trained(cfg.spec, span(progress, 0.0, 0.6))
    d, m = t.data, t.model
    dropped = search.select(cfg.select, m, cfg.k, d.probe.x, d.probe.y, seed=cfg.seed * 1000)
    # Nothing was cut when k = 0, so there is nothing to recover (and KD would only train the teacher further).
    rc = cfg.recovery_cfg if cfg.k > 0 else replace(cfg.recovery_cfg, method="none")
    rec = _cut_and_recover(t, dropped, rc, span(progress, 0.6, 1.0))
    student = rec.pop("student")
    single = [search.route_accuracy(m, d.test.x, d.test.y, [i]) for i in range(m.n_blocks)]
    return {
        "config": cfg,
        "teacher_acc": accuracy(m, d.test.x, d.test.y),
        "teacher_probe_acc": accuracy(m, d.probe.x, d.probe.y),
        "chance": d.chance,
        "n_blocks": m.n_blocks,
        "dropped": sorted(dropped),
        "probe_acc": search.route_accuracy(m, d.probe.x, d.probe.y, dropped),
        **rec,
        "per_class": {
            "teacher": per_class_accuracy(m, d.test.x, d.test.y, d.n_classes),
            "before": per_class_accuracy(m, d.test.x, d.test.y, d.n_classes, rec["route"]),
            "after": per_class_accuracy(student, d.test.x, d.test.y, d.n_classes, rec["route"]),
        },
        "single_block_acc": single,
        "selections": _compare_selections(t, cfg.k, cfg.seed),
        "block_influence": search.block_influence(m, d.probe.x),
        "teacher_seconds": t.info["seconds"],
    }


def run(cfg: DeleteConfig, progress: Progress = silent, store: Store | None = None) -> dict[str, Any]:
    """One deletion experiment (cached). Accuracies are held-out unless their name says probe."""
    store = store or default_store()
    return store.json("delete", cfg, lambda: _run(cfg, progress))


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


def _sweep(cfg: SweepConfig, progress: Progress) -> dict[str, Any]:
    out: dict[str, Any] = {"config": cfg, "archs": {}}
    n_blocks = cfg.depth - 1
    n_jobs = len(ARCHS) * (n_blocks + 1)
    job = 0
    for arch in ARCHS:
        t = trained(teacher_spec(arch, cfg.seed, cfg.depth, cfg.width, cfg.epochs),
                    span(progress, job / n_jobs, (job + 1) / n_jobs))
        d, m = t.data, t.model
        order = search.greedy(m, n_blocks, d.probe.x, d.probe.y) if cfg.select == "greedy" else None
        rows = []
        for k in range(n_blocks + 1):
            dropped = order[:k] if order is not None else search.select(cfg.select, m, k, d.probe.x, d.probe.y,
                                                                        seed=cfg.seed * 1000)
            # Only the end point is plotted here, so skip the intermediate evaluations (a third of the time).
            rc = RecoveryConfig(method=cfg.recovery if k > 0 else "none", steps=cfg.steps, seed=cfg.seed,
                                eval_every=max(cfg.steps, 1))
            rec = _cut_and_recover(t, list(dropped), rc, span(progress, job / n_jobs, (job + 1) / n_jobs))
            rows.append({"k": k, "dropped": sorted(dropped), "cut_acc": rec["cut_acc"],
                         "recovered_acc": rec["recovered_acc"]})
            job += 1
        out["archs"][arch] = {
            "teacher_acc": accuracy(m, d.test.x, d.test.y),
            "single_block_acc": [search.route_accuracy(m, d.test.x, d.test.y, [i]) for i in range(m.n_blocks)],
            "rows": rows,
        }
        out["chance"] = d.chance
    return out


def sweep(cfg: SweepConfig, progress: Progress = silent, store: Store | None = None) -> dict[str, Any]:
    """Accuracy against blocks deleted, before and after recovery, for plain and residual (cached)."""
    store = store or default_store()
    return store.json("delete-sweep", cfg, lambda: _sweep(cfg, progress))


def _student_init(cfg: DeleteConfig, progress: Progress) -> dict[str, Any]:
    t = trained(cfg.spec, span(progress, 0.0, 0.4))
    keep = tuple(range(0, t.model.n_blocks, 2))  # every other teacher block: 0, 2, 4, 6
    dropped = [i for i in range(t.model.n_blocks) if i not in keep]
    rc = replace(cfg.recovery_cfg, method="kd")
    inherited = _cut_and_recover(t, dropped, rc, span(progress, 0.4, 0.7))
    fresh = build(t.spec.model, cfg.seed + 10_000)  # same shape, weights from a random init
    d = t.data
    t0 = time.perf_counter()
    log = recover(fresh, keep, d, rc, teacher=t.model, progress=span(progress, 0.7, 1.0))
    return {
        "config": cfg,
        "kept": list(keep),
        "teacher_acc": accuracy(t.model, d.test.x, d.test.y),
        "inherited": {"start_acc": inherited["cut_acc"], "final_acc": inherited["recovered_acc"],
                      "curve_steps": inherited["curve_steps"], "curve_acc": inherited["curve_acc"]},
        "random_init": {"start_acc": log.test_acc[0], "final_acc": log.test_acc[-1],
                        "curve_steps": log.steps, "curve_acc": log.test_acc,
                        "seconds": time.perf_counter() - t0},
    }


def student_init(cfg: DeleteConfig, progress: Progress = silent, store: Store | None = None) -> dict[str, Any]:
    """DistilBERT-style student (every other teacher block, then KD) against the same shape from scratch."""
    store = store or default_store()
    return store.json("delete-student", cfg, lambda: _student_init(cfg, progress))
