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

A test decides only when its estimate is more than Z standard errors from its threshold (one-sided, ~2.3 % false
"holds" under the null at the threshold; tests/test_estimates.py simulates it). `pool` joins one claim measured at
several seeds: every test's estimate is averaged over the seeds with the seeds' spread as its error.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, TypeVar

from lab.estimates import Estimate, Z, over_seeds, settle, verdict

VERDICTS = {True: "holds", False: "does not hold", None: "cannot tell"}
FIELDS = ("key", "claim", "source", "measured", "tests", "rule", "holds", "detail")
OPTIONAL = ("subject", "seed")  # keys of the plain form only when set
__all__ = ["Z", "VERDICTS", "Estimate", "Claim", "claim", "claim_line", "claim_lines", "test", "pool", "check",
           "at_least", "at_most", "all_of", "any_of", "pct", "pts", "noise_words", "reads", "of", "reader", "attach"]


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
        return cls(**{f.name: c.get(f.name) for f in dataclasses.fields(cls)})


def claim_line(c: Mapping[str, Any], prefix: str = "- ") -> str:
    """A claim record as one line of text: `- [verdict] statement (subject, seed s): numbers` (the CLI's form)."""
    about = ", ".join(([c["subject"]] if c.get("subject") else []) + ([f"seed {c['seed']}"] if "seed" in c else []))
    return f"{prefix}[{VERDICTS[c['holds']]}] {c['claim']}" + (f" ({about})" if about else "") + f": {c['detail']}"


def claim_lines(claims: Sequence[Mapping[str, Any]], prefix: str = "- ") -> str:
    """One `claim_line` per claim."""
    return "\n".join(claim_line(c, prefix) for c in claims)


def test(name: str, est: Estimate, side: str, threshold: float, z: float = Z, unit: str = "pts") -> dict[str, Any]:
    """One test of a claim: `est` against `threshold` on `side` ('>=' or '<='), with its three-way verdict. `unit`:
    "pts" for shares and accuracies (written x 100 as points), or the name of any other unit (written as it is)."""
    return {"name": name, "value": float(est.value), "se": float(est.se), "se_kind": est.se_kind, "n": int(est.n),
            "how": est.how, "side": side, "threshold": float(threshold), "unit": unit,
            "holds": verdict(float(est.value), side, float(threshold), float(est.se), z)}


def _words(t: dict[str, Any]) -> str:
    if t.get("unit", "pts") == "pts":
        return f"{t['name']} {100 * t['value']:+.2f} pts (se {100 * t['se']:.2f})"
    unit = f" {t['unit']}" if t.get("unit") else ""
    return f"{t['name']} {t['value']:+.3f}{unit} (se {t['se']:.3f})"


def _estimate(t: dict[str, Any]) -> Estimate:
    return Estimate(t["value"], t["se"], t["se_kind"], t.get("n", 0), t.get("how", ""))


def _combine(tests: Sequence[dict[str, Any]], combine: str) -> Optional[bool]:
    if combine == "all":
        return all_of(t["holds"] for t in tests)
    if combine == "any":
        return any_of(t["holds"] for t in tests)
    raise ValueError(f"combine must be 'all' or 'any', not {combine!r}")


def _settle(tests: Sequence[dict[str, Any]], holds: Optional[bool], combine: str, seeds_now: int,
            z: float) -> Optional[dict[str, Any]]:
    """Seeds / inputs that would decide an undecided claim: for "all" every undecided test must be decided (the
    most demanding one), for "any" one is enough (the least demanding one)."""
    if holds is not None:
        return None
    open_ = [settle(_estimate(t), t["threshold"], z, seeds_now) for t in tests if t["holds"] is None]
    if not open_:
        return None

    def need(key: str) -> Optional[int]:
        vals = [o[key] for o in open_]
        if combine == "all":
            return None if any(v is None for v in vals) else max(vals)
        known = [v for v in vals if v is not None]
        return min(known) if known else None

    return {"seeds": need("seeds"), "inputs": need("inputs"), "seeds_now": seeds_now}


def claim(key: str, statement: str, source: str, measured: dict[str, Any], rule: str,
          tests: Sequence[dict[str, Any]], detail: str, subject: Optional[str] = None, combine: str = "all",
          seeds: int = 1, z: float = Z) -> Claim:
    """One claim record (see the module's docstring). Its verdict is computed from `tests` (made by `test`), joined
    by `combine`; `measured` gets the deciding error (`se`, `se_kind`: the largest error among the tests) unless it
    names one itself. `seeds`: how many seeds the estimates already average (for `settle`)."""
    tests = list(tests)
    if not tests:
        raise ValueError(f"claim {key!r}: a verdict needs at least one test")
    holds = _combine(tests, combine)
    worst = max(tests, key=lambda t: t["se"])
    m = dict(measured)
    m.setdefault("se", worst["se"])
    m.setdefault("se_kind", worst["se_kind"])
    return Claim(key=key, claim=statement, source=source, measured=_plain(m), tests=tests, combine=combine, rule=rule,
                 holds=holds, detail=detail, settle=_settle(tests, holds, combine, seeds, z), subject=subject)


def pool(per_seed: Sequence[Sequence[Mapping[str, Any]]], seeds: Sequence[int], z: float = Z) -> list[Claim]:
    """One claim list measured at several seeds joined into one: for every claim present at every seed (same key
    and subject, same tests), each test's estimate is averaged over the seeds (lab/estimates.over_seeds) and decided
    again; the detail says the seeds and the spread. Claims missing at some seed are left out."""
    if len(per_seed) != len(seeds) or not per_seed:
        raise ValueError("pool needs one claim list per seed")

    def ident(c: Mapping[str, Any]) -> tuple[str, str]:
        return c["key"], c.get("subject", "")

    by_seed = [{ident(c): c for c in cs} for cs in per_seed]
    out = []
    for c0 in per_seed[0]:
        cs = [b.get(ident(c0)) for b in by_seed]
        if any(c is None or len(c["tests"]) != len(c0["tests"]) for c in cs):
            continue
        tests = []
        for i, t0 in enumerate(c0["tests"]):
            est = over_seeds([_estimate(c["tests"][i]) for c in cs])
            thr = sum(c["tests"][i]["threshold"] for c in cs) / len(cs)
            tests.append(test(t0["name"], est, t0["side"], thr, z, t0.get("unit", "pts")))
        values = ", ".join(_words(t) for t in tests)
        seeds_txt = ", ".join(map(str, seeds))
        measured = {k: v for k, v in c0["measured"].items() if k not in ("se", "se_kind")}
        out.append(claim(c0["key"], c0["claim"], c0["source"], measured, c0["rule"], tests,
                         f"Over seeds {seeds_txt}: {values}; the error from the seeds' spread.",
                         c0.get("subject"), c0.get("combine", "all"), seeds=len(seeds), z=z))
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
        if _combine(c["tests"], c.get("combine", "all")) is not c["holds"]:
            raise ValueError(f"claim {c['key']!r}: holds is not what its tests say")
