"""The statistics under every verdict (lab/estimates.py, lab/claims.py): errors against independent formulas, and
simulated nulls that a rule must pass falsely at most 5 % of the time while it still detects a real effect."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lab import claims as C
from lab import estimates as E

RNG = np.random.default_rng(20261201)


def paired_outcomes(n: int, acc: float, discordant: float, diff: float, gen: np.random.Generator):
    """Two right/wrong vectors on the same n inputs: accuracies about acc and acc - diff, `discordant` of the
    inputs answered differently (the correlation real runs show: ~7 % discordant at ~93 %)."""
    a = gen.random(n) < acc
    b = a.copy()
    # flip a share of inputs in b: right -> wrong with prob p, wrong -> right with prob q, so that
    # P(discordant) = discordant and E[a - b] = diff
    p = (discordant + diff) / 2 / acc
    q = (discordant - diff) / 2 / (1 - acc)
    u = gen.random(n)
    b[a & (u < p)] = False
    b[~a & (u < q)] = True
    return a, b


def test_pack_round_trips_and_rejects_what_is_not_a_vector():
    for n in (1, 7, 8, 9, 4000):
        v = RNG.random(n) < 0.5
        assert np.array_equal(E.unpack(E.pack(v)), v)
    assert len(E.pack(np.ones(4000, bool))) < 700
    for bad in ("", "12", "x:AAAA", "100:AA==", "3:!!"):
        with pytest.raises(ValueError):
            E.unpack(bad)
    with pytest.raises(ValueError):
        E.pack([0.5, 1.0])


def test_paired_error_is_mcnemars_from_the_discordant_counts():
    a, b = paired_outcomes(4000, 0.93, 0.07, 0.01, RNG)
    n10, n01, n = int((a & ~b).sum()), int((~a & b).sum()), 4000
    est = E.paired(a, b)
    assert est.value == pytest.approx((n10 - n01) / n)
    assert est.se == pytest.approx(math.sqrt(n10 + n01 - (n10 - n01) ** 2 / n) / n)
    assert est.se_kind == "paired" and f"{n10 + n01:,} discordant" in est.how
    # the independent-samples error of the same two accuracies is larger: sqrt(2 p (1 - p)) against sqrt(0.07)
    ind = E.independent(E.accuracy(a), E.accuracy(b))
    assert ind.se > 1.3 * est.se


def test_identical_outcomes_leave_one_inputs_worth_of_error():
    a = RNG.random(400) < 0.9
    est = E.paired(a, a)
    assert est.value == 0 and est.se == pytest.approx(1 / 400)


def test_paired_rejects_different_inputs():
    with pytest.raises(ValueError):
        E.paired(np.ones(10), np.ones(11))


def false_holds_rate(sim, runs: int = 600) -> float:
    return sum(1 for _ in range(runs) if sim() is True) / runs


def test_paired_noninferiority_is_calibrated_and_has_power():
    """'at least as good, within a 1-point margin': at a true difference of exactly -1 pt (the null's edge) it holds
    falsely at most 5 % of the time; at a true +0.5 pt (no loss) it is detected most of the time."""
    gen = np.random.default_rng(1)

    def at(diff: float):
        def sim():
            a, b = paired_outcomes(4000, 0.93, 0.07, diff, gen)  # E[a - b] = diff
            return C.test("d", E.paired(a, b), ">=", -0.01)["holds"]
        return sim

    assert false_holds_rate(at(-0.01)) <= 0.05
    assert false_holds_rate(at(0.005), 300) >= 0.8


def test_the_unpaired_error_throws_evidence_away():
    """The same data, judged as unpaired, can hardly ever hold an equivalence that the paired test decides."""
    gen = np.random.default_rng(2)
    paired_wins = unpaired_wins = 0
    for _ in range(200):
        a, b = paired_outcomes(4000, 0.93, 0.05, 0.0, gen)
        d = E.paired(a, b)
        ind = E.independent(E.accuracy(a), E.accuracy(b))
        paired_wins += C.test("|d|", E.Estimate(abs(d.value), d.se, "paired"), "<=", 0.011)["holds"] is True
        unpaired_wins += C.test("|d|", E.Estimate(abs(ind.value), ind.se, "independent"), "<=", 0.011)["holds"] is True
    assert paired_wins > 120 and unpaired_wins < 10


def test_a_random_comparator_needs_its_draw_variance():
    """A fixed selection against the mean of 5 random draws whose accuracies spread by several points: with the
    draws' variance the null 'no better than random' holds falsely at most 5 %; without it far more often."""
    gen = np.random.default_rng(3)
    n, draws = 4000, 5

    def sim(with_draws: bool):
        def run():
            # random selections' accuracies spread as N(0.80, 0.04); the fixed one is exactly as good as their mean
            accs = np.concatenate([[0.80], np.clip(gen.normal(0.80, 0.04, draws), 0.05, 0.95)])
            vecs = [gen.random(n) < p for p in accs]
            fixed, rand = vecs[0], np.mean(vecs[1:], axis=0)
            est = E.paired(fixed, rand, draws=[v.mean() for v in vecs[1:]] if with_draws else None)
            return C.test("d", est, ">=", 0.0)["holds"]
        return run

    assert false_holds_rate(sim(True), 400) <= 0.05
    assert false_holds_rate(sim(False), 400) > 0.15


def test_a_mean_over_few_seeds_is_judged_with_students_t():
    """Seed-to-seed spread far above each run's own error: with 2 or 3 seeds a z-rule on the spread would hold
    falsely ~10 % of the time; with the t factor at most 5 %; a large effect is still found with 5 seeds."""
    gen = np.random.default_rng(4)
    for k in (2, 3, 5):
        def sim(k: int = k):
            ests = [E.Estimate(float(gen.normal(0.0, 0.02)), 0.003, "paired", 4000) for _ in range(k)]
            return C.test("d", E.over_seeds(ests), ">=", 0.0)["holds"]
        assert false_holds_rate(sim, 2000) <= 0.05, k

    def effect():
        ests = [E.Estimate(float(gen.normal(0.06, 0.02)), 0.003, "paired", 4000) for _ in range(5)]
        return C.test("d", E.over_seeds(ests), ">=", 0.0)["holds"]

    assert false_holds_rate(effect, 300) >= 0.8


def test_clustered_rows_need_the_cluster_bootstrap():
    """10 orders x 100 digits, each order and each digit with an effect of its own: the two-way bootstrap keeps the
    false 'above 50 %' at most 5 %, while counting the 1,000 rows as independent passes it far more often."""
    gen = np.random.default_rng(5)

    def sim(bootstrap: bool):
        def run():
            p = 0.5 + gen.normal(0, 0.08, (10, 1)) + gen.normal(0, 0.08, (1, 100))
            rows = (gen.random((10, 100)) < np.clip(p, 0, 1)).astype(float)
            est = E.cluster_bootstrap(rows, draws=300, seed=int(gen.integers(1 << 30))) if bootstrap \
                else E.accuracy(rows.ravel())
            return C.test("acc", est, ">=", 0.5)["holds"]
        return run

    assert false_holds_rate(sim(True), 300) <= 0.05
    assert false_holds_rate(sim(False), 300) > 0.15


def test_claims_are_computed_from_their_tests_and_checked():
    t_yes = C.test("a", E.Estimate(0.05, 0.01, "paired", 4000), ">=", 0.0)
    t_no = C.test("b", E.Estimate(-0.05, 0.01, "paired", 4000), ">=", 0.0)
    t_maybe = C.test("c", E.Estimate(0.01, 0.01, "paired", 4000), ">=", 0.0)
    assert (t_yes["holds"], t_no["holds"], t_maybe["holds"]) == (True, False, None)
    for tests, combine, want in (([t_yes, t_maybe], "all", None), ([t_yes, t_no], "all", False),
                                 ([t_yes, t_no], "any", True), ([t_no, t_maybe], "any", None)):
        c = C.claim("k", "s", "src", {"x": 1.0}, "rule", tests, "detail", combine=combine)
        C.check([c])
        assert c["holds"] is want
        assert c["measured"]["se"] == 0.01 and c["measured"]["se_kind"] == "paired"
        assert (c["settle"] is None) == (want is not None)
    forged = dict(C.claim("k", "s", "src", {"x": 1.0}, "rule", [t_no], "d"), holds=True)
    with pytest.raises(ValueError):
        C.check([forged])
    with pytest.raises(ValueError):
        C.check([{**forged, "holds": False, "measured": {"x": 1.0}}])


def _design_rows(mean: float, varying: float, repeating: float, k: int, n: int) -> np.ndarray:
    """k seeds x n inputs with no residual, d[s, i] = mean + a_s + b_i, whose two-way decomposition is exactly
    (varying, repeating): the seed effects' sample variance is `varying`, the input effects' is `repeating` x n."""
    def unit(m: int) -> np.ndarray:
        x = np.arange(m, dtype=float) - (m - 1) / 2
        return x / x.std(ddof=1)

    return mean + math.sqrt(varying) * unit(k)[:, None] + math.sqrt(repeating * n) * unit(n)[None, :]


def test_settle_names_the_seeds_that_would_decide_at_the_effect_seen():
    """At one seed the between-seed spread is unknown: one run's error stands in, with the pool's t-scaling. A test
    1 se from its threshold needs the smallest k >= 3 with t(k-1) / sqrt(k) <= 1/2 (scipy's t, one-sided at
    Phi(2)): t(5) / sqrt(6) = 0.54, t(6) / sqrt(7) = 0.48, so 7; inputs 4x (2 se instead of 1)."""
    from scipy.stats import norm, t

    level = norm.cdf(2.0)
    assert t.ppf(level, 5) / math.sqrt(6) > 1.0 and t.ppf(level, 6) / math.sqrt(7) <= 1.0
    est = E.Estimate(0.01, 0.01, "paired", 4000)
    s = E.settle(est, 0.0, 2.0)
    assert s["seeds"] == 7 and 16_000 < s["inputs"] <= 16_002 and s["spread"] == "unknown"
    assert E.settle(E.Estimate(0.05, 0.01, "paired", 4000), 0.0, 2.0)["seeds"] == 3  # never fewer than 3
    assert E.settle(E.Estimate(0.0, 0.01, "paired", 10), 0.0, 2.0)["seeds"] is None
    assert E.settle(E.Estimate(0.001, 0.01, "paired", 10), 0.0, 2.0)["seeds"] is None  # beyond MAX_SETTLE_SEEDS
    # with a pool's parts the offer is the k at which the pool's own error decides, and one seed fewer does not:
    # settle and the pool scale the spread alike (the seeds' effects exactly as planned, no residual)
    v, r, gap, n = 1e-4, 9e-6, 0.012, 500
    known = E.settle(E.Estimate(gap, E.Design(v, r, 3, n).se(), "seeds", 3), 0.0, 2.0, seeds_now=3, parts=(v, r))
    k = known["seeds"]
    assert "spread" not in known and k == 7
    fed = E.over_design(_design_rows(gap, v, r, k, n))
    assert fed.se == pytest.approx(math.sqrt((t.ppf(level, k - 1) / 2) ** 2 * v / k + r))
    assert C.test("d", fed, ">=", 0.0)["holds"] is True
    assert C.test("d", E.over_design(_design_rows(gap, v, r, k - 1, n)), ">=", 0.0)["holds"] is None


def test_design_splits_the_error_into_what_varies_and_what_repeats():
    """k seeds x n inputs with no residual: the decomposition returns the parts it was built from, and the error of
    the mean is t-scaled varying / k plus repeating (which more seeds do not shrink)."""
    rows = _design_rows(0.02, 4e-5, 1e-5, 5, 300)
    dz = E.design(rows)
    assert dz.varying == pytest.approx(4e-5) and dz.repeating == pytest.approx(1e-5) and (dz.k, dz.n) == (5, 300)
    assert dz.se(1000) > math.sqrt(1e-5)  # the inputs' part stays
    with pytest.raises(ValueError):
        E.design(rows[:1])


def test_pool_joins_claims_over_seeds():
    """Per-input scores travel with each seed's test, so the pool is an inputs x seeds design; a claim missing at a
    seed is not judged on fewer seeds: it says it cannot be pooled."""
    gen = np.random.default_rng(6)

    def one(diff: float):
        a, b = paired_outcomes(4000, 0.93, 0.07, diff, gen)
        return [C.claim("k", "s", "src", {"x": diff}, "rule", [C.test("d", E.paired(a, b), ">=", 0.0)], "detail")]

    seeds = [one(0.02) for _ in range(4)]
    assert all(s[0]["tests"][0]["scores"].startswith("t:") for s in seeds)
    pooled = C.pool(seeds, [0, 1, 2, 3])
    assert len(pooled) == 1 and pooled[0]["holds"] is True and pooled[0]["over"] == "seeds"
    t0 = pooled[0]["tests"][0]
    assert pooled[0]["measured"]["se_kind"] == "seeds" and t0["n"] == 4 and {"varying", "repeating"} <= set(t0)
    (missing,) = C.pool([one(0.02), []], [0, 1])
    assert missing["holds"] is None and missing["why"] == "cannot be pooled: not measured at seed 1"
