"""Delete layers: remove k blocks from a trained plain or residual MLP, then optionally recover.

`run(cfg)` answers one question (this architecture, this k, this selection, this recovery);
`sweep(cfg)` draws the whole picture for both architectures (every k, before and after recovery);
`student_init(cfg)` compares a student initialised from every other teacher block with a random init.
All three go through the store, so a repeated call is a file read. Each result carries `claims` (`lab.claims`
records): the seed's and the papers' statements checked against its numbers, with the run's noise.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from typing import Any, Sequence

from lab.claims import all_of, at_least, at_most, binomial_se, claim, diff_se, pct, pts, seeds_se
from lab.core import streams
from lab.core.models import accuracy, per_class_accuracy
from lab.core.recipes import MLP_DEPTH, MLP_EPOCHS, MLP_WIDTH, mlp_spec
from lab.core.routes import without
from lab.core.zoo import ModelSpec, Trained, build, trained
from lab.experiment import check, entry, param, seed_param
from lab.ops import search, selection
from lab.ops.recover import RECOVERIES, RecoveryConfig, recover
from lab.runtime.progress import Progress, span
from lab.runtime.store import to_plain

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
        "single_block_acc": single,
        "selections": _compare_selections(t, cfg.k, cfg.seed),
        "block_influence": search.block_influence(m, d.probe.x),
        "train_seconds": t.info["seconds"],
        "n_test": len(d.test.y),
    }
    out["claims"] = run_claims(to_plain(out))
    return out


@dataclass(frozen=True)
class SweepConfig:
    """Both architectures, every k from 0 to all blocks, one selection method and one recovery."""

    select: str = "greedy"
    recovery: str = "kd"
    steps: int = 500
    seed: int = 0
    depth: int = MLP_DEPTH  # the recipe's MLP (lab/core/recipes.py), as DeleteConfig's defaults
    width: int = MLP_WIDTH
    epochs: int = MLP_EPOCHS

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
        out["n_test"] = len(d.test.y)
    out["claims"] = sweep_claims(to_plain(out))
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
        "n_test": len(d.test.y),
    }


# -- claims: the seed's (003) and the papers' statements, checked against a result's numbers --------------------
NEAR_CHANCE = 0.05  # "drops to chance": at most 5 points above chance (the lab's bar for "near")
BARELY = 0.9  # "barely matters": the worst single deletion keeps at least 90 % of the teacher's accuracy
GRADUAL = 0.5  # "gradually": no further deletion costs more than half the teacher's margin over chance
REACH = 0.01  # "at the teacher": recovered accuracy at most 1 point below it
SAME = 0.02  # "no longer has an advantage": the architectures within 2 points of each other after recovery
SEED_003 = "seed 003 (greedy layer deletion, plain vs residual, KD recovery), 8x128 MLPs on the synthetic task"
_RECOVERY_WORDS = {"kd": "distillation from the teacher", "ce": "fine-tuning on the labels"}


def _mean(vals: Sequence[float]) -> float:
    return sum(vals) / len(vals)


def _seeds(k: int) -> str:
    return f" (mean of {k} seeds)" if k > 1 else ""


def _diff(a: Sequence[float], b: Sequence[float], n: int) -> tuple[float, float]:
    """Mean over seeds of a - b (accuracies on the same n held-out inputs) and its standard error."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    return _mean(d), seeds_se(d, diff_se(_mean(a), _mean(b), n))


def plain_one_deletion_claim(best_single: Sequence[float], chance: float, n: int) -> dict[str, Any]:
    """Plain MLP: deleting any one block, with no recovery, leaves accuracy near chance (the best single deletion
    of each seed given: the held-out accuracy of the least harmful one)."""
    best = _mean(best_single)
    se = seeds_se(best_single, binomial_se(best, n))
    return claim(
        "delete.plain-one-deletion-to-chance", "deleting any one layer of a plain MLP drops accuracy to chance",
        SEED_003 + "; Veit et al. 2016 for plain nets in general. 'Near chance' as at most 5 points above it is "
        "this lab's bar",
        {"best_single_deletion_acc": best, "chance": chance, "se": se},
        f"the least harmful single deletion leaves at most chance + {100 * NEAR_CHANCE:.0f} points, by more than 2 "
        f"standard errors (2 x {100 * se:.1f} pts)",
        at_most(best, chance + NEAR_CHANCE, se),
        f"The least harmful single deletion of the plain MLP leaves {pct(best)} (chance {pct(chance)})"
        f"{_seeds(len(best_single))}.", "plain MLP")


def residual_one_deletion_claim(worst_single: Sequence[float], base: Sequence[float], n: int) -> dict[str, Any]:
    """Residual MLP: deleting any one block barely matters (the worst single deletion of each seed given)."""
    worst, b = _mean(worst_single), _mean(base)
    se = seeds_se(worst_single, binomial_se(worst, n))
    return claim(
        "delete.residual-one-deletion-barely-matters", "deleting any one block of a residual net barely matters",
        "Veit et al. 2016 (residual networks behave like ensembles of shallow paths), on the residual MLP of "
        f"{SEED_003}; 'barely' as at least {BARELY:.0%} of the teacher's accuracy kept is this lab's bar",
        {"worst_single_deletion_acc": worst, "base_acc": b, "share_kept": worst / b, "se": se},
        f"the most harmful single deletion keeps at least {BARELY:.0%} of the teacher's accuracy, by more than 2 "
        f"standard errors (2 x {100 * se:.1f} pts)",
        at_least(worst, BARELY * b, se),
        f"The most harmful single deletion of the residual MLP leaves {pct(worst)}, {pct(worst / b)} of the "
        f"teacher's {pct(b)}{_seeds(len(worst_single))}.", "residual MLP")


def gradual_claim(curves: Sequence[Sequence[float]], chance: float, n: int, select: str) -> dict[str, Any]:
    """Residual MLP: accuracy declines gradually as blocks are deleted without recovery. `curves[s][k]` is the
    held-out accuracy with k blocks deleted at seed s (k = 0: the teacher), every k up to all blocks but one."""
    ks = len(curves[0])
    mean_curve = [_mean([c[k] for c in curves]) for k in range(ks)]
    drops = [mean_curve[k - 1] - mean_curve[k] for k in range(1, ks)]
    k_max = max(range(1, ks), key=lambda k: drops[k - 1])
    d, se = _diff([c[k_max - 1] for c in curves], [c[k_max] for c in curves], n)
    margin = mean_curve[0] - chance
    return claim(
        "delete.residual-declines-gradually", "a residual MLP loses accuracy gradually as layers are deleted",
        f"{SEED_003} ('residual nets lose accuracy gradually'), {select} deletion, no recovery; 'gradually' as no "
        f"single further deletion costing more than half the margin over chance is this lab's bar",
        {"largest_drop": d, "at_k": k_max, "margin_over_chance": margin, "se": se,
         "curve": mean_curve},
        f"no further deletion (k - 1 to k, for k = 1 to {ks - 1}) costs more than {GRADUAL:.0%} of the teacher's "
        f"margin over chance ({pts(GRADUAL * margin)}), by more than 2 standard errors (2 x {100 * se:.1f} pts)",
        at_most(d, GRADUAL * margin, se),
        f"The largest single step is deleting block number {k_max}: {pct(mean_curve[k_max - 1])} to "
        f"{pct(mean_curve[k_max])} ({pts(-d)}); the teacher's margin over chance is {pts(margin)}; with "
        f"{ks - 1} of {ks} blocks deleted {pct(mean_curve[-1])}{_seeds(len(curves))}.", "residual MLP")


def recovery_claim(key: str, statement: str, method: str, recovered: Sequence[float], base: Sequence[float],
                   n: int, subject: str, extra: str = "") -> dict[str, Any]:
    """After recovery the cut net is at or above its teacher (within REACH), each seed's pair given."""
    d, se = _diff(recovered, base, n)
    return claim(
        key, statement, f"{SEED_003} ('both architectures end at or slightly above their teacher, even with 6 of 8 "
        f"hidden layers gone', 1,500 KD steps in its table, 500 on its page); 'at' as at most "
        f"{100 * REACH:.0f} point below is this lab's bar; recovery here: {_RECOVERY_WORDS[method]}",
        {"recovered_acc": _mean(recovered), "base_acc": _mean(base), "difference": d, "se": se},
        f"recovered minus teacher is above -{100 * REACH:.0f} point by more than 2 standard errors "
        f"(2 x {100 * se:.1f} pts)",
        at_least(d, -REACH, se),
        f"{subject}: after {_RECOVERY_WORDS[method]} {pct(_mean(recovered))} against the teacher's "
        f"{pct(_mean(base))} ({pts(d)}){extra}{_seeds(len(base))}.")


def arch_gap_claim(method: str, k: int, plain: Sequence[float], residual: Sequence[float],
                   cut_plain: Sequence[float], cut_residual: Sequence[float], n: int) -> dict[str, Any]:
    """After recovery at the same k the residual MLP no longer beats the plain one (an equivalence, within SAME)."""
    d, se = _diff(residual, plain, n)
    return claim(
        f"delete.{method}-erases-architecture-gap", "with recovery, the architecture that survived deletion best "
        "no longer has an advantage",
        f"{SEED_003} (its try-this: delete 6 with KD and compare plain and residual); 'no advantage' as within "
        f"{100 * SAME:.0f} points is this lab's bar",
        {"residual_recovered_acc": _mean(residual), "plain_recovered_acc": _mean(plain), "difference": d, "se": se,
         "residual_cut_acc": _mean(cut_residual), "plain_cut_acc": _mean(cut_plain), "k": k},
        f"after recovery, |residual - plain| is below {100 * SAME:.0f} points by more than 2 standard errors "
        f"(2 x {100 * se:.1f} pts)",
        at_most(abs(d), SAME, se),
        f"With {k} blocks deleted: before recovery residual {pct(_mean(cut_residual))}, plain "
        f"{pct(_mean(cut_plain))}; after {_RECOVERY_WORDS[method]} residual {pct(_mean(residual))}, plain "
        f"{pct(_mean(plain))} ({pts(d)}){_seeds(len(plain))}.")


def selection_claim(k: int, greedy: Sequence[float], influence: Sequence[float], rand: Sequence[float], n: int,
                    subject: str) -> dict[str, Any]:
    """Greedy search >= block-influence ranking >= a random choice, on held-out accuracy of the cut."""
    d1, se1 = _diff(greedy, influence, n)
    d2, se2 = _diff(influence, rand, n)
    return claim(
        "delete.greedy-beats-influence-beats-random", "greedy search picks better blocks to delete than ranking "
        "by block influence, which beats a random choice",
        "claim 5 of the lab's list (reference/papers.md), after seed 003 (greedy on a probe split) and ShortGPT "
        "(Men et al. 2024, block influence = 1 - cos(input, output)); random is the mean of 5 draws; held-out "
        "accuracy of the cut, no recovery",
        {"greedy_acc": _mean(greedy), "influence_acc": _mean(influence), "random_acc": _mean(rand), "k": k,
         "se_greedy_influence": se1, "se_influence_random": se2},
        f"greedy minus influence and influence minus random are each above 0 by more than 2 standard errors "
        f"(2 x {100 * max(se1, se2):.1f} pts at most); the same blocks chosen cannot tell",
        all_of([at_least(d1, 0.0, se1), at_least(d2, 0.0, se2)]),
        f"{k} deleted: greedy leaves {pct(_mean(greedy))}, block influence {pct(_mean(influence))}, random "
        f"{pct(_mean(rand))}{_seeds(len(greedy))}.", subject)


def run_claims(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims one deletion run can decide: its architecture's single deletions, its selections, its recovery."""
    c, n = r["config"], r["n_test"]
    arch, k, n_blocks = c["arch"], c["k"], r["n_blocks"]
    who = f"{ARCH_LABELS[arch]}, {k} of {n_blocks} deleted"
    out = [plain_one_deletion_claim([max(r["single_block_acc"])], r["chance"], n) if arch == "plain" else
           residual_one_deletion_claim([min(r["single_block_acc"])], [r["base_acc"]], n)]
    if 0 < k < n_blocks:  # k = 0 cuts nothing and k = all leaves one route: every method agrees
        sel = r["selections"]
        out.append(selection_claim(k, [sel["greedy"]["test_acc"]], [sel["influence"]["test_acc"]],
                                   [sel["random"]["test_acc"]], n, ARCH_LABELS[arch]))
    if c["recovery"] != "none" and k > 0:
        out.append(recovery_claim(f"delete.{c['recovery']}-reaches-teacher", "after the cut, recovery brings the "
                                  "network back to its teacher's accuracy", c["recovery"], [r["recovered_acc"]],
                                  [r["base_acc"]], n, who, f" after {c['steps']} steps"))
    return out


def sweep_claims(sw: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims the sweep over k (both architectures) decides."""
    return table_claims([sw])


def page_claims(run_result: dict[str, Any], sweep_result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """What the page draws: the sweep's claims (when it is there), then the run's own that the sweep does not make
    (a single-deletion claim is the same numbers in both: the same teacher, the same held-out inputs)."""
    first = list(sweep_result["claims"]) if sweep_result is not None else []
    keys = {c["key"] for c in first}
    return first + [c for c in run_result["claims"] if c["key"] not in keys]


def table_claims_of_runs(results: dict[tuple[str, int, int], dict[str, Any]], seeds: Sequence[int],
                         ks: Sequence[int]) -> list[dict[str, Any]]:
    """The claims of `python -m lab table delete`: runs keyed (arch, k, seed), KD recovery at each k."""
    any_run = results[ARCHS[0], ks[0], seeds[0]]
    n, chance, n_blocks = any_run["n_test"], any_run["chance"], any_run["n_blocks"]

    def col(arch: str, k: int, field: str) -> list[float]:
        return [results[arch, k, s][field] for s in seeds]

    k = max(ks)
    out = [plain_one_deletion_claim([max(results["plain", ks[0], s]["single_block_acc"]) for s in seeds], chance, n),
           residual_one_deletion_claim([min(results["residual", ks[0], s]["single_block_acc"]) for s in seeds],
                                       col("residual", ks[0], "base_acc"), n)]
    steps = any_run["config"]["steps"]
    for arch in ARCHS:
        out.append(recovery_claim(f"delete.kd-recovers-{k}-of-{n_blocks}", f"with recovery, even {k} of "
                                  f"{n_blocks} layers deleted come back to the teacher's accuracy", "kd",
                                  col(arch, k, "recovered_acc"), col(arch, k, "base_acc"), n,
                                  f"{ARCH_LABELS[arch]}, {k} deleted", f" after {steps} steps"))
        out[-1]["subject"] = ARCH_LABELS[arch]
    out.append(arch_gap_claim("kd", k, col("plain", k, "recovered_acc"), col("residual", k, "recovered_acc"),
                              col("plain", k, "cut_acc"), col("residual", k, "cut_acc"), n))
    return out


def table_claims(sweeps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claims over sweeps of several seeds (one seed: the page's sweep); the seeds' spread is the noise."""
    first = sweeps[0]
    cfg, n, chance = first["config"], first["n_test"], first["chance"]
    pl, rs = [s["archs"]["plain"] for s in sweeps], [s["archs"]["residual"] for s in sweeps]
    n_blocks = len(pl[0]["single_block_acc"])
    out = [plain_one_deletion_claim([max(a["single_block_acc"]) for a in pl], chance, n),
           residual_one_deletion_claim([min(a["single_block_acc"]) for a in rs], [a["base_acc"] for a in rs], n),
           gradual_claim([[row["cut_acc"] for row in a["rows"][:n_blocks]] for a in rs], chance, n, cfg["select"])]
    method = cfg["recovery"]
    if method != "none" and n_blocks > 1:
        k = n_blocks - 1
        per = [recovery_claim(f"delete.{method}-recovers-{k}-of-{n_blocks}", f"with recovery, even {k} of "
                              f"{n_blocks} layers deleted come back to the teacher's accuracy", method,
                              [a["rows"][k]["recovered_acc"] for a in arcs], [a["base_acc"] for a in arcs], n,
                              f"{ARCH_LABELS[arch]}, {k} deleted", f" after {cfg['steps']} steps")
               for arch, arcs in (("plain", pl), ("residual", rs))]
        both = {f"{arch}_{name}": v for arch, c in zip(ARCHS, per, strict=True) for name, v in c["measured"].items()}
        out.append(claim(per[0]["key"], per[0]["claim"], per[0]["source"], both,
                         f"for the plain and the residual MLP each: {per[0]['rule']}",
                         all_of(c["holds"] for c in per), " ".join(c["detail"] for c in per)))
        out.append(arch_gap_claim(method, k, [a["rows"][k]["recovered_acc"] for a in pl],
                                  [a["rows"][k]["recovered_acc"] for a in rs], [a["rows"][k]["cut_acc"] for a in pl],
                                  [a["rows"][k]["cut_acc"] for a in rs], n))
    return out
