"""The one sentence a study's map says, made from its numbers (never written by hand)."""

from __future__ import annotations

from typing import Any, Mapping


def effect_words(x: float, unit: str) -> str:
    return f"{100 * x:+.1f} pts" if unit == "pts" else f"{x:+.3g} {unit}".rstrip()


def sentence(a: Mapping[str, Any]) -> str:
    """What the map shows: where the claim holds over seeds (Holm over the grid), where its effect is shown below
    the margin, and what the rest needs; then the trend along the knob."""
    knob, cells = a["knob"], a["cells"]
    values = a["values"]
    k = len(a["seeds"])
    unit = cells[0]["unit"] if cells else "pts"
    margin = effect_words(a["margin"], unit).lstrip("+")
    if a["appears_from"] is not None:
        where = ("at every value tried" if a["appears_from"] == values[0] else
                 f"from {knob} = {a['appears_from']} on")
        head = f"Over {k} seeds the claim holds {where}"
    elif a["absent_up_to"] is not None:
        where = ("at any value tried" if a["absent_up_to"] == values[-1] else
                 f"up to {knob} = {a['absent_up_to']}")
        head = f"Over {k} seeds the effect does not appear {where} (shown below the margin of {margin})"
    else:
        head = f"Over {k} seeds the map cannot tell where the claim begins"
    if a["appears_from"] is not None and a["absent_up_to"] is not None:
        head += f"; below the margin of {margin} up to {knob} = {a['absent_up_to']}"
    open_ = [c for c in cells if c["family"] == "cannot tell"]
    if open_:
        need = [c["seeds_to_decide"] for c in open_ if c["seeds_to_decide"]]
        head += (f"; {len(open_)} value(s) cannot tell" +
                 (f" (about {max(need)} seeds would decide them at the effects seen)" if need else
                  " (more seeds would not decide them at the effects seen)"))
    tr = a.get("trend")
    if tr and tr["direction"]:
        head += (f". The effect {tr['direction']} along {knob} "
                 f"({effect_words(tr['slope'], unit)} per step, seeds as blocks)")
    return head + "."
