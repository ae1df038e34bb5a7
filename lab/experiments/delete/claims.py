"""Delete layers' claims: the papers' statements, checked against a result's numbers (lab/claims.py).

Each claim function is a declaration: its key, statement and source, the estimate it rests on (lab/estimates.py,
paired on the same held-out inputs wherever two accuracies are compared) and its rule. `run_claims`,
`sweep_claims` and `race_claims` turn the entry points' typed results (experiment.py) into claim records when a
result is read (`lab.claims.of`); they are never stored in it, so a rewording here recomputes nothing.

What each verdict generalises over (lab/claims.py, `over`): deleting blocks of one trained network (single
deletions, the gradual decline, the selection methods) is about these trained networks, over their held-out inputs;
anything that compares a recovered (fine-tuned) network with its teacher, two recoveries (KD against CE) or the two
architectures is about a recipe, over training seeds (one seed: "cannot tell (one trained network)"). No verdict
rests on a choice made on the inputs it is tested on: single deletions are each tested (no worst or best block is
picked), and the race's step is chosen on the even-indexed held-out inputs and tested on the odd-indexed ones.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from lab import estimates
from lab.claims import Claim, claim, noise_words, pct, pool, pts, reads, test
from lab.core.model_registry import model
from lab.core.task_facts import task_clause, task_words
from lab.experiments.delete.experiment import (
    DeleteConfig,
    DeleteResult,
    RaceConfig,
    RaceResult,
    SweepConfig,
    SweepResult,
    race,
    run,
    sweep,
)
from lab.ops import selection

NEAR_CHANCE = 0.05  # "drops to chance": at most 5 points above chance (the lab's bar for "near")
BARELY = 0.9  # "barely matters": the worst single deletion keeps at least 90 % of the teacher's accuracy
GRADUAL = 0.5  # "gradually": no further deletion costs more than half the teacher's margin over chance
REACH = 0.01  # "at the teacher": recovered accuracy at most 1 point below it
SAME = 0.02  # "no longer has an advantage": the architectures within 2 points of each other after recovery
AS_GOOD = 0.01  # "at least as good": greedy's cut at most 1 point below block influence's (non-inferiority margin)
AS_FAST = 0.01  # "at least as fast": KD at most 1 point below CE where the first of them nears the teacher
NEAR_TEACHER = 0.01  # the race is judged at the first curve step where either method is within 1 point of the teacher
OWN_TASK = "synthetic"  # the task the configs default to (DeleteConfig.task)


def setting(task: str = OWN_TASK) -> str:
    """This lab's deletion setting, on the task the result ran on (a claim's source names its data: on the synthetic
    task as it always read, any other task by its label)."""
    return ("this lab's deletion setting: greedy block deletion from plain and residual MLPs (7 blocks of width "
            f"128) on {task_words(task, OWN_TASK, 'a synthetic task')}, then recovery")

_RECOVERY_WORDS = {"kd": "distillation from the teacher", "ce": "fine-tuning on the labels"}

Scores = Any  # per-input outcomes: a packed string (estimates.pack / selection.pack_counts) or an array


def _s(x: Scores) -> np.ndarray:
    return selection.scores(x) if isinstance(x, str) else estimates.as_scores(x)


def _each_block(singles: Sequence[Scores]) -> list[np.ndarray]:
    return [_s(x) for x in singles]


def plain_one_deletion_claim(singles: Sequence[Scores], chance: float, task: str = OWN_TASK) -> Claim:
    """Plain MLP: deleting any one block, with no recovery, leaves accuracy near chance. `singles[i]`: the held-out
    outcomes with block i deleted alone. Every block is tested (no block is picked on the held-out inputs): holds
    when every single deletion is near chance, does not hold when one is above the bar at the Bonferroni z."""
    outs = _each_block(singles)
    ests = [estimates.accuracy(x) for x in outs]
    best = max(range(len(ests)), key=lambda i: ests[i].value)
    e = ests[best]
    return claim(
        "delete.plain-one-deletion-to-chance", "deleting any one layer of a plain MLP drops accuracy to chance",
        "Veit, Wilber, Belongie 2016 (Section 4: removing a layer of a plain network is fatal), in "
        f"{setting(task)}. 'Near chance' as at most 5 points above it is this lab's bar",
        {"best_single_deletion_acc": e.value, "best_single_deletion_block": best, "chance": chance,
         "single_deletion_accs": [x.value for x in ests]},
        f"every single deletion (each of the {len(ests)} blocks deleted alone, no recovery) leaves at most chance + "
        f"{100 * NEAR_CHANCE:.0f} points, each {noise_words(e.se, kind='binomial')} (the least harmful's error "
        f"shown); one deletion above it by the Bonferroni z of the {len(ests)} tests: does not hold. No block is "
        "picked on the held-out inputs: the least harmful one is only named",
        [test(f"block {i} deleted", x, "<=", chance + NEAR_CHANCE) for i, x in enumerate(ests)],
        f"The least harmful single deletion of the plain MLP (block {best}) leaves {pct(e.value)} (chance "
        f"{pct(chance)}).", "plain MLP")


def residual_one_deletion_claim(singles: Sequence[Scores], base: Scores, task: str = OWN_TASK) -> Claim:
    """Residual MLP: deleting any one block barely matters. `singles[i]`: the held-out outcomes with block i
    deleted alone, each paired with the teacher's (`base`). Every block is tested (none is picked on the held-out
    inputs): holds when every single deletion keeps BARELY of the teacher, does not hold when one falls below it
    at the Bonferroni z."""
    outs, b = _each_block(singles), _s(base)
    ests = [estimates.paired(w, BARELY * b) for w in outs]
    worst = min(range(len(outs)), key=lambda i: float(outs[i].mean()))
    w = outs[worst]
    e = ests[worst]
    return claim(
        "delete.residual-one-deletion-barely-matters", "deleting any one block of a residual net barely matters",
        "Veit et al. 2016 (Section 4: residual networks behave like ensembles of shallow paths), on the residual "
        f"MLP of {setting(task)}; 'barely' as at least {BARELY:.0%} of the teacher's accuracy kept is this lab's bar",
        {"worst_single_deletion_acc": float(w.mean()), "worst_single_deletion_block": worst,
         "base_acc": float(b.mean()), "share_kept": float(w.mean() / max(b.mean(), 1e-12)),
         "single_deletion_accs": [float(x.mean()) for x in outs]},
        f"for every single deletion (each of the {len(outs)} blocks deleted alone, no recovery), its accuracy minus "
        f"{BARELY:.0%} of the teacher (paired on the same held-out inputs) is above 0, each "
        f"{noise_words(e.se, kind='paired')} (the most harmful's error shown); one below it by the Bonferroni z of "
        f"the {len(outs)} tests: does not hold. No block is picked on the held-out inputs: the most harmful one is "
        "only named",
        [test(f"block {i} deleted - {BARELY:g} x teacher", x, ">=", 0.0) for i, x in enumerate(ests)],
        f"The most harmful single deletion of the residual MLP (block {worst}) leaves {pct(w.mean())}, "
        f"{pct(w.mean() / max(b.mean(), 1e-12))} of the teacher's {pct(b.mean())}.", "residual MLP")


def gradual_claim(cuts: Sequence[Scores], chance: float, select: str, task: str = OWN_TASK) -> Claim:
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
        "Veit, Wilber, Belongie 2016 (Section 4: the error of a residual network grows smoothly as more blocks are "
        f"removed), in {setting(task)}; {select} deletion, no recovery; 'gradually' as no "
        f"single further deletion costing more than half the margin over chance is this lab's bar",
        {"largest_drop": big["value"], "at_k": k_max, "margin_over_chance": margin, "curve": means,
         "se": big["se"], "se_kind": "paired"},
        f"every further deletion (k - 1 to k, for k = 1 to {len(curve) - 1}, paired on the same held-out inputs) "
        f"costs at most {GRADUAL:.0%} of the teacher's margin over chance ({pts(GRADUAL * margin)}), by more than "
        f"2 standard errors each (the largest step: 2 x {100 * big['se']:.1f} pts); one step above it by the "
        f"Bonferroni z of the {len(tests)} steps: does not hold. Every step is tested: the largest is only named",
        tests,
        f"The largest single step is deleting block number {k_max}: {pct(means[k_max - 1])} to {pct(means[k_max])} "
        f"({pts(-big['value'])}); the teacher's margin over chance is {pts(margin)}; with {len(curve) - 1} of "
        f"{len(curve)} blocks deleted {pct(means[-1])}.", "residual MLP")


def _reach_test(recovered: Scores, base: Scores, name: str) -> dict[str, Any]:
    return test(name, estimates.paired(_s(recovered), _s(base)), ">=", -REACH)


def _reach_source(method: str, task: str = OWN_TASK) -> str:
    return ("Hinton, Vinyals, Dean 2015 (distillation: a smaller student trained on the teacher's soft targets "
            "comes close to the teacher) and Sanh et al. 2019 (DistilBERT, Section 3: a student initialised from "
            f"the teacher's layers), in {setting(task)}; 'at' as at most {100 * REACH:.0f} point below is this lab's "
            f"bar; recovery here: {_RECOVERY_WORDS[method]}")


RECIPE = ("; a claim about the recovery recipe (a fine-tuning run, its own draw of batches), judged over training "
          "seeds")


def recovery_claim(key: str, statement: str, method: str, recovered: Scores, base: Scores, subject: str,
                   extra: str = "", task: str = OWN_TASK, seed: int = 0) -> Claim:
    """After recovery the cut net is at or above its teacher (within REACH), paired on the same inputs. The recovered
    net is one fine-tuning run: a claim about the recovery recipe, over training seeds (`seed`: this run's)."""
    t = _reach_test(recovered, base, "recovered - teacher")
    r, b = float(_s(recovered).mean()), float(_s(base).mean())
    return claim(
        key, statement, _reach_source(method, task),
        {"recovered_acc": r, "base_acc": b, "difference": t["value"]},
        f"recovered minus teacher (paired on the same held-out inputs) is above -{100 * REACH:.0f} point, "
        f"{noise_words(t['se'], kind='paired')}{RECIPE}",
        [t],
        f"{subject}: after {_RECOVERY_WORDS[method]} {pct(r)} against the teacher's {pct(b)} ({pts(t['value'])})"
        f"{extra}.", seeds=[seed], over="seeds")


def deep_recovery_claim(method: str, k: int, n_blocks: int, steps: int,
                        pairs: dict[str, tuple[Scores, Scores]], task: str = OWN_TASK, seed: int = 0) -> Claim:
    """With recovery, even k of n deleted come back to the teacher: for each architecture, {arch: (recovered,
    teacher)} per-input outcomes, each paired; a claim about the recovery recipe, over training seeds."""
    tests = [_reach_test(rec, base, f"{arch}: recovered - teacher") for arch, (rec, base) in pairs.items()]
    measured = {}
    for arch, (rec, base) in pairs.items():
        measured[f"{arch}_recovered_acc"] = float(_s(rec).mean())
        measured[f"{arch}_base_acc"] = float(_s(base).mean())
    detail = " ".join(f"{model(a).label}: {pct(measured[f'{a}_recovered_acc'])} against the teacher's "
                      f"{pct(measured[f'{a}_base_acc'])} ({pts(t['value'])})."
                      for a, t in zip(pairs, tests, strict=True))
    se = max(t["se"] for t in tests)
    return claim(
        f"delete.{method}-recovers-{k}-of-{n_blocks}", f"with recovery, even {k} of {n_blocks} layers deleted come "
        "back to the teacher's accuracy", _reach_source(method, task), measured,
        f"for the plain and the residual MLP each, recovered minus teacher (paired) is above -{100 * REACH:.0f} "
        f"point, {noise_words(se, kind='paired')}; one below it by the Bonferroni z of the {len(tests)}: does not "
        f"hold{RECIPE}",
        tests, f"{k} deleted, {steps} steps of {_RECOVERY_WORDS[method]}: {detail}", seeds=[seed], over="seeds")


def arch_gap_claim(method: str, k: int, plain: Scores, residual: Scores, cut_plain: float,
                   cut_residual: float, task: str = OWN_TASK, seed: int = 0) -> Claim:
    """After recovery at the same k the residual MLP no longer beats the plain one: an equivalence within SAME (two
    one-sided paired tests on the same held-out inputs). Two separately trained architectures, each recovered: a
    claim about the architectures, over training seeds (`seed`: this run's)."""
    e = estimates.paired(_s(residual), _s(plain))
    rp, pp = float(_s(residual).mean()), float(_s(plain).mean())
    return claim(
        f"delete.{method}-erases-architecture-gap", "with recovery, the architecture that survived deletion best "
        "no longer has an advantage",
        f"this lab's comparison after recovery in {setting(task)}, following Veit, Wilber, Belongie 2016 (Section 4: "
        "residual networks survive deletion, plain ones do not); 'no advantage' as within "
        f"{100 * SAME:.0f} points is this lab's bar",
        {"residual_recovered_acc": rp, "plain_recovered_acc": pp, "difference": e.value,
         "residual_cut_acc": cut_residual, "plain_cut_acc": cut_plain, "k": k},
        f"after recovery, residual minus plain (paired on the same held-out inputs) lies within ±{100 * SAME:.0f} "
        f"points, {noise_words(e.se, kind='paired')} from each bound; beyond one bound by the Bonferroni z of the "
        "2: does not hold; a claim about the two architectures (each trained and recovered), judged over training "
        "seeds",
        [test("residual - plain <= bound", e, "<=", SAME), test("residual - plain >= -bound", e, ">=", -SAME)],
        f"With {k} blocks deleted: before recovery residual {pct(cut_residual)}, plain {pct(cut_plain)}; after "
        f"{_RECOVERY_WORDS[method]} residual {pct(rp)}, plain {pct(pp)} ({pts(e.value)}).", seeds=[seed],
        over="seeds")


def selection_claim(k: int, greedy: Scores, influence: Scores, rand: Scores, subject: str,
                    subsets: int, exact: bool = True, draw_accs: Optional[Sequence[float]] = None,
                    task: str = OWN_TASK) -> Claim:
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
        f"trial deletion on a probe split (in {setting(task)}); {rand_words}; held-out accuracy of the cut, no "
        "recovery",
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
               subject: str, task: str = OWN_TASK, seed: int = 0) -> Claim:
    """KD reaches the teacher at least as fast as cross-entropy fine-tuning: at the first curve step where either
    is within NEAR_TEACHER of the teacher (the last step if neither gets there), KD's held-out accuracy is not below
    CE's by more than AS_FAST (paired on the same inputs). The step is a choice made on the held-out inputs, so it
    is made on the even-indexed ones and KD against CE is tested on the odd-indexed ones (the test never sees the
    inputs that chose its step). Two fine-tuning recipes: a claim over training seeds (`seed`: this run's)."""
    b = _s(base)
    ce_s, kd_s = [_s(c) for c in ce], [_s(c) for c in kd]
    near = [j for j in range(len(steps))
            if max(ce_s[j][0::2].mean(), kd_s[j][0::2].mean()) >= b[0::2].mean() - NEAR_TEACHER]
    j = near[0] if near else len(steps) - 1
    e = estimates.paired(kd_s[j][1::2], ce_s[j][1::2])
    return claim(
        "delete.kd-as-fast-as-ce", "distillation reaches the teacher at least as fast as fine-tuning on the labels",
        "Hinton et al. 2015 (soft targets carry more information per training case than hard ones); the race at "
        f"equal steps from the same cut, same batches, and the {100 * AS_FAST:.0f}-point margin are this lab's"
        + task_clause(task, OWN_TASK),
        {"at_step": int(steps[j]), "kd_acc": float(kd_s[j].mean()), "ce_acc": float(ce_s[j].mean()),
         "base_acc": float(b.mean()), "difference": e.value, "reached": bool(near)},
        f"at the first curve step where either method is within {100 * NEAR_TEACHER:.0f} point of the teacher (else "
        "the last), chosen on the even-indexed held-out inputs, KD minus CE on the odd-indexed ones (paired) is "
        f"above -{100 * AS_FAST:.0f} point, {noise_words(e.se, kind='paired')}; two fine-tuning recipes, judged "
        "over training seeds",
        [test("KD - CE", e, ">=", -AS_FAST)],
        f"{subject}: at step {steps[j]} KD {pct(kd_s[j].mean())}, CE {pct(ce_s[j].mean())} (on the odd-indexed "
        f"half {pts(e.value)}); teacher {pct(b.mean())}"
        + ("." if near else f"; neither came within {100 * NEAR_TEACHER:.0f} point."), seeds=[seed], over="seeds")


@reads(DeleteResult)
def run_claims(r: DeleteResult) -> list[Claim]:
    """The claims one deletion run can decide: its architecture's single deletions, its selections, its recovery."""
    c, o = r.config, r.outcomes
    arch, k, n_blocks = c.arch, c.k, r.n_blocks
    who = f"{model(arch).label}, {k} of {n_blocks} deleted"
    out = [plain_one_deletion_claim(o["single"], r.chance, c.task) if arch == "plain" else
           residual_one_deletion_claim(o["single"], o["base"], c.task)]
    if 0 < k < n_blocks:  # k = 0 cuts nothing and k = all leaves one route: every method agrees
        sel = r.selections
        rnd = sel["random"]
        out.append(selection_claim(k, sel["greedy"]["outcomes"], sel["influence"]["outcomes"], rnd["outcomes"],
                                   model(arch).label, rnd["draws"], rnd.get("exact", True), rnd.get("draw_accs"),
                                   c.task))
    if c.recovery != "none" and k > 0:
        out.append(recovery_claim(f"delete.{c.recovery}-reaches-teacher", "after the cut, recovery brings the "
                                  "network back to its teacher's accuracy", c.recovery, o["recovered"], o["base"],
                                  who, f" after {c.steps} steps", c.task, c.seed))
    return out


@reads(RaceResult)
def race_claims(rc: RaceResult) -> list[Claim]:
    """The race's claim (none when nothing was cut or nothing was trained)."""
    c, o = rc.config, rc.outcomes
    if c.k == 0 or c.steps == 0:
        return []
    who = f"{model(c.arch).label}, {c.k} deleted ({c.select})"
    return [race_claim(rc.kd.curve_steps, o["ce"], o["kd"], o["base"], who, c.task, c.seed)]


@reads(SweepResult)
def sweep_claims(sw: SweepResult) -> list[Claim]:
    """The claims the sweep over k (both architectures, one seed) decides."""
    cfg, chance = sw.config, sw.chance
    pl, rs = sw.archs["plain"], sw.archs["residual"]
    n_blocks = len(pl.single_block_acc)
    out = [plain_one_deletion_claim(pl.outcomes["single"], chance, cfg.task),
           residual_one_deletion_claim(rs.outcomes["single"], rs.outcomes["base"], cfg.task),
           gradual_claim(rs.outcomes["cut"][:n_blocks], chance, cfg.select, cfg.task)]
    method = cfg.recovery
    if method != "none" and n_blocks > 1:
        k = n_blocks - 1
        out.append(deep_recovery_claim(method, k, n_blocks, cfg.steps, {
            arch: (a.outcomes["recovered"][k], a.outcomes["base"]) for arch, a in (("plain", pl),
                                                                                       ("residual", rs))}, cfg.task,
                                       cfg.seed))
        out.append(arch_gap_claim(method, k, pl.outcomes["recovered"][k], rs.outcomes["recovered"][k],
                                  pl.rows[k].cut_acc, rs.rows[k].cut_acc, cfg.task, cfg.seed))
    return out


def page_claims(run_result: DeleteResult, sweep_result: Optional[SweepResult],
                race_result: Optional[RaceResult] = None) -> list[Claim]:
    """What the page draws: the sweep's claims (when it is there), then the run's own that the sweep does not make
    (a single-deletion claim is the same numbers in both: the same teacher, the same held-out inputs), then the
    race of KD against CE."""
    first = sweep_claims(sweep_result) if sweep_result is not None else []
    keys = {c.key for c in first}
    out = first + [c for c in run_claims(run_result) if c.key not in keys]
    return out + (race_claims(race_result) if race_result is not None else [])


def claims_of(cfg: DeleteConfig) -> list[Claim]:
    """The page's claims of one setting (Descriptor.claims): the run's, the sweep's and the race's (nothing to race
    when nothing is cut), each read from the store or computed now."""
    return page_claims(run(cfg), sweep(SweepConfig.of(cfg)), race(RaceConfig.of(cfg)) if cfg.k > 0 else None)


def table_claims_of_runs(results: dict[tuple[str, int, int], DeleteResult], seeds: Sequence[int],
                         ks: Sequence[int]) -> list[Claim]:
    """The claims of `python -m lab table delete`: runs keyed (arch, k, seed), KD recovery at each k; each seed's
    claims made on its own runs, then pooled over the seeds (lab.claims.pool)."""
    k = max(ks)
    per_seed = []
    for s in seeds:
        pl, rs = results["plain", ks[0], s], results["residual", ks[0], s]
        n_blocks = pl.n_blocks
        deep = {a: results[a, k, s] for a in ("plain", "residual")}  # the deep-recovery claim compares both
        task = pl.config.task  # one table, one task
        per_seed.append([
            plain_one_deletion_claim(pl.outcomes["single"], pl.chance, task),
            residual_one_deletion_claim(rs.outcomes["single"], rs.outcomes["base"], task),
            deep_recovery_claim("kd", k, n_blocks, deep["plain"].config.steps,
                                {a: (d.outcomes["recovered"], d.outcomes["base"]) for a, d in deep.items()}, task,
                                s),
            arch_gap_claim("kd", k, deep["plain"].outcomes["recovered"], deep["residual"].outcomes["recovered"],
                           deep["plain"].cut_acc, deep["residual"].cut_acc, task, s)])
    return pool(per_seed, list(seeds)) if len(seeds) > 1 else per_seed[0]


def table_claims(sweeps: Sequence[SweepResult]) -> list[Claim]:
    """Claims over sweeps of several seeds (one seed: the sweep's own), pooled over the seeds."""
    per_seed = [sweep_claims(s) for s in sweeps]
    return pool(per_seed, [s.config.seed for s in sweeps]) if len(sweeps) > 1 else per_seed[0]
