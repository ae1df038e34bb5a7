"""The Rearrange and Delete claims: for every claim a synthetic result on which it holds, one on which it does not and
one inside the noise; the records are complete; seeds' spread widens the noise."""

from __future__ import annotations

from typing import Any

import pytest

from lab import claims as C
from lab.experiments import delete as D
from lab.experiments import rearrange as R


# -- Rearrange: synthetic profiles ---------------------------------------------------------------------------------
def fake_profile(model: str = "vit-sequential", base: float = 0.95, chance: float = 0.1, n_test: int = 397,
                 first: float = 0.3, last: float = 0.3, mid: float = 0.9, swap: float = 0.9, repeat: float = 0.3,
                 skip_middle: float = 0.6, parallel: float = 0.8, other: float = 0.8,
                 uniform: float | None = None, seed: int = 0, span_skip=lambda s: 0.9 - 0.1 * s,
                 span_repeat=lambda s: 0.3, loop_peak=lambda s: s, loop_drop: float = 0.05) -> dict[str, Any]:
    """A profile with the real one's keys (every operation, argument, ends, loop count, span window) and chosen
    accuracies; parallel-loop over a span s peaks at K = loop_peak(s), losing loop_drop per step of K away."""
    n = R.n_blocks(model)

    def spanned(op: str, sp: int, k: int) -> float:
        if uniform is not None:
            return uniform
        if op == "parallel-loop":
            return 0.8 - loop_drop * abs(k - loop_peak(sp))
        return {"skip": span_skip(sp), "repeat": span_repeat(sp), "reverse": 0.7, "parallel": 0.8}[op]

    def acc(op: str, b: int | None) -> float:
        if uniform is not None:
            return uniform
        if op == "skip":
            return first if b == 0 else last if b == n - 1 else mid
        return {"swap": swap, "repeat": repeat, "skip-middle": skip_middle, "parallel": parallel}.get(op, other)

    ops: dict[str, dict[str, Any]] = {}
    for ends in R.ENDS:
        for op in R.OPS:
            if op in R.BLOCK_OPS:
                for b in R.valid_blocks(op, n, ends):
                    ops[R.row_key(op, b, ends=ends)] = {"acc": acc(op, b), "block_runs": n}
            elif op in R.REDUCE_OPS or op in R.LOOP_OPS:
                for red in R.REDUCES:
                    for k in range(1, R.MAX_LOOPS + 1):
                        ops[R.row_key(op, None, red, ends, k)] = {"acc": acc(op, None), "block_runs": n}
            else:
                ops[R.row_key(op, ends=ends)] = {"acc": base if op == "identity" else acc(op, None), "block_runs": n}
        for sp in range(1, len(R.middle(n, ends)) + 1):
            for win in R.windows(n, ends, sp):
                for op in R.SPAN_OPS:
                    for red in (R.REDUCES if op in R.REDUCE_OPS else (None,)):
                        for k in (range(1, R.MAX_LOOPS + 1) if op in R.LOOP_OPS else (R.LOOPS,)):
                            ops[R.row_key(op, win[0], red, ends, k, sp)] = {"acc": spanned(op, sp, k)}
    return {"config": {"model": model, "seed": seed}, "model": model, "n_blocks": n, "n_test": n_test,
            "base_acc": base, "chance": chance, "ops": ops}


def verdict(claims: list[dict[str, Any]], name: str) -> bool | None:
    C.check(claims)
    (c,) = [c for c in claims if c["key"].endswith(name)]
    return c["holds"]


@pytest.mark.parametrize("kw,want", [
    (dict(first=0.3, last=0.3, mid=0.9), True),
    (dict(first=0.95, last=0.3, mid=0.9), False),  # skipping the first block is clearly gentler than a middle one
    (dict(first=0.89, last=0.3, mid=0.9), None),  # 1 point below, the standard error of the difference is ~2.2
])
def test_ends_most_sensitive(kw, want):
    assert verdict(R.model_claims([fake_profile(**kw)]), "ends-most-sensitive") is want


@pytest.mark.parametrize("kw,want", [
    (dict(mid=0.93, swap=0.93), True),
    (dict(mid=0.5, swap=0.93), False),
    (dict(mid=0.9 * 0.95, swap=0.93), None),  # exactly at the 90 % bar
])
def test_middle_tolerates_skip_and_swap(kw, want):
    assert verdict(R.model_claims([fake_profile(**kw)]), "middle-tolerates-skip-swap") is want


@pytest.mark.parametrize("kw,want", [
    (dict(mid=0.85, swap=0.93), True),
    (dict(mid=0.93, swap=0.80), False),
    (dict(mid=0.90, swap=0.91), None),
])
def test_swap_cheaper_than_skip(kw, want):
    assert verdict(R.model_claims([fake_profile(**kw)]), "swap-cheaper-than-skip") is want


@pytest.mark.parametrize("kw,want", [
    (dict(repeat=0.3, skip_middle=0.6), True),
    (dict(repeat=0.8, skip_middle=0.5), False),
    (dict(repeat=0.5, skip_middle=0.51), None),
])
def test_repeat_is_compared_with_skipping_the_same_span(kw, want):
    assert verdict(R.model_claims([fake_profile(**kw)]), "repeat-worse-than-skip") is want


def test_repeat_claim_reads_the_whole_middle_skip_not_a_single_block():
    """The old comparison used skipping ONE block (mid); the claim must follow skip-middle alone."""
    a = R.model_claims([fake_profile(repeat=0.5, skip_middle=0.3, mid=0.95)])
    assert verdict(a, "repeat-worse-than-skip") is False
    c = [c for c in a if c["key"].endswith("repeat-worse-than-skip")][0]
    assert c["measured"]["skip_span_acc"] == pytest.approx(0.3)


@pytest.mark.parametrize("kw,want", [
    (dict(parallel=0.85), True),
    (dict(parallel=0.2), False),
    (dict(parallel=0.1 + 0.5 * 0.85), None),  # exactly half the margin over chance
])
def test_parallel_graceful(kw, want):
    assert verdict(R.model_claims([fake_profile(**kw)]), "parallel-graceful") is want


def test_noise_is_the_binomial_error_of_the_models_own_test_set():
    """The same 4-point gap decides on the MLP's 4,000 inputs (2 s.e. = 2.2 pts) and cannot on the ViT's 397 (7.1)."""
    kw = dict(first=0.3, last=0.3, repeat=0.5, skip_middle=0.5 + 0.04)
    mlp = R.model_claims([fake_profile(model="residual", n_test=4000, **kw)])
    vit = R.model_claims([fake_profile(model="vit-sequential", n_test=397, **kw)])
    assert verdict(mlp, "repeat-worse-than-skip") is True
    assert verdict(vit, "repeat-worse-than-skip") is None


def test_seed_spread_widens_the_noise():
    one = [fake_profile(parallel=0.85)]
    two = [fake_profile(parallel=0.85), fake_profile(parallel=0.25, seed=1)]
    assert verdict(R.model_claims(one), "parallel-graceful") is True
    assert verdict(R.model_claims(two), "parallel-graceful") is None  # mean 0.55, but the seeds disagree


@pytest.mark.parametrize("shuffled,want", [(0.9, True), (0.4, False), (0.5 + 0.1 * 0.95, None)])
def test_layershuffle_tolerates_every_operation(shuffled, want):
    seq = fake_profile("vit-sequential", uniform=0.5)
    shu = fake_profile("vit-shuffle", uniform=shuffled)
    c = R.shuffle_claim([seq], [shu])
    C.check([c])
    assert c["holds"] is want


def test_claims_cover_every_model_and_keys_are_unique():
    profs = {mo: [fake_profile(mo)] for mo in R.MODELS}
    cs = R.claims(profs)
    C.check(cs)
    assert len({c["key"] for c in cs}) == len(cs) == 7 * len(R.MODELS) + 1
    assert all("Sun et al" in c["source"] or "Lad et al" in c["source"] or "Freiberger" in c["source"] for c in cs)


@pytest.mark.parametrize("kw,want", [
    (dict(span_skip=lambda s: 0.9 - 0.1 * s, span_repeat=lambda s: 0.3), True),
    (dict(span_skip=lambda s: 0.9 - 0.1 * s, span_repeat=lambda s: 0.3 if s < 4 else 0.8), False),  # not at span 4
    (dict(span_skip=lambda s: 0.5, span_repeat=lambda s: 0.49), None),
])
def test_repeat_worse_than_skip_at_every_span(kw, want):
    assert verdict(R.model_claims([fake_profile(**kw)]), "repeat-worse-than-skip-every-span") is want


@pytest.mark.parametrize("kw,want", [
    (dict(loop_peak=lambda s: 2 * s), True),  # best K 4 at span 2, 8 at span 4, and clearly better there
    (dict(loop_peak=lambda s: 10 - 2 * s), False),  # best K 6 at span 2, 2 at span 4
    (dict(loop_peak=lambda s: 2 * s, loop_drop=0.002), None),  # grows, but the curves are flat within the noise
    (dict(loop_peak=lambda s: 3, loop_drop=0.1), False),  # the same best K at every span, larger K clearly worse
])
def test_best_loops_grow_with_span(kw, want):
    c = [c for c in R.model_claims([fake_profile(**kw)]) if c["key"].endswith("best-loops-grow-with-span")][0]
    assert c["holds"] is want, c["detail"]


def test_span_sweep_averages_every_window_of_a_span():
    prof = fake_profile()
    n = prof["n_blocks"]
    prof["ops"][R.row_key("skip", 1, None, "keep", R.LOOPS, 2)]["acc"] = 0.0  # one of the three windows of span 2
    sw = R.span_sweep(prof)
    assert sw["spans"] == [1, 2, 3, 4] and len(R.windows(n, "keep", 2)) == 3
    assert sw["curves"]["skip"][1] == pytest.approx((0.0 + 2 * 0.7) / 3)
    assert sw["best_loops"] == {"1": 1, "2": 2, "3": 3, "4": 4}


# -- Delete --------------------------------------------------------------------------------------------------------
N = 4000


@pytest.mark.parametrize("best,want", [(0.06, True), (0.5, False), (0.10, None)])
def test_plain_one_deletion_to_chance(best, want):
    c = D.plain_one_deletion_claim([best], 0.05, N)
    C.check([c])
    assert c["key"] == "delete.plain-one-deletion-to-chance" and c["holds"] is want


@pytest.mark.parametrize("worst,want", [(0.90, True), (0.5, False), (0.9 * 0.92, None)])
def test_residual_one_deletion_barely_matters(worst, want):
    assert D.residual_one_deletion_claim([worst], [0.92], N)["holds"] is want


@pytest.mark.parametrize("curve,want", [
    ([0.92, 0.90, 0.88, 0.80, 0.70, 0.60, 0.45], True),
    ([0.92, 0.10, 0.08, 0.07, 0.06, 0.05, 0.05], False),
    ([0.92, 0.90, 0.90 - 0.5 * 0.87, 0.40, 0.35, 0.30, 0.25], None),  # a step of exactly half the margin
])
def test_residual_declines_gradually(curve, want):
    c = D.gradual_claim([curve], 0.05, N, "greedy")
    C.check([c])
    assert c["holds"] is want


@pytest.mark.parametrize("rec,want", [(0.93, True), (0.85, False), (0.91, None)])
def test_recovery_reaches_teacher(rec, want):
    c = D.recovery_claim("delete.kd-reaches-teacher", "s", "kd", [rec], [0.92], N, "plain MLP, 2 of 7 deleted")
    assert c["holds"] is want


@pytest.mark.parametrize("plain,want", [(0.92, True), (0.85, False), (0.90, None)])
def test_architecture_gap_after_recovery(plain, want):
    c = D.arch_gap_claim("kd", 6, [plain], [0.92], [0.05], [0.30], N)
    C.check([c])
    assert c["holds"] is want


@pytest.mark.parametrize("g,i,r,want", [(0.8, 0.7, 0.5, True), (0.6, 0.7, 0.5, False), (0.7, 0.7, 0.5, None)])
def test_greedy_beats_influence_beats_random(g, i, r, want):
    assert D.selection_claim(2, [g], [i], [r], N, "residual MLP")["holds"] is want


def fake_run(arch: str = "residual", k: int = 2, recovery: str = "kd", single=None, recovered: float = 0.93,
             sel=(0.8, 0.7, 0.5)) -> dict[str, Any]:
    single = single or ([0.06] * 7 if arch == "plain" else [0.9] * 7)
    return {"config": {"arch": arch, "k": k, "recovery": recovery, "steps": 500, "select": "greedy"},
            "n_test": N, "n_blocks": 7, "chance": 0.05, "base_acc": 0.92, "recovered_acc": recovered,
            "single_block_acc": single,
            "selections": {m: {"test_acc": a} for m, a in zip(("greedy", "influence", "random"), sel, strict=True)}}


def fake_sweep(plain_single=0.06, res_curve=(0.92, 0.90, 0.88, 0.80, 0.70, 0.60, 0.45, 0.1), rec=0.93,
               recovery: str = "kd") -> dict[str, Any]:
    def arch(single, curve):
        return {"base_acc": 0.92, "single_block_acc": single,
                "rows": [{"k": k, "cut_acc": a, "recovered_acc": rec} for k, a in enumerate(curve)]}

    return {"config": {"select": "greedy", "recovery": recovery, "steps": 500}, "n_test": N, "chance": 0.05,
            "archs": {"plain": arch([plain_single] * 7, [0.92] + [0.05] * 7), "residual": arch([0.9] * 7, res_curve)}}


def test_run_and_sweep_claims_are_wired_and_the_page_shows_each_key_once():
    plain = D.run_claims(fake_run("plain"))
    assert [c["key"] for c in plain] == ["delete.plain-one-deletion-to-chance",
                                         "delete.greedy-beats-influence-beats-random", "delete.kd-reaches-teacher"]
    assert all(c["holds"] is True for c in plain)
    assert [c["key"] for c in D.run_claims(fake_run("residual", k=0, recovery="ce"))] == [
        "delete.residual-one-deletion-barely-matters"]  # nothing cut: no selection, no recovery to judge
    sw = fake_sweep()
    sw["claims"] = D.sweep_claims(sw)
    keys = [c["key"] for c in sw["claims"]]
    assert keys == ["delete.plain-one-deletion-to-chance", "delete.residual-one-deletion-barely-matters",
                    "delete.residual-declines-gradually", "delete.kd-recovers-6-of-7",
                    "delete.kd-erases-architecture-gap"]
    assert all(c["holds"] is True for c in sw["claims"])
    page = D.page_claims({"claims": plain}, sw)
    assert len({c["key"] for c in page}) == len(page) == 7
    assert D.page_claims({"claims": plain}, None) == plain
    assert [c["key"] for c in D.sweep_claims(fake_sweep(recovery="none"))] == keys[:3]


def test_the_sweep_gradual_claim_ignores_deleting_every_block():
    """k = 7 leaves the stem and head alone; 'gradual' is about k = 1 .. 6."""
    sw = fake_sweep(res_curve=(0.92, 0.90, 0.88, 0.80, 0.70, 0.60, 0.50, 0.05))
    gradual = [c for c in D.sweep_claims(sw) if c["key"] == "delete.residual-declines-gradually"][0]
    assert gradual["holds"] is True and gradual["measured"]["at_k"] != 7


def test_one_failing_architecture_fails_the_deep_cut_recovery_claim():
    sw = fake_sweep()
    sw["archs"]["plain"]["rows"][6]["recovered_acc"] = 0.80
    deep = [c for c in D.sweep_claims(sw) if c["key"] == "delete.kd-recovers-6-of-7"][0]
    assert deep["holds"] is False


def test_table_claims_of_runs_use_every_seed():
    ks, seeds = (1, 2, 4, 6), (0, 1)
    results = {(a, k, s): {**fake_run(a, k, "kd"), "cut_acc": 0.3, "recovered_acc": 0.91 + 0.001 * s}
               for a in D.ARCHS for k in ks for s in seeds}
    cs = D.table_claims_of_runs(results, seeds, ks)
    C.check(cs)
    assert [c["holds"] for c in cs] == [True, True, None, None, True]  # recovered = teacher: inside the noise
