"""Presets and plans: complete, named settings of an experiment page, and the lab calls a setting makes, as plain
data (no Streamlit).

A page's controls are listed once per experiment (its descriptor, lab/experiments/NAME/descriptor.py: every control
the page shows, page-only ones included, with its default). A preset names a value for *every* one of them, so what
it shows never depends on what was clicked before: `preset(CONTROLS, key, label, help, k=1)` fills in the defaults
for the controls it does not mention. The page applies all of them at once (app/controls.py).

`plan(settings)` (the descriptor's) lists the lab calls of a view, each a `Need`: the page runs exactly these
(app/jobs.py: `View`), `python -m lab warm` computes them for every preset, the toolbar's "ready" labels and the
claims at other seeds read them. `cost` says how long the missing ones took when built before (measured by the
store), so a page can say "ready" or "trains ~40 s" before anyone clicks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from lab.runtime.store import active_store


@dataclass(frozen=True)
class Preset:
    """A complete setting of one page: a value for every control, in the page's order."""

    key: str  # stable id (the button's key: "try_<key>")
    label: str
    help: str
    values: tuple[tuple[str, Any], ...]

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.values)


@dataclass(frozen=True)
class Need:
    """One lab call of a view: an entry point (decorated with lab.experiment.entry, so the store keeps its result)
    and its config; `label` says what it computes (the page's progress bar, warm's report) and `key` is the name the
    page reads its result by (the label when not given). An `optional` call runs only when the student asks for it
    (a toggle below the results): warming, the "ready" labels and the claims leave it out. A call the view's claims
    do not read (`for_claims` False: an embedding, a figure's own baseline) is the page's alone: the claims at other
    seeds (lab/classroom/seeds.py: `seed_needs`) leave it out (tests/test_claims_everywhere.py checks each plan's
    declaration against what its claims read). What a call costs is not guessed here: the store's record of how
    long the same build took (lab/runtime/timings.py)."""

    label: str
    fn: Callable[..., Any]
    cfg: Any
    key: str = ""
    optional: bool = False
    for_claims: bool = True

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", self.label)


def by_key(plan: Sequence[Need]) -> dict[str, Need]:
    """{key: call} of a plan, in its order; a ValueError when two calls share a key (the page could not tell them
    apart)."""
    out: dict[str, Need] = {}
    for n in plan:
        if n.key in out:
            raise ValueError(f"two calls of the plan are both named {n.key!r}")
        out[n.key] = n
    return out


def preset(controls: Mapping[str, Any], key: str, label: str, help: str, **values: Any) -> Preset:
    """A preset that sets `values` and every other control of the page to its default."""
    unknown = sorted(set(values) - set(controls))
    if unknown:
        raise ValueError(f"preset {key!r} sets {unknown}, which the page has no control for")
    return Preset(key, label, help, tuple((name, values.get(name, default)) for name, default in controls.items()))


def defaults(controls: Mapping[str, Any]) -> Preset:
    """The page's defaults as a preset (what "Reset" applies)."""
    return preset(controls, "reset", "Reset", "Every control back to its default.")


def always(plan: Sequence[Need]) -> list[Need]:
    """The calls a view always makes (its optional ones left out): what warming computes and "ready" means."""
    return [n for n in plan if not n.optional]


def missing(needs: Sequence[Need]) -> list[Need]:
    """The calls a view always makes whose result is not stored yet (reads the active store's folder only: nothing
    is loaded or built)."""
    store = active_store()
    return [n for n in always(needs) if not store.has(n.fn.kind, n.cfg)]


def cost(needs: Sequence[Need]) -> Optional[float]:
    """Seconds until every call's result is stored: 0 when all are, the measured times of the missing ones (the same
    build timed earlier, or with another seed: lab/runtime/timings.py), or None when one of them was never timed
    here."""
    todo = missing(needs)
    if not todo:
        return 0.0
    times = [active_store().estimate(n.fn.kind, n.cfg) for n in todo]  # recorded build times
    return None if any(t is None for t in times) else float(sum(times))


def describe_cost(seconds: Optional[float]) -> str:
    """'ready', a measured duration a student can plan with, or that it trains (never timed on this machine)."""
    if seconds is None:
        return "trains (first run here)"
    if seconds <= 0:
        return "ready"
    if seconds < 60:
        return f"trains ~{max(5, round(seconds / 5) * 5):.0f} s"
    return f"trains ~{seconds / 60:.0f} min" if seconds >= 90 else "trains ~1 min"
