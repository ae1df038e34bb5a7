"""Estimates, not bare numbers: a value, its standard error and how that error was obtained.

Every verdict of the lab (lab/claims.py) rests on estimates made here, so that the error of each number is
computed one way wherever it is used:

    binomial     one accuracy on n independent inputs: sqrt(p (1 - p) / n)
    paired       a difference of two scores on the *same* inputs: the spread of the per-input differences
                 (for right/wrong outcomes this is McNemar's error, sqrt(b + c - (b - c)^2 / n) / n, b and c the
                 discordant counts); a random comparator's draw variance is added where it was sampled
    independent  a difference of two estimates on different inputs (or different draws): sqrt(se_a^2 + se_b^2)
    exact        a number with no sampling error left (an average over every subset, an exact permutation p-value)
    bootstrap    resampled clusters (e.g. test orders x digits), for rows that are not independent
    seeds        a mean over training seeds: the seeds' own spread, never below the runs' own error

Per-input outcomes travel with results as packed bit vectors (`pack` / `unpack`: 4,000 inputs are 500 bytes in
base64 of ~670 characters), so a claim can pair two accuracies measured on the same inputs.

`settle` answers "what would decide this?": the seeds or test inputs that would put the estimate 2 standard errors
from its threshold, at the effect this run saw (a power calculation at 50 %: the effect as seen, not as hoped).
"""

from __future__ import annotations

import base64
import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Optional, Sequence

import numpy as np

Z = 2.0  # a verdict needs its estimate this many standard errors from the threshold (one-sided ~97.7 %)
SE_KINDS = ("binomial", "paired", "independent", "exact", "bootstrap", "seeds")
MAX_SETTLE_SEEDS = 12  # beyond this many seeds a page does not offer to settle a claim (a visitor's job bound)


@dataclass(frozen=True)
class Estimate:
    """A value with its standard error; `se_kind` (one of SE_KINDS) says how the error was obtained, `n` how many
    units it rests on (inputs, seeds, clusters) and `how` says it in words."""

    value: float
    se: float
    se_kind: str
    n: int = 0
    how: str = ""

    def __post_init__(self) -> None:
        if self.se_kind not in SE_KINDS:
            raise ValueError(f"se_kind must be one of {SE_KINDS}, not {self.se_kind!r}")
        if not self.se >= 0:
            raise ValueError(f"a standard error is >= 0, not {self.se!r}")

    def named(self, name: str) -> dict[str, Any]:
        """The estimate as `measured` fields: {name: value, "se": se, "se_kind": kind}."""
        return {name: float(self.value), "se": float(self.se), "se_kind": self.se_kind}

    def plain(self) -> dict[str, Any]:
        return {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in asdict(self).items()}


# -- per-input outcomes ------------------------------------------------------------------------------------------
def as_scores(x: Any) -> np.ndarray:
    """Per-input scores as a float64 vector: right/wrong outcomes (bool), or shares in [0, 1] (averaged outcomes);
    accepts numpy arrays, torch tensors, lists, and packed strings."""
    if isinstance(x, str):
        return unpack(x).astype(np.float64)
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("no per-input outcomes")
    return a


def pack(correct: Any) -> str:
    """Right/wrong outcomes as text: 'n:' then the base64 of the bits (np.packbits). Exact and JSON-safe."""
    a = as_scores(correct)
    if not np.isin(a, (0.0, 1.0)).all():
        raise ValueError("pack takes right/wrong outcomes (0 or 1 per input)")
    return f"{a.size}:" + base64.b64encode(np.packbits(a.astype(bool)).tobytes()).decode("ascii")


def unpack(text: str) -> np.ndarray:
    """The outcomes `pack` wrote, as a bool vector."""
    try:
        n_text, b64 = text.split(":", 1)
        n = int(n_text)
        bits = np.unpackbits(np.frombuffer(base64.b64decode(b64, validate=True), dtype=np.uint8))
    except (ValueError, TypeError) as e:
        raise ValueError(f"not a packed outcome vector: {e}") from None
    if n < 0 or bits.size < n or bits.size - n >= 8:
        raise ValueError(f"a packed outcome vector of {bits.size} bits cannot hold {n} outcomes")
    return bits[:n].astype(bool)


# -- estimates ---------------------------------------------------------------------------------------------------
def binomial_se(acc: float, n: int) -> float:
    """Standard error of an accuracy on n independent inputs, at least one input's worth (1/n), so a perfect or zero
    score is not treated as certain."""
    if n <= 0:
        raise ValueError("n must be positive")
    return max(math.sqrt(max(acc * (1 - acc), 0.0) / n), 1.0 / n)


def accuracy(correct: Any) -> Estimate:
    """An accuracy from per-input outcomes (or averaged outcomes), with its binomial error."""
    a = as_scores(correct)
    p = float(a.mean())
    return Estimate(p, binomial_se(p, a.size), "binomial", a.size, f"{a.size:,} held-out inputs")


def paired(a: Any, b: Any, draws: Optional[Sequence[float]] = None) -> Estimate:
    """mean(a) - mean(b) for per-input scores on the same inputs, with the paired error: the spread of the per-input
    differences (McNemar's error for right/wrong outcomes; never below one input's worth, 1/n).

    `draws`: when b is the per-input average of D random draws (a random comparator), the D draws' accuracies; their
    variance / D joins the error (the comparator is itself an estimate). Without it b is taken as fixed."""
    x, y = as_scores(a), as_scores(b)
    if x.size != y.size:
        raise ValueError(f"paired scores need the same inputs: {x.size} against {y.size}")
    n = x.size
    d = x - y
    se = max(math.sqrt(float(d.var()) / n), 1.0 / n)
    binary = bool(np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all())
    how = f"paired over {n:,} inputs"
    if binary:
        how += f", {int((d != 0).sum()):,} discordant (McNemar)"
    if draws is not None and len(draws) > 1:
        var_draws = statistics.variance([float(v) for v in draws]) / len(draws)
        se = math.sqrt(se * se + var_draws)
        how += f", plus the variance of {len(draws)} random draws"
    return Estimate(float(d.mean()), se, "paired", n, how)


def independent(a: Estimate, b: Estimate) -> Estimate:
    """a - b for estimates that share no inputs or draws."""
    return Estimate(a.value - b.value, math.hypot(a.se, b.se), "independent", min(a.n, b.n) or max(a.n, b.n),
                    "independent samples")


def exact(value: float, how: str, n: int = 0) -> Estimate:
    """A number with no sampling error left (an average over the whole space, an exact p-value)."""
    return Estimate(float(value), 0.0, "exact", n, how)


def over_seeds(estimates: Sequence[Estimate]) -> Estimate:
    """The mean of one quantity over training seeds: the seeds' spread / sqrt(k) when there are at least two, never
    below the runs' own error (their root-mean-square / sqrt(k)); one seed is its own estimate."""
    es = list(estimates)
    if not es:
        raise ValueError("no estimates")
    if len(es) == 1:
        return es[0]
    k = len(es)
    vals = [e.value for e in es]
    own = math.sqrt(statistics.fmean(e.se * e.se for e in es))
    spread = statistics.stdev(vals)
    # A spread from k seeds is itself uncertain: scaled by Student's t over the normal quantile, so a verdict at
    # Z standard errors is the one-sided t-test of the same level (2 seeds: x 7.0, 5 seeds: x 1.4).
    se = max(spread * t_factor(k - 1), own) / math.sqrt(k)
    return Estimate(statistics.fmean(vals), se, "seeds", k,
                    f"mean of {k} seeds (spread {100 * spread:.2f} pts, Student's t with {k - 1} df)")


def t_factor(df: int, z: float = Z) -> float:
    """Student's t quantile over the normal one at the one-sided level of z standard errors."""
    from scipy.stats import norm, t

    return float(t.ppf(norm.cdf(z), df) / z)


def cluster_bootstrap(scores: Any, draws: int = 2000, seed: int = 0) -> Estimate:
    """The mean of a matrix of per-row scores whose rows and columns are clusters (e.g. test orders x digits: every
    digit appears in every order), with a two-way (pigeonhole) bootstrap error: rows and columns resampled
    independently with replacement. A 1-D input resamples its entries (independent clusters)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = s[:, None]
    if s.ndim != 2 or s.size == 0:
        raise ValueError("cluster_bootstrap takes a (clusters x members) matrix")
    r, c = s.shape
    gen = np.random.default_rng(seed)
    means = np.empty(draws)
    for i in range(draws):
        rows = gen.integers(0, r, r)
        cols = gen.integers(0, c, c) if c > 1 else np.zeros(1, dtype=int)
        means[i] = s[np.ix_(rows, cols)].mean()
    how = f"two-way bootstrap over {r} x {c} clusters, {draws} draws" if c > 1 else f"bootstrap over {r} clusters"
    return Estimate(float(s.mean()), float(means.std(ddof=1)), "bootstrap", r, how)


# -- tests and what would settle them ----------------------------------------------------------------------------
def verdict(value: float, side: str, threshold: float, se: float, z: float) -> Optional[bool]:
    """Three-way verdict on `value >= threshold` (side '>=') or `value <= threshold` (side '<='): True when the value
    is more than z standard errors on the rule's side, False when as far on the other, None inside the band."""
    if side not in (">=", "<="):
        raise ValueError(f"side must be '>=' or '<=', not {side!r}")
    if math.isnan(value) or se < 0:
        return None
    gap = value - threshold if side == ">=" else threshold - value
    if gap > z * se:
        return True
    if -gap > z * se:
        return False
    return None


def settle(est: Estimate, threshold: float, z: float, seeds_now: int = 1) -> dict[str, Any]:
    """What would decide a test at the effect this run saw: the total seeds (at this run's error per seed) and the
    total held-out inputs that put |value - threshold| beyond z standard errors. An effect of zero cannot be
    settled by more data; `None` then."""
    gap = abs(est.value - threshold)
    if est.se <= 0 or gap < 1e-12:
        return {"seeds": None, "inputs": None, "gap": gap}
    factor = (z * est.se / gap) ** 2 * 1.0001  # the band shrinks as 1 / sqrt(units)
    seeds = max(seeds_now + 1, math.ceil(seeds_now * factor))
    inputs = math.ceil(est.n * factor) if est.se_kind in ("binomial", "paired", "independent") and est.n else None
    return {"seeds": seeds if seeds <= MAX_SETTLE_SEEDS else None, "inputs": inputs, "gap": gap}
