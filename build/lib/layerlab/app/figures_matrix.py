"""Figures of the Train x take apart page, built from the typed rows of lab.experiments.matrix (`RowResult`, by
recipe: the rows computed so far) and its typed `MatrixResult`.

The heatmap is an amount on a grid (the lab's amount scale, fixed to 0..100 % of the above-chance accuracy kept);
the recipes are categories (app/theme.py's categorical set, sequential and LayerShuffle in the Shuffle page's
colours), told apart by marker and dash too.
"""

from __future__ import annotations

import math
from typing import Optional

import plotly.graph_objects as go

from lab.experiments.matrix.experiment import (
    FT_STEPS,
    OP_LABELS,
    OPS,
    PROFILE_AXIS,
    RECIPES,
    MatrixResult,
    RowResult,
)

from . import figures_common as common
from . import theme
from .figcache import figure

RECIPE_COLOURS = {"sequential": theme.CATEGORICAL[0], "shuffle": theme.CATEGORICAL[1],
                  "ln-scale": theme.CATEGORICAL[2], "layerdrop": theme.CATEGORICAL[3],
                  "looped": theme.CATEGORICAL[4], "early-exit": theme.CATEGORICAL[5]}
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SHORT = {"delete": "delete<br>a block", "last_quarter": "delete last<br>quarter",
         "healed": "last quarter<br>+ fine-tune", "influence": "delete by<br>influence",
         "swap": "swap<br>a pair", "random": "random<br>order", "no_attn": "delete<br>attention",
         "no_mlp": "delete<br>MLP", "linear": "block made<br>linear", "exit": "exit<br>early"}


def ordered(rows: dict[str, RowResult]) -> list[str]:
    """The recipes present, in the lab's order."""
    return [r for r in RECIPES if r in rows]


@figure
def heatmap(rows: dict[str, RowResult], title: Optional[str] = "", height: int = 440) -> Optional[go.Figure]:
    """Share of the above-chance held-out accuracy kept, recipes (rows, those computed so far) x operations; a model
    at chance has no share ("–")."""
    recs = ordered(rows)
    if not recs:
        return None
    z = [[rows[r].kept[op] for op in OPS] for r in recs]
    acc = [[rows[r].acc[op] for op in OPS] for r in recs]
    names = [f"{rows[r].label} ({rows[r].base_acc:.0%})" for r in recs]
    fig = go.Figure()
    fig.add_heatmap(z=z, x=[SHORT[op] for op in OPS], y=names, coloraxis="coloraxis", customdata=acc,
                    text=[["–" if math.isnan(v) else f"{v:.0%}" for v in row] for row in z], texttemplate="%{text}",
                    textfont={"size": theme.SMALL_FONT},
                    hovertemplate="%{y}, %{x}: %{z:.1%} of the above-chance accuracy kept (held-out "
                                  "%{customdata:.1%})<extra></extra>")
    fig.update_layout(coloraxis={"colorscale": theme.AMOUNT_SCALE, "cmin": 0, "cmax": 1,
                                 "colorbar": {"title": "kept", "tickformat": ".0%"}})
    fig.update_yaxes(autorange="reversed")
    if title == "":
        title = "What each recipe keeps when taken apart (share of above-chance accuracy)"
    return theme.layout(fig, title, height=height)


def of_run(r: MatrixResult) -> Optional[go.Figure]:
    """The heatmap of a whole run (`matrix.run`'s result): what the Reproduce notebook draws."""
    return heatmap(r.rows)


@figure
def profile(rows: dict[str, RowResult], op: str, chance: float, height: int = 420) -> Optional[go.Figure]:
    """One column's per-block (per-slot, per-pair, per-order) profile, one line per recipe computed so far."""
    recs = ordered(rows)
    if not recs:
        return None
    fig = go.Figure()
    for i, r in enumerate(recs):
        ys = rows[r].profiles[op]
        xs = list(range(len(ys)))
        fig.add_scatter(x=xs, y=ys, name=rows[r].label, mode="lines+markers",
                        line={"color": RECIPE_COLOURS[r], "dash": DASHES[i % len(DASHES)], "width": 2},
                        marker={"symbol": SYMBOLS[i % len(SYMBOLS)], "size": 10},
                        hovertemplate=f"{PROFILE_AXIS[op]} %{{x}}: %{{y:.3f}}<extra>{rows[r].label}</extra>")
    axis = {"exit": "exit after this many block runs (0: the stem)", "swap": "runs s and s+1 swapped (s)",
            "random": "random order (draw)",
            "healed": f"fine-tuning step (x {FT_STEPS // 3})", "influence": "slot (block run)",
            "last_quarter": "(one number)"}
    fig.update_xaxes(title=axis.get(op, "block (a looped model has fewer)"), dtick=1)
    if op == "influence":
        fig.update_yaxes(title="block influence 1 - cos (probe split)", rangemode="tozero")
    else:
        common.chance_line(fig, chance)
        common.accuracy_axis(fig)
    theme.layout(fig, f"Per block: {OP_LABELS[op]}", height=height)
    return common.legend_below(fig, 110)


@figure
def linearity(rows: dict[str, RowResult], height: int = 380) -> Optional[go.Figure]:
    """How linear each block is: R^2 of its least-squares affine map on its update (output - input)."""
    recs = ordered(rows)
    if not recs:
        return None
    fig = go.Figure()
    for r in recs:
        ys = rows[r].linear_r2_update
        fig.add_bar(x=list(range(len(ys))), y=ys, name=rows[r].label, marker={"color": RECIPE_COLOURS[r]},
                    hovertemplate=f"block %{{x}}: R² %{{y:.3f}}<extra>{rows[r].label}</extra>")
    fig.update_xaxes(title="block", dtick=1)
    fig.update_yaxes(title="R² of the block's update", range=[0, 1])
    theme.layout(fig, "How linear is each block? (fitted on the training split)", height=height, barmode="group")
    return common.legend_below(fig, 110)


@figure
def timings(rows: dict[str, RowResult], height: int = 360) -> Optional[go.Figure]:
    """Seconds to train each row's model, and to fill its columns."""
    recs = ordered(rows)
    if not recs:
        return None
    fig = go.Figure()
    names = [rows[r].label for r in recs]
    fig.add_bar(x=names, y=[rows[r].train_seconds for r in recs], name="train the model",
                marker={"color": theme.ORIGINAL}, hovertemplate="%{x}: %{y:.0f} s<extra>training</extra>")
    fig.add_bar(x=names, y=[rows[r].fill_seconds for r in recs], name="fill every column",
                marker={"color": theme.CUT, "pattern": {"shape": "/"}},
                hovertemplate="%{x}: %{y:.1f} s<extra>the battery</extra>")
    fig.update_yaxes(title="seconds (one CPU thread)")
    theme.layout(fig, "What a row costs", height=height, barmode="group")
    return fig
