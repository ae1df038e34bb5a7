"""The study's rules under their nulls (issue 58, part 2): 2,000 simulated studies each, through lab.claims.pool and
lab/study/stats.py, with per-seed, per-data-draw and shared-input variance; every false rate's Clopper-Pearson 95 %
upper bound <= 5 %, and the naive rule beside it failing its null on the same draws (its lower bound > 5 %)."""

from __future__ import annotations

import numpy as np
import pytest

from lab.study import stats
from tests import study_sim as S

SIMS = 2000
J = 5
MARGIN = 0.02


def naive_appears(cells: list[stats.Cell]) -> bool:
    """The rule a page would use without the family: "appears from" the first value whose own verdict holds."""
    return any(c.holds for c in cells)


@pytest.fixture(scope="module")
def global_null() -> list[list[stats.Cell]]:
    """No effect anywhere; cells noisier along the knob (model spread and input difficulty grow with it)."""
    rng = np.random.default_rng(58)
    sd = np.linspace(0.01, 0.04, J)
    return [S.cells(rng, [0.0] * J, model=sd, inputs=0.25, noise=0.15, margin=MARGIN) for _ in range(SIMS)]


def test_appears_from_under_the_global_null_and_the_naive_rule_beside(global_null):
    false = sum(stats.appears_from(cs) is not None for cs in global_null)
    naive = sum(naive_appears(cs) for cs in global_null)
    assert S.upper(false, SIMS) <= 0.05, false
    assert S.lower(naive, SIMS) > 0.05, naive  # each value at 2.3 %: about 1 - 0.977^5 of studies mark one


def test_appears_from_under_a_partial_null_marks_no_null_value():
    """The effect is present at the last value only: a mark at any other is false."""
    rng = np.random.default_rng(59)
    mu = [0.0, 0.0, 0.0, 0.0, 0.08]
    false = naive = 0
    for _ in range(SIMS):
        cs = S.cells(rng, mu, margin=MARGIN)
        start = stats.appears_from(cs)
        false += start is not None and start < 4
        naive += any(c.holds for c in cs[:4])
    assert S.upper(false, SIMS) <= 0.05, false
    assert S.lower(naive, SIMS) > 0.05, naive


def test_absent_up_to_when_the_effect_sits_at_the_margin():
    """The effect is exactly the margin at every value: "does not appear" anywhere is false. The naive rule (absent
    wherever the value's own verdict does not hold) says so nearly always."""
    rng = np.random.default_rng(60)
    false = naive = 0
    for _ in range(SIMS):
        cs = S.cells(rng, [MARGIN] * J, margin=MARGIN)
        false += stats.absent_to(cs) is not None
        naive += not cs[0].holds
    assert S.upper(false, SIMS) <= 0.05, false
    assert S.lower(naive, SIMS) > 0.05, naive


def naive_trend(cells: list[stats.Cell]) -> bool:
    """Least squares over every (value, seed) point as if independent, two-sided at the lab's level: the shared
    inputs of a value repeat at every seed, and this rule counts them as k independent draws."""
    from scipy import stats as sp

    x = np.repeat(np.arange(len(cells), dtype=float), len(cells[0].per_seed))
    y = np.concatenate([c.per_seed for c in cells])
    return bool(sp.linregress(x, y).pvalue < 2 * stats.LEVEL)


def test_the_trend_under_no_trend_with_seeds_as_blocks(global_null):
    false = sum(stats.trend(cs).direction is not None for cs in global_null)
    naive = sum(naive_trend(cs) for cs in global_null)
    assert S.upper(false, SIMS) <= 0.05, false
    assert S.lower(naive, SIMS) > 0.05, naive


def test_the_trend_cancels_each_seeds_data_draw():
    """A large data-draw part shared by a seed's cells (5 times a model's own spread): it drops out of each seed's
    slope, so it neither passes as a trend nor hides one (the power at a slope of 2 pts a step is what it is
    without it)."""
    rng = np.random.default_rng(61)
    rise = [0.02 * j for j in range(J)]
    flat = [stats.trend(S.cells(rng, [0.0] * J, draw=0.1)).direction for _ in range(400)]
    with_draw = sum(stats.trend(S.cells(rng, rise, draw=0.1)).direction == "rises" for _ in range(400)) / 400
    without = sum(stats.trend(S.cells(rng, rise, draw=0.0)).direction == "rises" for _ in range(400)) / 400
    assert S.upper(sum(d is not None for d in flat), 400) <= 0.05
    assert without > 0.5 and with_draw >= without - 0.08, (with_draw, without)
