"""Figures of the Rearrange-layers page, built from the typed results of lab.experiments.rearrange."""

from __future__ import annotations

from typing import Any

import plotly.colors as pc
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lab.core import model_registry
from lab.experiments.rearrange import rows
from lab.ops import route_ops

from . import figures_common as common
from . import theme
from .figcache import figure

# Colour is the architecture (residual MLP, ViT); the two ViTs differ in how they were trained, a second way,
# drawn as a hatch on the LayerShuffle one, never as another meaning's colour.
MODEL_COLOURS = {"residual": theme.RESIDUAL, "vit-sequential": theme.VIT, "vit-shuffle": theme.VIT}
MODEL_PATTERNS = {"residual": "", "vit-sequential": "", "vit-shuffle": "/"}
SHORT = {"identity": "trained order", "skip": "skip one", "skip-first": "skip first", "skip-last": "skip last",
         "swap": "swap two", "reverse": "reverse", "random": "random order", "repeat": "repeat one",
         "skip-middle": "skip middle", "loop": "loop (twice)", "parallel": "parallel (mean)",
         "parallel-sum": "parallel (sum)", "parallel-loop": "parallel, looped twice"}


@figure
def operations(profiles: dict[str, Any], chosen: str) -> go.Figure:
    """Share of the trained accuracy each operation keeps, one bar per model (the chosen model drawn solid)."""
    fig = go.Figure()
    names = [n for n, _ in rows.SUMMARY]
    for mo, prof in profiles.items():
        s = rows.summary(prof)
        mine = mo == chosen
        fig.add_bar(x=[SHORT[n] for n in names], y=[s[n]["acc"] / prof.base_acc for n in names],
                    name=model_registry.model(mo).label + (" (chosen)" if mine else ""),
                    marker={"color": MODEL_COLOURS[mo], "opacity": 1.0 if mine else 0.45,
                            "pattern": {"shape": MODEL_PATTERNS[mo], "fgcolor": "#ffffff", "solidity": 0.35},
                            "line": {"color": theme.TRAINED_ORDER, "width": 1.5 if mine else 0}},
                    customdata=[[s[n]["acc"], s[n]["block_runs"], lab] for n, lab in rows.SUMMARY],
                    hovertemplate="%{x}: keeps %{y:.1%} of the trained accuracy<br>held-out %{customdata[0]:.1%}, "
                                  "%{customdata[1]} block runs<br>%{customdata[2]}<extra>" + mo + "</extra>")
    # Chance as a share of each model's trained accuracy: one dotted line per model (they differ: 5 % of the MLP's,
    # 10 % of the ViTs'), drawn as traces so the legend names them and hover says whose it is.
    xs = [SHORT[n] for n in names]
    for i, (mo, prof) in enumerate(profiles.items()):
        share = prof.chance / prof.base_acc
        fig.add_scatter(x=xs, y=[share] * len(xs), mode="lines", name="chance (share of each model's accuracy)",
                        legendgroup="chance", showlegend=i == 0,
                        line={"color": theme.CHANCE, "dash": "dot", "width": 2},
                        hovertemplate=f"chance: {share:.1%} of the trained accuracy<extra>{mo}</extra>")
    fig.add_hline(y=1.0, line={"color": theme.MARK, "dash": "dash"}, annotation_text="trained order",
                  annotation_position="top right")
    fig.update_layout(barmode="group", bargap=0.2)
    fig.update_xaxes(tickangle=-35)
    fig.update_yaxes(title="share of trained accuracy kept", tickformat=".0%", range=[0, 1.12])
    theme.layout(fig, "Every operation, every model", height=560)
    fig.update_layout(margin={"l": 60, "r": 20, "t": 100, "b": 150})  # room for the slanted operation names
    return fig


@figure
def per_block(prof: Any) -> go.Figure:
    """Accuracy after skipping, swapping or repeating each block (the ends included), for the chosen model."""
    n, ops = prof.n_blocks, prof.ops
    fig = go.Figure()
    symbols = {"skip": "circle", "swap": "diamond", "repeat": "square"}
    for op, symbol in symbols.items():
        colour = theme.OPERATION_COLOURS[op]
        bs = route_ops.valid_blocks(op, n, "include")
        fig.add_scatter(x=list(bs), y=[ops[rows.row_key(op, b, ends="include")]["acc"] for b in bs],
                        name={"skip": "skip block b", "swap": "swap b and b+1",
                              "repeat": "repeat b in place of all blocks"}[op],
                        mode="lines+markers", line={"color": colour}, marker={"symbol": symbol, "size": 11},
                        hovertemplate="b=%{x}: %{y:.1%}<extra>" + op + "</extra>")
    common.base_line(fig, prof.base_acc, "trained", position="top left")
    common.chance_line(fig, prof.chance)
    for x0 in (-0.5, n - 1.5):  # the ends: a faint neutral band, no meaning colour
        fig.add_vrect(x0=x0, x1=x0 + 1, fillcolor=theme.MARK, opacity=0.1, line_width=0)
    fig.update_xaxes(title="block b (shaded: the first and last)", dtick=1, range=[-0.5, n - 0.5])
    common.accuracy_axis(fig)
    return theme.layout(fig, "Block by block, ends included", height=440)


@figure
def route(r: Any, title: str | None = "", height: int = 380) -> go.Figure:
    """What the chosen route runs (`rearrange.run`'s result): one column per sequential step, a parallel group
    stacked in one column."""
    n = r.n_blocks
    xs, ys, text = [], [], []
    path_x, path_y = [-1], [-0.5]  # from the stem
    for step, st in enumerate(r.steps):
        blocks = st["parallel"] if isinstance(st, dict) else [st]
        for b in blocks:
            xs.append(step)
            ys.append(b)
            text.append(str(b))
        path_x.append(step)
        path_y.append(sum(blocks) / len(blocks))
    path_x.append(len(r.steps))
    path_y.append(n - 0.5)
    mid = set(r.middle)
    fig = go.Figure()
    fig.add_scatter(x=path_x, y=path_y, mode="lines", line={"color": theme.MARK, "width": 1.5}, opacity=0.6,
                    hoverinfo="skip", showlegend=False)
    # By meaning: a block the operation moved, repeated or left out of place is "after surgery" (cut); the ends
    # the operation keeps are the model as trained (original). Named in the legend, not in the title's words.
    for inside, name, colour in ((False, "kept in place", theme.ORIGINAL), (True, "the operated middle", theme.CUT)):
        pick = [i for i, b in enumerate(ys) if (b in mid) == inside]
        fig.add_scatter(x=[xs[i] for i in pick], y=[ys[i] for i in pick], mode="markers+text",
                        text=[text[i] for i in pick], textfont={"color": "#ffffff", "size": 16}, name=name,
                        marker={"symbol": "square", "size": 34, "color": colour},
                        hovertemplate="step %{x}: block %{y}<extra></extra>")
    fig.add_annotation(x=-1, y=-0.5, text="stem", showarrow=False, font={"size": 14})
    fig.add_annotation(x=len(r.steps), y=n - 0.5, text="head", showarrow=False, font={"size": 14})
    for st in r.steps:
        if isinstance(st, dict):
            step = r.steps.index(st)
            fig.add_annotation(x=step, y=max(st["parallel"]) + 0.9, text=st["reduce"], showarrow=False,
                               font={"size": theme.SMALL_FONT})
    fig.update_xaxes(title="sequential step", range=[-1.6, len(r.steps) + 0.6],
                     tickvals=list(range(len(r.steps))), zeroline=False)
    fig.update_yaxes(title="block", range=[n - 0.2, -1.2], tickvals=list(range(n)), zeroline=False)
    if title == "":  # the default: say what the route costs
        title = f"What runs: {r.block_runs} block runs in {r.sequential_steps} steps"
    return theme.layout(fig, title, height=height)


@figure
def similarity(prof: Any, kind: str) -> go.Figure:
    """Cosine or linear-CKA similarity between the hidden states after every pair of slots, values written in."""
    sim = prof.similarity
    z = sim[kind]
    labels = sim["labels"]
    extra, hover = {}, "%{y} vs %{x}: %{z:.3f}<extra></extra>"
    if kind == "cka" and "cka_biased" in sim:  # the plain (biased) estimate, for comparison
        extra = {"customdata": sim["cka_biased"]}
        hover = "%{y} vs %{x}: %{z:.3f} (plain CKA %{customdata:.3f})<extra></extra>"
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, zmin=min(0.0, min(map(min, z))), zmax=1.0,
                               colorscale=theme.AMOUNT_SCALE, text=[[f"{v:.2f}" for v in row] for row in z],
                               texttemplate="%{text}", textfont={"size": theme.SMALL_FONT},
                               hovertemplate=hover, colorbar={"thickness": 14}, **extra))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickangle=-35)
    title = {"cosine": "Cosine similarity of hidden states", "cka": "Linear CKA (debiased) of hidden states"}[kind]
    theme.layout(fig, title, height=480)
    fig.update_layout(margin={"l": 90, "r": 20, "t": 60, "b": 90})  # no legend band: the title sits close
    return fig


SPAN_COLOURS = {"skip": theme.OPERATION_COLOURS["skip"], "repeat": theme.OPERATION_COLOURS["repeat"],
                "reverse": theme.CATEGORICAL[3], "parallel": theme.CATEGORICAL[4]}
SPAN_SYMBOLS = {"skip": "circle", "repeat": "square", "reverse": "triangle-up", "parallel": "diamond"}
SPAN_NAMES = {"skip": "skip the window", "repeat": "repeat its first block in it", "reverse": "reverse it",
              "parallel": "run it in parallel (mean)"}


@figure
def spans(profiles: dict[str, Any]) -> go.Figure:
    """Accuracy against span (how many middle blocks the operation touches), one panel per model, one line per
    operation; each point is the mean over every window of that span."""
    models = list(profiles)
    fig = make_subplots(rows=1, cols=len(models), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[model_registry.model(m).label for m in models])
    for col, mo in enumerate(models, 1):
        prof = profiles[mo]
        sw = rows.span_sweep(prof)
        for op in rows.SWEEP_OPS:
            fig.add_scatter(x=sw["spans"], y=sw["curves"][op], name=SPAN_NAMES[op], legendgroup=op,
                            showlegend=col == 1, mode="lines+markers", line={"color": SPAN_COLOURS[op], "width": 3},
                            marker={"symbol": SPAN_SYMBOLS[op], "size": 10},
                            hovertemplate="span %{x}: %{y:.1%}<extra>" + op + "</extra>", row=1, col=col)
        for y, colour, dash, name in ((prof.base_acc, theme.TRAINED_ORDER, "dash", "trained order"),
                                      (prof.chance, theme.CHANCE, "dot", "chance")):
            fig.add_scatter(x=[0.8, sw["spans"][-1] + 0.2], y=[y, y], mode="lines", name=name, legendgroup=name,
                            showlegend=col == 1, line={"color": colour, "dash": dash, "width": 2},
                            hovertemplate=f"{name}: {y:.1%}<extra>{mo}</extra>", row=1, col=col)
        fig.update_xaxes(title="span (blocks)", dtick=1, row=1, col=col)
    fig.update_yaxes(title="held-out accuracy", tickformat=".0%", range=[0, 1.05], row=1, col=1)
    theme.layout(fig, "How far each operation reaches: accuracy against span", height=540)
    # Six entries take two rows at 1280 px: above the plot they covered the panels' titles.
    return common.legend_below(fig, 150, y=-0.25)


@figure
def loops(prof: Any) -> go.Figure:
    """Parallel-loop: accuracy against the loop count K, one line per span (darker: longer), best K marked."""
    sw = rows.span_sweep(prof)
    fig = go.Figure()
    shades = pc.sample_colorscale(theme.AMOUNT_SCALE, [0.15 + 0.7 * i / max(len(sw["spans"]) - 1, 1)
                                                      for i in range(len(sw["spans"]))])
    for sp, colour in zip(sw["spans"], shades, strict=True):
        ys = sw["loop_curves"][str(sp)]
        best = sw["best_loops"][str(sp)]
        fig.add_scatter(x=sw["loops"], y=ys, name=f"span {sp}", mode="lines+markers", line={"color": colour,
                        "width": 3}, marker={"size": 8}, hovertemplate="K=%{x}: %{y:.1%}<extra>span " + str(sp)
                        + "</extra>")
        fig.add_scatter(x=[best], y=[ys[best - 1]], mode="markers", showlegend=False, hoverinfo="skip",
                        marker={"symbol": "star", "size": 18, "color": colour, "line": {"color": theme.MARK,
                                                                                         "width": 1.5}})
    common.base_line(fig, prof.base_acc, "trained", position="top left")
    common.chance_line(fig, prof.chance)
    fig.update_xaxes(title="loop count K (the parallel window run K times)", dtick=1)
    common.accuracy_axis(fig)
    return theme.layout(fig, f"Parallel, looped: {model_registry.model(prof.model).label} (stars: best K per span)",
                        height=460)
