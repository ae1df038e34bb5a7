"""Figures of the Layer-lens page, built from the typed results of lab.experiments.lens (`run`).

By meaning (app/theme.py): the intact model is "original" (blue), the model after a change of route is "cut"
(vermillion); the tuned lens is the same model read another way, so it keeps the model's colour and differs by
dash and marker. Amounts on a grid (the angular-distance triangle) take the lab's amount scale.
"""

from __future__ import annotations

from typing import Any, Optional

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lab.core import model_registry

from . import figures_common as common
from . import theme
from .figcache import figure

CHANGE_NAMES = {"delete": "block {b} deleted", "swap": "blocks {b} and {b1} swapped", "random": "a random order"}


def change_name(r: Any) -> str:
    """The change of route in a few words (legend and captions)."""
    ch, b = r.change, r.config.block
    return CHANGE_NAMES[ch.op].format(b=b, b1=b + 1)


def ticks(n_slots: int) -> list[str]:
    """Slot k is read after k blocks have run (0: after the stem), whichever blocks the route runs."""
    return ["stem"] + [str(k) for k in range(1, n_slots)]


def _slot_axis(fig: go.Figure, slots: list[str], title: str = "blocks run before the reading", **kw: Any) -> None:
    fig.update_xaxes(tickvals=list(range(len(slots))), ticktext=ticks(len(slots)), title=title, **kw)


@figure
def lens_curve(r: Any, title: Optional[str] = "", height: int = 440) -> go.Figure:
    """Held-out accuracy read after every slot: logit lens, tuned lens, and the changed route's logit lens."""
    fig = go.Figure()
    xs = list(range(len(r.slots)))
    fig.add_scatter(x=xs, y=r.slot_acc, name="logit lens", mode="lines+markers", customdata=r.slots,
                    line={"color": theme.ORIGINAL, "width": 3}, marker={"size": 10},
                    hovertemplate="%{customdata}: %{y:.1%}<extra>logit lens</extra>")
    fig.add_scatter(x=xs, y=r.tuned_slot_acc, name="tuned lens", mode="lines+markers", customdata=r.slots,
                    line={"color": theme.ORIGINAL, "dash": "dash"}, marker={"size": 10, "symbol": "diamond-open"},
                    hovertemplate="%{customdata}: %{y:.1%}<extra>tuned lens</extra>")
    if r.change is not None:
        ch = r.change
        fig.add_scatter(x=list(range(len(ch.slots))), y=ch.slot_acc, name=f"logit lens, {change_name(r)}",
                        mode="lines+markers", customdata=ch.slots, line={"color": theme.CUT, "width": 3},
                        marker={"size": 10, "symbol": "square"},
                        hovertemplate="%{customdata}: %{y:.1%}<extra>after the change</extra>")
    common.chance_line(fig, r.chance)
    _slot_axis(fig, r.slots)
    common.accuracy_axis(fig)
    if title == "":
        title = f"What each layer already knows: {model_registry.model(r.config.model).label}"
    return theme.layout(fig, title, height=height)


@figure
def confidence(r: Any) -> go.Figure:
    """Mean entropy of the lens's prediction, and its KL to the final prediction, per slot."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1)  # axis titles name the panels: the legend
    # takes the band above them
    xs = list(range(len(r.slots)))
    series = [("logit lens", r.entropy, r.kl_to_final, xs, theme.ORIGINAL, "solid", "circle"),
              ("tuned lens", r.tuned_entropy, r.tuned_kl_to_final, xs, theme.ORIGINAL, "dash", "diamond-open")]
    if r.change is not None:
        ch = r.change
        series.append((f"logit lens, {change_name(r)}", ch.entropy, ch.kl_to_final,
                       list(range(len(ch.slots))), theme.CUT, "solid", "square"))
    for name, ent, kls, x, colour, dash, symbol in series:
        for col, ys in ((1, ent), (2, kls)):
            fig.add_scatter(x=x, y=ys, name=name, mode="lines+markers", showlegend=col == 1, legendgroup=name,
                            line={"color": colour, "dash": dash}, marker={"symbol": symbol, "size": 9},
                            hovertemplate="slot %{x}: %{y:.3f}<extra>" + name + "</extra>", row=1, col=col)
    for col in (1, 2):
        _slot_axis(fig, r.slots, row=1, col=col)
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(title="mean entropy (nats)", row=1, col=1)
    fig.update_yaxes(title="KL to the final answer (nats)", row=1, col=2)
    theme.layout(fig, "How sure, and how close to the final answer", height=440)
    return fig


@figure
def commitment(r: Any) -> go.Figure:
    """When each input's answer is settled: a histogram over slots (intact and changed), and the mean per class."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.12)
    c = r.commit
    n_in = sum(c["hist"])
    fig.add_bar(x=list(range(len(c["hist"]))), y=[h / n_in for h in c["hist"]], name="intact",
                marker={"color": theme.ORIGINAL}, customdata=c["hist"],
                hovertemplate="slot %{x}: %{y:.1%} (%{customdata} inputs)<extra>intact</extra>", row=1, col=1)
    if r.change is not None:
        ch = r.change
        tot = sum(ch.commit_hist)
        fig.add_bar(x=list(range(len(ch.commit_hist))), y=[h / tot for h in ch.commit_hist],
                    name=change_name(r), marker={"color": theme.CUT}, customdata=ch.commit_hist,
                    hovertemplate="slot %{x}: %{y:.1%} (%{customdata} inputs)<extra>after the change</extra>",
                    row=1, col=1)
    classes = list(range(len(c["per_class"])))
    fig.add_bar(x=classes, y=c["per_class"], name="mean per class", showlegend=False,
                marker={"color": theme.ORIGINAL}, hovertemplate="class %{x}: slot %{y:.2f}<extra></extra>",
                row=1, col=2)
    _slot_axis(fig, r.slots, row=1, col=1)
    fig.update_xaxes(title="blocks run before it settles", row=1, col=1)
    fig.update_xaxes(title="class" if len(classes) > 10 else "digit", dtick=1 if len(classes) <= 10 else 2,
                     row=1, col=2)
    fig.update_yaxes(title="share of held-out inputs", tickformat=".0%", row=1, col=1)
    fig.update_yaxes(title="mean blocks before it settles", range=[0, len(r.slots) - 1], row=1, col=2)
    theme.layout(fig, "When is the answer settled? Left: every input; right: the mean per class", height=440)
    fig.update_layout(barmode="group")
    return fig


@figure
def examples(r: Any) -> Optional[go.Figure]:
    """The earliest and the latest committing digits (ViT models only: the MLPs' inputs are not images)."""
    ex = r.commit["examples"]
    if not ex["early"] or "image" not in ex["early"][0]:
        return None
    cols = max(len(ex["early"]), len(ex["late"]))
    titles = [f"{e['label']}→{e['pred']}, {e['depth']} block{'s' if e['depth'] != 1 else ''}"
              for e in ex["early"] + ex["late"]]
    fig = make_subplots(rows=2, cols=cols, subplot_titles=titles, horizontal_spacing=0.03, vertical_spacing=0.2)
    for row, items in ((1, ex["early"]), (2, ex["late"])):
        for j, e in enumerate(items):
            img = [e["image"][i * 8:(i + 1) * 8] for i in range(8)]
            fig.add_heatmap(z=img, colorscale="Greys", zmin=0, zmax=1, showscale=False,
                            hovertemplate=f"digit {e['label']}, answered {e['pred']}, settled at slot {e['depth']}"
                                          "<extra></extra>", row=row, col=j + 1)
            k = (row - 1) * cols + j + 1  # square pixels: each image's y axis follows its own x axis
            fig.update_yaxes(scaleanchor="x" if k == 1 else f"x{k}", row=row, col=j + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    # Two lines: at 1280 px on one line the title ran 33 px past the chart's edge (measured in Chromium).
    theme.layout(fig, "Settled earliest (top) and latest (bottom):<br>true digit → answer, blocks before it settles",
                 height=460)
    fig.update_annotations(font={"size": theme.SMALL_FONT})
    fig.update_layout(margin={"l": 20, "r": 20, "t": 115, "b": 10})
    return fig


@figure
def influence(r: Any) -> go.Figure:
    """Block influence per block, the accuracy really lost by deleting that block, and one against the other."""
    n = r.n_blocks
    blocks = list(range(n))
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.09,
                        subplot_titles=("Block influence 1 − cos", "Accuracy lost when deleted",
                                        "Influence against cost"))
    fig.add_bar(x=blocks, y=r.block_influence, name="block influence", showlegend=False,
                marker={"color": theme.ORIGINAL}, hovertemplate="block %{x}: %{y:.4f}<extra></extra>", row=1, col=1)
    fig.add_bar(x=blocks, y=r.delete_cost, name="accuracy lost when deleted", showlegend=False,
                marker={"color": theme.CUT}, hovertemplate="block %{x}: %{y:.1%}<extra></extra>", row=1, col=2)
    # a mark at each bar's top: a block whose deletion costs nothing (0.0 %) is a point on the axis, not a blank
    fig.add_scatter(x=blocks, y=r.delete_cost, mode="markers", marker={"color": theme.CUT, "size": 9},
                    showlegend=False, hoverinfo="skip", row=1, col=2)
    fig.add_scatter(x=r.block_influence, y=r.delete_cost, mode="markers+text", text=[str(b) for b in blocks],
                    textposition="top center", marker={"color": theme.MARK, "size": 12}, showlegend=False,
                    textfont={"size": theme.SMALL_FONT},
                    hovertemplate="influence %{x:.4f}, lost %{y:.1%}<extra>block %{text}</extra>", row=1, col=3)
    for col in (1, 2):
        fig.update_xaxes(title="block", tickvals=blocks, row=1, col=col)
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(tickformat=".1%", row=1, col=2)
    fig.update_xaxes(title="block influence", nticks=5, row=1, col=3)
    fig.update_yaxes(title="accuracy lost", tickformat=".1%", row=1, col=3)
    theme.layout(fig, "Which blocks could go? The cheap geometry and the real cost", height=440)
    fig.update_layout(margin={"l": 60, "r": 20, "t": 90, "b": 60})
    return fig


@figure
def triangle(r: Any) -> go.Figure:
    """Gromov et al.'s picture: angular distance between the state at slot l and n slots later, every l and n."""
    z = r.angular_distance
    slots = r.slots
    ns = list(range(1, len(z) + 1))
    text = [["" if v is None else f"{v:.2f}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(z=z, x=ticks(len(slots))[:-1], y=ns, colorscale=theme.AMOUNT_SCALE, zmin=0,
                               text=text, texttemplate="%{text}", textfont={"size": theme.SMALL_FONT},
                               colorbar={"thickness": 14, "title": {"text": "d"}},
                               hovertemplate="from %{x}, n = %{y}: %{z:.3f}<extra></extra>", hoverongaps=False))
    fig.update_xaxes(title="from the state after l blocks", type="category")
    fig.update_yaxes(title="n blocks later", dtick=1, autorange="reversed")
    theme.layout(fig, "Angular distance: the state after l blocks vs n blocks later", height=460)
    fig.update_layout(margin={"l": 70, "r": 20, "t": 70, "b": 90})
    return fig
