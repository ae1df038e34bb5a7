"""LayerDrop's claims: the papers' statements checked against a run's profiles, noise included (lab/claims.py).

Every accuracy compared here is measured on the same held-out inputs, so every comparison is paired
(lab/estimates.paired: the spread of the per-input differences, McNemar's error for right/wrong outcomes). Each claim
function is a declaration: key, statement, source, the estimate and the rule. A result's claims are computed when it
is read (`run_claims`, `table_claims`), from the stored profiles and baselines they rest on, never stored in it.

What each verdict generalises over (lab/claims.py, `over`): pruning one trained model (every other against
contiguous cuts or a searched selection, one block removed, block 0 against the others) is about that trained
network, over its held-out inputs; comparing separately trained models (p = 0.5 against p = 0, the best rate near p*,
pruned against trained from scratch or distilled) is about the recipe, over training seeds (one seed: "cannot tell
(one trained network)"). No verdict rests on a rate picked by its accuracy: the p* rule tests the rate nearest p*
against every farther rate.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from lab import claims as C
from lab import estimates as E
from lab.claims import Claim, noise_words, pct, pts, reads
from lab.core.task_facts import config_task, task_clause, task_words
from lab.experiment import Pool, serial
from lab.experiments.layerdrop.experiment import (
    P_GRID,
    BaselineConfig,
    CompareConfig,
    LayerDropResult,
    ProfileConfig,
    distil,
    p_star,
    profile,
    profiles,
    rule_rate,
    scratch,
)
from lab.runtime.progress import silent

PAPER = ("Fan, Grave, Joulin, Reducing Transformer Depth on Demand with Structured Dropout (ICLR 2020): 16-layer "
         "Transformers on language tasks, p = 0.2 or 0.5. Here: ")
AFTER = ", one trained model per rate and seed, pruned with no fine-tuning"
SOURCE = PAPER + "an 8-block residual MLP on a synthetic 20-class task or an 8-block ViT on 8x8 digits" + AFTER
MODEL_WORDS = {"residual": "an 8-block residual MLP", "vit": "an 8-block ViT"}


def source(prof: Any) -> str:
    """The source of a claim on `prof`'s profiles: SOURCE (both models on their own tasks, as it always read) when the
    profile ran on its model's own task, else the model that ran on the task it ran on."""
    task = config_task(prof.config)
    if task is None:
        return SOURCE
    return PAPER + f"{MODEL_WORDS.get(prof.config.model, prof.config.model)} on {task_words(task)}" + AFTER
NEAR = 0.1  # a trained rate "near" p* is within this distance of it
SIMILAR = 0.02  # "about as good as": within 2 points (the non-inferiority margin)
ONE_BLOCK_LOSS = 0.1  # "loses little": at most this share of the above-chance accuracy


def scores(prof: Any, strategy: str, keep: int) -> np.ndarray:
    """Per-input held-out scores of one cut: right/wrong, or for random pruning the per-input mean over its
    subsets (every subset when the space is small)."""
    row = prof.strategies[strategy][keep]
    if "subset_outcomes" in row:
        return np.mean([E.as_scores(o) for o in row["subset_outcomes"]], axis=0)
    return E.as_scores(row["outcomes"])


def _acc(prof: Any, strategy: str, keep: int) -> float:
    return prof.strategies[strategy][keep]["test_acc"]


def _p_of(prof: Any) -> float:
    return prof.config.p


def _seed(prof: Any) -> list[int]:
    """The training seed a profile's model comes from, as the list a recipe claim names (lab/claims.claim)."""
    return [int(prof.config.seed)]


RECIPE = "; separately trained models compared: a claim about the recipe, judged over training seeds"


def half_depth_claim(prof5: Any, prof0: Any, seeds: str = "") -> Claim:
    """p = 0.5 against p = 0, every other block kept (r = N/2), paired over the held-out inputs."""
    nb = prof0.n_blocks
    keep = nb // 2
    acc5, acc0 = _acc(prof5, "every-other", keep), _acc(prof0, "every-other", keep)
    est = E.paired(scores(prof5, "every-other", keep), scores(prof0, "every-other", keep))
    return C.claim(
        "layerdrop.p05-beats-p0-half-depth", "A model trained with LayerDrop p = 0.5 keeps more accuracy than an "
        "ordinary one (p = 0) when pruned to half its depth by keeping every other block", source(prof0),
        {"acc_p05": acc5, "acc_p0": acc0, "keep": keep, "n_test": prof0.n_test},
        f"held-out accuracy at r = {keep} of {nb} (every other) is higher at p = 0.5, {noise_words(est.se)} "
        f"(paired over the same inputs){RECIPE}", [C.test("p = 0.5 minus p = 0", est, ">=", 0.0)],
        f"pruned to {keep} of {nb}{seeds}: p = 0.5 {pct(acc5)}, p = 0 {pct(acc0)} ({pts(acc5 - acc0)}, se "
        f"{100 * est.se:.2f} pts).", seeds=_seed(prof0), over="seeds")


def p_star_claim(by_p: dict[float, Any], keep: int, seeds: str = "") -> Claim:
    """The trained rate nearest p* = 1 - r/N (within NEAR of it; the larger on a tie) against every trained rate
    farther from it (every other pruning), each paired: it holds when the rate at p* beats each far rate (so the
    best of them), and does not hold when some far rate beats it at the Bonferroni z. No rate is chosen by its
    accuracy: which rate is nearest and which are far depends on the trained rates only (the same at every seed),
    so no choice is made on the held-out inputs or on the trained models' own luck (a best far model picked per
    seed would carry its training draw into the pool). No rate near or none far: an exact 0 against 0."""
    first = next(iter(by_p.values()))
    nb, n = first.n_blocks, first.n_test
    ps = p_star(keep, nb)
    accs = {p: _acc(prof, "every-other", keep) for p, prof in sorted(by_p.items())}
    near = [p for p in accs if abs(p - ps) <= NEAR + 1e-9]
    far = [p for p in accs if abs(p - ps) > NEAR + 1e-9]
    listing = ", ".join(f"p = {p:g} {pct(a)}" for p, a in accs.items())
    measured: dict[str, Any] = {"p_star": ps, "keep": keep, "rates": list(accs), "accs": list(accs.values()),
                                "n_test": n}
    if not near or not far:
        tests = [C.test("nearest p* minus farther", E.exact(0.0, "no trained rate near p*" if not near else
                                                               "every trained rate is near p*"), ">=", 0.0)]
        detail = (f"p* = {ps:.2f} for r = {keep} of {nb}{seeds}, and " + ("no trained rate is within "
                  f"{NEAR:g} of it (train one)" if not near else "every trained rate is near it") + f": {listing}.")
    else:
        pn = min(near, key=lambda p: (abs(p - ps), -p))
        sc = {p: scores(by_p[p], "every-other", keep) for p in [pn, *far]}
        tests = [C.test(f"nearest p* minus p = {pf:g}", E.paired(sc[pn], sc[pf]), ">=", 0.0) for pf in far]
        best_far = max(far, key=accs.__getitem__)
        measured.update(nearest_p=pn, best_far_p=best_far)
        detail = (f"r = {keep} of {nb}, p* = {ps:.2f}{seeds}: the trained rate nearest it, p = {pn:g}, "
                  f"{pct(accs[pn])}; the best farther away, p = {best_far:g}, {pct(accs[best_far])} "
                  f"({pts(accs[pn] - accs[best_far])}). All: {listing}.")
    return C.claim(
        "layerdrop.p-star-rule", "To keep r of N blocks, train with p* = 1 − r/N: the best training rate for a kept "
        "depth lies near p*", source(first) + "; only the rates trained here (0, 0.2, 0.5 and the page's p) compete",
        measured, f"the trained rate nearest p* (within {NEAR:g} of it) beats every rate farther from it (every other "
        f"pruning, r = {keep}), each paired over the same inputs by more than {C.Z:g} standard errors; one far rate "
        f"above it by the Bonferroni z of the {len(tests)}: does not hold; none near or none far: cannot tell. No "
        f"rate is picked by its accuracy{RECIPE}",
        tests, detail, subject=f"keep {keep} of {nb}", seeds=_seed(first), over="seeds")


def contiguous_claim(prof: Any) -> Claim:
    """Every other block kept against removing the first or the last half, on the p = 0.5 model (paired)."""
    n, nb = prof.n_test, prof.n_blocks
    r = nb // 2
    eo, first, last = (_acc(prof, s, r) for s in ("every-other", "first", "last"))
    e1 = E.paired(scores(prof, "every-other", r), scores(prof, "first", r))
    e2 = E.paired(scores(prof, "every-other", r), scores(prof, "last", r))
    return C.claim(
        "layerdrop.every-other-beats-contiguous", "Keeping every other block beats removing a contiguous run of "
        "blocks (the first half or the last half)", source(prof) + "; the paper compared these on its LayerDrop model, "
        "here the model trained at p = 0.5",
        {"every_other_acc": eo, "first_half_removed_acc": first, "last_half_removed_acc": last, "keep": r,
         "n_test": n},
        f"every other beats both contiguous cuts at r = {r}, each paired over the same inputs by more than {C.Z:g} "
        "standard errors", [C.test("every other minus first half removed", e1, ">=", 0.0),
                            C.test("every other minus last half removed", e2, ">=", 0.0)],
        f"p = 0.5 pruned to {r} of {nb}: every other {pct(eo)}, first half removed {pct(first)} ({pts(eo - first)}), "
        f"last half removed {pct(last)} ({pts(eo - last)}).", subject="trained at p = 0.5")


def searched_claim(prof: Any) -> Claim:
    """Fan et al.: every other pruning is about as good as a searched selection of the blocks to keep. On the p = 0.5
    model at r = N/2: every other against greedy trial deletion scored on the probe split (the profile's "greedy"
    strategy, lab/ops/search.greedy), non-inferiority with a margin of SIMILAR, paired over the held-out inputs (the
    search never saw them, so no split is needed)."""
    n, nb = prof.n_test, prof.n_blocks
    r = nb // 2
    eo, gr = _acc(prof, "every-other", r), _acc(prof, "greedy", r)
    est = E.paired(scores(prof, "every-other", r), scores(prof, "greedy", r))
    kept = prof.strategies["greedy"][r].get("kept")
    return C.claim(
        "layerdrop.every-other-as-good-as-search", "Keeping every other block is about as good as searching for "
        "the blocks to keep", source(prof) + "; the paper compared every other pruning with a search of the layers "
        "to keep on validation data, here greedy trial deletion scored on the probe split (one block at a time, "
        "the one whose removal costs the least probe accuracy; not an exhaustive search), on the model trained at "
        f"p = 0.5; 'about as good' as within {100 * SIMILAR:g} pts is this lab's bar",
        {"every_other_acc": eo, "searched_acc": gr, "keep": r, "allowed_gap": SIMILAR, "n_test": n,
         **({"searched_kept": list(kept)} if kept is not None else {})},
        f"non-inferiority with a margin of {100 * SIMILAR:g} pts: every other minus searched is above "
        f"-{100 * SIMILAR:g} pts by more than {C.Z:g} standard errors (paired over the same held-out inputs; the "
        "search chose its blocks on the probe split, never on them); below it by as much: does not hold",
        [C.test("every other minus searched", est, ">=", -SIMILAR)],
        f"p = 0.5 pruned to {r} of {nb}: every other {pct(eo)}, searched (greedy on the probe split"
        + (f", kept {kept}" if kept is not None else "") + f") {pct(gr)} ({pts(eo - gr)}).",
        subject="trained at p = 0.5")


def _singles(prof: Any) -> tuple[list[list[int]], list[np.ndarray]]:
    """Every single-block deletion (random pruning at r = N - 1 averages all N of them): subsets and outcomes."""
    row = prof.strategies["random"][prof.n_blocks - 1]
    return row["subsets"], [E.as_scores(o) for o in row["subset_outcomes"]]


def one_block_claim(prof: Any) -> Claim:
    """Veit et al.: one block of an ordinary residual net can go. The mean over every single deletion (exact) keeps
    at least 90 % of the above-chance accuracy: cut - 0.9 base >= 0.1 chance, paired."""
    n, nb, base, chance = prof.n_test, prof.n_blocks, prof.base_acc, prof.chance
    _, outs = _singles(prof)
    cut_scores = np.mean(outs, axis=0)
    cut = float(cut_scores.mean())
    keep = 1 - ONE_BLOCK_LOSS
    est = E.paired(cut_scores, keep * E.as_scores(prof.base_outcomes))
    allowed = ONE_BLOCK_LOSS * (base - chance)
    return C.claim(
        "layerdrop.one-block-costs-little", "An ordinary residual network (no LayerDrop) loses little when one block "
        "is removed", "Veit, Wilber, Belongie (2016), Residual Networks Behave Like Ensembles of Relatively Shallow "
        f"Networks, Sec. 4: ResNets on CIFAR-10/ImageNet. Here: the p = 0 model, the mean over each of its {nb} "
        "blocks removed alone (exact), no fine-tuning" + task_clause(config_task(prof.config), lead="; on "),
        {"base_acc": base, "one_removed_acc": cut, "allowed_loss": allowed, "n_test": n},
        f"removing one block (mean over every block) costs at most {ONE_BLOCK_LOSS:.0%} of the above-chance "
        f"accuracy ({pts(allowed)}): one-removed − {keep:g} × full ≥ {ONE_BLOCK_LOSS:g} × chance, paired over the "
        f"same inputs, by more than {C.Z:g} standard errors",
        [C.test(f"one removed minus {keep:g} x full", est, ">=", ONE_BLOCK_LOSS * chance)],
        f"p = 0: full {pct(base)}, one block removed (mean of all {nb}) {pct(cut)} ({pts(cut - base)}; allowed "
        f"{pts(-allowed)}, chance {pct(chance)}).", subject="trained at p = 0")


def first_block_claim(prof: Any) -> Claim:
    """Blocks are not interchangeable: removing block 0 against the mean over removing each other block (exact;
    block 0 is not in its own comparator), paired."""
    n, nb = prof.n_test, prof.n_blocks
    subsets, outs = _singles(prof)
    others = np.mean([o for s, o in zip(subsets, outs, strict=True) if s != [0]], axis=0)
    first_scores = scores(prof, "first", nb - 1)
    first, rand = float(first_scores.mean()), float(others.mean())
    est = E.paired(others, first_scores)
    p = _p_of(prof)
    return C.claim(
        "layerdrop.first-block-not-interchangeable", "Blocks are not interchangeable: the first block costs more "
        "to remove than another block", "Sun et al. (2024), Transformer Layers as Painters, and Lad et al. (2024), "
        "The Remarkable Robustness of LLMs: the first layers of a deep network are distinct from the middle ones. "
        f"Here: one block of {nb} removed, block 0 against the mean over each of blocks 1..{nb - 1} removed alone "
        "(exact)" + task_clause(config_task(prof.config), lead="; on "),
        {"first_removed_acc": first, "other_removed_acc": rand, "n_test": n},
        f"accuracy without block 0 is below the mean without one of the other blocks, paired over the same inputs, "
        f"by more than {C.Z:g} standard errors", [C.test("other block removed minus block 0 removed", est, ">=", 0.0)],
        f"trained at p = {p:g}, one block removed: block 0 {pct(first)}, another block (mean of {nb - 1}) {pct(rand)} "
        f"({pts(first - rand)}).", subject=f"trained at p = {p:g}")


def claims(by_p: dict[float, Any], keep: int, p: float, scratch_outcomes: Optional[Any] = None,
           distil_outcomes: Optional[Any] = None, seeds: str = "") -> list[Claim]:
    """Every claim one seed's profiles (p = 0, 0.2, 0.5 and the setting's p) and the baselines at r (the per-input
    outcomes of the `scratch` and `distil` results; None when r = N: nothing is pruned) can test at the setting's r
    and p."""
    out = [half_depth_claim(by_p[0.5], by_p[0.0], seeds), p_star_claim(by_p, keep, seeds),
           contiguous_claim(by_p[0.5]), searched_claim(by_p[0.5]), one_block_claim(by_p[0.0]),
           first_block_claim(by_p[p])]
    pruned = scores(by_p[p], "every-other", keep)
    seed = _seed(by_p[p])[0]
    if scratch_outcomes is not None:
        out.append(beats_scratch_claim(pruned, E.as_scores(scratch_outcomes), keep, by_p[p].n_blocks, p,
                                       seeds, source(by_p[p]), seed))
    if distil_outcomes is not None:
        out.append(distillation_claim(pruned, E.as_scores(distil_outcomes), keep, by_p[p].n_blocks, p,
                                      seeds, source(by_p[p]), seed))
    return out


@reads(LayerDropResult)
def run_claims(r: LayerDropResult) -> list[Claim]:
    """The claims of a run, computed when it is read: from its profiles at every reference rate and its depth-r
    baselines (stored results, read again; computed when missing)."""
    c = r.config
    by_p = profiles(c.model, CompareConfig(c.model, c.p, c.seed, c.task).ps, c.seed, task=c.task)
    sc = di = None
    if c.keep < r.n_blocks:
        base = BaselineConfig(c.model, c.keep, c.seed, c.task)
        sc, di = scratch(base).outcomes, distil(base).outcomes
    return claims(by_p, c.keep, c.p, sc, di)


def seed_table_claims(by_p: dict[float, Any], bases: dict[tuple[str, int], Any], keeps: list[int]) -> list[Claim]:
    """One seed's table claims: the half-depth claim, the p* rule at every kept depth and, where the baselines are
    there, both baselines at every kept depth below N against the rule's rate (`bases`: (name, r) -> the
    `scratch` or `distil` result)."""
    nb = by_p[0.0].n_blocks
    out = [half_depth_claim(by_p[0.5], by_p[0.0])] if nb // 2 in keeps else []
    out += [p_star_claim(by_p, r) for r in keeps]
    for r in keeps:
        if ("scratch", r) not in bases:
            continue
        p = rule_rate(r, nb)
        pruned = scores(by_p[p], "every-other", r)
        seed = _seed(by_p[p])[0]
        out.append(beats_scratch_claim(pruned, bases[("scratch", r)].outcomes, r, nb, p, src=source(by_p[p]),
                                       seed=seed))
        out.append(distillation_claim(pruned, bases[("distilled", r)].outcomes, r, nb, p, src=source(by_p[p]),
                                      seed=seed))
    return out


def table_claims(t: dict[str, Any], pool: Pool = serial) -> list[Claim]:
    """The claims of `experiment.table`'s answer, computed when it is read: measured at every seed (paired) on the
    table's profiles and baselines (read from the store by `pool`, as the table computed them), then pooled over the
    seeds (lab/claims.pool: the seeds' spread is the error)."""
    model, seeds, keeps, n = t["model"], t["seeds"], t["keeps"], t["n_blocks"]
    profs = [(p, s) for s in seeds for p in P_GRID]
    bases = [(name, r, s) for s in seeds for r in keeps if r < n for name in ("scratch", "distilled")]
    done = pool([(profile, ProfileConfig(model, p, s)) for p, s in profs]
                + [(scratch if name == "scratch" else distil, BaselineConfig(model, r, s)) for name, r, s in bases],
                silent)
    got_p, got_b = done[:len(profs)], done[len(profs):]
    per_seed = [seed_table_claims({p: g for (p, s2), g in zip(profs, got_p, strict=True) if s2 == s},
                                  {(name, r): g for (name, r, s2), g in zip(bases, got_b, strict=True) if s2 == s},
                                  keeps) for s in seeds]
    return C.pool(per_seed, seeds)


def beats_scratch_claim(pruned: Any, scratch_scores: Any, keep: int, nb: int, p: float,
                        seeds: str = "", src: str = SOURCE, seed: int = 0) -> Claim:
    """The pruned LayerDrop model against a depth-r model trained from scratch: per-input outcomes on the same
    held-out inputs, paired (`src`: `source` of the pruned model's profile). Two trained models: a claim about the
    recipe, over training seeds (`seed`: the models'). At p = 0 an exact 0 against 0 (cannot tell)."""
    a, b = E.as_scores(pruned), E.as_scores(scratch_scores)
    pa, sa = float(a.mean()), float(b.mean())
    est = E.exact(0.0, "p = 0 is no LayerDrop model") if p == 0 else E.paired(a, b)
    why = " (p = 0 is no LayerDrop model: choose p > 0)" if p == 0 else ""
    return C.claim(
        "layerdrop.beats-scratch", "A LayerDrop model pruned to depth r is better than a model of depth r trained "
        "from scratch with the same recipe", src + "; the scratch model here has the same recipe and epochs",
        {"pruned_acc": pa, "scratch_acc": sa, "p": p, "keep": keep, "n_test": int(a.size)},
        f"every-other pruning of the model trained at p > 0 beats the depth-{keep} model from scratch, paired over "
        f"the same inputs by more than {C.Z:g} standard errors{RECIPE}",
        [C.test("pruned minus scratch", est, ">=", 0.0)],
        f"r = {keep} of {nb}{seeds}: trained at p = {p:g} and pruned {pct(pa)}, from scratch {pct(sa)} "
        f"({pts(pa - sa)}){why}.", subject=f"p = {p:g}, keep {keep} of {nb}", seeds=[seed], over="seeds")


def distillation_claim(pruned: Any, distilled_scores: Any, keep: int, nb: int, p: float,
                       seeds: str = "", src: str = SOURCE, seed: int = 0) -> Claim:
    """The pruned LayerDrop model against depth r distilled from the full ordinary model: non-inferiority with a
    margin of SIMILAR (distillation ahead by at most 2 points), paired (`src`: `source` of the pruned model's
    profile). Two trained models: a claim about the recipe, over training seeds (`seed`: the models'). At p = 0 an
    exact 0 against 0 (cannot tell; against the margin it would read as holding)."""
    a, b = E.as_scores(pruned), E.as_scores(distilled_scores)
    pa, da = float(a.mean()), float(b.mean())
    est = E.exact(0.0, "p = 0 is no LayerDrop model") if p == 0 else E.paired(b, a)
    why = " (p = 0 is no LayerDrop model: choose p > 0)" if p == 0 else ""
    return C.claim(
        "layerdrop.about-as-good-as-distillation", "A LayerDrop model pruned to depth r is about as good as "
        "distilling the full model into depth r", src + "; the paper compares with DistilBERT (Sanh et al. "
        "2019), here the p = 0 model's every other blocks distilled by KD for as many inputs as training saw",
        {"pruned_acc": pa, "distilled_acc": da, "p": p, "keep": keep, "allowed_gap": SIMILAR, "n_test": int(a.size)},
        f"non-inferiority with a margin of {100 * SIMILAR:g} pts: distilled minus pruned is below {100 * SIMILAR:g} "
        f"pts by more than {C.Z:g} standard errors (paired over the same inputs); above it by as much: does not "
        f"hold{RECIPE}", [C.test("distilled minus pruned", est, "<=", 0.0 if p == 0 else SIMILAR)],
        f"r = {keep} of {nb}{seeds}: trained at p = {p:g} and pruned {pct(pa)}, distilled {pct(da)} "
        f"({pts(pa - da)}){why}.", subject=f"p = {p:g}, keep {keep} of {nb}", seeds=[seed], over="seeds")
