"""Rearrange: the papers' claims (Lad et al. 2024, Sun et al. 2024, Freiberger et al. 2024) on profiles, one per
seed of a model, each decided by paired tests on the same held-out inputs (`lab.claims`, `lab.estimates`); computed
when a result is read, from the stored profiles, never stored in it."""

from __future__ import annotations

import math
import statistics
from typing import Any, Sequence

import numpy as np

from lab import estimates
from lab.claims import Claim, Z, claim, noise_words, pct, pts, reads, test
from lab.claims import pool as pool_claims
from lab.core import model_registry
from lab.core.page_models import ModelSeed
from lab.core.routes import middle
from lab.core.task_facts import config_task, task_words
from lab.experiment import Pool, serial
from lab.experiments.rearrange.experiment import MODELS, RearrangeResult, profile
from lab.experiments.rearrange.rows import SUMMARY, row_key, span_sweep
from lab.ops import selection
from lab.ops.route_ops import BLOCK_OPS, LOOPS, MAX_LOOPS, REDUCE_OPS, valid_blocks, windows
from lab.runtime.progress import silent

TOLERATE = 0.9  # "tolerates": keeps at least 90 % of the trained accuracy (the lab's bar; Lad et al.: 72-95 %)
GRACEFUL = 0.5  # "degrades gracefully": keeps at least half of the trained model's margin over chance
FAR_BETTER = 0.10  # "far better": at least 10 points more of its trained accuracy kept, on average
PAPERS_SCALE = ", scored on held-out inputs, where the papers used language models of 24-80 layers and benchmark scores"
OWN_DATA = {"mlp": "a synthetic task", "vit": "8x8 digits"}


def scale(prof: Any) -> str:
    """How the lab's setting departs from the papers', for a claim on `prof`: the model that ran and the data it ran
    on (its own task's wording when the config names none), and nothing of the page's other models."""
    m = model_registry.model(prof.model)
    what = "ViT" if m.family == "vit" else m.label
    task = config_task(prof.config)
    return f"here a {m.blocks}-block {what} on {task_words(task, None, OWN_DATA[m.family])}" + PAPERS_SCALE


# Per-input held-out scores of a profile's rows (the outcomes every claim pairs: the same inputs for every row).
def _o(prof: Any, key: str) -> np.ndarray:
    return selection.scores(prof.outcomes[key])


def _mid(prof: Any, op: str) -> np.ndarray:
    """Per-input share of the middle blocks b for which a block operation (ends kept) gets the input right: the
    exact average over every b."""
    return np.mean([_o(prof, row_key(op, b)) for b in valid_blocks(op, prof.n_blocks, "keep")], axis=0)


def _skip(prof: Any, b: int) -> np.ndarray:
    return _o(prof, row_key("skip", b, ends="include"))


def _base(prof: Any) -> np.ndarray:
    return _o(prof, row_key("identity"))


def _over_windows(prof: Any, op: str, sp: int, kk: int = LOOPS, reduce: str = "mean") -> np.ndarray:
    """Per-input share over every window of span `sp` (ends kept) of a spanned operation."""
    n = prof.n_blocks
    red = reduce if op in REDUCE_OPS else None
    return np.mean([_o(prof, row_key(op, w[0], red, "keep", kk, sp)) for w in windows(n, "keep", sp)], axis=0)


def _halves(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The held-out inputs split in two: a per-seed choice (a worst block, a best loop count, a worst operation) is
    made on the even-numbered ones (`pick`) and tested on the odd-numbered ones (`held`), so that choosing does not
    bias the test and the test's name does not depend on what was chosen."""
    pick = np.arange(n) % 2 == 0
    return pick, ~pick


def _pooled(per_seed: Sequence[list[dict[str, Any]]], profs: Sequence[Any]) -> list[Claim]:
    """One seed's claims as they are; several seeds' pooled (each test's estimate over the seeds' spread)."""
    if len(per_seed) == 1:
        return list(per_seed[0])
    return pool_claims(per_seed, [p.config.seed for p in profs])


def model_claims(profs: Sequence[Any]) -> list[Claim]:
    """The per-model claims of Lad et al. and Sun et al. (one profile per seed; several seeds are pooled: their
    spread is the noise), each a `lab.claims` record decided by paired tests on the same held-out inputs."""
    return _pooled([_model_claims(p) + _sweep_claims(p) for p in profs], profs)


def _model_claims(p: Any) -> list[Claim]:
    mo, n = p.model, p.n_blocks
    who = model_registry.model(mo).label
    base = _base(p)
    b_mean = float(base.mean())
    chance = p.chance
    out = []

    # 1. The ends are the most sensitive: skipping either end costs more than skipping any middle block.
    pick, held = _halves(len(base))
    inner = {b: float(_skip(p, b)[pick].mean()) for b in range(1, n - 1)}
    worst_mid = min(inner, key=inner.get)  # chosen on the even-numbered inputs, tested on the odd ones
    first, last, mid = _skip(p, 0), _skip(p, n - 1), _skip(p, worst_mid)
    e_first, e_last = estimates.paired(mid[held], first[held]), estimates.paired(mid[held], last[held])
    out.append(claim(
        f"rearrange.{mo}.ends-most-sensitive", "the first and last layers are the most sensitive to skipping",
        "Lad et al. 2024 (deleting one layer at a time), and Sun et al. 2024; " + scale(p),
        {"skip_first_acc": float(first.mean()), "skip_last_acc": float(last.mean()),
         "worst_middle_skip_acc": float(mid.mean()), "worst_middle_block": worst_mid, "base_acc": b_mean,
         "se_first": e_first.se, "se_last": e_last.se},
        "skipping the most harmful middle block (chosen on the even-numbered held-out inputs) minus skipping the "
        "first, and minus skipping the last (paired on the odd-numbered held-out inputs), are each above 0, "
        f"{noise_words(max(e_first.se, e_last.se), kind='paired')}",
        [test("worst middle skip - first skip (odd inputs)", e_first, ">=", 0.0),
         test("worst middle skip - last skip (odd inputs)", e_last, ">=", 0.0)],
        f"Skipping the first block leaves {pct(first.mean())}, the last {pct(last.mean())}; the most harmful "
        f"middle skip on the even-numbered inputs (block {worst_mid}) leaves {pct(mid.mean())}; trained "
        f"{pct(b_mean)} (all inputs).", who, over="inputs"))

    # 2. Middle layers tolerate skipping and swapping: each keeps at least 90 % of the trained accuracy.
    skips, swaps = _mid(p, "skip"), _mid(p, "swap")
    e_sk, e_sw = estimates.paired(skips, TOLERATE * base), estimates.paired(swaps, TOLERATE * base)
    sk, sw = float(skips.mean()), float(swaps.mean())
    out.append(claim(
        f"rearrange.{mo}.middle-tolerates-skip-swap", "middle layers tolerate skipping one or swapping two neighbours",
        "Lad et al. 2024 (one deleted or two adjacent swapped layers keep 72-95 % of accuracy); the 90 % "
        "bar is this lab's; " + scale(p),
        {"skip_acc": sk, "swap_acc": sw, "base_acc": b_mean, "skip_share": sk / b_mean, "swap_share": sw / b_mean,
         "se_skip": e_sk.se, "se_swap": e_sw.se},
        f"skipping one middle block and swapping two middle neighbours (each averaged exactly over the middle) minus "
        f"{TOLERATE:.0%} of the trained model (paired on the same held-out inputs) are each above 0, "
        f"{noise_words(max(e_sk.se, e_sw.se), kind='paired')}",
        [test(f"skip - {TOLERATE:g} x trained", e_sk, ">=", 0.0),
         test(f"swap - {TOLERATE:g} x trained", e_sw, ">=", 0.0)],
        f"Skipping keeps {pct(sk / b_mean)} of the trained accuracy ({pct(sk)}), swapping {pct(sw / b_mean)} "
        f"({pct(sw)}); trained {pct(b_mean)}.", who, over="inputs"))

    # 3. Swapping two neighbours costs less than deleting one.
    e = estimates.paired(swaps, skips)
    out.append(claim(
        f"rearrange.{mo}.swap-cheaper-than-skip", "swapping two adjacent middle layers costs less than skipping one",
        "Lad et al. 2024 apply both interventions to every layer; comparing them is this lab's; " + scale(p),
        {"swap_acc": sw, "skip_acc": sk, "difference": e.value},
        f"the mean accuracy after a swap minus after a skip (both over the middle, paired on the same held-out "
        f"inputs) is above 0, {noise_words(e.se, kind='paired')}",
        [test("swap - skip", e, ">=", 0.0)],
        f"Swapping two middle neighbours leaves {pct(sw)} on average, skipping one middle block {pct(sk)}: "
        f"{pts(e.value)}.", who, over="inputs"))

    # 4. Repeating one middle layer over a span is worse than skipping that same span (Sun et al.'s comparison).
    reps, gone = _mid(p, "repeat"), _o(p, row_key("skip-middle"))
    e = estimates.paired(gone, reps)
    rep_each = [float(_o(p, row_key("repeat", b)).mean()) for b in middle(n, "keep")]
    out.append(claim(
        f"rearrange.{mo}.repeat-worse-than-skip", "repeating one middle layer over a span is worse than skipping "
        "that span",
        "Sun et al. 2024 (middle_repeat against skip over the same layers [start, end)); here the span is "
        "the whole middle (every block but the first and last) and the repeated block b is averaged over the "
        "middle; " + scale(p),
        {"repeat_acc": float(reps.mean()), "skip_span_acc": float(gone.mean()), "repeat_min": min(rep_each),
         "repeat_max": max(rep_each), "difference": e.value},
        f"skipping the middle minus running one middle block in each of its slots (mean over b, paired on the same "
        f"held-out inputs) is above 0, {noise_words(e.se, kind='paired')}",
        [test("skip middle - repeat", e, ">=", 0.0)],
        f"Repeating one middle block in place of the middle leaves {pct(reps.mean())} (mean over b; "
        f"{pct(min(rep_each))} to {pct(max(rep_each))}), skipping that same middle {pct(gone.mean())}: "
        f"{pts(e.value)} in favour of skipping.", who, over="inputs"))

    # 5. Running the middle in parallel degrades gracefully: at least half the margin over chance kept.
    par = _o(p, row_key("parallel", reduce="mean"))
    e = estimates.paired(par, GRACEFUL * base + (1 - GRACEFUL) * chance)
    margin = max(b_mean - chance, 1e-9)
    kept = (float(par.mean()) - chance) / margin
    out.append(claim(
        f"rearrange.{mo}.parallel-graceful", "running the middle layers in parallel degrades gracefully",
        "Sun et al. 2024 (the middle layers' outputs averaged; the mean of updates here is the same for "
        "residual blocks); 'gracefully' as at least half the margin over chance kept is this lab's bar; " + scale(p),
        {"parallel_acc": float(par.mean()), "base_acc": b_mean, "chance": chance, "margin_kept": kept},
        f"the middle in parallel (mean of updates) minus (chance + {GRACEFUL:.0%} of the trained model's margin over "
        f"chance), paired on the same held-out inputs, is above 0, {noise_words(e.se, kind='paired')}",
        [test("parallel - (chance + half the margin)", e, ">=", 0.0)],
        f"The middle in parallel gives {pct(par.mean())}, {pct(kept)} of the margin over chance ({pct(chance)}) of "
        f"the trained {pct(b_mean)}; skipping the middle gives {pct(gone.mean())}.", who, over="inputs"))

    # 6. The middle layers share a representation: their outputs are more alike than either end's are to them.
    c = cka_claim(p)
    if c is not None:
        out.append(c)
    return out


def cka_contrasts(m: Sequence[Sequence[float]], n: int) -> tuple[float, float]:
    """From a debiased-CKA matrix over the stem and every block's output (index b + 1: after block b) of an n-block
    model: the mean CKA between two distinct middle blocks' outputs minus the mean CKA between the first block's
    output and each middle block's, and the same minus the last block's with each middle block's."""
    mid = list(middle(n, "keep"))
    mm = statistics.fmean(m[i + 1][j + 1] for i in mid for j in mid if i < j)
    first = statistics.fmean(m[1][j + 1] for j in mid)
    last = statistics.fmean(m[n][j + 1] for j in mid)
    return mm - first, mm - last


def jackknife(full: float, deleted: Sequence[float], how: str) -> estimates.Estimate:
    """A statistic of the held-out inputs with its delete-a-group jackknife error over G groups of inputs
    (sqrt((G-1)/G sum (deleted - their mean)^2)), scaled by Student's t with G - 1 df so that a verdict at Z errors is
    the t-test of the same level. The point estimate is the statistic on every input."""
    g = len(deleted)
    d = np.asarray(deleted, dtype=np.float64)
    se = math.sqrt((g - 1) / g * float(((d - d.mean()) ** 2).sum())) * estimates.t_factor(g - 1)
    return estimates.Estimate(float(full), se, "jackknife", g,
                              f"delete-a-group jackknife over {g} groups of {how}, Student's t with {g - 1} df")


def cka_claim(p: Any) -> Claim | None:
    """Sun et al.'s "the middle layers share a representation space", on the profile's debiased CKA of the state
    after every block (`experiment.similarity`); None for a profile without the jackknife's matrices (or too few
    middle blocks)."""
    sim, n = p.similarity, p.n_blocks
    if not sim.get("cka_jackknife") or len(middle(n, "keep")) < 2:
        return None
    first, last = cka_contrasts(sim["cka"], n)
    deleted = [cka_contrasts(m, n) for m in sim["cka_jackknife"]]
    what = f"{sim['inputs']:,} held-out inputs"
    e_first = jackknife(first, [d[0] for d in deleted], what)
    e_last = jackknife(last, [d[1] for d in deleted], what)
    mid = list(middle(n, "keep"))
    cka = sim["cka"]
    mm = statistics.fmean(cka[i + 1][j + 1] for i in mid for j in mid if i < j)
    return claim(
        f"rearrange.{p.model}.middle-share-representation", "the middle layers share a representation: their "
        "outputs are more alike than the first or the last layer's are to them",
        "Sun et al. 2024, Transformer Layers as Painters (the hidden states of the middle layers are alike by cosine "
        "similarity, the first and last layers' distinct); here the debiased linear CKA (Nguyen et al. 2021) of the "
        f"state after each block over {what}, in place of cosine similarity, with a jackknife error over groups of "
        "inputs; " + scale(p),
        {"cka_middle_middle": mm, "cka_first_middle": mm - first, "cka_last_middle": mm - last,
         "middle_minus_first": first, "middle_minus_last": last, "inputs": sim["inputs"]},
        "the mean debiased CKA between two distinct middle blocks' outputs minus the mean CKA between the first "
        "block's output and each middle block's, and minus the same for the last block's, are each above 0 by more "
        f"than {Z:g} jackknife standard errors (groups of held-out inputs deleted in turn); either one below 0 by "
        "that much (Bonferroni over the two): does not hold",
        [test("middle-middle CKA - first-middle CKA", e_first, ">=", 0.0, unit="CKA"),
         test("middle-middle CKA - last-middle CKA", e_last, ">=", 0.0, unit="CKA")],
        f"Debiased CKA between middle blocks' outputs {mm:.3f} on average; between the first block's output and the "
        f"middle ones {mm - first:.3f}, the last's {mm - last:.3f} (middle blocks {mid[0]} to {mid[-1]}).",
        model_registry.model(p.model).label, over="inputs")


def sweep_claims(profs: Sequence[Any]) -> list[Claim]:
    """Sun et al.'s claims over the span sweep of one model (one profile per seed, pooled; ends kept, parallel by
    mean)."""
    return _pooled([_sweep_claims(p) for p in profs], profs)


def loops_decision(lo: Sequence[np.ndarray], hi: Sequence[np.ndarray]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The tests of "the best K grows with the span" from per-input scores at K = 1..len(lo) of a short span (`lo`)
    and a long one (`hi`): (two tests, joined by "all"; the loop counts they compare).

    Each span's best K is chosen on the even-numbered inputs and the tests are made on the odd-numbered ones, so the
    choice does not bias them. The two counts compared are the short span's best K and the long span's; where they
    are the same K, the long span's best other K (on the even-numbered inputs) stands in for one of them. With
    `small` < `big` the two counts, the claim is an intersection-union test on both spans: at the short span
    acc(small) - acc(big) is above 0 (the short span prefers the smaller count) and at the long span acc(big) -
    acc(small) is above 0 (the long span prefers the larger), each paired and each by Z standard errors; so the
    preference between the two counts must flip towards the larger one as the span grows. The same best K at both
    spans, or a smaller one at the long span, makes one of the two clearly negative (does not hold); a long curve
    that is only steeper than the short one, with the same best K, does not pass the short span's test."""
    pick, held = _halves(len(hi[0]))
    c_lo, c_hi = [float(r[pick].mean()) for r in lo], [float(r[pick].mean()) for r in hi]
    k_lo, k_hi = 1 + int(np.argmax(c_lo)), 1 + int(np.argmax(c_hi))
    if k_lo != k_hi:
        other = k_lo
    else:  # the long span's best other K, on the even-numbered inputs
        other = 1 + max((k for k in range(len(hi)) if k != k_hi - 1), key=c_hi.__getitem__)
    big, small = max(k_hi, other), min(k_hi, other)
    e_short = estimates.paired(lo[small - 1][held], lo[big - 1][held])
    e_long = estimates.paired(hi[big - 1][held], hi[small - 1][held])
    tests = [test("short span: acc at the smaller K - at the larger (odd inputs)", e_short, ">=", 0.0),
             test("long span: acc at the larger K - at the smaller (odd inputs)", e_long, ">=", 0.0)]
    return tests, {"best_k_short": k_lo, "best_k_long": k_hi, "smaller_k": small, "larger_k": big}


def loops_test(prof: Any, lo: int, hi: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """`loops_decision` on a profile's parallel-loop rows (mean of updates, each span averaged over its windows)."""
    rows = {sp: [_over_windows(prof, "parallel-loop", sp, kk) for kk in range(1, MAX_LOOPS + 1)] for sp in (lo, hi)}
    return loops_decision(rows[lo], rows[hi])


def _sweep_claims(p: Any) -> list[Claim]:
    mo = p.model
    who = model_registry.model(mo).label
    sw = span_sweep(p)
    spans = sw["spans"]
    out = []

    # Repeating block b over a window is worse than skipping that window, at every span of two blocks or more.
    tests, parts = [], []
    for i, sp in enumerate(spans):
        if sp < 2:
            continue  # a span of one: repeating b in its own slot is the trained model
        e = estimates.paired(_over_windows(p, "skip", sp), _over_windows(p, "repeat", sp))
        tests.append(test(f"span {sp}: skip - repeat", e, ">=", 0.0))
        parts.append(f"span {sp}: skip {pct(sw['curves']['skip'][i])}, repeat {pct(sw['curves']['repeat'][i])}")
    if tests:
        se = max(t["se"] for t in tests)
        out.append(claim(
            f"rearrange.{mo}.repeat-worse-than-skip-every-span", "at every span, repeating one layer over it is worse "
            "than skipping it",
            "Sun et al. 2024 (middle_repeat against skip over the same [start, end)); here block b is run "
            "in each slot of the window of s blocks from b, averaged exactly over every window of the middle; "
            + scale(p),
            {"spans": [sp for sp in spans if sp >= 2]},
            f"for every span of 2 blocks or more, skipping the window minus repeating its first block in it (paired "
            f"on the same held-out inputs) is above 0, {noise_words(se, kind='paired')} (the largest error)",
            tests, "; ".join(parts) + ".", who, over="inputs"))

    # The best number of loop iterations grows with how many layers run in parallel.
    lo, hi = next((sp for sp in spans if sp >= 2), None), spans[-1]
    if lo is not None and lo != hi:
        tests, ks = loops_test(p, lo, hi)
        small, big = ks["smaller_k"], ks["larger_k"]
        curves = sw["loop_curves"]
        out.append(claim(
            f"rearrange.{mo}.best-loops-grow-with-span", "the best number of loop iterations grows with how many "
            "layers run in parallel",
            f"Sun et al. 2024 (loop_parallel over [start, end), K iterations); here the window of s "
            f"middle blocks from b run in parallel (mean of updates) K = 1..{MAX_LOOPS} times, averaged over every "
            "window; the shortest and the longest span compared; " + scale(p),
            {"span_short": lo, "span_long": hi, **ks, "difference_short": tests[0]["value"],
             "difference_long": tests[1]["value"]},
            "each span's best K chosen on the even-numbered held-out inputs (where they are the same, the long "
            "span's best other K stands in for one); then, on the odd-numbered inputs and paired, at the short span "
            f"({lo}) the accuracy at the smaller of the two counts minus at the larger, and at the long span ({hi}) "
            "the accuracy at the larger minus at the smaller, are both above 0 "
            f"({noise_words(max(t['se'] for t in tests), kind='paired')}): the preference between the two counts "
            "flips towards the larger as the span grows; either one clearly below 0 (Bonferroni over the two): "
            "does not hold",
            tests,
            f"Best K on the even-numbered inputs for a span of {lo}: {ks['best_k_short']}; for a span of {hi}: "
            f"{ks['best_k_long']}; on the odd-numbered inputs, K = {small} against K = {big}: span {lo} "
            f"{pts(tests[0]['value'])} for the smaller, span {hi} {pts(tests[1]['value'])} for the larger (all "
            f"inputs: span {hi} K = {small} {pct(curves[str(hi)][small - 1])}, K = {big} "
            f"{pct(curves[str(hi)][big - 1])}); best K per span on all inputs: "
            + ", ".join(f"{k}: {v}" for k, v in sw["best_loops"].items()) + ".", who, over="inputs"))
    return out


def _shares(prof: Any) -> dict[str, np.ndarray]:
    """Per-input scores of every SUMMARY operation (block operations: the exact mean over the middle blocks),
    divided by the model's trained accuracy: each input's contribution to the share of accuracy kept."""
    n = prof.n_blocks
    b = float(_base(prof).mean())
    out = {}
    for name, _ in SUMMARY:
        if name == "identity":
            continue
        if name in BLOCK_OPS:
            s = _mid(prof, name)
        elif name == "skip-first":
            s = _skip(prof, 0)
        elif name == "skip-last":
            s = _skip(prof, n - 1)
        elif name == "parallel-sum":
            s = _o(prof, row_key("parallel", reduce="sum"))
        else:
            s = _o(prof, row_key(name, reduce="mean"))
        out[name] = s / b
    return out


def _random_var(prof: Any) -> float:
    """The draw variance of the random-order operation's mean accuracy, as a share of the trained accuracy."""
    accs = prof.ops[row_key("random")]["accs"]
    b = float(_base(prof).mean())
    return statistics.variance(accs) / len(accs) / (b * b) if len(accs) > 1 else 0.0


def _plus(e: estimates.Estimate, var: float, words: str) -> estimates.Estimate:
    """`e` with the random orders' draw variance added to its error. Its per-input scores are kept: pooled over
    seeds, the draws' noise is in the seeds' spread (each seed draws its own orders) or, drawn alike, in the part
    that repeats at every seed, so the inputs x seeds design counts it either way."""
    return estimates.Estimate(e.value, math.sqrt(e.se * e.se + var), e.se_kind, e.n, e.how + words, scores=e.scores)


def vit_data(prof: Any) -> str:
    """The data a ViT's profile ran on: 8x8 digits (its own task, as the source always read) or the task's label."""
    return task_words(config_task(prof.config), None, "8x8 digits")


def _shuffle_claim(seq: Any, shu: Any) -> Claim:
    a, b = _shares(seq), _shares(shu)
    names = list(a)
    w = 1.0 / len(names)
    mean_a, mean_b = np.mean([a[k] for k in names], axis=0), np.mean([b[k] for k in names], axis=0)
    draws = (_random_var(seq) + _random_var(shu))
    e_m = _plus(estimates.paired(mean_b, mean_a), w * w * draws, ", plus the random orders' draw variance")
    gaps = {k: float(b[k].mean() - a[k].mean()) for k in names}
    pick, held = _halves(len(mean_a))
    worst = min(names, key=lambda k: float(b[k][pick].mean() - a[k][pick].mean()))  # chosen on the even inputs
    e_w = estimates.paired(b[worst][held], a[worst][held])
    if worst == "random":
        e_w = _plus(e_w, draws, ", plus the random orders' draw variance")
    base_a, base_b = float(_base(seq).mean()), float(_base(shu).mean())
    return claim(
        "rearrange.vit.layershuffle-tolerates-every-operation",
        "a LayerShuffle-trained ViT tolerates every operation far better than the sequential one",
        "Freiberger et al. 2024 (LayerShuffle) test random orders and pruning; the comparison over the Painters' "
        f"operations and the 10-point bar are this lab's; 6-block ViTs on {vit_data(seq)}, both scored on the "
        "same held-out inputs; a claim about the training recipe, so training seeds are its unit",
        {"mean_share_gap": e_m.value, "se_mean": e_m.se, "worst_operation": worst, "worst_share_gap": e_w.value,
         "se_worst": e_w.se, "base_acc_sequential": base_a, "base_acc_shuffle": base_b,
         **{f"gap_{k}": v for k, v in gaps.items()}},
        f"the share of trained accuracy kept, LayerShuffle minus sequential (paired on the same held-out inputs), "
        f"is at least {100 * FAR_BETTER:.0f} points on average over the {len(names)} operations, "
        f"{noise_words(e_m.se, kind='paired')}, and above 0 for the operation where it is smallest (chosen on the "
        f"even-numbered held-out inputs, tested on the odd-numbered ones), {noise_words(e_w.se, kind='paired')}; "
        f"over training seeds (at least 3: one pair of trained networks cannot tell)",
        [test("mean share gap", e_m, ">=", FAR_BETTER),
         test("share gap, the operation where it is smallest (odd inputs)", e_w, ">=", 0.0)],
        f"LayerShuffle keeps {pts(e_m.value)} more of its trained accuracy on average over {len(names)} operations; "
        f"the smallest difference on the even-numbered inputs is {worst}'s, {pts(e_w.value)} on the odd-numbered "
        f"ones ({pts(gaps[worst])} on all); trained accuracy: sequential {pct(base_a)}, LayerShuffle "
        f"{pct(base_b)}.", "ViT", seeds=[int(seq.config.seed)], over="seeds")


def shuffle_claim(seqs: Sequence[Any], shus: Sequence[Any]) -> Claim:
    """LayerShuffle against sequential training (profiles of both ViTs, one per seed, pooled over seeds): the share
    of its trained accuracy each keeps, operation by operation."""
    return _pooled([[_shuffle_claim(a, b)] for a, b in zip(seqs, shus, strict=True)], seqs)[0]


def claims(profiles: dict[str, Sequence[Any]]) -> list[Claim]:
    """Every claim the given profiles can test: {model: [profile per seed]} (the last claim needs both ViTs)."""
    out = [c for mo in profiles for c in model_claims(profiles[mo])]
    if "vit-sequential" in profiles and "vit-shuffle" in profiles:
        out.append(shuffle_claim(profiles["vit-sequential"], profiles["vit-shuffle"]))
    return out


@reads(RearrangeResult)
def result_claims(r: RearrangeResult) -> list[Claim]:
    """The claims of one operation's result: its model's profile's (read from the store)."""
    return model_claims([profile(r.config.model_cfg)])


def compare_claims(comparison: dict[str, Any]) -> list[Claim]:
    """The claims of the page's comparison (`experiment.compare`: every model's profile at one seed)."""
    return claims({mo: [p] for mo, p in comparison["profiles"].items()})


def table_claims(t: dict[str, Any], pool: Pool = serial) -> list[Claim]:
    """The claims of `experiment.table`'s answer on all its seeds (pooled), from its profiles (read from the store by
    `pool`, as the table computed them)."""
    jobs = [(mo, s) for mo in MODELS for s in t["seeds"]]
    per: dict[str, list[Any]] = {}
    for (mo, _), p in zip(jobs, pool([(profile, ModelSeed(mo, s)) for mo, s in jobs], silent), strict=True):
        per.setdefault(mo, []).append(p)
    return claims(per)
