"""Claims as data: a paper's statement checked against this run's numbers, with its rule and the run's noise.

A page never writes a verdict of its own ("holds", "collapses", "is fatal"): it draws the claims its lab call
returned. A claim is a plain dict (it is stored inside results and printed by the CLI's `--json`):

    claim     the statement, as the paper makes it ("repeating a middle layer is worse than skipping it")
    source    where it comes from (seed or paper), and how this lab's version departs from it, if it does
    measured  the numbers it rests on, by name ({"skip_acc": 0.91, "repeat_acc": 0.42, "se": 0.014})
    rule      the condition and its threshold, in words, noise included
    holds     True, False, or None when this run cannot decide (inside the noise, too few orders, ...)
    detail    one sentence with the numbers
    key       a short stable id (tests and pages address a claim by it); `subject` (optional) names the model

Noise: an accuracy measured on n held-out inputs has a binomial standard error sqrt(p (1 - p) / n); a difference
of two accuracies on the same inputs is given the independent-samples error (conservative for the paired case,
since the per-input outcomes are not stored); a mean over seeds adds the seeds' own spread. A comparison decides only
when the estimate is more than Z standard errors from its threshold; inside that band the verdict is None.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Optional, Sequence

Z = 2.0  # a verdict needs the estimate this many standard errors away from the rule's threshold (~95 %)
VERDICTS = {True: "holds", False: "does not hold", None: "cannot tell"}
FIELDS = ("key", "claim", "source", "measured", "rule", "holds", "detail")


def claim(key: str, statement: str, source: str, measured: dict[str, Any], rule: str, holds: Optional[bool],
          detail: str, subject: Optional[str] = None) -> dict[str, Any]:
    """One claim record (see the module's docstring); `holds` is True, False or None ("cannot tell")."""
    if holds not in (True, False, None):
        raise ValueError(f"holds must be True, False or None, not {holds!r}")
    out = {"key": key, "claim": statement, "source": source, "measured": _plain(measured), "rule": rule,
           "holds": holds, "detail": detail}
    if subject is not None:
        out["subject"] = subject
    return out


def _plain(measured: dict[str, Any]) -> dict[str, Any]:
    """Numbers as plain floats/ints (numpy scalars and tensors would not survive JSON)."""
    out: dict[str, Any] = {}
    for k, v in measured.items():
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            out[k] = v
        elif isinstance(v, (list, tuple)):
            out[k] = [float(x) if not isinstance(x, (int, str)) else x for x in v]
        else:
            out[k] = float(v)
    return out


# -- noise -------------------------------------------------------------------------------------------------------
def binomial_se(acc: float, n: int) -> float:
    """Standard error of an accuracy measured on n independent inputs (at least one input's worth of 1/n, so a
    perfect or zero score is not treated as certain)."""
    if n <= 0:
        raise ValueError("n must be positive")
    return max(math.sqrt(max(acc * (1 - acc), 0.0) / n), 1.0 / n)


def diff_se(a: float, b: float, n: int, n_b: Optional[int] = None) -> float:
    """Standard error of a - b, two accuracies on n (and n_b) inputs, as independent samples."""
    return math.hypot(binomial_se(a, n), binomial_se(b, n_b or n))


def mean_se(values: Sequence[float], n: int) -> float:
    """Standard error of the mean of accuracies from several seeds (each on n inputs): the seeds' own spread when
    there are at least two, never below the binomial error of the mean accuracy."""
    vals = list(values)
    if not vals:
        raise ValueError("no values")
    m = statistics.fmean(vals)
    binom = binomial_se(m, n) / math.sqrt(len(vals))
    if len(vals) < 2:
        return binomial_se(m, n)
    return max(statistics.stdev(vals) / math.sqrt(len(vals)), binom)


def seeds_se(values: Sequence[float], se_one: float) -> float:
    """Standard error of the mean of any quantity (a difference, a share) measured at several seeds, one run's own
    error being `se_one`: the seeds' spread when there are at least two, never below se_one / sqrt(seeds)."""
    vals = list(values)
    if not vals:
        raise ValueError("no values")
    if len(vals) < 2:
        return se_one
    return max(statistics.stdev(vals), se_one) / math.sqrt(len(vals))


def at_least(estimate: float, threshold: float, se: float, z: float = Z) -> Optional[bool]:
    """Three-way verdict on `estimate >= threshold`: True if clearly above, False if clearly below, None inside
    z standard errors of the threshold."""
    if se < 0 or math.isnan(estimate):
        return None
    margin = z * se
    if estimate - threshold > margin:
        return True
    if threshold - estimate > margin:
        return False
    return None


def at_most(estimate: float, threshold: float, se: float, z: float = Z) -> Optional[bool]:
    """Three-way verdict on `estimate <= threshold` (the mirror of `at_least`)."""
    v = at_least(estimate, threshold, se, z)
    return None if v is None else not v


def all_of(verdicts: Iterable[Optional[bool]]) -> Optional[bool]:
    """A conjunction of three-way verdicts: False if any is False, None if any cannot tell, else True."""
    vs = list(verdicts)
    if any(v is False for v in vs):
        return False
    if any(v is None for v in vs):
        return None
    return True


def any_of(verdicts: Iterable[Optional[bool]]) -> Optional[bool]:
    """A disjunction of three-way verdicts: True if any is True, None if any cannot tell, else False."""
    vs = list(verdicts)
    if any(v is True for v in vs):
        return True
    if any(v is None for v in vs):
        return None
    return False


def pct(x: float) -> str:
    """An accuracy as a percentage with one decimal, for a claim's detail."""
    return f"{100 * x:.1f} %"


def pts(x: float) -> str:
    """A difference of accuracies in percentage points, signed."""
    return f"{100 * x + 0.0:+.1f} pts"


def noise_words(se: float, z: float = Z) -> str:
    """How a rule names its noise band, e.g. 'more than 2 standard errors (2 x 1.2 pts)'."""
    return f"by more than {z:g} standard errors ({z:g} x {100 * se:.1f} pts)"


def check(claims: Sequence[dict[str, Any]]) -> None:
    """Raise ValueError unless every item is a complete claim record (tests and the CLI use this)."""
    for c in claims:
        missing = [f for f in FIELDS if f not in c]
        if missing:
            raise ValueError(f"claim {c.get('key', c)!r} lacks {missing}")
        if c["holds"] not in (True, False, None):
            raise ValueError(f"claim {c['key']!r}: holds is {c['holds']!r}")
        if not isinstance(c["measured"], dict) or not c["measured"]:
            raise ValueError(f"claim {c['key']!r}: measured must name the numbers it rests on")
