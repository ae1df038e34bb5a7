"""Figures of the IOT page ("Choose an order per input"), from lab.experiments.iot's results (typed or plain)."""

from __future__ import annotations

from typing import Any, Optional

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lab.experiments.iot.experiment import IOTObservation, IOTTraining

from . import figures_common as common
from . import theme
from .figcache import figure

TITLE_ACCURACY = "Every candidate order, and what choosing per input buys"

# Order j's look everywhere on the page (bars, stacks, legend): order 0 is the trained order (its meaning colour,
# black), the others the categorical set, hatched once the colours run out (theme.ORDER_COLOURS).


def order_colour(j: int) -> str:
    return theme.ORDER_COLOURS[j % len(theme.ORDER_COLOURS)]


def order_pattern(j: int) -> str:
    return theme.ORDER_PATTERNS[(j // len(theme.ORDER_COLOURS)) % len(theme.ORDER_PATTERNS)]


def _order_marker(js: range, opacity: float = 1.0) -> dict[str, Any]:
    return {"color": [order_colour(j) for j in js], "opacity": opacity,
            "pattern": {"shape": [order_pattern(j) for j in js], "fgcolor": "#ffffff", "solidity": 0.3}}


def order_name(j: int, label: str) -> str:
    return f"order {j}: {label}" + (" (trained)" if j == 0 else "")


def _zoomed_axis(fig: go.Figure, values: list[float], chance: float, title: str) -> None:
    """Accuracies a point apart are invisible on 0..100 %: zoom on the data, and say so on the axis."""
    lo, hi = min(values), max(values)
    bottom = max(0.0, lo - max(0.05, 0.5 * (hi - lo)))
    top = min(1.04, hi + 0.03)  # room for the value labels
    fmt = ".0%" if top - bottom > 0.08 else ".1%"  # a few points tall: whole percents would repeat
    fig.update_yaxes(title=title + (" (zoomed)" if bottom > 0 else ""), tickformat=fmt, range=[bottom, top])
    if chance >= bottom:
        common.chance_line(fig, chance)


@figure
def accuracy(tr: IOTTraining | dict[str, Any], obs: Optional[IOTObservation | dict[str, Any]],
             title: Optional[str] = TITLE_ACCURACY, height: int = 460) -> go.Figure:
    """Each candidate order (IOT's shared weights; trained alone when Part 1 is in), then the methods (`tr`: Part 2,
    typed, or a joined run's plain data; `obs`: Part 1, typed or plain)."""
    tr, obs = common.fields_of(tr), common.fields_of(obs)
    m = len(tr["orders"])
    names = [f"order {j}" for j in range(m)]
    fig = go.Figure()
    vals = list(tr["order_acc"])
    # Each order keeps its colour; the two kinds of bar differ by strength (solid: IOT's shared weights; faded with
    # an outline: a model trained alone), never by borrowing a meaning colour. Explicit offsets and widths: a third
    # trace (the methods) would otherwise take a third slot at every x.
    # The legend names the two kinds in a neutral grey: a legend swatch takes a bar trace's first colour (order 0's
    # black), which would say "order 0" rather than "solid" or "faded".
    for name, alpha in (("IOT's shared weights, run in this order (solid)", 1.0),
                        ("a model trained alone in this order (faded)", 0.45)):
        fig.add_bar(x=[None], y=[None], name=name, marker={"color": theme.MARK, "opacity": alpha})
    fig.add_bar(x=names, y=tr["order_acc"], name="shared weights", showlegend=False,
                marker=_order_marker(range(m)), offset=-0.4, width=0.4, customdata=tr["orders"],
                hovertemplate="%{x} (%{customdata}): %{y:.1%}<extra>shared weights</extra>")
    if obs is not None:
        vals += obs["fixed_acc"]
        fig.add_bar(x=names, y=obs["fixed_acc"], name="trained alone", showlegend=False,
                    marker={**_order_marker(range(m), 0.45), "line": {"color": theme.MARK, "width": 1}},
                    offset=0.0, width=0.4, customdata=obs["orders"],
                    hovertemplate="%{x} (%{customdata}): %{y:.1%}<extra>trained alone</extra>")
    # The methods: the sequential model is the model as trained (its meaning colour); the others are ways to use
    # IOT's weights, told apart by their names on the axis, in one neutral colour with IOT itself solid.
    methods = [("sequential", tr["sequential_acc"], theme.ORIGINAL, 1.0)]
    if obs is not None:
        methods.append(("best fixed", obs["best_fixed_acc"], theme.MARK, 0.55))
    methods += [("ensemble of M", tr["ensemble_acc"], theme.MARK, 0.55), ("IOT", tr["iot_acc"], theme.MARK, 1.0),
                ("oracle", tr["oracle_acc"], theme.MARK, 0.3)]
    vals += [v for _, v, _, _ in methods]
    # The x axis is categorical by construction: said explicitly, because Plotly infers an axis's type from the first
    # trace with x values, here a legend entry's x = [None], which made the axis numeric and placed no bar at all.
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=names + [n for n, _, _, _ in methods])
    fig.add_bar(x=[n for n, _, _, _ in methods], y=[v for _, v, _, _ in methods], name="methods",
                # One opacity per trace in Plotly: each method's strength is blended into its colour instead.
                marker={"color": [_faded(c, a) for _, _, c, a in methods]},
                showlegend=False, offset=-0.3, width=0.6,
                text=[f"{v:.1%}" for _, v, _, _ in methods], textposition="outside",
                textfont={"size": theme.SMALL_FONT + 1}, cliponaxis=False,
                hovertemplate="%{x}: %{y:.1%}<extra></extra>")
    _zoomed_axis(fig, vals, tr["chance"], "held-out accuracy")
    return theme.layout(fig, title, height=height)


def _faded(colour: str, alpha: float) -> str:
    """`colour` at strength alpha over white, as an opaque colour (so one trace can mix strengths)."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    mix = [round(255 - alpha * (255 - v)) for v in (r, g, b)]
    return "#{:02x}{:02x}{:02x}".format(*mix)


@figure
def class_choices(tr: IOTTraining | dict[str, Any]) -> go.Figure:
    """A stacked bar per class: the share of its held-out inputs that the predictor sends to each order."""
    tr = common.fields_of(tr)
    per = tr["choice_share_per_class"]
    classes = [str(c) for c in range(len(per))]
    fig = go.Figure()
    for j, label in enumerate(tr["orders"]):
        fig.add_bar(x=classes, y=[row[j] for row in per], name=order_name(j, label),
                    marker={"color": order_colour(j), "pattern": {"shape": order_pattern(j), "fgcolor": "#ffffff",
                                                                  "solidity": 0.3}},
                    hovertemplate="class %{x}: %{y:.0%}<extra>" + f"order {j}</extra>")
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="class", type="category")
    fig.update_yaxes(title="share of the class's inputs", tickformat=".0%", range=[0, 1])
    return _legend_below(theme.layout(fig, "Which order each class chooses", height=520), len(tr["orders"]))


def _legend_below(fig: go.Figure, entries: int) -> go.Figure:
    """Order labels are long: two per row under the plot."""
    return common.legend_below(fig, 90 + 28 * ((entries + 1) // 2))


@figure
def confusion(tr: IOTTraining | dict[str, Any]) -> go.Figure:
    """Order chosen by the predictor (rows) against the order with the lowest loss for that input (columns)."""
    tr = common.fields_of(tr)
    c = tr["choice_confusion"]
    m = len(c)
    names = [f"order {j}" for j in range(m)]
    fig = go.Figure(go.Heatmap(z=c, x=names, y=names, colorscale=theme.AMOUNT_SCALE, zmin=0,
                               zmax=max(max(r) for r in c),
                               text=[[f"{v:.0%}" for v in row] for row in c], texttemplate="%{text}",
                               hovertemplate="chose %{y}, best was %{x}: %{z:.1%} of inputs<extra></extra>",
                               colorbar={"title": "inputs", "tickformat": ".0%"}))
    fig.update_xaxes(title="order that was best for the input (lowest loss)", side="bottom")
    fig.update_yaxes(title="order the predictor chose", autorange="reversed")
    return theme.layout(fig, f"Chosen vs best order ({tr['oracle_agreement']:.0%} agree)", height=520)


@figure
def collapse(on: IOTTraining | dict[str, Any], off: IOTTraining | dict[str, Any]) -> go.Figure:
    """Per epoch: the share of inputs sent to the most chosen order, and held-out IOT accuracy, with the
    exploration term on and off."""
    on, off = common.fields_of(on), common.fields_of(off)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("share of inputs on the most chosen order", "held-out accuracy (IOT)"))
    # On and off are one setting's two states, not stages of a model: one neutral colour, told apart by dash and
    # marker (the lab's rule for a second difference), so no meaning colour (recovered, cut) is borrowed.
    for r, name, dash, symbol in ((on, f"exploration on (weight {on['config']['explore']:g})", "solid", "circle"),
                                  (off, "exploration off (weight 0)", "dash", "x")):
        cv = r["curves"]
        epochs = list(range(1, len(cv["top_share"]) + 1))
        fig.add_scatter(x=epochs, y=cv["top_share"], name=name, mode="lines+markers", row=1, col=1,
                        line={"color": theme.MARK, "dash": dash}, marker={"symbol": symbol, "size": 9},
                        legendgroup=name, hovertemplate="epoch %{x}: %{y:.0%}<extra></extra>")
        fig.add_scatter(x=epochs, y=cv["test_acc"], name=name, mode="lines+markers", row=1, col=2,
                        line={"color": theme.MARK, "dash": dash}, marker={"symbol": symbol, "size": 9},
                        legendgroup=name, showlegend=False,
                        hovertemplate="epoch %{x}: %{y:.1%}<extra></extra>")
    m = len(on["orders"])
    fig.add_hline(y=1 / m, line={"color": theme.CHANCE, "dash": "dot"}, annotation_text=f"even split 1/{m}",
                  annotation_position="bottom right", row=1, col=1)
    fig.update_yaxes(tickformat=".0%", range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(tickformat=".1%", row=1, col=2)
    n = len(on["curves"]["top_share"])
    fig.update_xaxes(title="epoch", dtick=max(1, n // 8), range=[0.5, n + 0.5])
    fig = theme.layout(fig, "Share of the most chosen order per epoch, exploration on and off", height=520)
    # the subplot titles sit where the lab's legend band goes: the legend moves under the plots
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.25, "xanchor": "left", "x": 0},
                      margin={"t": 100, "b": 120})
    return fig


SWEEP_LINES = (("sequential_acc", "sequential model", theme.ORIGINAL, "solid", "circle"),
               ("best_fixed_acc", "best fixed order (trained alone)", theme.MARK, "dot", "square"),
               ("shared_best_acc", "IOT's weights, best single order", theme.MARK, "dash", "diamond"),
               ("ensemble_acc", "ensemble of the M orders", theme.MARK, "dashdot", "triangle-up"),
               ("iot_acc", "IOT (predicted order)", theme.MARK, "solid", "star"),
               ("oracle_acc", "oracle (best order per input)", theme.CHANCE, "longdash", "x"),
               ("fixed_oracle_acc", "oracle over the orders trained alone", theme.CHANCE, "dot", "cross"),
               ("seed_oracle_acc", "oracle over M seeds of the trained order (control)", theme.CHANCE, "dashdot",
                "circle-open"))


@figure
def sweep(sw: dict[str, Any], height: int = 480) -> go.Figure:
    """Held-out accuracy of every method against the number of candidate orders M (M = 1: the sequential model)."""
    fig = go.Figure()
    ms = [r["m"] for r in sw["rows"]]
    vals = []
    # One neutral colour for the ways of using IOT's weights, told apart by dash and marker (the lab's rule for a
    # second distinction); the sequential model keeps its meaning colour.
    for key, name, colour, dash, symbol in SWEEP_LINES:
        ys = [r[key] for r in sw["rows"]]
        vals += ys
        fig.add_scatter(x=ms, y=ys, name=name, mode="lines+markers", line={"color": colour, "dash": dash, "width": 3},
                        marker={"symbol": symbol, "size": 11}, hovertemplate="M = %{x}: %{y:.1%}<extra>" + name
                        + "</extra>")
    fig.update_xaxes(title="candidate orders M", tickvals=ms, type="linear")
    _zoomed_axis(fig, vals, sw["chance"], "held-out accuracy")
    theme.layout(fig, "Accuracy against the number of candidate orders", height=height)
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.2, "xanchor": "left", "x": 0},
                      margin={"t": 60, "b": 150})
    return fig


def accuracy_of_run(r: dict[str, Any], height: int = 460) -> go.Figure:
    """The page's main figure from `iot.run`'s result (a notebook's): the joined result carries both the IOT training
    and the orders trained alone."""
    return accuracy(r, r if r.get("fixed_acc") is not None else None, TITLE_ACCURACY, height)
