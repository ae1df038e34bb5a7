"""The statistics of a study: one claim pooled over seeds at each value of a knob, read along the knob.

A study's cell is one grid value with k training seeds (the same seed numbers at every value). Its input here is
the claim as `lab.claims.pool` pooled it at that value: each test's pooled value, error (the part that varies
between seeds, Student's t, and the part the shared held-out inputs repeat) and every seed's own gap past the
threshold on the rule's side (`per_seed`). From those, with the lab's one level (one-sided, z = Z, 2.3 %):

    effect       the binding test's gap past its threshold (positive = the claim's side), its error and interval
    p_holds      the one-sided p of "the claim holds here": the z at which the lab's own verdict would flip (a
                 pooled test's error is t-scaled at that level, `_se_at`), so p < 2.3 % exactly when the page's
                 verdict at that cell holds. An "all" claim takes its weakest test (intersection-union), an "any"
                 claim its strongest times the number of tests (Bonferroni).
    p_absent     the one-sided p of "the effect is below the margin m" (the upper half of a TOST around no effect:
                 the claim is one-sided, so an effect far on the other side is as absent as one at zero)
    appears from the smallest grid value from which the claim holds at every larger value, each cell's p
                 corrected by Holm over the study's cells (the chance that any cell is marked falsely, under any
                 pattern of true and null cells, stays at the level)
    absent to    the largest grid value up to which the effect is below the margin at every smaller value (Holm
                 again); "cannot tell" otherwise, with the seeds a cell would need at the effect seen (`settle`)
    trend        the slope of the effect along the knob's grid steps, seeds as blocks: each seed's own slope over
                 the grid (a seed's data draw is shared by its cells, and cancels in its slope), their mean with
                 Student's t over the seeds plus the inputs' repeating part of every cell; two-sided at the level

Each rule has a simulated null in the suite (tests/test_study_nulls.py) with per-seed and per-data-draw variance and
shared held-out inputs, through `lab.claims.pool`, at >= 2,000 draws, with the naive rule beside it failing on the
same draws. A study generalises over training seeds (a recipe along a knob), so every verdict here is over seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from lab.claims import union_z
from lab.estimates import MAX_SETTLE_SEEDS, Design, Z, t_factor

LEVEL = 0.5 * math.erfc(Z / math.sqrt(2))  # the lab's one-sided level, ~2.3 %
_Z_MAX = 12.0  # beyond this many standard errors a p is 0 for every purpose here


def _phi_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def _se_curve(test: Mapping[str, Any]) -> Any:
    """A test's error as a function of the z of its verdict: a pooled test's between-seed part scaled by Student's t
    at z's own level (k - 1 df), its repeating part as it is (lab/claims.py `_se_at`, in closed form with scipy's
    ufuncs, since a p-value asks at many z); equal to the test's own error at z = Z (a floor the pool applied is
    kept by scaling)."""
    from scipy.special import ndtr, stdtrit

    k, se = test.get("k"), float(test["se"])
    if not k or k < 2 or "varying" not in test:
        return lambda z: se
    var, rep = max(float(test["varying"]), 0.0), max(float(test["repeating"]), 0.0)

    def raw(z: float) -> float:
        tq = float(stdtrit(k - 1, ndtr(z)))
        return math.sqrt(tq * tq * var / k + z * z * rep) / z

    at_z = raw(Z)
    scale = se / at_z if at_z > 0 else 1.0
    return lambda z: scale * raw(z) if at_z > 0 else se


def flip_z(test: Mapping[str, Any], gap: float) -> float:
    """The z at which a pooled test with this `gap` past its threshold would stop deciding: the root of
    gap = z se(z) (`_se_curve`; the lab's verdict at z = Z is this test's verdict). Bisection: z se(z) grows with z."""
    if gap <= 0:
        return 0.0
    se = _se_curve(test)
    lo, hi = 1e-6, _Z_MAX
    if gap - hi * se(hi) > 0:
        return hi
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if gap - mid * se(mid) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def p_beyond(test: Mapping[str, Any], gap: float) -> float:
    """One-sided p of a gap `gap` past a test's threshold (or margin): the level at which it just decides."""
    if not math.isfinite(gap):
        return 1.0
    return _phi_sf(flip_z(test, gap)) if gap > 0 else 1.0


def gap_of(test: Mapping[str, Any]) -> float:
    """A test's pooled value past its threshold on its rule's side (positive: the claim's side)."""
    sign = 1.0 if test["side"] == ">=" else -1.0
    return sign * (float(test["value"]) - float(test["threshold"]))


@dataclass(frozen=True)
class Cell:
    """One grid value of a study, read from the claim pooled over its seeds."""

    value: Any
    effect: float  # the binding test's gap past its threshold
    se: float  # its error (the pooled test's, at z = Z)
    holds: Optional[bool]  # the pooled claim's own verdict at this value
    p_holds: float
    p_absent: float
    seeds: tuple[int, ...]
    per_seed: tuple[float, ...]  # each seed's own gap, in `seeds` order
    repeating: float  # the pooled effect's variance that repeats at every seed (shared held-out inputs)
    settle_seeds: Optional[int]  # seeds that would decide an undecided cell at the effect seen
    unit: str = "pts"

    @property
    def interval(self) -> tuple[float, float]:
        return self.effect - Z * self.se, self.effect + Z * self.se


def _binding(claim: Mapping[str, Any]) -> Mapping[str, Any]:
    """The test a claim's verdict turns on: an "all" claim's weakest (smallest z), an "any" claim's strongest."""
    tests = claim["tests"]

    def z(t: Mapping[str, Any]) -> float:
        return gap_of(t) / t["se"] if t["se"] > 0 else math.copysign(math.inf, gap_of(t) or 1.0)

    return (max if claim.get("combine", "all") == "any" else min)(tests, key=z)


def cell_of(value: Any, claim: Mapping[str, Any], margin: float) -> Cell:
    """A study cell from one claim pooled over the cell's seeds (`lab.claims.pool`'s record, plain or Claim)."""
    tests = list(claim["tests"])
    m = len(tests)
    p_each = [p_beyond(t, gap_of(t)) for t in tests]
    if claim.get("combine", "all") == "any":
        p_holds = min(1.0, m * min(p_each))
    else:
        p_holds = max(p_each)
    t = _binding(claim)
    effect = gap_of(t)
    per = t.get("per_seed") or []
    settle = claim.get("settle") or {}
    return Cell(value=value, effect=effect, se=float(t["se"]), holds=claim["holds"], p_holds=p_holds,
                p_absent=p_beyond(t, margin - effect), seeds=tuple(int(p["seed"]) for p in per),
                per_seed=tuple(float(p["gap"]) for p in per), repeating=float(t.get("repeating", 0.0)),
                settle_seeds=settle.get("seeds"), unit=t.get("unit", "pts"))


def holm(ps: Sequence[float], level: float = LEVEL) -> list[bool]:
    """Holm's step-down procedure: which of the hypotheses are rejected with the family-wise error at `level`."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [False] * len(ps)
    for rank, i in enumerate(order):
        if ps[i] > level / (len(ps) - rank):
            break
        out[i] = True
    return out


def marks(cells: Sequence[Cell], level: float = LEVEL) -> list[str]:
    """Each value's mark over the grid: "present" where the claim holds with Holm's correction over the values,
    "absent" where the effect is shown below the margin with Holm's correction (a value that holds is present even
    when its effect is also below the margin), "cannot tell" otherwise. Holm keeps the chance that any value is
    marked falsely at the level, whatever the pattern of true and null values, so every statement read off these
    marks (from where, up to where) is covered too."""
    present = holm([c.p_holds for c in cells], level)
    absent = holm([c.p_absent for c in cells], level)
    return ["present" if p else "absent" if a else "cannot tell" for p, a in zip(present, absent, strict=True)]


def _suffix(flags: Sequence[bool]) -> Optional[int]:
    """Index where the run of True values that ends the sequence starts; None when the last is False."""
    start = None
    for i in range(len(flags) - 1, -1, -1):
        if not flags[i]:
            break
        start = i
    return start


def _prefix(flags: Sequence[bool]) -> Optional[int]:
    """Index where the run of True values that starts the sequence ends; None when the first is False."""
    end = None
    for i, f in enumerate(flags):
        if not f:
            break
        end = i
    return end


def appears_from(cells: Sequence[Cell], level: float = LEVEL) -> Optional[int]:
    """Index of the smallest grid value from which the claim holds at every larger one (Holm over the cells); None
    when it does not hold at the largest value."""
    return _suffix([m == "present" for m in marks(cells, level)])


def absent_to(cells: Sequence[Cell], level: float = LEVEL) -> Optional[int]:
    """Index of the largest grid value up to which the effect is below the margin at every smaller one (Holm over
    the cells); None when it is not shown below the margin at the smallest value."""
    return _prefix([m == "absent" for m in marks(cells, level)])


def absent_from(cells: Sequence[Cell], level: float = LEVEL) -> Optional[int]:
    """Index of the smallest grid value from which the effect is below the margin at every larger one (an effect that
    fades along the knob); None when it is not shown below the margin at the largest value."""
    return _suffix([m == "absent" for m in marks(cells, level)])


def holds_to(cells: Sequence[Cell], level: float = LEVEL) -> Optional[int]:
    """Index of the largest grid value up to which the claim holds at every smaller one; None when it does not hold
    at the smallest value."""
    return _prefix([m == "present" for m in marks(cells, level)])


@dataclass(frozen=True)
class Trend:
    """The effect's slope per grid step, seeds as blocks."""

    slope: float
    se: float
    p: float  # two-sided
    direction: Optional[str]  # "rises", "falls", or None (no trend shown at the level)
    per_seed: tuple[float, ...]


def trend(cells: Sequence[Cell], level: float = LEVEL) -> Optional[Trend]:
    """The trend along the grid: each seed's least-squares slope of its gaps on the grid steps (0, 1, ...), the
    mean over seeds with Student's t (k - 1 df) and each cell's repeating part added (the same held-out inputs at
    every seed do not average out over seeds). Needs the same >= 2 seeds at every cell and >= 3 cells."""
    if len(cells) < 3:
        return None
    seeds = cells[0].seeds
    if len(seeds) < 2 or any(c.seeds != seeds or len(c.per_seed) != len(seeds) for c in cells):
        return None
    steps = np.arange(len(cells), dtype=np.float64)
    w = (steps - steps.mean()) / float(((steps - steps.mean()) ** 2).sum())
    gaps = np.array([c.per_seed for c in cells], dtype=np.float64)  # cells x seeds
    b = w @ gaps  # one slope per seed
    k = len(seeds)
    zz = union_z(2, Z) if abs(level - LEVEL) < 1e-15 else float(_isf(level / 2))
    var_b = float(np.var(b, ddof=1))
    rep = float(sum(wi * wi * c.repeating for wi, c in zip(w, cells, strict=True)))

    def se_at(z: float) -> float:
        return math.sqrt(t_factor(k - 1, z) ** 2 * var_b / k + rep)

    slope = float(b.mean())
    se = se_at(zz)
    # two-sided p: the z at which |slope| = z se(z)
    fake = {"k": k, "varying": var_b, "repeating": rep, "se": math.sqrt(t_factor(k - 1) ** 2 * var_b / k + rep)}
    p = min(1.0, 2 * p_beyond(fake, abs(slope))) if se > 0 else (0.0 if slope else 1.0)
    direction = None
    if abs(slope) > zz * se:
        direction = "rises" if slope > 0 else "falls"
    return Trend(slope, se, p, direction, tuple(float(x) for x in b))


def _isf(p: float) -> float:
    from scipy.stats import norm

    return float(norm.isf(p))


def seeds_to_decide(cell: Cell, margin: float) -> Optional[int]:
    """Seeds at which an undecided cell would be decided at the effect seen: toward "holds" (gap past 0) or toward
    "below the margin" (gap under m), whichever needs fewer; None beyond MAX_SETTLE_SEEDS or with no spread known."""
    k = len(cell.seeds)
    if k < 2:
        return None
    var_b = float(np.var(cell.per_seed, ddof=1))
    dz = Design(var_b, cell.repeating, k, 1)
    need = []
    for gap in (cell.effect, margin - cell.effect):
        if gap > 0:
            need.append(next((n for n in range(max(3, k + 1), MAX_SETTLE_SEEDS + 1) if Z * dz.se(n) <= gap), None))
    known = [n for n in need if n is not None]
    return min(known) if known else None
