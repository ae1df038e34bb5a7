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
    jackknife    a statistic recomputed with each group of inputs left out (delete-a-group), for one that is not a
                 mean of per-input scores (a CKA between representations)
    seeds        a mean over training seeds that share their held-out inputs: the part of the error that varies
                 between seeds (Student's t, k - 1 df) and the part that repeats at every seed (`over_design`, an
                 inputs x seeds design from the per-input scores; `over_seeds` takes a run's own error whole)

Per-input outcomes travel with results as packed bit vectors (`pack` / `unpack`: 4,000 inputs are 500 bytes in
base64 of ~670 characters), so a claim can pair two accuracies measured on the same inputs; an estimate made from
per-input scores keeps them (`Estimate.scores`) and a claim's test carries them packed (`pack_scores`), so a pool
over seeds can pair the seeds' inputs too. The packing is exact (bit vectors, counts of 1/D or float64), since a
pool recomputes its value from the scores and a rounding would bias every pooled value alike. `sign_flip` is the
exact sign-flip permutation test over seeds' gaps, reported beside a pooled verdict.

`settle` answers "what would decide this?": the seeds (at least 3, with the pool's Student's t scaling) or test inputs
that would put the estimate 2 standard errors from its threshold, at the effect this run saw (a power calculation at
50 %: the effect as seen, not as hoped).
"""

from __future__ import annotations

import base64
import functools
import math
import statistics
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any, Optional, Sequence

import numpy as np

Z = 2.0  # a verdict needs its estimate this many standard errors from the threshold (one-sided ~97.7 %)
SE_KINDS = ("binomial", "paired", "independent", "exact", "bootstrap", "jackknife", "seeds")
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
    # The per-input scores the value is the mean of (a paired difference, an accuracy's outcomes), when it is one:
    # what pooling over seeds needs to tell the part of the error that repeats at every seed (the same held-out
    # inputs) from the part that varies between seeds (`over_design`). Not part of the estimate's plain form.
    scores: Optional[np.ndarray] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.se_kind not in SE_KINDS:
            raise ValueError(f"se_kind must be one of {SE_KINDS}, not {self.se_kind!r}")
        if not self.se >= 0:
            raise ValueError(f"a standard error is >= 0, not {self.se!r}")

    def named(self, name: str) -> dict[str, Any]:
        """The estimate as `measured` fields: {name: value, "se": se, "se_kind": kind}."""
        return {name: float(self.value), "se": float(self.se), "se_kind": self.se_kind}

    def plain(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "scores"}
        return {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in out.items()}


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


def _denominator(a: np.ndarray, limit: int = 1 << 16) -> Optional[int]:
    """The smallest D <= `limit` for which every score times D is a whole number (shares of D draws, differences of
    two such), or None. Found from the distinct values, which averaged outcomes have few of."""
    u = np.unique(a)
    if u.size > 4096:
        return None
    d = 1
    for v in u:
        f = Fraction(float(v)).limit_denominator(limit)
        if abs(float(f) - float(v)) > 1e-12:
            return None
        d = d * f.denominator // math.gcd(d, f.denominator)
        if d > limit:
            return None
    return d


def pack_scores(x: Any) -> str:
    """Per-input scores as compact text that unpacks to the same numbers (no rounding: a pool over seeds recomputes
    its value from them, and a rounding would move every pooled value the same way, by an amount more seeds do not
    shrink): right/wrong outcomes or their differences (-1, 0, 1) as two bit vectors ('t:' + pack(positive) + '|' +
    pack(negative)); shares of D draws (scores that are whole numbers of 1/D) as their counts ('c<D>.<bytes>:' +
    base64 of little-endian integers of 1, 2 or 4 bytes, the fewest that hold them); any other scores as float64
    ('f:' + base64)."""
    a = as_scores(x)
    if not np.isfinite(a).all():
        raise ValueError("pack_scores takes finite scores")
    if np.isin(a, (-1.0, 0.0, 1.0)).all():
        return "t:" + pack(a > 0) + "|" + pack(a < 0)
    d = _denominator(a)
    if d is not None:
        counts = np.round(a * d)
        big = float(np.abs(counts).max())
        if big < 2 ** 31 and np.array_equal(counts / d, a):
            width = next(w for w in (1, 2, 4) if big < 2 ** (8 * w - 1))  # 1 byte an input for shares of few draws
            return f"c{d}.{width}:" + base64.b64encode(counts.astype(f"<i{width}").tobytes()).decode("ascii")
    return "f:" + base64.b64encode(a.astype("<f8").tobytes()).decode("ascii")


def unpack_scores(text: str) -> np.ndarray:
    """The scores `pack_scores` wrote, as a float64 vector (also the 1/127 forms 'q:' and 'r<scale>:' that earlier
    versions wrote, for claims read back from an old --json)."""
    if text.startswith("t:") and "|" in text:
        pos, neg = text[2:].split("|", 1)
        return unpack(pos).astype(np.float64) - unpack(neg).astype(np.float64)
    head, sep, b64 = text.partition(":")
    if not sep or not head or head[0] not in "cfqr":
        raise ValueError("not packed scores (want 't:', 'c<D>.<bytes>:', 'f:', 'q:' or 'r<scale>:')")
    try:
        raw = base64.b64decode(b64, validate=True)
        if head == "f":
            if len(raw) % 8:
                raise ValueError("float64 scores take 8 bytes each")
            return np.frombuffer(raw, dtype="<f8").astype(np.float64)
        if head[0] == "c":
            d_text, _, w_text = head[1:].partition(".")
            d, width = int(d_text), int(w_text or 4)
            if d <= 0 or width not in (1, 2, 4) or len(raw) % width:
                raise ValueError(f"counts of 1/{d_text} in {width} bytes")
            return np.frombuffer(raw, dtype=f"<i{width}").astype(np.float64) / d
        scale = 1.0 if head == "q" else float(head[1:])
    except ValueError as e:
        raise ValueError(f"not packed scores: {e}") from None
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"not packed scores: scale {head[1:]!r}")
    return np.frombuffer(raw, dtype=np.int8).astype(np.float64) / 127 * scale


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
    return Estimate(p, binomial_se(p, a.size), "binomial", a.size, f"{a.size:,} held-out inputs", scores=a)


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
    return Estimate(float(d.mean()), se, "paired", n, how, scores=d)


def independent(a: Estimate, b: Estimate) -> Estimate:
    """a - b for estimates that share no inputs or draws."""
    return Estimate(a.value - b.value, math.hypot(a.se, b.se), "independent", min(a.n, b.n) or max(a.n, b.n),
                    "independent samples")


def exact(value: float, how: str, n: int = 0) -> Estimate:
    """A number with no sampling error left (an average over the whole space, an exact p-value)."""
    return Estimate(float(value), 0.0, "exact", n, how)


def over_seeds(estimates: Sequence[Estimate]) -> Estimate:
    """The mean of one quantity over training seeds, when the per-input scores are not known (`over_design` when they
    are): the seeds' spread, scaled by Student's t, / sqrt(k), plus the runs' own error in full. Every seed is measured
    on the same held-out inputs, so the part of a run's own error that comes from which inputs were drawn repeats at
    every seed and does not shrink with k; without the per-input scores that part cannot be told from the rest, and
    it is taken whole (conservative). One seed is its own estimate."""
    es = list(estimates)
    if not es:
        raise ValueError("no estimates")
    if len(es) == 1:
        return es[0]
    k = len(es)
    vals = [e.value for e in es]
    own2 = statistics.fmean(e.se * e.se for e in es)
    spread = statistics.stdev(vals)
    # A spread from k seeds is itself uncertain: scaled by Student's t over the normal quantile, so a verdict at
    # Z standard errors is the one-sided t-test of the same level (2 seeds: x 7.0, 5 seeds: x 1.4).
    varying = (spread * t_factor(k - 1)) ** 2 / k
    se = math.sqrt(varying + own2)
    return Estimate(statistics.fmean(vals), se, "seeds", k,
                    f"mean of {k} seeds (spread {100 * spread:.2f} pts, Student's t with {k - 1} df), plus each run's "
                    "own error in full (per-input scores unknown: the part shared by the seeds taken whole)")


@dataclass(frozen=True)
class Design:
    """The parts of the error of a mean over k seeds x n shared held-out inputs (`over_design`): per seed, the
    variance that varies between seeds (training draw and each seed's own input noise, `varying`, per seed), and
    the variance of the mean that repeats at every seed (which inputs were drawn, `repeating`)."""

    varying: float
    repeating: float
    k: int
    n: int

    def se(self, k: Optional[int] = None) -> float:
        """The error at k seeds (default: the k measured), the varying part scaled by Student's t with k - 1 df."""
        k = self.k if k is None else k
        t = t_factor(k - 1) if k > 1 else 1.0
        return math.sqrt(t * t * self.varying / k + self.repeating)


def design(rows: Sequence[Any]) -> Design:
    """The two-way random-effects decomposition of k seeds' per-input scores on the same n inputs (a k x n matrix,
    d[s, i] = mean + seed effect + input effect + residual): `varying` is the variance of a seed's mean between
    seeds (the seed effect and the residual's share, var of the row means); `repeating` is the input effect's
    variance / n (var of the column means minus the residual's share, MS_e / k, never below 0)."""
    d = np.stack([as_scores(r) for r in rows])
    k, n = d.shape
    if k < 2 or n < 2:
        raise ValueError("a seeds x inputs design needs at least 2 seeds and 2 inputs")
    rm, cm, m = d.mean(axis=1), d.mean(axis=0), d.mean()
    resid = d - rm[:, None] - cm[None, :] + m
    ms_e = float((resid ** 2).sum()) / ((k - 1) * (n - 1))
    varying = float(rm.var(ddof=1))
    repeating = max(float(cm.var(ddof=1)) - ms_e / k, 0.0) / n
    return Design(varying, repeating, k, n)


def over_design(rows: Sequence[Any], how: str = "", dz: Optional[Design] = None) -> Estimate:
    """The mean of per-input scores over k training seeds that share their n held-out inputs (an inputs x seeds
    design): the error has the part that varies between seeds (scaled by Student's t with k - 1 df, / sqrt(k)) and
    the part that repeats at every seed (the inputs' own, which more seeds do not shrink). Never below one input's
    worth over all (1 / (n sqrt(k))). `dz`: the rows' `design`, when the caller has it already."""
    d = np.stack([as_scores(r) for r in rows])
    dz = design(d) if dz is None else dz
    se = max(dz.se(), 1.0 / (dz.n * math.sqrt(dz.k)))
    words = (f"mean of {dz.k} seeds x {dz.n:,} shared inputs: between seeds {100 * math.sqrt(dz.varying):.2f} pts "
             f"(Student's t, {dz.k - 1} df), repeating at every seed {100 * math.sqrt(dz.repeating):.2f} pts")
    return Estimate(float(d.mean()), se, "seeds", dz.k, words + (f"; {how}" if how else ""), scores=d.mean(axis=0))


@functools.lru_cache(maxsize=256)
def t_factor(df: int, z: float = Z) -> float:
    """Student's t quantile over the normal one at the one-sided level of z standard errors. Cached: scipy's t.ppf
    costs ~0.3 ms, and `settle` asks for it at every k it tries, for every open test of every claim a page reads."""
    from scipy.stats import norm, t

    return float(t.ppf(norm.cdf(z), df) / z)


FLIP_EXACT_MAX = 12  # up to this many seeds the sign-flip test enumerates every pattern (4,096 at 12)
FLIP_DRAWS = 1 << 14  # beyond it, this many random patterns (fixed draws), the observed one counted among them


@functools.lru_cache(maxsize=32)
def _flips(k: int) -> np.ndarray:
    """The sign patterns of k seeds: all 2^k of them up to FLIP_EXACT_MAX, else FLIP_DRAWS fixed draws and the
    identity (so the p-value (1 + count) / (1 + draws) stays valid)."""
    if k <= FLIP_EXACT_MAX:
        bits = (np.arange(1 << k)[:, None] >> np.arange(k)[None, :]) & 1
    else:
        bits = np.random.default_rng(0).integers(0, 2, (FLIP_DRAWS, k))
        bits = np.vstack([np.zeros((1, k), dtype=bits.dtype), bits])
    out = (1 - 2 * bits).astype(np.float64)
    out.setflags(write=False)
    return out


def sign_flip(gaps: Sequence[float]) -> tuple[float, float]:
    """One-sided p-values of the sign-flip permutation test over seeds: (p toward a mean gap above 0, p toward one
    below 0). The seeds are the unit: under the null each seed's gap is as likely negative as positive, whatever its
    size or the shape of its distribution, so the test is exact at any k (every pattern enumerated up to
    FLIP_EXACT_MAX seeds) and needs no normal spread. Its smallest p is 2^-k (1/8 at 3 seeds, 1/64 at 6): what k
    seeds can say when one seed in ten may differ strongly from the rest, which Student's t over few seeds
    overstates."""
    g = np.asarray([float(x) for x in gaps], dtype=np.float64)
    if g.size < 1 or not np.isfinite(g).all():
        return 1.0, 1.0
    means = _flips(g.size) @ g
    obs = float(g.sum())
    tol = 1e-12 * max(1.0, float(np.abs(g).sum()))
    return float(np.mean(means >= obs - tol)), float(np.mean(means <= obs + tol))


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


def settle(est: Estimate, threshold: float, z: float, seeds_now: int = 1,
           parts: Optional[tuple[float, float]] = None) -> dict[str, Any]:
    """What would decide a test at the effect this run saw: the total seeds and the total held-out inputs that put
    |value - threshold| beyond z standard errors. An effect of zero cannot be settled by more data (`None` then).

    Seeds: the smallest k >= 3 with z * sqrt(t(k-1)^2 varying / k + repeating) <= gap (Student's t with k - 1 df, the
    scaling the pool applies), never more than MAX_SETTLE_SEEDS. `parts` = (varying per seed, repeating) from a pool
    over seeds (`Design`); without it (one seed) the between-seed spread is unknown (`spread: "unknown"`) and one
    run's own error stands in for it, with nothing repeating: the fewest seeds that could decide, not a promise."""
    gap = abs(est.value - threshold)
    if est.se <= 0 or gap < 1e-12:
        return {"seeds": None, "inputs": None, "gap": gap}
    known = parts is not None and seeds_now > 1
    varying, repeating = parts if known else (est.se * est.se, 0.0)
    dz = Design(max(varying, 0.0), max(repeating, 0.0), max(seeds_now, 1), est.n)
    seeds = next((k for k in range(max(3, seeds_now + 1), MAX_SETTLE_SEEDS + 1) if z * dz.se(k) <= gap), None)
    factor = (z * est.se / gap) ** 2 * 1.0001  # the band shrinks as 1 / sqrt(units)
    inputs = math.ceil(est.n * factor) if est.se_kind in ("binomial", "paired", "independent") and est.n else None
    out: dict[str, Any] = {"seeds": seeds, "inputs": inputs, "gap": gap}
    if not known:
        out["spread"] = "unknown"
    return out
