"""Figure pieces every page shares: the chance line, the accuracy axis and the recovery curve.

They read the lab's result vocabulary (docs/ARCHITECTURE.md): `base_acc`, `cut_acc`, `chance`, `curve_steps`,
`curve_acc`; so one recovery curve serves every experiment that heals a model.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import plotly.graph_objects as go

from . import theme


def fields_of(r: Any) -> Any:
    """A typed result as the dict its stored JSON holds; plain data (a dict, a list, None) as it is. Figures take
    either: a page may hand them a stored result or data it joined itself."""
    return dataclasses.asdict(r) if dataclasses.is_dataclass(r) and not isinstance(r, type) else r


def chance_line(fig: go.Figure, chance: float, position: str = "bottom right", **kw: Any) -> None:
    """A dotted grey line at chance accuracy (the most frequent class), named in the legend: a label on the line
    itself sat on top of the bars or points near it."""
    fig.add_hline(y=chance, line={"color": theme.CHANCE, "dash": "dot"}, **kw)
    if not any(t.name == "chance" for t in fig.data):
        fig.add_scatter(x=[None], y=[None], mode="lines", name="chance", line={"color": theme.CHANCE, "dash": "dot"},
                        **({"row": kw["row"], "col": kw["col"]} if "row" in kw else {}))


def base_line(fig: go.Figure, acc: float, label: str = "original", position: str = "bottom right",
              dash: str = "dash", **kw: Any) -> None:
    """A dashed line at the unmodified model's accuracy."""
    fig.add_hline(y=acc, line={"color": theme.ORIGINAL, "dash": dash}, annotation_text=f"{label} {acc:.1%}",
                  annotation_position=position, **kw)


def accuracy_axis(fig: go.Figure, title: str = "held-out accuracy", **kw: Any) -> None:
    """The y axis of an accuracy in [0, 1], shown in percent."""
    fig.update_yaxes(title=title, tickformat=".0%", range=[0, 1.05], **kw)


def accuracies(r: Any, title: str | None = None, height: int = 440) -> go.Figure:
    """A result's accuracies, one bar each (every top-level number named `acc` or `*_acc`), above its chance line: a
    main figure any experiment's page can start with, before it has figures of its own (the page's `show` and
    `reproduce` take it as it is; docs/ARCHITECTURE.md, "Adding an experiment")."""
    f = fields_of(r)
    accs = {k: v for k, v in f.items() if (k == "acc" or k.endswith("_acc")) and isinstance(v, (int, float))
            and not isinstance(v, bool)}
    names = [k.removesuffix("acc").removesuffix("_").replace("_", " ") or "held-out" for k in accs]
    fig = go.Figure(go.Bar(x=names, y=list(accs.values()), marker_color=theme.ORIGINAL, name="accuracy"))
    if isinstance(f.get("chance"), (int, float)):
        chance_line(fig, f["chance"])
    accuracy_axis(fig)
    fig.update_layout(title=title or "", height=height, showlegend=False)
    return fig


def recovery_curve(r: dict[str, Any], title: str, curve_label: str, cut_label: Optional[str] = "cut",
                   base_label: str = "original", height: int = 420) -> go.Figure:
    """Held-out accuracy during recovery (fine-tuning or distillation), from the cut to the end, with the
    unmodified model, chance, and (when the result has it) the step at which it came back."""
    last = max(r["curve_steps"]) if r["curve_steps"] else 1
    fig = go.Figure()
    fig.add_scatter(x=r["curve_steps"], y=r["curve_acc"], name=curve_label, line={"color": theme.RECOVERED},
                    mode="lines+markers", hovertemplate="step %{x}: %{y:.1%}<extra></extra>")
    if cut_label is not None:
        fig.add_scatter(x=[0], y=[r["cut_acc"]], name=cut_label, mode="markers",
                        marker={"color": theme.CUT, "size": 13, "symbol": "diamond"})
    base_line(fig, r["base_acc"], base_label)
    if "chance" in r:
        chance_line(fig, r["chance"])
    if r.get("steps_to_recover") is not None:
        fig.add_vline(x=r["steps_to_recover"], line={"color": theme.RECOVERED, "dash": "dot"},
                      annotation_text=f"back within 1 pt at step {r['steps_to_recover']}",
                      annotation_position="top right" if r["steps_to_recover"] < last / 2 else "top left")
    # An explicit range: autorange pads around the step-0 marker and once ran the axis to -100 steps.
    fig.update_xaxes(title="recovery step", range=[-0.03 * last, 1.03 * last])
    accuracy_axis(fig)
    return theme.layout(fig, title, height=height)


def per_class(r: dict[str, Any], title: str | None, height: int, base_label: str, cut_label: str) -> go.Figure:
    """Accuracy within each class: the unchanged model, after the change, after recovery (when there was one)."""
    pc = r["per_class"]
    classes = [str(c) for c in range(len(pc["base"]))]
    fig = go.Figure()
    fig.add_bar(x=classes, y=pc["base"], name=base_label, marker_color=theme.ORIGINAL)
    fig.add_bar(x=classes, y=pc["cut"], name=cut_label, marker_color=theme.CUT)
    if r["config"]["recovery"] != "none":
        fig.add_bar(x=classes, y=pc["recovered"], name="recovered", marker_color=theme.RECOVERED)
    chance_line(fig, r["chance"], "top right")
    fig.update_xaxes(title="class", type="category")
    accuracy_axis(fig)
    return theme.layout(fig, title, height=height, barmode="group")


def legend_below(fig: go.Figure, bottom: int, y: float = -0.2) -> go.Figure:
    """Long legends go under the plot, where they cannot cover the title; `bottom` is the margin they need."""
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": y, "xanchor": "left", "x": 0},
                      margin={"t": 60, "b": bottom})
    return fig
