"""Presets: complete, named settings of an experiment page, as plain data (no Streamlit).

A page's controls are listed once per experiment (`CONTROLS` in lab/experiments/NAME.py: every control the page
shows, page-only ones included, with its default). A preset names a value for *every* one of them, so what it
shows never depends on what was clicked before: `preset(CONTROLS, key, label, help, k=1)` fills in the defaults
for the controls it does not mention. The page applies all of them at once (app/controls.py); a later
`python -m lab warm` computes what each preset needs, via the experiment's `needs(settings)`.

`needs(settings)` lists the cached results the page would ask for, each with a rough cost when it is not stored,
so a page can say "ready" or "trains about 40 s" before anyone clicks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

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
    """One cached result a setting needs: the entry point (decorated with lab.experiment.entry), its config, and
    roughly how many seconds it takes to compute on the classroom machine when nothing it depends on is stored."""

    label: str
    fn: Callable[..., Any]
    cfg: Any
    seconds: float


def preset(controls: Mapping[str, Any], key: str, label: str, help: str, **values: Any) -> Preset:
    """A preset that sets `values` and every other control of the page to its default."""
    unknown = sorted(set(values) - set(controls))
    if unknown:
        raise ValueError(f"preset {key!r} sets {unknown}, which the page has no control for")
    return Preset(key, label, help, tuple((name, values.get(name, default)) for name, default in controls.items()))


def defaults(controls: Mapping[str, Any]) -> Preset:
    """The page's defaults as a preset (what "Reset" applies)."""
    return preset(controls, "reset", "Reset", "Every control back to its default.")


def missing(needs: Sequence[Need]) -> list[Need]:
    """The needs that are not stored yet (reads the active store's folder only: nothing is loaded or built)."""
    store = active_store()
    return [n for n in needs if not store.has(n.fn.kind, n.cfg)]


def cost(needs: Sequence[Need]) -> float:
    """Rough seconds until every need is stored (0 when all are)."""
    return float(sum(n.seconds for n in missing(needs)))


def describe_cost(seconds: float) -> str:
    """'ready' or a rough duration a student can plan with."""
    if seconds <= 0:
        return "ready"
    if seconds < 60:
        return f"trains ~{max(5, round(seconds / 5) * 5):.0f} s"
    return f"trains ~{seconds / 60:.0f} min" if seconds >= 90 else "trains ~1 min"
