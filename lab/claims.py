"""Claims as data: a paper's statement checked against this run's numbers, with its rule and the run's noise.

A page never writes a verdict of its own ("holds", "collapses", "is fatal"): it draws the claims of its lab call's
result. A claim is a frozen `Claim` (read like the plain dict it prints as: `c["holds"]`, `c.get("subject")`), and
claims are computed when a result is read, never stored in it: each experiment's claims.py declares the claims of
its result types (`reads`), and `of(result)` computes them. So rewording a claim recomputes no stored result (the
experiments' modules do not import their claims, and so their code versions do not cover them). Its fields, the
keys of its plain form (`to_plain`, what the CLI's `--json` prints):

    claim     the statement, as the paper makes it ("repeating a middle layer is worse than skipping it")
    source    where it comes from (authors, year), and how this lab's version departs from it, if it does
    measured  the numbers it rests on, by name, always with `se` and `se_kind` (the deciding estimate's error and how
              it was obtained: lab/estimates.py)
    tests     the statistical tests the verdict is computed from: each an estimate (value, se, se_kind, n, how), a
              side ('>=' or '<=') and a threshold; `combine` says how they join ("all" or "any")
    rule      the condition and its threshold, in words, noise included
    holds     True, False, or None when this run cannot decide (inside the noise band of some test)
    settle    when it cannot tell: the seeds and held-out inputs that would decide it at the effect seen
    detail    one sentence with the numbers
    key       a short stable id (tests and pages address a claim by it); `subject` (optional) names the model,
              `seed` (optional) the seed of a claim listed among several seeds' claims
    over      what the verdict generalises over: "inputs" (these trained networks, over their held-out inputs: one
              seed is enough) or "seeds" (a recipe or an architecture: training seeds are the unit, at least
              MIN_SEEDS of them, listed in `seeds`); fewer seeds cannot tell, and `why` says so ("one trained
              network") while the tests still show the one network's effect

A test decides only when its estimate is more than Z standard errors from its threshold (one-sided, ~2.3 % false
"holds" under the null at the threshold; tests/test_estimates.py simulates it). Tests joined on their union side (one
test against an "all" claim, one test for an "any" claim) need the Bonferroni z of their number (`union_z`, Holm's
first step). `pool` joins one claim measured at several seeds as an inputs x seeds design (lab/estimates.over_design):
only tests with the same name and side at every seed, each test's error split into the part that varies between
seeds and the part that repeats at every seed (the same held-out inputs).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, TypeVar, Union

import numpy as np

from lab.estimates import (
    Estimate,
    Z,
    design,
    over_design,
    over_seeds,
    pack_scores,
    settle,
    sign_flip,
    unpack_scores,
    verdict,
)

VERDICTS = {True: "holds", False: "does not hold", None: "cannot tell"}
FIELDS = ("key", "claim", "source", "measured", "tests", "rule", "holds", "detail", "over")
OPTIONAL = ("subject", "seed", "seeds", "why")  # keys of the plain form only when set
OVER = {"inputs": "these trained networks, over held-out inputs",
        "seeds": "the recipe or architecture, over training seeds"}
MIN_SEEDS = 3  # a claim about a recipe rests on at least this many training seeds
ONE_NETWORK = "one trained network"
__all__ = ["Z", "VERDICTS", "OVER", "MIN_SEEDS", "Estimate", "Claim", "claim", "claim_line", "claim_lines", "test",
           "pool", "check", "verdict_words", "union_z", "at_least", "at_most", "all_of", "any_of", "pct", "pts",
           "noise_words", "reads", "of", "reader", "attach"]


@dataclass(frozen=True, eq=False)
class Claim(Mapping[str, Any]):
    """One claim record (see the module's docstring). Read by attribute (`c.holds`) or as the mapping of its plain
    form (`c["holds"]`, `c.get("subject")`, `dict(c)`), where `subject` and `seed` are keys only when set."""

    key: str
    claim: str
    source: str
    measured: dict[str, Any]
    tests: list[dict[str, Any]]
    combine: str
    rule: str
    holds: Optional[bool]
    detail: str
    settle: Optional[dict[str, Any]]
    subject: Optional[str] = None
    seed: Optional[int] = None
    over: str = "inputs"  # what the verdict generalises over: "inputs" (these networks) or "seeds" (the recipe)
    seeds: Optional[list[int]] = None  # the training seeds an `over: "seeds"` verdict rests on
    why: Optional[str] = None  # why it cannot tell whatever its tests say ("one trained network")

    def _keys(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self) if f.name not in OPTIONAL or getattr(self, f.name) is not None]

    def __getitem__(self, name: str) -> Any:
        if name not in self._keys():
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self) == dict(other)

    __hash__ = None  # type: ignore[assignment] - a record of lists and dicts

    def to_plain(self) -> dict[str, Any]:
        """The claim as the plain dict the CLI's --json prints (lab/runtime/plain.py: to_plain calls this)."""
        return dict(self)

    @classmethod
    def from_plain(cls, c: Mapping[str, Any]) -> "Claim":
        """A claim from its plain form (a record read back from JSON), or the claim itself."""
        if isinstance(c, Claim):
            return c
        got = {f.name: c.get(f.name) for f in dataclasses.fields(cls)}
        got["over"] = got["over"] or "inputs"
        return cls(**got)


def verdict_words(c: Mapping[str, Any]) -> str:
    """The verdict as a page and the CLI say it: "holds", "does not hold", "cannot tell", or "cannot tell (one trained
    network)" where the claim says why it cannot tell whatever its tests say."""
    return VERDICTS[c["holds"]] + (f" ({c['why']})" if c.get("why") else "")


def over_words(c: Mapping[str, Any]) -> str:
    """What the verdict generalises over, in words: "for these trained networks" or "over training seeds 0, 1, 2"."""
    if c.get("over", "inputs") == "seeds":
        seeds = c.get("seeds") or []
        if len(seeds) < MIN_SEEDS:
            trained = ("seed " + ", ".join(map(str, seeds))) if seeds else "one seed"
            return f"about the recipe, over training seeds: trained at {trained} only"
        return "over training seeds " + ", ".join(map(str, seeds))
    return "for these trained networks"


def claim_line(c: Mapping[str, Any], prefix: str = "- ") -> str:
    """A claim record as one line of text: `- [verdict] statement (subject, seed s; over): numbers` (the CLI's
    form)."""
    about = ", ".join(([c["subject"]] if c.get("subject") else []) + ([f"seed {c['seed']}"] if "seed" in c else []))
    about = "; ".join(x for x in (about, over_words(c)) if x)
    return f"{prefix}[{verdict_words(c)}] {c['claim']} ({about}): {c['detail']}"


def claim_lines(claims: Sequence[Mapping[str, Any]], prefix: str = "- ") -> str:
    """One `claim_line` per claim."""
    return "\n".join(claim_line(c, prefix) for c in claims)


def test(name: str, est: Estimate, side: str, threshold: float, z: float = Z, unit: str = "pts",
         parts: Optional[tuple[float, ...]] = None,
         per_seed: Optional[Sequence[tuple[int, float]]] = None) -> dict[str, Any]:
    """One test of a claim: `est` against `threshold` on `side` ('>=' or '<='), with its three-way verdict. `unit`:
    "pts" for shares and accuracies (written x 100 as points), or the name of any other unit (written as it is).
    An estimate made from per-input scores carries them packed (`scores`), so that `pool` can pair the seeds' inputs;
    `parts` (from a pool: the variance per seed that varies between seeds, and the one that repeats) sizes `settle`;
    `per_seed` (from a pool: each seed and its own value) is listed with each seed's gap past the threshold on the
    rule's side and the exact sign-flip test over those gaps (`flip_p`, `flip_p_against`: shown beside the verdict,
    which they do not yet decide)."""
    out: dict[str, Any] = {"name": name, "value": float(est.value), "se": float(est.se), "se_kind": est.se_kind,
                           "n": int(est.n), "how": est.how, "side": side, "threshold": float(threshold), "unit": unit}
    if per_seed is not None:
        sign = 1.0 if side == ">=" else -1.0
        out["per_seed"] = [{"seed": int(s), "value": float(v), "gap": sign * (float(v) - float(threshold))}
                           for s, v in per_seed]
        out["flip_p"], out["flip_p_against"] = sign_flip([p["gap"] for p in out["per_seed"]])
    out["holds"] = _verdict_at(out, z, float(est.se))
    # Only scores whose mean is the test's value: the pool recomputes the value from them, so scores of another
    # quantity (an estimate rebuilt around a sign flip or an abs) would be pooled silently as if they were its own.
    if (est.scores is not None and np.size(est.scores) > 1 and np.isfinite(est.scores).all()
            and abs(float(np.mean(est.scores)) - float(est.value)) <= 1e-9):
        out["scores"] = pack_scores(est.scores)
    if parts is not None:
        out["varying"], out["repeating"] = float(parts[0]), float(parts[1])
        if len(parts) > 2:
            out["k"] = int(parts[2])
    return out


def _verdict_at(t: Mapping[str, Any], z: float, se: Optional[float] = None) -> Optional[bool]:
    """A test's three-way verdict at `z`: its estimate against its threshold with the error for that z."""
    se = _se_at(t, z) if se is None else se
    return verdict(float(t["value"]), t["side"], float(t["threshold"]), se, z)


def _se_at(t: Mapping[str, Any], z: float) -> float:
    """A test's error for a verdict at `z`: a pooled test's between-seed part is scaled by Student's t at that z's
    own level (its k - 1 df), so a stricter z (Bonferroni) asks for the t quantile of the stricter level too."""
    k = t.get("k")
    if not k or k < 2 or "varying" not in t or abs(z - Z) < 1e-12:
        return float(t["se"])
    from lab.estimates import t_factor

    here = math.sqrt(t_factor(k - 1, z) ** 2 * max(t["varying"], 0.0) / k + max(t["repeating"], 0.0))
    return max(here, float(t["se"]))


def _words(t: dict[str, Any]) -> str:
    if t.get("unit", "pts") == "pts":
        return f"{t['name']} {100 * t['value']:+.2f} pts (se {100 * t['se']:.2f})"
    unit = f" {t['unit']}" if t.get("unit") else ""
    return f"{t['name']} {t['value']:+.3f}{unit} (se {t['se']:.3f})"


def _estimate(t: Mapping[str, Any]) -> Estimate:
    scores = unpack_scores(t["scores"]) if t.get("scores") else None
    return Estimate(t["value"], t["se"], t["se_kind"], t.get("n", 0), t.get("how", ""), scores=scores)


@functools.lru_cache(maxsize=64)
def union_z(m: int, z: float = Z) -> float:
    """The z a test needs when m tests are joined on their union side (any one of them decides the claim): the
    Bonferroni level, the first step of Holm's procedure, so that the chance that some test decides falsely stays at
    one test's (`all` joins its "does not hold" side so, `any` its "holds" side)."""
    if m <= 1:
        return z
    from scipy.stats import norm

    return float(norm.isf(norm.sf(z) / m))


def _combine(tests: Sequence[Mapping[str, Any]], combine: str, z: float = Z) -> Optional[bool]:
    """The claim's verdict from its tests: "all" holds when every test holds (an intersection-union test needs no
    correction) and does not hold when one test is against it at the Bonferroni z of the m tests; "any" holds when
    one test holds at that z and does not hold when every test is against it."""
    if combine not in ("all", "any"):
        raise ValueError(f"combine must be 'all' or 'any', not {combine!r}")
    zu = union_z(len(tests), z)
    strict = [_verdict_at(t, zu) for t in tests]
    if combine == "all":
        if any(v is False for v in strict):
            return False
        return True if all(t["holds"] is True for t in tests) else None
    if any(v is True for v in strict):
        return True
    return False if all(t["holds"] is False for t in tests) else None


def _settle(tests: Sequence[dict[str, Any]], holds: Optional[bool], combine: str, seeds_now: int,
            z: float, forced: bool = False) -> Optional[dict[str, Any]]:
    """Seeds / inputs that would decide an undecided claim: for "all" every undecided test must be decided (the
    most demanding one), for "any" one is enough (the least demanding one). A claim that cannot tell whatever its
    tests say (`forced`: a recipe at fewer than MIN_SEEDS seeds) needs every test's seeds, and at least MIN_SEEDS."""
    if holds is not None:
        return None

    def parts(t: Mapping[str, Any]) -> Optional[tuple[float, float]]:
        return (t["varying"], t["repeating"]) if "varying" in t and "repeating" in t else None

    chosen = [t for t in tests if forced or t["holds"] is None]
    open_ = [settle(_estimate(t), t["threshold"], z, seeds_now, parts(t)) for t in chosen]
    if not open_:
        return None
    if forced:
        for t, o in zip(chosen, open_, strict=True):
            if o["seeds"] is not None:
                o["seeds"] = max(o["seeds"], MIN_SEEDS)
            elif t["se"] <= 0 or o["gap"] < 1e-12:
                # no error or no effect at one seed says nothing of the spread between seeds: the fewest that can
                o["seeds"] = MIN_SEEDS

    def need(key: str) -> Optional[int]:
        vals = [o[key] for o in open_]
        if combine == "all":
            return None if any(v is None for v in vals) else max(vals)
        known = [v for v in vals if v is not None]
        return min(known) if known else None

    out = {"seeds": need("seeds"), "inputs": need("inputs"), "seeds_now": seeds_now}
    if any(o.get("spread") == "unknown" for o in open_):
        out["spread"] = "unknown"
    return out


def claim(key: str, statement: str, source: str, measured: dict[str, Any], rule: str,
          tests: Sequence[dict[str, Any]], detail: str, subject: Optional[str] = None, combine: str = "all",
          seeds: Union[int, Sequence[int]] = 1, z: float = Z, over: str = "inputs") -> Claim:
    """One claim record (see the module's docstring). Its verdict is computed from `tests` (made by `test`), joined
    by `combine`; `measured` gets the deciding error (`se`, `se_kind`: the largest error among the tests) unless it
    names one itself. `seeds`: the training seeds the estimates already average (a list), or how many.

    `over` says what the verdict generalises over: "inputs" (these trained networks: one seed is enough) or "seeds"
    (a recipe or an architecture: training seeds are the unit). A claim over seeds that rests on fewer than
    MIN_SEEDS listed seeds cannot tell, whatever its tests say: its tests still show the one network's effect."""
    if over not in OVER:
        raise ValueError(f"claim {key!r}: over must be one of {tuple(OVER)}, not {over!r}")
    tests = list(tests)
    if not tests:
        raise ValueError(f"claim {key!r}: a verdict needs at least one test")
    listed = None if isinstance(seeds, int) else [int(x) for x in seeds]
    k = len(listed) if listed is not None else int(seeds)
    if over == "seeds" and listed is None and k > 1:  # `check` (and the record) need the seeds themselves
        raise ValueError(f"claim {key!r}: a claim over seeds lists the seeds it rests on (seeds=[...]), not {k}")
    why = None
    if over == "seeds" and k < MIN_SEEDS:
        why = ONE_NETWORK if k <= 1 else f"{k} trained networks, a recipe needs {MIN_SEEDS}"
    holds = None if why else _combine(tests, combine, z)
    worst = max(tests, key=lambda t: t["se"])
    m = dict(measured)
    m.setdefault("se", worst["se"])
    m.setdefault("se_kind", worst["se_kind"])
    return Claim(key=key, claim=statement, source=source, measured=_plain(m), tests=tests, combine=combine, rule=rule,
                 holds=holds, detail=detail, settle=_settle(tests, holds, combine, k, z, forced=why is not None),
                 subject=subject, over=over, seeds=listed if over == "seeds" else None, why=why)


def _shape(c: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """What must be the same at every seed for a claim's tests to be pooled: each test's name, side, and whether it
    is a placeholder with nothing to measure (an exact 0 against 0)."""
    return [(t["name"], t["side"], t["se_kind"] == "exact" and t["se"] == 0 and t["value"] == t["threshold"])
            for t in c["tests"]]


def _pooled_test(ts: Sequence[Mapping[str, Any]], z: float, seeds: Sequence[int]) -> dict[str, Any]:
    """One test pooled over seeds. The same threshold at every seed: the estimates are pooled against it; otherwise
    each seed's gap to its own threshold (on the rule's side) is pooled against 0. With every seed's per-input
    scores (the same inputs) the error is the inputs x seeds design's (`over_design`); without them, the seeds'
    spread plus a run's own error in full (`over_seeds`). Each seed's own value is listed (`per_seed`), with the
    sign-flip test over the seeds beside (`test`)."""
    t0 = ts[0]
    same = all(abs(t["threshold"] - t0["threshold"]) <= 1e-12 for t in ts)
    sign = 1.0 if t0["side"] == ">=" else -1.0
    ests = [_estimate(t) for t in ts]
    if same:
        name, side, thr, shift = t0["name"], t0["side"], t0["threshold"], [0.0] * len(ts)
    else:
        name, side, thr = f"{t0['name']}, past its own threshold at each seed", ">=", 0.0
        shift = [t["threshold"] for t in ts]
    scale = 1.0 if same else sign
    rows = [None if e.scores is None else scale * (e.scores - sh) for e, sh in zip(ests, shift, strict=True)]
    paired_rows = all(r is not None for r in rows) and len({np.size(r) for r in rows}) == 1 and np.size(rows[0]) > 1
    if paired_rows:
        dz = design(rows)
        est = over_design(rows, dz=dz)
        parts = (dz.varying, dz.repeating, dz.k)
    else:
        vals = [Estimate(scale * (e.value - sh), e.se, e.se_kind, e.n, e.how) for e, sh in zip(ests, shift,
                                                                                               strict=True)]
        est = over_seeds(vals)
        spread2 = float(np.var([v.value for v in vals], ddof=1))
        parts = (spread2, float(np.mean([v.se ** 2 for v in vals])), len(vals))
    own = [(s, scale * (e.value - sh)) for s, e, sh in zip(seeds, ests, shift, strict=True)]
    return test(name, est, side, thr, z, t0.get("unit", "pts"), parts=parts, per_seed=own)


def _mean_measured(ms: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The numbers a pooled claim shows: each number's mean over the seeds, and words or lists only where every seed
    has the same."""
    out: dict[str, Any] = {}
    for k, v in ms[0].items():
        if k in ("se", "se_kind"):
            continue
        vs = [m.get(k) for m in ms]
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vs):
            out[k] = float(np.mean(vs))
        elif all(x == v for x in vs):
            out[k] = v
    return out


def pool(per_seed: Sequence[Sequence[Mapping[str, Any]]], seeds: Sequence[int], z: float = Z) -> list[Claim]:
    """One claim list measured at several seeds joined into one, over the seeds (`over: "seeds"`, the seeds listed):
    a claim is pooled only when it is present at every seed (same key and subject) with the same tests (name, side,
    combine), each test pooled by `_pooled_test` and decided again; otherwise it is listed as unable to be pooled
    (cannot tell, with the reason). Fewer than MIN_SEEDS seeds cannot tell a recipe (`claim`)."""
    if len(per_seed) != len(seeds) or not per_seed:
        raise ValueError("pool needs one claim list per seed")

    def ident(c: Mapping[str, Any]) -> tuple[str, str]:
        return c["key"], c.get("subject") or ""

    by_seed = [{ident(c): c for c in cs} for cs in per_seed]
    seeds = [int(x) for x in seeds]
    seeds_txt = ", ".join(map(str, seeds))
    out = []
    # Every claim measured at some seed, in the order first seen: one measured at seed 0 only is as much a claim
    # that cannot be pooled as one missing there.
    firsts: dict[tuple[str, str], Mapping[str, Any]] = {}
    for cs_ in per_seed:
        for c in cs_:
            firsts.setdefault(ident(c), c)
    for c0 in firsts.values():
        cs = [b.get(ident(c0)) for b in by_seed]
        missing = [s for s, c in zip(seeds, cs, strict=True) if c is None]
        odd = [s for s, c in zip(seeds, cs, strict=True) if c is not None and
               (_shape(c) != _shape(c0) or c.get("combine", "all") != c0.get("combine", "all"))]
        if missing or odd:
            why = (f"not measured at seed {', '.join(map(str, missing))}" if missing else
                   f"its tests differ between seeds (seed {seeds[0]} against seed {', '.join(map(str, odd))})")
            out.append(dataclasses.replace(
                Claim.from_plain(c0), holds=None, settle=None, over="seeds", seeds=seeds, seed=None,
                why="cannot be pooled: " + why,
                detail=f"Over seeds {seeds_txt}: cannot be pooled, {why}; each seed's own verdict is shown beside."))
            continue
        tests = [_pooled_test([c["tests"][i] for c in cs], z, seeds) for i in range(len(c0["tests"]))]
        values = ", ".join(_words(t) for t in tests)
        measured = _mean_measured([c["measured"] for c in cs])
        out.append(claim(c0["key"], c0["claim"], c0["source"], measured, c0["rule"], tests,
                         f"Over seeds {seeds_txt} (each seed redraws the weights, the batch order and its "
                         f"bootstrap of the training data): {values}; the error has the part that varies between "
                         "seeds and the part that repeats at every seed (the same held-out inputs).",
                         c0.get("subject"), c0.get("combine", "all"), seeds=seeds, z=z, over="seeds"))
    return out


# -- claims are computed when a result is read ------------------------------------------------------------------
F = TypeVar("F", bound=Callable[..., Any])
_READERS: dict[type, Callable[[Any], list[Claim]]] = {}


def reads(*types: type) -> Callable[[F], F]:
    """Declare `fn(result) -> claims` as the claims of results of `types` (and their subclasses), in an
    experiment's claims.py: a reader of a result (a descriptor, a page, the CLI) gets them with `of(result)`. A
    type declared again (a module reloaded) takes the new function."""
    def register(fn: F) -> F:
        for t in types:
            _READERS[t] = fn
        return fn

    return register


def reader(result: Any) -> Optional[Callable[[Any], list[Claim]]]:
    """The claims function declared for `result`'s type or its nearest base class (`reads`), or None."""
    return next((_READERS[t] for t in type(result).__mro__ if t in _READERS), None)


def of(result: Any) -> list[Claim]:
    """The claims of a result, computed now from it (and from the stored results it rests on) by the function its
    experiment's claims.py declares; ValueError when none is declared for its type (its claims module, which its
    descriptor imports, was never imported)."""
    fn = reader(result)
    if fn is None:
        raise ValueError(f"no claims are declared for a {type(result).__name__} (import its experiment's claims.py)")
    return fn(result)


def attach(result: Any) -> Any:
    """`result` as plain data with its claims: every result inside it whose type has claims (`reads`) becomes its
    plain dict plus `claims`, computed now (what the CLI's --json prints and Reproduce's numbers read); a dict's own
    `claims` are kept."""
    from lab.runtime.plain import to_plain

    if isinstance(result, Claim):
        return result.to_plain()
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        out = {f.name: attach(getattr(result, f.name)) for f in dataclasses.fields(result)}
        if reader(result) is not None:
            out["claims"] = to_plain(of(result))
        return out
    if isinstance(result, dict):
        plain = {str(k): attach(v) for k, v in result.items()}
        if reader(result) is not None:  # plain data of a type of its own (IOT's joined run)
            plain["claims"] = to_plain(of(result))
        return plain
    if isinstance(result, (list, tuple)):
        return [attach(v) for v in result]
    return to_plain(result)


def _plain(measured: dict[str, Any]) -> dict[str, Any]:
    """Numbers as plain floats/ints (numpy scalars and tensors would not survive JSON)."""
    out: dict[str, Any] = {}
    for k, v in measured.items():
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            out[k] = v
        elif isinstance(v, (list, tuple)):
            out[k] = [float(x) if not isinstance(x, (int, str)) and x is not None else x for x in v]
        elif isinstance(v, dict):
            out[k] = _plain(v)
        else:
            out[k] = float(v)
    return out


# -- three-way logic ---------------------------------------------------------------------------------------------
def at_least(estimate: float, threshold: float, se: float, z: float = Z) -> Optional[bool]:
    """Three-way verdict on `estimate >= threshold` (lab/estimates.verdict)."""
    return verdict(estimate, ">=", threshold, se, z)


def at_most(estimate: float, threshold: float, se: float, z: float = Z) -> Optional[bool]:
    """Three-way verdict on `estimate <= threshold`."""
    return verdict(estimate, "<=", threshold, se, z)


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


# -- words -------------------------------------------------------------------------------------------------------
def pct(x: float) -> str:
    """An accuracy as a percentage with one decimal, for a claim's detail."""
    return f"{100 * x:.1f} %"


def pts(x: float) -> str:
    """A difference of accuracies in percentage points, signed."""
    return f"{100 * x + 0.0:+.1f} pts"


def noise_words(se: float, z: float = Z, kind: str = "") -> str:
    """How a rule names its noise band, e.g. 'by more than 2 standard errors (2 x 1.2 pts, paired)'."""
    return f"by more than {z:g} standard errors ({z:g} x {100 * se:.1f} pts{', ' + kind if kind else ''})"


def check(claims: Sequence[Mapping[str, Any]]) -> None:
    """Raise ValueError unless every item is a complete claim record (tests and the CLI use this): every field, a
    verdict that is its tests' verdict, and `measured` naming `se` and `se_kind`."""
    from lab.estimates import SE_KINDS

    for c in claims:
        missing = [f for f in FIELDS if f not in c]
        if missing:
            raise ValueError(f"claim {c.get('key', c)!r} lacks {missing}")
        if c["holds"] not in (True, False, None):
            raise ValueError(f"claim {c['key']!r}: holds is {c['holds']!r}")
        if not isinstance(c["measured"], dict) or not c["measured"]:
            raise ValueError(f"claim {c['key']!r}: measured must name the numbers it rests on")
        m = c["measured"]
        if not isinstance(m.get("se"), (int, float)) or m.get("se_kind") not in SE_KINDS:
            raise ValueError(f"claim {c['key']!r}: measured must name se and se_kind (one of {SE_KINDS})")
        if not c["tests"] or any(t.get("se_kind") not in SE_KINDS or math.isnan(t["se"]) for t in c["tests"]):
            raise ValueError(f"claim {c['key']!r}: every test needs an estimate with a known se_kind")
        if c["over"] not in OVER:
            raise ValueError(f"claim {c['key']!r}: over is {c['over']!r}, not one of {tuple(OVER)}")
        if c["over"] == "seeds" and len(c.get("seeds") or []) < MIN_SEEDS and c["holds"] is not None:
            raise ValueError(f"claim {c['key']!r}: a verdict over seeds needs at least {MIN_SEEDS} listed seeds")
        if c.get("why"):
            if c["holds"] is not None:
                raise ValueError(f"claim {c['key']!r}: it says why it cannot tell, yet holds is {c['holds']!r}")
        elif _combine(c["tests"], c.get("combine", "all")) is not c["holds"]:
            raise ValueError(f"claim {c['key']!r}: holds is not what its tests say")
