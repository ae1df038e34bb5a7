"""Training curves: a model's training loss and held-out accuracy per epoch, side by side.

Two sources draw the same figure (app/training_view.py gives it `Curve`s): a job's curves as its epoch reports
arrive, drawn under its progress bar, and a trained model's stored record (`stored_curve`: the zoo keeps `loss` and
`test_acc` per epoch with the weights), drawn on a cached view. The epoch axis spans the whole
run from the first report on, so a live curve grows into the room it will fill (TensorFlow Playground's live curves).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import theme

# One model's line style, by its place in the figure: colour says the architecture (or, live, "the model as trained"),
# so models of one figure differ by dash and marker (app/charts.py leaves a style that is set as it is).
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")
MARKERS_UP_TO = 60  # epochs drawn with a marker each; a longer run is a line (hundreds of markers are a smear)
MAX_MODELS = 8  # a figure's models, at most (the newest ones of a live job)
LOSS = "training loss"
ACC = "held-out accuracy (%)"


@dataclass(frozen=True)
class Curve:
    """One model's training record as a figure draws it."""

    name: str  # the model in words ("residual MLP, seed 0"); "" for a live job's only model
    epochs: int  # the run's length: the x axis spans it
    epoch: Sequence[int]  # the epochs drawn (1-based)
    loss: Sequence[float]  # mean training loss of each
    acc: Sequence[Optional[float]]  # held-out accuracy in [0, 1] after each (None: not measured)
    colour: str = theme.ORIGINAL


def stored_curve(name: str, info: dict[str, Any], colour: str = theme.ORIGINAL) -> Optional[Curve]:
    """A trained model's curve from its stored record (`loss` and `test_acc` per epoch, lab/core/zoo.py); None when
    the record has no epochs."""
    loss = [float(v) for v in info.get("loss") or []]
    if not loss:
        return None
    acc = [float(v) for v in info.get("test_acc") or []]
    return Curve(name, len(loss), list(range(1, len(loss) + 1)), loss,
                 [acc[i] if i < len(acc) else None for i in range(len(loss))], colour)


def _step(epochs: int) -> int:
    """Epochs between two ticks: about eight ticks, on a round number."""
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        if epochs / step <= 8:
            return step
    return 10 ** math.ceil(math.log10(epochs / 8))


def training_figure(curves: Sequence[Curve], title: Optional[str] = None, height: int = 340) -> Optional[go.Figure]:
    """Training loss (left) and held-out accuracy (right) per epoch, one line per model; None when nothing is drawn
    yet (no empty axes)."""
    curves = [c for c in curves if len(c.epoch)][:MAX_MODELS]
    if not curves:
        return None
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Training loss", "Held-out accuracy"), horizontal_spacing=0.12)
    several = len(curves) > 1
    for i, c in enumerate(curves):
        marks = len(c.epoch) <= MARKERS_UP_TO
        style = {"mode": "lines+markers" if marks else "lines", "legendgroup": c.name or "model",
                 "line": {"color": c.colour, "dash": DASHES[i % len(DASHES)], "width": 2.5},
                 "marker": {"color": c.colour, "symbol": SYMBOLS[i % len(SYMBOLS)], "size": 7}}
        suffix, who = (f", {c.name}", f"{c.name}, ") if c.name else ("", "")
        fig.add_scatter(x=list(c.epoch), y=list(c.loss), name=LOSS + suffix, showlegend=False, row=1, col=1,
                        hovertemplate=f"{who}epoch %{{x}}: loss %{{y:.3f}}<extra></extra>", **style)
        fig.add_scatter(x=list(c.epoch), y=[None if a is None else 100 * a for a in c.acc], name=ACC + suffix,
                        showlegend=False, row=1, col=2,
                        hovertemplate=f"{who}epoch %{{x}}: %{{y:.1f}} %<extra></extra>", **style)
        if several:  # the legend names the models once (the data traces are named by what they measure)
            fig.add_scatter(x=[None], y=[None], name=c.name, showlegend=True, row=1, col=1, **style)
    epochs = max(c.epochs for c in curves)
    theme.layout(fig, title, height, showlegend=several)
    if title and not several:  # no legend band under the title: the panels move up (it sits under a progress bar)
        fig.update_layout(margin={"t": 78})
    fig.update_xaxes(title="epoch", range=[0.5, epochs + 0.5], tick0=0, dtick=_step(epochs))
    # the loss axis's tick format says "not a share": the caption (app/charts.py) then reads values as they are
    fig.update_yaxes(title="loss", rangemode="tozero", tickformat=".2~f", row=1, col=1)
    fig.update_yaxes(title="accuracy (%)", range=[0, 105], ticksuffix=" %", row=1, col=2)
    return fig
