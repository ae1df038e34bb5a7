"""Figures of the Shuffle-layers page (Plotly, the lab's palette)."""

from __future__ import annotations

from typing import Any, Optional

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app import figures_common as common
from app import theme
from app.figcache import figure
from lab.experiments.shuffle.experiment import MODE_LABELS, ShuffleResult

# Colour is the order that ran (black: the trained order, wine: random orders), the same on every figure of the
# page; the model is the panel. Training modes, where they are the series (the probe bars), take the lab's
# categorical set.
MODE_COLOURS = theme.MODE_COLOURS


def _panel_title(r: dict[str, Any], prefix: str = "") -> str:
    return f"{prefix}trained {MODE_LABELS[r['mode']]}"


@figure
def order_distribution(runs: list[dict[str, Any]], titles: Optional[list[str]] = None,
                       height: int = 420) -> go.Figure:
    """Histogram of accuracy over random orders, one panel per model, trained order and chance marked."""
    fig = make_subplots(rows=1, cols=len(runs), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=titles or [_panel_title(r) for r in runs])
    for j, r in enumerate(runs, start=1):
        accs = [100 * a for a in r["random_orders"]["accs"]]
        fig.add_trace(go.Histogram(x=accs, xbins={"start": 0, "end": 100.01, "size": 2.5},
                                   marker_color=theme.RANDOM_ORDER, name=f"{len(accs)} random orders", opacity=0.85,
                                   showlegend=j == 1, legendgroup="random"), row=1, col=j)
        fig.add_vline(x=100 * r["base_acc"], line={"color": theme.TRAINED_ORDER, "width": 3}, row=1, col=j)
        fig.add_vline(x=100 * r["random_orders"]["mean"], line={"color": theme.RANDOM_ORDER, "width": 2,
                                                                "dash": "dot"}, row=1, col=j)
        fig.add_vline(x=100 * r["chance"], line={"color": theme.CHANCE, "dash": "dash"}, row=1, col=j)
        fig.update_xaxes(title_text="held-out accuracy (%)", range=[0, 101], row=1, col=j)
    # the vertical lines explained in the legend (plotly does not list shapes): invisible traces with their style
    for name, line in (("trained order", {"color": theme.TRAINED_ORDER, "width": 3}),
                       ("mean of random orders", {"color": theme.RANDOM_ORDER, "width": 2, "dash": "dot"}),
                       ("chance", {"color": theme.CHANCE, "dash": "dash"})):
        fig.add_scatter(x=[None], y=[None], mode="lines", line=line, name=name, row=1, col=1)
    fig.update_yaxes(title_text="orders", row=1, col=1)
    theme.layout(fig, "Accuracy in random block orders", height=height, bargap=0.05)
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.2, "xanchor": "left", "x": 0},
                      margin={"t": 90, "b": 110})
    return fig


@figure
def pruning(runs: list[dict[str, Any]], removed: int) -> go.Figure:
    """Accuracy against blocks removed (random subsets), one panel per model: the rest run in random order (wine,
    bars from min to max) or in their trained order (black, dashed)."""
    fig = make_subplots(rows=1, cols=len(runs), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[_panel_title(r) for r in runs])
    for j, r in enumerate(runs, start=1):
        ks = [p["removed"] for p in r["pruning"]]
        for key, colour, dash, what in (("random_order", theme.RANDOM_ORDER, "solid", "random order"),
                                        ("trained_order", theme.TRAINED_ORDER, "dash", "trained order")):
            mean = [100 * p[key]["mean"] for p in r["pruning"]]
            lo = [100 * p[key]["min"] for p in r["pruning"]]
            hi = [100 * p[key]["max"] for p in r["pruning"]]
            fig.add_trace(go.Scatter(x=ks, y=mean, mode="lines+markers", name=f"rest in {what}",
                                     line={"color": colour, "dash": dash, "width": 3}, showlegend=j == 1,
                                     legendgroup=key,
                                     error_y={"type": "data", "symmetric": False,
                                              "array": [h - m for h, m in zip(hi, mean, strict=True)],
                                              "arrayminus": [m - lo_ for m, lo_ in zip(mean, lo, strict=True)],
                                              "thickness": 1, "width": 3} if key == "random_order" else None),
                          row=1, col=j)
        fig.add_hline(y=100 * r["chance"], line={"color": theme.CHANCE, "dash": "dot"}, row=1, col=j)
        fig.add_vline(x=removed, line={"color": theme.MARK, "width": 1, "dash": "dot"}, row=1, col=j)
        fig.update_xaxes(title_text="blocks removed", dtick=1, row=1, col=j)
    fig.add_scatter(x=[None], y=[None], mode="lines", line={"color": theme.CHANCE, "dash": "dot"}, name="chance",
                    row=1, col=1)
    fig.update_yaxes(title_text="held-out accuracy (%)", range=[0, 101], row=1, col=1)
    every = all(p["random_order"].get("exact") for r in runs for p in r["pruning"])
    theme.layout(fig, "Pruning at test time: mean over " + ("every subset in every order" if every else
                                                             "random subsets") + " (bars: min to max)", height=460)
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.2, "xanchor": "left", "x": 0},
                      margin={"t": 90, "b": 110})
    return fig


@figure
def embedding(xy: list[list[float]], labels: list[int], colour_by: str, method: str,
              hover: Optional[dict[str, list[int]]] = None) -> go.Figure:
    """2-D view of per-slot CLS features, one colour per label value."""
    fig = go.Figure()
    names = {"slot": "slot", "block": "block", "cls": "digit"}
    for v in sorted(set(labels)):
        idx = [i for i, lab in enumerate(labels) if lab == v]
        text = None
        if hover:
            text = [f"slot {hover['slot'][i]}, block {hover['block'][i]}, digit {hover['cls'][i]}" for i in idx]
        fig.add_trace(go.Scattergl(x=[xy[i][0] for i in idx], y=[xy[i][1] for i in idx], mode="markers",
                                   name=f"{names[colour_by]} {v}", text=text, hoverinfo="text",
                                   marker={"size": 6, "opacity": 0.8,
                                           "color": theme.LABEL_COLOURS[v % len(theme.LABEL_COLOURS)]}))
    fig.update_xaxes(showticklabels=False, title_text=f"{method} 1")
    fig.update_yaxes(showticklabels=False, title_text=f"{method} 2")
    return theme.layout(fig, f"{method} of the CLS token after each slot, coloured by {names[colour_by]}",
                        height=520)


@figure
def probe_bars(runs: dict[str, dict[str, Any]]) -> go.Figure:
    """Held-out accuracy of the slot probe per training mode, on unit-length features (what the verdict reads) and
    on the raw ones (whose norm alone tells how many blocks have run), against chance 1/N."""
    modes = list(runs)
    fig = go.Figure()
    for key, name, pattern in (("acc_direction", "unit-length features", ""), ("acc", "raw features", "/")):
        acc = [100 * runs[m]["probe"][key] for m in modes]
        fig.add_trace(go.Bar(x=[MODE_LABELS[m] for m in modes], y=acc, name=name,
                             marker={"color": [MODE_COLOURS[m] for m in modes], "pattern": {"shape": pattern}},
                             text=[f"{a:.0f} %" for a in acc], textposition="outside"))
    chance = 100 * next(iter(runs.values()))["probe"]["chance"]
    fig.add_hline(y=chance, line={"color": theme.CHANCE, "dash": "dash"})
    # The chance label sits in the right margin: inside the plot it landed on the first (or last) bar.
    fig.add_annotation(x=1.0, xref="paper", xanchor="left", y=chance, yref="y", showarrow=False,
                       text=f" chance<br> 1/N = {chance:.0f} %", align="left", font={"color": theme.CHANCE_WORDS})
    fig.update_yaxes(title_text="slot read from the features (%)", range=[0, 110])
    theme.layout(fig, "Can a linear probe tell which slot a feature came from?", height=420, barmode="group")
    fig.update_layout(margin={"r": 120})
    return fig


@figure
def block_slot(runs: list[dict[str, Any]], height: int = 460) -> go.Figure:
    """Held-out accuracy when block b runs in slot s (mean over the orders that put it there), one heatmap per model,
    on one colour scale per panel's own range (a row that changes colour is a block whose slot matters)."""
    # room between the panels for the first one's colour bar and its numbers (at 0.12 the second panel hid them)
    fig = make_subplots(rows=1, cols=len(runs), horizontal_spacing=0.16,
                        subplot_titles=[_panel_title(r) for r in runs])
    for j, r in enumerate(runs, start=1):
        bs = r["all_orders"]["block_slot"]
        z = [[100 * v for v in row] for row in bs["acc"]]
        d = len(z)
        fig.add_trace(go.Heatmap(z=z, x=[f"slot {s}" for s in range(d)], y=[f"block {b}" for b in range(d)],
                                 colorscale=theme.AMOUNT_SCALE, text=[[f"{v:.1f}" for v in row] for row in z],
                                 texttemplate="%{text}", textfont={"size": theme.SMALL_FONT},
                                 colorbar={"title": "%", "x": j / len(runs) - 0.02, "len": 0.8},
                                 hovertemplate="%{y} in %{x}: %{z:.1f} % (mean of " + str(bs["count"])
                                 + " orders)<extra></extra>"), row=1, col=j)
        # the blocks are named once, left of the first panel: the first panel's colour bar stands where the
        # second panel's names would be (at 1280 px it covered them)
        fig.update_yaxes(autorange="reversed", showticklabels=j == 1, row=1, col=j)
        fig.update_xaxes(title_text="slot it runs in", row=1, col=j)
    theme.layout(fig, "Where each block works best: held-out accuracy with block b in slot s", height=height)
    fig.update_layout(margin={"t": 90})
    return fig


def orders_of_run(r: ShuffleResult | dict[str, Any], height: int = 420) -> go.Figure:
    """The page's main figure from `shuffle.run`'s result (a notebook's; or its plain data): the sequential model's
    panel, then the other one, as the page draws them (the page's pieces are plain dicts, so the run's panel is
    too)."""
    mine = common.fields_of(r)
    other = "sequential" if mine["mode"] != "sequential" else "shuffle"
    b = mine["comparison"][other]
    return order_distribution([mine, b] if mine["mode"] == "sequential" else [b, mine], height=height)
