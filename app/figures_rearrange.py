"""Figures of the Rearrange-layers page, built from the plain-data profiles of lab.experiments.rearrange."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from lab.experiments import rearrange

from . import figures_common as common
from . import theme

MODEL_COLOURS = {"residual": theme.RESIDUAL, "vit-sequential": theme.ORIGINAL, "vit-shuffle": theme.VIT}
SHORT = {"identity": "trained order", "skip": "skip one", "skip-first": "skip first", "skip-last": "skip last",
         "swap": "swap two", "reverse": "reverse", "random": "random order", "repeat": "repeat one",
         "skip-middle": "skip middle", "loop": "loop", "parallel": "parallel (mean)", "parallel-sum": "parallel (sum)",
         "parallel-loop": "parallel, looped"}


def operations(profiles: dict[str, dict[str, Any]], chosen: str) -> go.Figure:
    """Share of the trained accuracy each operation keeps, one bar per model (the chosen model drawn solid)."""
    fig = go.Figure()
    names = [n for n, _ in rearrange.SUMMARY]
    for mo, prof in profiles.items():
        s = rearrange.summary(prof)
        mine = mo == chosen
        fig.add_bar(x=[SHORT[n] for n in names], y=[s[n]["acc"] / prof["base_acc"] for n in names],
                    name=rearrange.MODEL_LABELS[mo] + (" (chosen)" if mine else ""),
                    marker={"color": MODEL_COLOURS[mo], "opacity": 1.0 if mine else 0.45,
                            "line": {"color": "#000000", "width": 1.5 if mine else 0}},
                    customdata=[[s[n]["acc"], s[n]["block_runs"], lab] for n, lab in rearrange.SUMMARY],
                    hovertemplate="%{x}: keeps %{y:.1%} of the trained accuracy<br>held-out %{customdata[0]:.1%}, "
                                  "%{customdata[1]} block runs<br>%{customdata[2]}<extra>" + mo + "</extra>")
    fig.add_hline(y=1.0, line={"color": "#555555", "dash": "dash"}, annotation_text="trained order",
                  annotation_position="top right")
    fig.update_layout(barmode="group", bargap=0.2)
    fig.update_xaxes(tickangle=-35)
    fig.update_yaxes(title="share of trained accuracy kept", tickformat=".0%", range=[0, 1.12])
    theme.layout(fig, "Every operation, every model", height=560)
    fig.update_layout(margin={"l": 60, "r": 20, "t": 100, "b": 150})  # room for the slanted operation names
    return fig


def per_block(prof: dict[str, Any]) -> go.Figure:
    """Accuracy after skipping, swapping or repeating each block (the ends included), for the chosen model."""
    n, ops = prof["n_blocks"], prof["ops"]
    fig = go.Figure()
    style = {"skip": (theme.CUT, "circle"), "swap": (theme.RECOVERED, "diamond"), "repeat": (theme.PLAIN, "square")}
    for op, (colour, symbol) in style.items():
        bs = rearrange.valid_blocks(op, n, "include")
        fig.add_scatter(x=list(bs), y=[ops[rearrange.row_key(op, b, ends="include")]["acc"] for b in bs],
                        name={"skip": "skip block b", "swap": "swap b and b+1",
                              "repeat": "repeat b in place of all blocks"}[op],
                        mode="lines+markers", line={"color": colour}, marker={"symbol": symbol, "size": 11},
                        hovertemplate="b=%{x}: %{y:.1%}<extra>" + op + "</extra>")
    common.base_line(fig, prof["base_acc"], "trained", position="top left")
    common.chance_line(fig, prof["chance"])
    fig.add_vrect(x0=-0.5, x1=0.5, fillcolor="#cccccc", opacity=0.25, line_width=0)
    fig.add_vrect(x0=n - 1.5, x1=n - 0.5, fillcolor="#cccccc", opacity=0.25, line_width=0)
    fig.update_xaxes(title="block b (shaded: the first and last)", dtick=1, range=[-0.5, n - 0.5])
    common.accuracy_axis(fig)
    return theme.layout(fig, "Block by block, ends included", height=440)


def route(r: dict[str, Any]) -> go.Figure:
    """What the chosen route runs: one column per sequential step, a parallel group stacked in one column."""
    n = r["n_blocks"]
    xs, ys, text = [], [], []
    path_x, path_y = [-1], [-0.5]  # from the stem
    for step, st in enumerate(r["steps"]):
        blocks = st["parallel"] if isinstance(st, dict) else [st]
        for b in blocks:
            xs.append(step)
            ys.append(b)
            text.append(str(b))
        path_x.append(step)
        path_y.append(sum(blocks) / len(blocks))
    path_x.append(len(r["steps"]))
    path_y.append(n - 0.5)
    mid = set(r["middle"])
    fig = go.Figure()
    fig.add_scatter(x=path_x, y=path_y, mode="lines", line={"color": "#999999", "width": 2}, hoverinfo="skip",
                    showlegend=False)
    colours = [theme.CUT if b in mid else theme.ORIGINAL for b in ys]
    fig.add_scatter(x=xs, y=ys, mode="markers+text", text=text, textfont={"color": "#ffffff", "size": 16},
                    marker={"symbol": "square", "size": 34, "color": colours}, showlegend=False,
                    hovertemplate="step %{x}: block %{y}<extra></extra>")
    fig.add_annotation(x=-1, y=-0.5, text="stem", showarrow=False, font={"size": 14})
    fig.add_annotation(x=len(r["steps"]), y=n - 0.5, text="head", showarrow=False, font={"size": 14})
    for st in r["steps"]:
        if isinstance(st, dict):
            step = r["steps"].index(st)
            fig.add_annotation(x=step, y=max(st["parallel"]) + 0.9, text=st["reduce"], showarrow=False,
                               font={"size": 13})
    fig.update_xaxes(title="sequential step", range=[-1.6, len(r["steps"]) + 0.6],
                     tickvals=list(range(len(r["steps"]))), zeroline=False)
    fig.update_yaxes(title="block", range=[n - 0.2, -1.2], tickvals=list(range(n)), zeroline=False)
    return theme.layout(fig, f"What runs: {r['block_runs']} block runs in {r['depth']} steps "
                             "(orange: the operated middle)", height=380)


def similarity(prof: dict[str, Any], kind: str) -> go.Figure:
    """Cosine or linear-CKA similarity between the hidden states after every pair of slots, values written in."""
    sim = prof["similarity"]
    z = sim[kind]
    labels = sim["labels"]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, zmin=min(0.0, min(map(min, z))), zmax=1.0,
                               colorscale="Viridis", text=[[f"{v:.2f}" for v in row] for row in z],
                               texttemplate="%{text}", textfont={"size": 13},
                               hovertemplate="%{y} vs %{x}: %{z:.3f}<extra></extra>", colorbar={"thickness": 14}))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickangle=-35)
    title = {"cosine": "Cosine similarity of hidden states", "cka": "Linear CKA of hidden states"}[kind]
    theme.layout(fig, title, height=480)
    fig.update_layout(margin={"l": 90, "r": 20, "t": 60, "b": 90})  # no legend band: the title sits close
    return fig
