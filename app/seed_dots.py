"""Each seed's own value beside a claim pooled over seeds (issue 57): the pool can hide one seed far from the rest.

`figure(claim)` draws, per test of a pooled claim (one panel each, side by side), the pooled value as a grey bar
with its error bar (value +- Z x se, `lab.estimates.Z`), the rule's threshold as a dashed line, and one dot per
seed at its own value (`per_seed`, from `lab.claims.test`), coloured by the side of the threshold it lies on: the
"holds" side in the verdict's blue, the other side in its orange, on the threshold grey (theme.HOLDS_SIDE,
AGAINST_SIDE, MARK), each with its own marker too. A claim with no per-seed values (not pooled, or its tests could
not be pooled) draws nothing (None). `flip_words(claim)` is the line beside it: how many seeds lie on the rule's
side and the exact sign-flip p over seeds, which is shown, not used to decide.
Shares are drawn x 100 as points (unit "pts"), as the claim's words give them (`lab.claims._words`).
"""

from __future__ import annotations

import html
import textwrap
from typing import Any, Mapping, Optional

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app import theme
from lab.estimates import Z

POOLED_FILL = "#c8c8c8"  # a neutral grey bar: the pool's colour is no verdict (its verdict is written above it)
HEIGHT = 200  # px: a claim's figure is one row beside its words; several claims fit on a screen
WHAT = (f"Over seeds: the pooled value (grey bar, error bar ± {Z:g} se), the rule's threshold (dashed) and each "
        "seed's own value (a dot each)")  # what the chart's caption says it shows
TITLE_WIDTH = 38  # characters a panel title's line holds before it wraps


def _tests(c: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in c.get("tests") or [] if t.get("per_seed")]


def _scale(t: Mapping[str, Any]) -> float:
    return 100.0 if t.get("unit", "pts") == "pts" else 1.0


def _unit(t: Mapping[str, Any]) -> str:
    u = t.get("unit", "pts")
    return "pts" if u == "pts" else str(u or "")


def side(gap: float) -> str:
    """Which side of the threshold a seed's gap puts it on: "holds" (gap > 0), "against" (< 0) or "on" (= 0)."""
    return "holds" if gap > 0 else ("against" if gap < 0 else "on")


# side -> (legend name, colour, marker symbol): colour is never the only cue
SIDES = {"holds": ("seed on the holds side", theme.HOLDS_SIDE, "circle"),
         "against": ("seed on the other side", theme.AGAINST_SIDE, "diamond"),
         "on": ("seed on the threshold", theme.MARK, "square")}


def figure(c: Mapping[str, Any]) -> Optional[go.Figure]:
    """The claim's pooled value and each seed's own value, one panel per test that lists its seeds; None where no
    test does."""
    tests = _tests(c)
    if not tests:
        return None
    titles = ["<br>".join(html.escape(line) for line in textwrap.wrap(str(t["name"]), TITLE_WIDTH)) or " "
              for t in tests]
    fig = make_subplots(rows=1, cols=len(tests), subplot_titles=titles, horizontal_spacing=0.12 / len(tests) + 0.04)
    shown: set[str] = set()
    for i, t in enumerate(tests, start=1):
        k, unit = _scale(t), _unit(t)
        fmt = ".2f" if unit == "pts" else ".3f"
        suffix = f" {html.escape(unit)}" if unit else ""
        value, err = k * float(t["value"]), k * Z * float(t["se"])
        seeds = list(t["per_seed"])
        cats = ["pooled"] + [f"seed {int(p['seed'])}" for p in seeds]
        fig.add_bar(x=["pooled"], y=[value], name=f"pooled ± {Z:g} se", marker={"color": POOLED_FILL,
                    "line": {"color": theme.MARK, "width": 1}}, error_y={"type": "data", "array": [err],
                    "color": theme.MARK, "thickness": 2, "width": 8}, legendgroup="pooled",
                    showlegend="pooled" not in shown, row=1, col=i,
                    hovertemplate=f"pooled: %{{y:{fmt}}}{suffix} ± {err:{fmt}}<extra></extra>")
        shown.add("pooled")
        fig.add_scatter(x=[cats[0], cats[-1]], y=[k * float(t["threshold"])] * 2, mode="lines", name="threshold",
                        line={"color": theme.MARK, "dash": "dash", "width": 2}, legendgroup="threshold",
                        showlegend="threshold" not in shown, row=1, col=i,
                        hovertemplate=f"threshold ({html.escape(str(t['side']))}) %{{y:{fmt}}}{suffix}<extra></extra>")
        shown.add("threshold")
        for s, (name, colour, symbol) in SIDES.items():
            mine = [p for p in seeds if side(float(p["gap"])) == s]
            if not mine:
                continue
            fig.add_scatter(x=[f"seed {int(p['seed'])}" for p in mine], y=[k * float(p["value"]) for p in mine],
                            mode="markers", name=name, legendgroup=s, showlegend=s not in shown, row=1, col=i,
                            marker={"color": colour, "symbol": symbol, "size": 14,
                                    "line": {"color": "white", "width": 1}},
                            hovertemplate=f"%{{x}}: %{{y:{fmt}}}{suffix}<extra></extra>")
            shown.add(s)
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=cats, row=1, col=i)
        fig.update_yaxes(title=unit or None, tickformat=".1f" if unit == "pts" else ".2f", zeroline=True,
                         row=1, col=i)
    lines = max(title.count("<br>") + 1 for title in titles)
    theme.layout(fig, height=HEIGHT + 20 * (lines - 1), showlegend=True, bargap=0.5)
    # the legend at the right, in its own column: above the panels it would sit on their titles
    fig.update_layout(margin={"l": 60, "r": 20, "t": 20 + 20 * lines, "b": 30},
                      legend={"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1.0, "yanchor": "top"})
    fig.update_annotations(font={"size": theme.SMALL_FONT})
    return fig


def flip_words(c: Mapping[str, Any]) -> str:
    """One line, plain text: per test that lists its seeds, how many lie on the rule's side and the exact sign-flip
    p over them, then that it is shown, not deciding, and the smallest p so few seeds can give ("" where no test
    lists its seeds)."""
    tests = _tests(c)
    if not tests:
        return ""
    parts = []
    for t in tests:
        gaps = [float(p["gap"]) for p in t["per_seed"]]
        words = f"{sum(g > 0 for g in gaps)} of {len(gaps)} seeds on the rule's side"
        if t.get("flip_p") is not None:
            words += f"{',' if len(tests) > 1 else ';'} sign-flip p = {float(t['flip_p']):.3g}"
        parts.append((f"{t['name']}: " if len(tests) > 1 else "") + words)
    n = min(len(t["per_seed"]) for t in tests)
    return "; ".join(parts) + f"; shown, not deciding ({n} seeds give no p below {0.5 ** n:.3g})."
