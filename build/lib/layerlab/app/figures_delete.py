"""Figures of the Delete page, built from the typed results of lab.experiments.delete (attributes)."""

from __future__ import annotations

import html
from typing import Any, Optional, Sequence

import plotly.graph_objects as go

from . import figures_common as common
from . import theme
from .figcache import figure

DASH = {"plain": "dash", "residual": "solid"}
SYMBOL = {"plain": "square", "residual": "circle"}


@figure
def single_block(sweep: Any) -> go.Figure:
    """Accuracy after deleting each block alone, plain vs residual, with teacher and chance lines."""
    fig = go.Figure()
    for arch, a in sweep.archs.items():
        n = len(a.single_block_acc)
        fig.add_bar(x=[f"block {i}" for i in range(n)], y=a.single_block_acc, name=f"{arch}: block deleted",
                    marker_color=theme.ARCH_COLOURS[arch],
                    hovertemplate="%{x}: %{y:.1%}<extra>" + arch + "</extra>")
        fig.add_hline(y=a.base_acc, line={"color": theme.ORIGINAL, "dash": DASH[arch]},
                      annotation_text=f"{arch} teacher {a.base_acc:.1%}",
                      annotation_position="top left" if arch == "plain" else "top right")  # apart: both near 92 %
    common.chance_line(fig, sweep.chance)
    common.accuracy_axis(fig)
    return theme.layout(fig, "Delete one block: which ones matter?", barmode="group")


@figure
def versus_k(sweep: Any) -> go.Figure:
    """Accuracy against the number of blocks deleted, before and after recovery, both architectures.

    Colour is the architecture (as in the single-block chart beside it); the stage is the line style: dotted with
    open markers = cut, solid with filled markers = after recovery. Two meanings never share one colour channel.
    """
    cfg = sweep.config
    fig = go.Figure()
    for arch, a in sweep.archs.items():
        ks = [r.k for r in a.rows]
        colour = theme.ARCH_COLOURS[arch]
        fig.add_scatter(x=ks, y=[r.cut_acc for r in a.rows], name=f"{arch}: cut",
                        line={"color": colour, "dash": "dot", "width": 3},
                        marker={"symbol": SYMBOL[arch] + "-open", "size": 11, "line": {"width": 2}},
                        customdata=[str(r.dropped) for r in a.rows],
                        hovertemplate="k=%{x}: %{y:.1%}<br>dropped %{customdata}<extra>" + arch + " cut</extra>")
        if cfg.recovery != "none":
            fig.add_scatter(x=ks, y=[r.recovered_acc for r in a.rows],
                            name=f"{arch}: after {cfg.recovery}", line={"color": colour, "width": 3},
                            marker={"symbol": SYMBOL[arch], "size": 10},
                            hovertemplate="k=%{x}: %{y:.1%}<extra>" + arch + " recovered</extra>")
    common.chance_line(fig, sweep.chance)
    fig.update_xaxes(title="blocks deleted (k)", dtick=1)
    common.accuracy_axis(fig)
    return theme.layout(fig, f"Deleting more blocks ({cfg.select})")


def class_ticks(fig: go.Figure, classes: Optional[Sequence[str]]) -> go.Figure:
    """Name the class axis's ticks by `classes` (an uploaded CSV's label values) instead of 0, 1, 2, ...: escaped
    (Plotly reads tags in tick text) and cut to 20 characters."""
    if classes:
        text = [html.escape(c if len(c) <= 20 else c[:19] + "…") for c in classes]
        fig.update_xaxes(tickmode="array", tickvals=[str(i) for i in range(len(text))], ticktext=text)
    return fig


@figure
def per_class(r: Any, title: str | None = "Which classes suffer?", height: int = 420,
              classes: Optional[Sequence[str]] = None) -> go.Figure:
    """Accuracy within each class: teacher, cut, recovered (the page's main figure); `classes`: the classes' names
    (else their numbers)."""
    fig = common.per_class(common.fields_of(r), title, height, "original", "cut")  # the shared helper reads dicts
    return class_ticks(fig, classes)


@figure
def recovery_curve(r: Any) -> go.Figure:
    """Held-out accuracy of the cut network during recovery."""
    return common.recovery_curve(common.fields_of(r), "Recovery curve", f"recovering ({r.config.recovery})")


@figure
def selections(r: Any) -> go.Figure:
    """Each selection method's cut at this k: held-out and probe accuracy, with the blocks it dropped."""
    sel = r.selections
    names = list(sel)
    test = [sel[m]["test_acc"] for m in names]
    err_hi = [sel[m]["test_max"] - sel[m]["test_acc"] for m in names]
    err_lo = [sel[m]["test_acc"] - sel[m]["test_min"] for m in names]
    labels = [f"{m}<br>" + (f"({'all' if sel[m].get('exact') else 'mean of'} {sel[m]['draws']} subsets)"
                            if sel[m]["draws"] > 1 else str(sel[m]["dropped"])) for m in names]
    fig = go.Figure()
    fig.add_bar(x=labels, y=[sel[m]["probe_acc"] for m in names], name="probe (what the search saw)",
                marker={"color": theme.CUT, "opacity": 0.45, "pattern": {"shape": "/"}})
    fig.add_bar(x=labels, y=test, name="held-out", marker_color=theme.CUT,
                error_y={"type": "data", "symmetric": False, "array": err_hi, "arrayminus": err_lo})
    fig.add_hline(y=r.base_acc, line={"color": theme.ORIGINAL, "dash": "dash"},
                  annotation_text="original", annotation_position="top right")
    common.chance_line(fig, r.chance)
    common.accuracy_axis(fig, "accuracy of the cut (no recovery)")
    k = r.config.k
    return theme.layout(fig, f"Five ways to choose {k} block{'s' if k != 1 else ''} to delete", barmode="group")


@figure
def race(rc: Any) -> go.Figure:
    """Fine-tuning (CE) against distillation (KD) from the same cut: held-out accuracy at the same steps."""
    fig = go.Figure()
    for method, dash in (("ce", "dot"), ("kd", "solid")):
        curve = getattr(rc, method)
        fig.add_scatter(x=curve.curve_steps, y=curve.curve_acc, name=method.upper(),
                        mode="lines+markers", line={"color": theme.RECOVERED, "dash": dash},
                        hovertemplate="step %{x}: %{y:.1%}<extra>" + method.upper() + "</extra>")
    common.base_line(fig, rc.base_acc, "teacher")
    fig.update_xaxes(title="recovery step")
    common.accuracy_axis(fig)
    return theme.layout(fig, "Fine-tuning against distillation, from the same cut")
