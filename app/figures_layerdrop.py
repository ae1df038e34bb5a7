"""Figures of the LayerDrop page, built from the plain-data profiles of lab.experiments.layerdrop."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from . import figures_common as common
from . import theme

# One colour per training rate, in order of p (p = 0, the ordinary model, is always the "original" blue).
P_COLOURS = (theme.ORIGINAL, theme.PLAIN, theme.RECOVERED, theme.VIT, theme.CUT, "#000000")
STRATEGY_STYLE = {  # colour, dash: the data-free rules solid, the searches dashed, the contiguous ones dotted
    "every-other": (theme.CUT, "solid"),
    "greedy": (theme.RECOVERED, "dash"),
    "influence": (theme.VIT, "dash"),
    "first": (theme.PLAIN, "dot"),
    "last": ("#000000", "dot"),
    "random": (theme.CHANCE, "solid"),
}


def _axes(fig: go.Figure, n: int, chance: float, keep: int) -> None:
    common.chance_line(fig, chance, "top right")
    fig.add_vline(x=keep, line={"color": "#555555", "width": 1, "dash": "dash"}, annotation_text=f"r = {keep}",
                  annotation_position="top left")
    fig.update_xaxes(title=f"blocks kept (r, of N = {n})", dtick=1, range=[-0.2, n + 0.2])
    common.accuracy_axis(fig, "held-out accuracy (no fine-tuning)")


def _legend_below(fig: go.Figure) -> go.Figure:
    """Half-width figures have long legends: put them under the plot, where they cannot cover the title."""
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.22, "xanchor": "left", "x": 0},
                      margin={"t": 60, "b": 170})
    return fig


def p_colour(i: int) -> str:
    return P_COLOURS[i % len(P_COLOURS)]


def versus_p(profiles: list[dict[str, Any]], strategy: str, chosen_p: float, keep: int) -> go.Figure:
    """Accuracy against blocks kept, one line per training rate p, under one pruning strategy."""
    fig = go.Figure()
    for i, prof in enumerate(profiles):
        p = prof["config"]["p"]
        rows = prof["strategies"][strategy]
        mine = abs(p - chosen_p) < 1e-9
        fig.add_scatter(x=list(range(len(rows))), y=[r["test_acc"] for r in rows],
                        name=f"p = {p:g}" + (" (yours)" if mine else ""), mode="lines+markers",
                        line={"color": p_colour(i), "width": 4 if mine else 2},
                        customdata=[str(r["kept"]) for r in rows],
                        hovertemplate="r=%{x}: %{y:.1%}<br>kept %{customdata}<extra>p = " + f"{p:g}</extra>")
    _axes(fig, profiles[0]["n_blocks"], profiles[0]["chance"], keep)
    return theme.layout(fig, f"Pruned without fine-tuning ({strategy}), by training rate p")


def strategies(prof: dict[str, Any], keep: int) -> go.Figure:
    """Every pruning strategy at one training rate: accuracy against blocks kept."""
    fig = go.Figure()
    for name, rows in prof["strategies"].items():
        colour, dash = STRATEGY_STYLE.get(name, (theme.CHANCE, "solid"))
        label = name + (" (mean of draws)" if name == "random" else "")
        fig.add_scatter(x=list(range(len(rows))), y=[r["test_acc"] for r in rows], name=label, mode="lines+markers",
                        line={"color": colour, "dash": dash}, customdata=[str(r["kept"]) for r in rows],
                        hovertemplate="r=%{x}: %{y:.1%}<br>kept %{customdata}<extra>" + name + "</extra>")
    _axes(fig, prof["n_blocks"], prof["chance"], keep)
    return _legend_below(theme.layout(fig, f"Six strategies, model trained at p = {prof['config']['p']:g}",
                                      height=560))


def p_star(profiles: list[dict[str, Any]], chosen_p: float, keep: int, strategy: str) -> go.Figure:
    """The rule p* = 1 - r/N against the trained rates, with the empirically best trained p at every r."""
    n = profiles[0]["n_blocks"]
    rs = list(range(1, n + 1))
    fig = go.Figure()
    fig.add_scatter(x=rs, y=[1 - r / n for r in rs], name="rule of thumb p* = 1 - r/N", mode="lines",
                    line={"color": "#000000", "width": 2})
    for i, prof in enumerate(profiles):
        p = prof["config"]["p"]
        mine = abs(p - chosen_p) < 1e-9
        name = f"trained p = {p:g}" + (" (yours)" if mine else "")
        fig.add_scatter(x=[rs[0], rs[-1]], y=[p, p], mode="lines", name=name,
                        line={"color": p_colour(i), "width": 4 if mine else 1.5, "dash": "solid" if mine else "dot"},
                        hoverinfo="skip")
    best_p, best_acc = [], []
    for r in rs:
        accs = [(prof["strategies"][strategy][r]["test_acc"], prof["config"]["p"]) for prof in profiles]
        acc, p = max(accs)
        best_p.append(p)
        best_acc.append(acc)
    fig.add_scatter(x=rs, y=best_p, mode="markers", name=f"best trained p at this r ({strategy})",
                    marker={"symbol": "star", "size": 16, "color": theme.CUT, "line": {"color": "#000", "width": 1}},
                    customdata=best_acc, hovertemplate="r=%{x}: best p = %{y:g} (%{customdata:.1%})<extra></extra>")
    fig.add_vline(x=keep, line={"color": "#555555", "width": 1, "dash": "dash"}, annotation_text=f"r = {keep}",
                  annotation_position="top right")
    fig.update_xaxes(title=f"blocks you want to keep (r, of N = {n})", dtick=1)
    fig.update_yaxes(title="LayerDrop rate p", range=[-0.03, 1.0])
    return _legend_below(theme.layout(fig, "Which p for which depth?", height=560))


def recovery_curve(r: dict[str, Any]) -> go.Figure:
    """Held-out accuracy of the pruned model during KD recovery."""
    return common.recovery_curve(r, "What fine-tuning (distillation) adds on top", "pruned, distilling",
                                 cut_label=None, base_label="full model", height=360)
