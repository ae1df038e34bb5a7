"""Figures of the Re-initialise page, built from the typed results of lab.experiments.reinit (read by attribute:
ReinitResult, FocusResult, GroupResult) and the width sweep's plain data."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import figures_common as common
from . import theme
from .figcache import figure
from .figures_delete import class_ticks

# One sequential, colour-blind-safe scale for every heatmap, fixed to 0..100 %, so the three models compare.
SCALE = "Viridis"


DENSE = 12  # more columns than this in all: cells say 93, not 93 %, so the numbers fit in the narrower cells


def _task(name: str) -> str:
    """A map's task, short enough for a panel title (an uploaded CSV by its hash's first digits)."""
    return f"your CSV {name[4:10]}" if name.startswith("csv:") else name


def _title(r: Any) -> str:
    """Three short lines: a panel may be a quarter of the figure wide, and one long line ran into its neighbour."""
    return f"<b>{r.model_name}</b><br>{_task(r.task)}<br>trained {r.base_acc:.1%} · chance {r.chance:.1%}"


@figure
def heatmaps(results: dict[str, Any], focus: Optional[tuple[str, str, str]] = None,
             height: int = 520) -> go.Figure:
    """One robustness map per model, side by side on one colour scale (held-out accuracy after one change).

    The colour bar marks each model's chance and trained accuracy; `focus` = (model, layer, column) outlines a cell.
    """
    names = list(results)
    # subplot widths follow the number of columns, so every cell is about as wide as every other
    widths = [len(results[m].checkpoints) for m in names]
    dense = sum(widths) > DENSE
    # Wide gaps: each panel has its own row labels (blocks.0 ...), which overlapped the panel to their left.
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=[_title(results[m]) for m in names],
                        horizontal_spacing=0.09, column_widths=[w / sum(widths) for w in widths])
    for j, m in enumerate(names, start=1):
        r = results[m]
        # stem at the bottom, head on top: the order data flows; "blocks.3" is shown as "b3" to leave room
        rows = [_short(n) for n in reversed(r.layers)]
        z = list(reversed(r.acc))
        fig.add_heatmap(z=z, x=r.checkpoints, y=rows, coloraxis="coloraxis", row=1, col=j,
                        text=[[f"{100 * v:.0f}" if dense else f"{v:.0%}" for v in row] for row in z],
                        texttemplate="%{text}",
                        textfont={"size": theme.SMALL_FONT},
                        hovertemplate="%{y}, %{x}: %{z:.1%}<extra>" + r.model_name + "</extra>")
        if focus and focus[0] == m and focus[1] in r.layers and focus[2] in r.checkpoints:
            xi, yi = r.checkpoints.index(focus[2]), rows.index(_short(focus[1]))
            fig.add_shape(type="rect", x0=xi - 0.5, x1=xi + 0.5, y0=yi - 0.5, y1=yi + 0.5, row=1, col=j,
                          line={"color": "#FFFFFF", "width": 5})
            fig.add_shape(type="rect", x0=xi - 0.5, x1=xi + 0.5, y0=yi - 0.5, y1=yi + 0.5, row=1, col=j,
                          line={"color": "#000000", "width": 2})  # white then black: visible on any cell colour
        fig.update_xaxes(tickangle=-45, row=1, col=j)
    # chance and trained accuracy of each model are in its title; the colour bar stays a plain 0..100 % scale
    fig.update_layout(coloraxis={"colorscale": SCALE, "cmin": 0, "cmax": 1,
                                 "colorbar": {"title": "held-out<br>accuracy" + ("<br>(cells: %)" if dense else ""),
                                              "tickformat": ".0%"}})
    theme.layout(fig, None, height=height)
    fig.update_layout(margin={"l": 50, "r": 20, "t": 115, "b": 90})
    fig.update_annotations(font={"size": theme.FONT_SIZE})
    return fig


def _short(layer: str) -> str:
    """blocks.3 -> b3: the heatmap's row labels must fit in the gap between panels."""
    return "b" + layer.split(".", 1)[1] if layer.startswith("blocks.") else layer


@figure
def distance_vs_damage(results: dict[str, Any], norm: str = "rel2") -> go.Figure:
    """Each layer's distance from its initialisation against the accuracy lost when re-initialised to t = 0.

    Only each model's most damaged and farthest-moved layers carry a label (all of them would overlap); hover
    names every point. Spearman's rho per model is in the legend.
    """
    fig = go.Figure()
    everything = []
    for m, r in results.items():
        pts = [(x, d, layer) for x, d, layer in zip(r.distance[norm], r.damage, r.layers, strict=True)
               if x is not None]
        if not pts:
            continue
        everything += [(x, d, layer, r.model_name) for x, d, layer in pts]
        rho = r.rank_corr[norm]
        fig.add_scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], customdata=[p[2] for p in pts],
                        mode="markers", marker={"color": theme.ARCH_COLOURS.get(m, theme.ORIGINAL), "size": 13,
                                                "line": {"color": "black", "width": 1}},
                        name=f"{r.model_name} ρ = {'n/a' if rho is None else f'{rho:+.2f}'}",
                        hovertemplate="%{customdata}: distance %{x:.3f}, lost %{y:.1%}<extra>"
                                      + r.model_name + "</extra>")
    # Two labels in all, placed away from each other (one label per model per extreme would collide): the layer
    # whose reset hurt most, and the one that moved farthest. Hover names every point.
    if everything:
        worst = max(everything, key=lambda p: p[1])
        farthest = max(everything, key=lambda p: p[0])
        for p, ax, ay in ((worst, 40, -30), (farthest, -40, 30)) if worst != farthest else ((worst, 40, -30),):
            fig.add_annotation(x=math.log10(p[0]), y=p[1], text=f"{p[3]} {p[2]}", ax=ax, ay=ay, showarrow=True,
                               arrowhead=0, font={"size": theme.SMALL_FONT}, bgcolor="rgba(255,255,255,0.8)")
    short = "distance from init, relative (log)" if norm == "rel2" else "largest change from init (log)"
    # log scale: the ViT's stem (CLS token and positions start at zero) moves far more than any MLP layer
    fig.update_xaxes(title=short, type="log", tickvals=[0.05, 0.1, 0.2, 0.5, 1, 2, 5],
                     ticktext=["0.05", "0.1", "0.2", "0.5", "1", "2", "5"])
    fig.update_yaxes(title="accuracy lost (reset to t = 0)", tickformat=".0%")
    theme.layout(fig, "Moved most, matters most?", height=480)
    return fig


@figure
def per_class(f: Any, title: str | None = "Which classes suffer?", height: int = 420,
              classes: Optional[Sequence[str]] = None) -> go.Figure:
    """Accuracy within each class (a FocusResult): trained, after the change, after recovery (when there was one)."""
    fig = common.per_class(common.fields_of(f), title, height, "trained", "layer changed")  # the helper reads dicts
    return class_ticks(fig, classes)


@figure
def recovery_curve(f: Any) -> go.Figure:
    """Held-out accuracy of the changed network during recovery (a FocusResult), with the trained model and chance."""
    return common.recovery_curve(common.fields_of(f), "How fast does it come back?",
                                 f"recovering ({f.config.recovery})",
                                 cut_label="layer changed", base_label="trained")


@figure
def distance_bars(results: dict[str, Any], norm: str = "rel2") -> go.Figure:
    """Distance from initialisation per layer, one bar group per model."""
    fig = go.Figure()
    for m, r in results.items():
        fig.add_bar(x=r.layers, y=[v if v is not None else 0 for v in r.distance[norm]],
                    name=r.model_name, marker_color=theme.ARCH_COLOURS.get(m, theme.ORIGINAL),
                    hovertemplate="%{x}: %{y:.3f}<extra>" + r.model_name + "</extra>")
    fig.update_yaxes(title="relative 2-norm" if norm == "rel2" else "inf-norm")
    fig.update_xaxes(title="layer", type="category")
    return theme.layout(fig, "Distance from the initial draw", barmode="group", height=460)


@figure
def group_bars(g: Any, height: int = 420) -> go.Figure:
    """The share of the above-chance accuracy kept: each layer changed alone, what independent damages would leave
    (the product of those shares: the claim's null), and the layers changed together."""
    gap = g.base_acc - g.chance

    def share(acc: float) -> float:
        return max((acc - g.chance) / gap, 0.0) if gap > 0 else 1.0

    alone = [share(a) for a in g.single_accs]
    product = 1.0
    for a in alone:
        product *= a
    fig = go.Figure()
    for i, (layer, v) in enumerate(zip(g.layers, alone, strict=True)):
        fig.add_bar(x=[f"{layer} alone"], y=[v], name=f"{layer} alone",
                    marker_color=theme.CATEGORICAL[i % len(theme.CATEGORICAL)],
                    hovertemplate=f"{layer} alone keeps %{{y:.1%}}<extra></extra>")
    fig.add_bar(x=["independent (product)"], y=[product], name="independent damages", marker_color=theme.CHANCE,
                hovertemplate="independent damages would keep %{y:.1%}<extra></extra>")
    fig.add_bar(x=["together"], y=[share(g.group_acc)], name="all together", marker_color=theme.CUT,
                hovertemplate="together keeps %{y:.1%}<extra></extra>")
    fig.update_yaxes(title="share of above-chance accuracy kept", tickformat=".0%", rangemode="tozero")
    fig.update_xaxes(type="category")
    return theme.layout(fig, "Kept alone, kept if independent, kept together", height=height)


@figure
def width_heatmap(w: dict[str, Any], height: int = 500) -> go.Figure:
    """The share of its above-chance accuracy each model keeps when one layer is re-initialised to t = 0 (what the
    width claim compares), one column per width (the page's caption gives each model's trained accuracy)."""
    rows = [_short(n) for n in reversed(w["layers"])]
    cols = [f"width {x}" for x in w["widths"]]
    chance = w["chance"]

    def share(j: int, i: int) -> float:
        gap = w["base_acc"][j] - chance
        return (w["t0_acc"][j][i] - chance) / gap if gap > 0 else 1.0

    z = [[share(j, i) for j in range(len(cols))] for i in reversed(range(len(w["layers"])))]
    fig = go.Figure(go.Heatmap(z=z, x=cols, y=rows, coloraxis="coloraxis", text=[[f"{v:.0%}" for v in r] for r in z],
                               texttemplate="%{text}", textfont={"size": theme.SMALL_FONT},
                               hovertemplate="%{y}, %{x}: keeps %{z:.0%}<extra>t = 0</extra>"))
    fig.update_layout(coloraxis={"colorscale": SCALE, "cmin": 0, "cmax": 1,
                                 "colorbar": {"title": "share<br>kept", "tickformat": ".0%"}})
    fig.update_xaxes(side="top")  # the widths read like the maps' column heads
    return theme.layout(fig, f"{w['model_name']}: share kept, one layer reset to t = 0", height=height)
