"""Figures of the Shuffle-layers page (Plotly, the lab's palette)."""

from __future__ import annotations

from typing import Any, Optional

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app import theme
from lab.experiments.shuffle import MODE_LABELS

# One colour per training mode, the same on every figure of the page.
MODE_COLOURS = {"sequential": theme.ORIGINAL, "shuffle": theme.CUT, "position": theme.RECOVERED,
                "predict": theme.VIT}
# Ten classes need ten colours: Okabe-Ito's eight plus two greys that stay distinct for colour-blind viewers.
CATEGORICAL = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
               "#999999", "#8C510A")


def order_distribution(runs: list[dict[str, Any]]) -> go.Figure:
    """Histogram of accuracy over random orders, one panel per model, trained order and chance marked."""
    fig = make_subplots(rows=1, cols=len(runs), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[f"trained {MODE_LABELS[r['mode']]}" for r in runs])
    for j, r in enumerate(runs, start=1):
        accs = [100 * a for a in r["random_orders"]["accs"]]
        colour = MODE_COLOURS[r["mode"]]
        fig.add_trace(go.Histogram(x=accs, xbins={"start": 0, "end": 100.01, "size": 2.5}, marker_color=colour,
                                   name=f"{MODE_LABELS[r['mode']]}: {len(accs)} random orders", opacity=0.85),
                      row=1, col=j)
        fig.add_vline(x=100 * r["base_acc"], line={"color": "black", "width": 3}, row=1, col=j)
        fig.add_vline(x=100 * r["random_orders"]["mean"], line={"color": colour, "width": 2, "dash": "dot"},
                      row=1, col=j)
        fig.add_vline(x=100 * r["chance"], line={"color": theme.CHANCE, "dash": "dash"}, row=1, col=j)
        fig.update_xaxes(title_text="held-out accuracy (%)", range=[0, 101], row=1, col=j)
    fig.update_yaxes(title_text="orders", row=1, col=1)
    return theme.layout(fig, "Accuracy in random block orders (black: the trained order, grey: chance, "
                             "dotted: mean)", height=420, bargap=0.05, showlegend=False)


def pruning(runs: list[dict[str, Any]], removed: int) -> go.Figure:
    """Accuracy against blocks removed (random subsets): in random order (solid) and trained order (dashed)."""
    fig = go.Figure()
    for r in runs:
        colour, name = MODE_COLOURS[r["mode"]], MODE_LABELS[r["mode"]]
        ks = [p["removed"] for p in r["pruning"]]
        for key, dash, what in (("random_order", "solid", "random order"), ("trained_order", "dash", "trained order")):
            mean = [100 * p[key]["mean"] for p in r["pruning"]]
            lo = [100 * p[key]["min"] for p in r["pruning"]]
            hi = [100 * p[key]["max"] for p in r["pruning"]]
            fig.add_trace(go.Scatter(x=ks, y=mean, mode="lines+markers", name=f"{name}, {what}",
                                     line={"color": colour, "dash": dash, "width": 3},
                                     error_y={"type": "data", "symmetric": False,
                                              "array": [h - m for h, m in zip(hi, mean, strict=True)],
                                              "arrayminus": [m - lo_ for m, lo_ in zip(mean, lo, strict=True)],
                                              "thickness": 1, "width": 3} if key == "random_order" else None))
    fig.add_hline(y=100 * runs[0]["chance"], line={"color": theme.CHANCE, "dash": "dot"},
                  annotation_text="chance", annotation_position="bottom right")
    fig.add_vline(x=removed, line={"color": "black", "width": 1, "dash": "dot"})
    fig.update_xaxes(title_text="blocks removed (random subsets)", dtick=1)
    fig.update_yaxes(title_text="held-out accuracy (%)", range=[0, 101])
    return theme.layout(fig, "Pruning at test time: mean over random subsets (bars: min to max)", height=460)


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
                                   marker={"size": 5, "opacity": 0.75, "color": CATEGORICAL[v % len(CATEGORICAL)]}))
    fig.update_xaxes(showticklabels=False, title_text=f"{method} 1")
    fig.update_yaxes(showticklabels=False, title_text=f"{method} 2")
    return theme.layout(fig, f"{method} of the CLS token after each slot, coloured by {names[colour_by]}",
                        height=520)


def probe_bars(runs: dict[str, dict[str, Any]]) -> go.Figure:
    """Held-out accuracy of the slot probe per training mode, against chance 1/N."""
    modes = list(runs)
    acc = [100 * runs[m]["probe"]["acc"] for m in modes]
    fig = go.Figure(go.Bar(x=[MODE_LABELS[m] for m in modes], y=acc, marker_color=[MODE_COLOURS[m] for m in modes],
                           text=[f"{a:.0f} %" for a in acc], textposition="outside", name="probe accuracy"))
    chance = 100 * next(iter(runs.values()))["probe"]["chance"]
    fig.add_hline(y=chance, line={"color": theme.CHANCE, "dash": "dash"},
                  annotation_text=f"chance 1/N = {chance:.0f} %", annotation_position="top left")
    fig.update_yaxes(title_text="slot read from the features (%)", range=[0, 110])
    return theme.layout(fig, "Can a linear probe tell which slot a feature came from?", height=420, showlegend=False)
