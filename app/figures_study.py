"""A study's map (lab/study): the knob on x, the claim's pooled effect at each value with its interval, one dot per
seed, each value's mark coloured by its verdict over the grid, the "appears from" line.

Effects are gaps past the claim's threshold on its rule's side (above 0: the claim's side), in points for shares.
Colours by meaning (app/theme.py): a value where the claim holds over the grid in the verdict's blue, one where the
effect is shown below the margin in its orange, one that cannot tell in grey; a seed's dot in the side of 0 its own
gap lies on. Each mark has its own symbol too, so colour is never the only cue.
"""

from __future__ import annotations

from typing import Any, Mapping

import plotly.graph_objects as go

from app import theme
from lab.estimates import Z

HEIGHT = 360
WHAT = (f"Where it appears: the pooled effect past the claim's threshold at each value (± {Z:g} se), each seed's own "
        "effect (small dots), the margin (dotted) and the threshold (0, dashed)")
MARKS = {"present": ("holds here (Holm over the grid)", theme.HOLDS_SIDE, "circle"),
         "absent": ("below the margin (Holm over the grid)", theme.AGAINST_SIDE, "diamond"),
         "cannot tell": ("cannot tell", theme.CHANCE, "square")}


def _k(unit: str) -> float:
    return 100.0 if unit == "pts" else 1.0


def figure(a: Mapping[str, Any], title: str | None = None) -> go.Figure:
    """The map of one study's answer (lab/study/compute.read)."""
    cells = a["cells"]
    unit = cells[0]["unit"] if cells else "pts"
    k = _k(unit)
    xs = [str(c["value"]) for c in cells]
    fig = go.Figure()
    fig.add_scatter(x=[xs[0], xs[-1]], y=[0.0, 0.0], mode="lines", name="threshold (effect 0)",
                    line={"color": theme.MARK, "dash": "dash", "width": 2}, hoverinfo="skip")
    fig.add_scatter(x=[xs[0], xs[-1]], y=[k * a["margin"]] * 2, mode="lines", name="margin",
                    line={"color": theme.CHANCE, "dash": "dot", "width": 2}, hoverinfo="skip")
    # each seed's own effect, one trace per side of the threshold (the legend shows each side's colour)
    for side, name, colour in (("holds", "one seed, on the claim's side", theme.HOLDS_SIDE),
                               ("against", "one seed, on the other side", theme.AGAINST_SIDE)):
        pts = [(x, k * g, f"seed {s}") for c, x in zip(cells, xs, strict=True)
               for s, g in zip(c["seeds"], c["per_seed"], strict=True) if (g > 0) == (side == "holds")]
        if not pts:
            continue
        fig.add_scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], text=[p[2] for p in pts], mode="markers",
                        name=name, marker={"color": colour, "size": 8, "opacity": 0.8,
                                           "line": {"color": "white", "width": 1}},
                        hovertemplate="%{text}: %{y:.1f}<extra></extra>")
    for mark, (name, colour, symbol) in MARKS.items():
        mine = [c for c in cells if c["family"] == mark]
        if not mine:
            continue
        fig.add_scatter(
            x=[str(c["value"]) for c in mine], y=[k * c["effect"] for c in mine], mode="markers", name=name,
            marker={"color": colour, "symbol": symbol, "size": 16, "line": {"color": theme.MARK, "width": 1}},
            error_y={"type": "data", "array": [k * Z * c["se"] for c in mine], "color": colour, "thickness": 2,
                     "width": 10},
            text=[c["verdict"] for c in mine],
            hovertemplate="%{x}: %{y:.1f} (the value's own verdict: %{text})<extra></extra>")
    if a.get("appears_from") is not None:
        # between the last value without it and the first with it (left of the first value: every value)
        fig.add_vline(x=xs.index(str(a["appears_from"])) - 0.5, line={"color": theme.HOLDS_SIDE, "width": 2},
                      annotation_text=f"appears from {a['appears_from']}", annotation_position="top right")
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=xs, title=a["knob"])
    fig.update_yaxes(title=f"effect past the threshold ({'pts' if unit == 'pts' else unit})", zeroline=False)
    theme.layout(fig, title=title, height=HEIGHT + 40, showlegend=True)
    # the legend in its own band below the knob's axis title
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0.0},
                      margin={"l": 60, "r": 20, "t": 40, "b": 120},
                      meta={"unit": unit})  # the caption's words: a 1-point margin is "1 pts", not a share
    fig.update_xaxes(range=[-0.6, len(xs) - 0.4])
    return fig
