"""Delete layers: remove k blocks from a trained plain or residual MLP, then optionally recover.

`run(cfg)` answers one question (this architecture, this k, this selection, this recovery);
`sweep(cfg)` draws the whole picture for both architectures (every k, before and after recovery);
`race(cfg)` recovers the same cut by fine-tuning and by distillation side by side (which reaches the teacher first);
`shallow(cfg)` trains the one-block MLP from scratch by the teacher's recipe (what 6 of 7 deletions leave);
`student_init(cfg)` compares a student initialised from every other teacher block with a random init.
All go through the store, so a repeated call is a file read. Every accuracy a claim compares keeps its per-input
held-out outcomes under `outcomes` (lab/estimates.pack), so claims pair accuracies measured on the same inputs;
`run_claims`, `sweep_claims` and `race_claim` turn results into `lab.claims` records, decided by tests.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Sequence

import numpy as np

from lab import estimates
from lab.claims import claim, noise_words, pct, pool, pts, test
from lab.core import streams
from lab.core.models import accuracy, correct, per_class_accuracy
from lab.core.recipes import MLP_BLOCKS, MLP_EPOCHS, MLP_WIDTH, mlp_spec
from lab.core.routes import without
from lab.core.zoo import ModelSpec, Trained, build, trained
from lab.experiment import check, entry, param, seed_param
from lab.ops import search, selection
from lab.ops.recover import RECOVERIES, RecoveryConfig, recover
from lab.runtime.plain import to_plain
from lab.runtime.progress import Progress, span

ARCHS = ("plain", "residual")
ARCH_LABELS = {"plain": "plain MLP", "residual": "residual MLP"}
SELECTIONS = ("greedy", "optimal", "evenly-spaced", "influence", "random")
RECOVERY_LABELS = {"none": "none", "ce": "fine-tune (cross-entropy)", "kd": "distil from the teacher (KD)"}
SHALLOW_BLOCKS = 1  # what deleting 6 of 7 blocks leaves: stem, one block, head


@dataclass(frozen=True)
class DeleteConfig:
    """One deletion experiment. Defaults: the classroom run (residual, 2 deleted, greedy, KD 500 steps)."""

    arch: str = param("residual", "plain: each layer feeds the next. residual: each block adds to a running sum.",
                      label="Architecture", choices=ARCHS, labels=ARCH_LABELS)
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

    def __post_init__(self) -> None:
        check(self)
        n_blocks = self.blocks
        if not 0 <= self.k <= n_blocks:
            raise ValueError(f"k={self.k} is out of range: the {n_blocks}-block MLP has {n_blocks} deletable "
                             f"blocks, so choose k in 0..{n_blocks}")
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates recovery and steps

    @property
    def spec(self) -> ModelSpec:
        return mlp_spec(self.arch, self.seed, self.blocks, self.width, self.epochs)

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
    single = [_outcomes(m, d, without(m.n_blocks, [i])) for i in range(m.n_blocks)]
    out = {
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
    }
    out["outcomes"] = {**rec["outcomes"], "base": _outcomes(m, d), "single": single}
    out["claims"] = run_claims(to_plain(out))
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

    @classmethod
    def of(cls, cfg: DeleteConfig) -> "SweepConfig":
        return cls(cfg.select, cfg.recovery, cfg.steps, cfg.seed, cfg.blocks, cfg.width, cfg.epochs)


@entry("delete-sweep")
def sweep(cfg: SweepConfig, progress: Progress) -> dict[str, Any]:
    """Accuracy against blocks deleted, before and after recovery, for plain and residual (cached)."""
    out: dict[str, Any] = {"config": cfg, "archs": {}}
    n_blocks = cfg.blocks
    n_jobs = len(ARCHS) * (n_blocks + 1)
    job = 0
    for arch in ARCHS:
        t = trained(mlp_spec(arch, cfg.seed, cfg.blocks, cfg.width, cfg.epochs),
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
            rows.append({"k": k, "dropped": sorted(dropped), "cut_acc": rec["cut_acc"],
                         "recovered_acc": rec["recovered_acc"]})
            cut.append(rec["outcomes"]["cut"])
            recovered.append(rec["outcomes"]["recovered"])
            job += 1
        single = [_outcomes(m, d, without(m.n_blocks, [i])) for i in range(m.n_blocks)]
        out["archs"][arch] = {
            "base_acc": accuracy(m, d.test.x, d.test.y),
            "single_block_acc": [float(estimates.unpack(o).mean()) for o in single],
            "rows": rows,
            "outcomes": {"base": _outcomes(m, d), "single": single, "cut": cut, "recovered": recovered},
        }
        out["chance"] = d.chance
        out["n_test"] = len(d.test.y)
    out["claims"] = sweep_claims(to_plain(out))
    return out


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

    @classmethod
    def of(cls, cfg: DeleteConfig) -> "RaceConfig":
        return cls(cfg.arch, cfg.k, cfg.select, cfg.steps, cfg.seed, cfg.blocks, cfg.width, cfg.epochs)


@entry("delete-race")
def race(cfg: RaceConfig, progress: Progress) -> dict[str, Any]:
    """CE against KD from the same cut, same steps, same batches: held-out curves with per-input outcomes."""
    t = trained(mlp_spec(cfg.arch, cfg.seed, cfg.blocks, cfg.width, cfg.epochs), span(progress, 0.0, 0.5))
    d, m = t.data, t.model
    dropped = selection.to_drop(cfg.select, m, cfg.k, d.probe.x, d.probe.y, streams.seed_of("select.draw", cfg.seed))
    out: dict[str, Any] = {"config": cfg, "dropped": sorted(dropped), "base_acc": accuracy(m, d.test.x, d.test.y),
                           "n_test": len(d.test.y), "outcomes": {"base": _outcomes(m, d)}}
    for i, method in enumerate(("ce", "kd")):
        rc = RecoveryConfig(method=method if cfg.k > 0 else "none", steps=cfg.steps, seed=cfg.seed)
        rec = _cut_and_recover(t, dropped, rc, span(progress, 0.5 + 0.25 * i, 0.75 + 0.25 * i), curve_outcomes=True)
        out[method] = {"curve_steps": rec["curve_steps"], "curve_acc": rec["curve_acc"]}
        out["outcomes"][method] = rec["outcomes"]["curve"]
    return out


@dataclass(frozen=True)
class ShallowConfig:
    """The one-block MLP (stem, one block, head) trained from scratch by the teacher's recipe."""

    arch: str = "residual"
    seed: int = 0
    width: int = MLP_WIDTH
    epochs: int = MLP_EPOCHS

    @classmethod
    def of(cls, cfg: DeleteConfig) -> "ShallowConfig":
        return cls(cfg.arch, cfg.seed, cfg.width, cfg.epochs)


@entry("delete-shallow")
def shallow(cfg: ShallowConfig, progress: Progress) -> dict[str, Any]:
    """Held-out accuracy of the one-block MLP trained from scratch (its own stored model), with its outcomes."""
    t = trained(mlp_spec(cfg.arch, cfg.seed, SHALLOW_BLOCKS, cfg.width, cfg.epochs), progress)
    d, m = t.data, t.model
    return {"config": cfg, "blocks": SHALLOW_BLOCKS, "acc": accuracy(m, d.test.x, d.test.y), "chance": d.chance,
            "n_test": len(d.test.y), "train_seconds": t.info["seconds"], "outcomes": {"model": _outcomes(m, d)}}


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
        "n_test": len(d.test.y),
    }


# -- claims: the seed's (003) and the papers' statements, checked against a result's numbers --------------------
NEAR_CHANCE = 0.05  # "drops to chance": at most 5 points above chance (the lab's bar for "near")
BARELY = 0.9  # "barely matters": the worst single deletion keeps at least 90 % of the teacher's accuracy
GRADUAL = 0.5  # "gradually": no further deletion costs more than half the teacher's margin over chance
REACH = 0.01  # "at the teacher": recovered accuracy at most 1 point below it
SAME = 0.02  # "no longer has an advantage": the architectures within 2 points of each other after recovery
AS_GOOD = 0.01  # "at least as good": greedy's cut at most 1 point below block influence's (non-inferiority margin)
AS_FAST = 0.01  # "at least as fast": KD at most 1 point below CE where the first of them nears the teacher
NEAR_TEACHER = 0.01  # the race is judged at the first curve step where either method is within 1 point of the teacher
SEED_003 = ("this lab's starting experiment (greedy layer deletion from 8 x 128 plain and residual MLPs on a "
            "synthetic task, KD recovery)")
_RECOVERY_WORDS = {"kd": "distillation from the teacher", "ce": "fine-tuning on the labels"}

Scores = Any  # per-input outcomes: a packed string (estimates.pack / selection.pack_counts) or an array


def _s(x: Scores) -> np.ndarray:
    return selection.scores(x) if isinstance(x, str) else estimates.as_scores(x)


def plain_one_deletion_claim(best_single: Scores, chance: float) -> dict[str, Any]:
    """Plain MLP: deleting any one block, with no recovery, leaves accuracy near chance (the held-out outcomes of
    the least harmful single deletion given)."""
    e = estimates.accuracy(_s(best_single))
    return claim(
        "delete.plain-one-deletion-to-chance", "deleting any one layer of a plain MLP drops accuracy to chance",
        SEED_003 + "; Veit et al. 2016 (Section 4) for plain nets in general. 'Near chance' as at most 5 points "
        "above it is this lab's bar",
        {"best_single_deletion_acc": e.value, "chance": chance},
        f"the least harmful single deletion leaves at most chance + {100 * NEAR_CHANCE:.0f} points, "
        f"{noise_words(e.se, kind='binomial')}",
        [test("best single deletion", e, "<=", chance + NEAR_CHANCE)],
        f"The least harmful single deletion of the plain MLP leaves {pct(e.value)} (chance {pct(chance)}).",
        "plain MLP")


def residual_one_deletion_claim(worst_single: Scores, base: Scores) -> dict[str, Any]:
    """Residual MLP: deleting any one block barely matters (worst single deletion and teacher, per input)."""
    w, b = _s(worst_single), _s(base)
    e = estimates.paired(w, BARELY * b)
    return claim(
        "delete.residual-one-deletion-barely-matters", "deleting any one block of a residual net barely matters",
        "Veit et al. 2016 (Section 4: residual networks behave like ensembles of shallow paths), on the residual "
        f"MLP of {SEED_003}; 'barely' as at least {BARELY:.0%} of the teacher's accuracy kept is this lab's bar",
        {"worst_single_deletion_acc": float(w.mean()), "base_acc": float(b.mean()),
         "share_kept": float(w.mean() / max(b.mean(), 1e-12))},
        f"the most harmful single deletion minus {BARELY:.0%} of the teacher (paired on the same held-out inputs) is "
        f"above 0, {noise_words(e.se, kind='paired')}",
        [test(f"worst single deletion - {BARELY:g} x teacher", e, ">=", 0.0)],
        f"The most harmful single deletion of the residual MLP leaves {pct(w.mean())}, "
        f"{pct(w.mean() / max(b.mean(), 1e-12))} of the teacher's {pct(b.mean())}.", "residual MLP")


def gradual_claim(cuts: Sequence[Scores], chance: float, select: str) -> dict[str, Any]:
    """Residual MLP: accuracy declines gradually as blocks are deleted without recovery. `cuts[k]`: the per-input
    held-out outcomes with k blocks deleted (k = 0: the teacher), every k up to all blocks but one."""
    curve = [_s(c) for c in cuts]
    means = [float(c.mean()) for c in curve]
    margin = means[0] - chance
    tests = [test(f"drop from k={k - 1} to k={k}", estimates.paired(curve[k - 1], curve[k]), "<=", GRADUAL * margin)
             for k in range(1, len(curve))]
    k_max = 1 + max(range(len(tests)), key=lambda i: tests[i]["value"])
    big = tests[k_max - 1]
    return claim(
        "delete.residual-declines-gradually", "a residual MLP loses accuracy gradually as layers are deleted",
        f"{SEED_003} ('residual nets lose accuracy gradually'), {select} deletion, no recovery; 'gradually' as no "
        f"single further deletion costing more than half the margin over chance is this lab's bar",
        {"largest_drop": big["value"], "at_k": k_max, "margin_over_chance": margin, "curve": means,
         "se": big["se"], "se_kind": "paired"},
        f"every further deletion (k - 1 to k, for k = 1 to {len(curve) - 1}, paired on the same held-out inputs) "
        f"costs at most {GRADUAL:.0%} of the teacher's margin over chance ({pts(GRADUAL * margin)}), by more than "
        f"2 standard errors each (the largest step: 2 x {100 * big['se']:.1f} pts)",
        tests,
        f"The largest single step is deleting block number {k_max}: {pct(means[k_max - 1])} to {pct(means[k_max])} "
        f"({pts(-big['value'])}); the teacher's margin over chance is {pts(margin)}; with {len(curve) - 1} of "
        f"{len(curve)} blocks deleted {pct(means[-1])}.", "residual MLP")


def _reach_test(recovered: Scores, base: Scores, name: str) -> dict[str, Any]:
    return test(name, estimates.paired(_s(recovered), _s(base)), ">=", -REACH)


def _reach_source(method: str) -> str:
    return (f"{SEED_003} ('both architectures end at or slightly above their teacher, even with 6 of 8 hidden "
            f"layers gone'; 1,500 KD steps in its table, 500 on its page); 'at' as at most {100 * REACH:.0f} point "
            f"below is this lab's bar; recovery here: {_RECOVERY_WORDS[method]}")


def recovery_claim(key: str, statement: str, method: str, recovered: Scores, base: Scores, subject: str,
                   extra: str = "") -> dict[str, Any]:
    """After recovery the cut net is at or above its teacher (within REACH), paired on the same inputs."""
    t = _reach_test(recovered, base, "recovered - teacher")
    r, b = float(_s(recovered).mean()), float(_s(base).mean())
    return claim(
        key, statement, _reach_source(method),
        {"recovered_acc": r, "base_acc": b, "difference": t["value"]},
        f"recovered minus teacher (paired on the same held-out inputs) is above -{100 * REACH:.0f} point, "
        f"{noise_words(t['se'], kind='paired')}",
        [t],
        f"{subject}: after {_RECOVERY_WORDS[method]} {pct(r)} against the teacher's {pct(b)} ({pts(t['value'])})"
        f"{extra}.")


def deep_recovery_claim(method: str, k: int, n_blocks: int, steps: int,
                        pairs: dict[str, tuple[Scores, Scores]]) -> dict[str, Any]:
    """With recovery, even k of n deleted come back to the teacher: for each architecture, {arch: (recovered,
    teacher)} per-input outcomes, each paired."""
    tests = [_reach_test(rec, base, f"{arch}: recovered - teacher") for arch, (rec, base) in pairs.items()]
    measured = {}
    for arch, (rec, base) in pairs.items():
        measured[f"{arch}_recovered_acc"] = float(_s(rec).mean())
        measured[f"{arch}_base_acc"] = float(_s(base).mean())
    detail = " ".join(f"{ARCH_LABELS[a]}: {pct(measured[f'{a}_recovered_acc'])} against the teacher's "
                      f"{pct(measured[f'{a}_base_acc'])} ({pts(t['value'])})."
                      for a, t in zip(pairs, tests, strict=True))
    se = max(t["se"] for t in tests)
    return claim(
        f"delete.{method}-recovers-{k}-of-{n_blocks}", f"with recovery, even {k} of {n_blocks} layers deleted come "
        "back to the teacher's accuracy", _reach_source(method), measured,
        f"for the plain and the residual MLP each, recovered minus teacher (paired) is above -{100 * REACH:.0f} "
        f"point, {noise_words(se, kind='paired')}",
        tests, f"{k} deleted, {steps} steps of {_RECOVERY_WORDS[method]}: {detail}")


def arch_gap_claim(method: str, k: int, plain: Scores, residual: Scores, cut_plain: float,
                   cut_residual: float) -> dict[str, Any]:
    """After recovery at the same k the residual MLP no longer beats the plain one: an equivalence within SAME (two
    one-sided paired tests on the same held-out inputs)."""
    e = estimates.paired(_s(residual), _s(plain))
    rp, pp = float(_s(residual).mean()), float(_s(plain).mean())
    return claim(
        f"delete.{method}-erases-architecture-gap", "with recovery, the architecture that survived deletion best "
        "no longer has an advantage",
        f"{SEED_003} (its try-this: delete 6 with KD and compare plain and residual); 'no advantage' as within "
        f"{100 * SAME:.0f} points is this lab's bar",
        {"residual_recovered_acc": rp, "plain_recovered_acc": pp, "difference": e.value,
         "residual_cut_acc": cut_residual, "plain_cut_acc": cut_plain, "k": k},
        f"after recovery, residual minus plain (paired on the same held-out inputs) lies within ±{100 * SAME:.0f} "
        f"points, {noise_words(e.se, kind='paired')} from each bound",
        [test("residual - plain <= bound", e, "<=", SAME), test("residual - plain >= -bound", e, ">=", -SAME)],
        f"With {k} blocks deleted: before recovery residual {pct(cut_residual)}, plain {pct(cut_plain)}; after "
        f"{_RECOVERY_WORDS[method]} residual {pct(rp)}, plain {pct(pp)} ({pts(e.value)}).")


def selection_claim(k: int, greedy: Scores, influence: Scores, rand: Scores, subject: str,
                    subsets: int, exact: bool = True, draw_accs: Optional[Sequence[float]] = None) -> dict[str, Any]:
    """Greedy search >= block-influence ranking (non-inferiority, margin AS_GOOD) and block influence > a random
    choice (random: the per-input share over every k-subset when `exact`, else over `subsets` draws whose
    accuracies `draw_accs` add their variance); held-out accuracy of each cut, paired on the same inputs."""
    g, i, r = _s(greedy), _s(influence), _s(rand)
    gi = estimates.paired(g, i)
    ir = estimates.paired(i, r, draws=None if exact else draw_accs)
    rand_words = (f"random is the exact average over all {subsets} subsets of {k} blocks" if exact else
                  f"random is the mean of {subsets} random subsets, their spread added to the error")
    return claim(
        "delete.greedy-beats-influence-beats-random", "greedy search picks blocks to delete at least as well as "
        "ranking by block influence, which beats a random choice",
        "ShortGPT (Men et al. 2024: block influence = 1 - cos(input, output) per token) against greedy "
        f"trial deletion on a probe split ({SEED_003}); {rand_words}; held-out accuracy of the cut, no recovery",
        {"greedy_acc": float(g.mean()), "influence_acc": float(i.mean()), "random_acc": float(r.mean()), "k": k,
         "random_subsets": subsets, "random_exact": exact, "se_greedy_influence": gi.se,
         "se_influence_random": ir.se},
        f"greedy minus influence is above -{100 * AS_GOOD:.0f} point (non-inferiority margin; the same blocks chosen "
        f"pass it), {noise_words(gi.se, kind='paired')}, and influence minus random is above 0, "
        f"{noise_words(ir.se, kind='paired' + (', exact over all subsets' if exact else ', plus draw variance'))}",
        [test("greedy - influence", gi, ">=", -AS_GOOD), test("influence - random", ir, ">=", 0.0)],
        f"{k} deleted: greedy leaves {pct(g.mean())}, block influence {pct(i.mean())}, random {pct(r.mean())} "
        f"({'all' if exact else 'mean of'} {subsets} subsets).", subject)


def race_claim(steps: Sequence[int], ce: Sequence[Scores], kd: Sequence[Scores], base: Scores,
               subject: str) -> dict[str, Any]:
    """KD reaches the teacher at least as fast as cross-entropy fine-tuning: at the first curve step where either
    is within NEAR_TEACHER of the teacher (the last step if neither gets there), KD's held-out accuracy is not below
    CE's by more than AS_FAST (paired on the same inputs)."""
    b = _s(base)
    ce_s, kd_s = [_s(c) for c in ce], [_s(c) for c in kd]
    near = [j for j in range(len(steps)) if max(ce_s[j].mean(), kd_s[j].mean()) >= b.mean() - NEAR_TEACHER]
    j = near[0] if near else len(steps) - 1
    e = estimates.paired(kd_s[j], ce_s[j])
    return claim(
        "delete.kd-as-fast-as-ce", "distillation reaches the teacher at least as fast as fine-tuning on the labels",
        "Hinton et al. 2015 (soft targets carry more information per training case than hard ones); the race at "
        f"equal steps from the same cut, same batches, and the {100 * AS_FAST:.0f}-point margin are this lab's",
        {"at_step": int(steps[j]), "kd_acc": float(kd_s[j].mean()), "ce_acc": float(ce_s[j].mean()),
         "base_acc": float(b.mean()), "difference": e.value, "reached": bool(near)},
        f"at the first curve step where either method is within {100 * NEAR_TEACHER:.0f} point of the teacher (else "
        f"the last), KD minus CE (paired on the same held-out inputs) is above -{100 * AS_FAST:.0f} point, "
        f"{noise_words(e.se, kind='paired')}",
        [test("KD - CE", e, ">=", -AS_FAST)],
        f"{subject}: at step {steps[j]} KD {pct(kd_s[j].mean())}, CE {pct(ce_s[j].mean())} ({pts(e.value)}); "
        f"teacher {pct(b.mean())}" + ("." if near else f"; neither came within {100 * NEAR_TEACHER:.0f} point."))


def run_claims(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims one deletion run can decide: its architecture's single deletions, its selections, its recovery."""
    c, o = r["config"], r["outcomes"]
    arch, k, n_blocks = c["arch"], c["k"], r["n_blocks"]
    who = f"{ARCH_LABELS[arch]}, {k} of {n_blocks} deleted"
    single = r["single_block_acc"]
    out = [plain_one_deletion_claim(o["single"][max(range(n_blocks), key=single.__getitem__)], r["chance"])
           if arch == "plain" else
           residual_one_deletion_claim(o["single"][min(range(n_blocks), key=single.__getitem__)], o["base"])]
    if 0 < k < n_blocks:  # k = 0 cuts nothing and k = all leaves one route: every method agrees
        sel = r["selections"]
        rnd = sel["random"]
        out.append(selection_claim(k, sel["greedy"]["outcomes"], sel["influence"]["outcomes"], rnd["outcomes"],
                                   ARCH_LABELS[arch], rnd["draws"], rnd.get("exact", True), rnd.get("draw_accs")))
    if c["recovery"] != "none" and k > 0:
        out.append(recovery_claim(f"delete.{c['recovery']}-reaches-teacher", "after the cut, recovery brings the "
                                  "network back to its teacher's accuracy", c["recovery"], o["recovered"], o["base"],
                                  who, f" after {c['steps']} steps"))
    return out


def race_claims(rc: dict[str, Any]) -> list[dict[str, Any]]:
    """The race's claim (none when nothing was cut or nothing was trained)."""
    c, o = rc["config"], rc["outcomes"]
    if c["k"] == 0 or c["steps"] == 0:
        return []
    who = f"{ARCH_LABELS[c['arch']]}, {c['k']} deleted ({c['select']})"
    return [race_claim(rc["kd"]["curve_steps"], o["ce"], o["kd"], o["base"], who)]


def sweep_claims(sw: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims the sweep over k (both architectures, one seed) decides."""
    cfg, chance = sw["config"], sw["chance"]
    pl, rs = sw["archs"]["plain"], sw["archs"]["residual"]
    n_blocks = len(pl["single_block_acc"])
    best = max(range(n_blocks), key=pl["single_block_acc"].__getitem__)
    worst = min(range(n_blocks), key=rs["single_block_acc"].__getitem__)
    out = [plain_one_deletion_claim(pl["outcomes"]["single"][best], chance),
           residual_one_deletion_claim(rs["outcomes"]["single"][worst], rs["outcomes"]["base"]),
           gradual_claim(rs["outcomes"]["cut"][:n_blocks], chance, cfg["select"])]
    method = cfg["recovery"]
    if method != "none" and n_blocks > 1:
        k = n_blocks - 1
        out.append(deep_recovery_claim(method, k, n_blocks, cfg["steps"], {
            arch: (a["outcomes"]["recovered"][k], a["outcomes"]["base"]) for arch, a in (("plain", pl),
                                                                                       ("residual", rs))}))
        out.append(arch_gap_claim(method, k, pl["outcomes"]["recovered"][k], rs["outcomes"]["recovered"][k],
                                  pl["rows"][k]["cut_acc"], rs["rows"][k]["cut_acc"]))
    return out


def page_claims(run_result: dict[str, Any], sweep_result: Optional[dict[str, Any]],
                race_result: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
    """What the page draws: the sweep's claims (when it is there), then the run's own that the sweep does not make
    (a single-deletion claim is the same numbers in both: the same teacher, the same held-out inputs), then the
    race of KD against CE."""
    first = list(sweep_result["claims"]) if sweep_result is not None else []
    keys = {c["key"] for c in first}
    out = first + [c for c in run_result["claims"] if c["key"] not in keys]
    return out + (race_claims(race_result) if race_result is not None else [])


def claims_of(cfg: DeleteConfig, compute: Callable[..., Any] = lambda fn, c: fn(c)) -> list[dict[str, Any]]:
    """The page's claims of one setting (Descriptor.claims): the run, the sweep and the race, each from the store
    (or computed by `compute(entry, config)`)."""
    return page_claims(compute(run, cfg), compute(sweep, SweepConfig.of(cfg)), compute(race, RaceConfig.of(cfg)))


def table_claims_of_runs(results: dict[tuple[str, int, int], dict[str, Any]], seeds: Sequence[int],
                         ks: Sequence[int]) -> list[dict[str, Any]]:
    """The claims of `python -m lab table delete`: runs keyed (arch, k, seed), KD recovery at each k; each seed's
    claims made on its own runs, then pooled over the seeds (lab.claims.pool)."""
    k = max(ks)
    per_seed = []
    for s in seeds:
        pl, rs = results["plain", ks[0], s], results["residual", ks[0], s]
        n_blocks = pl["n_blocks"]
        best = max(range(n_blocks), key=pl["single_block_acc"].__getitem__)
        worst = min(range(n_blocks), key=rs["single_block_acc"].__getitem__)
        deep = {a: results[a, k, s] for a in ARCHS}
        per_seed.append([
            plain_one_deletion_claim(pl["outcomes"]["single"][best], pl["chance"]),
            residual_one_deletion_claim(rs["outcomes"]["single"][worst], rs["outcomes"]["base"]),
            deep_recovery_claim("kd", k, n_blocks, deep["plain"]["config"]["steps"],
                                {a: (deep[a]["outcomes"]["recovered"], deep[a]["outcomes"]["base"]) for a in ARCHS}),
            arch_gap_claim("kd", k, deep["plain"]["outcomes"]["recovered"], deep["residual"]["outcomes"]["recovered"],
                           deep["plain"]["cut_acc"], deep["residual"]["cut_acc"])])
    return pool(per_seed, list(seeds)) if len(seeds) > 1 else per_seed[0]


def table_claims(sweeps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claims over sweeps of several seeds (one seed: the sweep's own), pooled over the seeds."""
    per_seed = [sweep_claims(s) for s in sweeps]
    return pool(per_seed, [s["config"]["seed"] for s in sweeps]) if len(sweeps) > 1 else per_seed[0]
