"""The one sentence a study's map says, made from its numbers (never written by hand)."""

from __future__ import annotations

from typing import Any, Mapping


def effect_words(x: float, unit: str) -> str:
    return f"{100 * x:+.1f} pts" if unit == "pts" else f"{x:+.3g} {unit}".rstrip()


def sentence(a: Mapping[str, Any]) -> str:
    """What the map shows: where the claim holds over seeds and where its effect is shown below the margin (each
    value's mark corrected over the grid by Holm), what the rest needs, then the trend along the knob."""
    knob, cells, values = a["knob"], a["cells"], a["values"]
    k = len(a["seeds"])
    unit = cells[0]["unit"] if cells else "pts"
    margin = effect_words(a["margin"], unit).lstrip("+")
    first, last = values[0], values[-1]
    parts = []
    if a["appears_from"] == first:
        parts.append("the claim holds at every value tried")
    else:
        if a["appears_from"] is not None:
            parts.append(f"the claim holds from {knob} = {a['appears_from']} on")
        if a.get("holds_up_to") is not None:
            parts.append(f"the claim holds up to {knob} = {a['holds_up_to']}")
        if a["absent_up_to"] == last:
            parts.append(f"the effect does not appear at any value tried (shown below the margin of {margin})")
        else:
            if a["absent_up_to"] is not None:
                parts.append(f"the effect does not appear up to {knob} = {a['absent_up_to']} (shown below the margin "
                             f"of {margin})")
            if a.get("absent_from") is not None:
                parts.append(f"the effect is below the margin of {margin} from {knob} = {a['absent_from']} on")
    head = f"Over {k} seeds " + ("; ".join(parts) if parts else "the map cannot tell where the claim holds")
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
