"""Figures of the LayerDrop page, built from the typed results of lab.experiments.layerdrop."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from . import figures_common as common
from . import theme
from .figcache import figure

# Strategies: the lab's categorical set; the data-free rules solid, the searches dashed, the contiguous ones dotted.
# Each also has its own marker and a small sideways offset: at some settings every strategy keeps the same blocks
# and the lines would otherwise lie exactly on top of each other.
STRATEGY_STYLE = {  # dash, marker
    "every-other": ("solid", "circle"),
    "greedy": ("dash", "diamond"),
    "influence": ("dash", "square"),
    "first": ("dot", "triangle-up"),
    "last": ("dot", "triangle-down"),
    "random": ("solid", "x"),
}
DODGE = 0.07  # sideways offset between strategies, in blocks


def _axes(fig: go.Figure, n: int, chance: float, keep: int) -> None:
    common.chance_line(fig, chance, "top right")
    # its label at the bottom: on an easy task (wine) every line runs along the top, where the label hid markers
    fig.add_vline(x=keep, line={"color": theme.MARK, "width": 1, "dash": "dash"}, annotation_text=f"r = {keep}",
                  annotation_position="bottom left")
    fig.update_xaxes(title=f"blocks kept (r, of N = {n})", dtick=1, range=[-0.4, n + 0.4])
    common.accuracy_axis(fig, "held-out accuracy (no fine-tuning)")


def _legend_below(fig: go.Figure) -> go.Figure:
    """Half-width figures have long legends: under the plot."""
    return common.legend_below(fig, 170, y=-0.22)


def _rate(prof: Any) -> tuple[float, dict[str, Any], int, float]:
    """(p, strategies, n_blocks, chance) of a profile (`layerdrop.profile`'s typed result) or of one of a run's
    `by_p` curves (plain records: the run carries them as it stores them)."""
    if isinstance(prof, dict):
        return prof["config"]["p"], prof["strategies"], prof["n_blocks"], prof["chance"]
    return prof.config.p, prof.strategies, prof.n_blocks, prof.chance


@figure
def versus_p(profiles: list[Any], strategy: str, chosen_p: float, keep: int,
             title: str | None = None, height: int = 420, run: Any = None) -> go.Figure:
    """Accuracy against blocks kept, one line per training rate p, under one pruning strategy; with `run` (a
    LayerDrop result), the paper's two baselines at its kept depth r: depth r from scratch, and distilled."""
    run = common.fields_of(run)
    fig = go.Figure()
    for prof in profiles:
        p, by_strategy, _, _ = _rate(prof)
        rows = by_strategy[strategy]
        mine = abs(p - chosen_p) < 1e-9
        fig.add_scatter(x=list(range(len(rows))), y=[r["test_acc"] for r in rows],
                        name=f"p = {p:g}" + (" (yours)" if mine else ""), mode="lines+markers",
                        line={"color": theme.p_colour(p), "width": 5 if mine else 2.5},
                        customdata=[str(r["kept"]) for r in rows],
                        hovertemplate="r=%{x}: %{y:.1%}<br>kept %{customdata}<extra>p = " + f"{p:g}</extra>")
    if run is not None and run.get("scratch_acc") is not None:
        # side by side around r (they often score within a point of each other and would hide one another)
        for key, name, colour, symbol, dx in (("scratch_acc", f"depth {keep} from scratch", theme.MARK, "diamond",
                                               -0.15),
                                              ("distilled_acc", f"depth {keep} distilled from p = 0", theme.RECOVERED,
                                               "square", 0.15)):
            fig.add_scatter(x=[keep + dx], y=[run[key]], name=name, mode="markers",
                            marker={"color": colour, "symbol": symbol, "size": 16, "line": {"color": "#FFFFFF",
                                                                                           "width": 2}},
                            hovertemplate=name + ": %{y:.1%}<extra></extra>")
    _, _, n, chance = _rate(profiles[0])
    _axes(fig, n, chance, keep)
    return theme.layout(fig, title or f"Pruned without fine-tuning ({strategy}), by training rate p", height=height)


@figure
def strategies(prof: Any, keep: int) -> go.Figure:
    """Every pruning strategy at one training rate (`layerdrop.profile`'s result): accuracy against blocks kept."""
    fig = go.Figure()
    names = list(prof.strategies)
    for j, name in enumerate(names):
        rows = prof.strategies[name]
        dash, symbol = STRATEGY_STYLE.get(name, ("solid", "circle"))
        label = name + (" (mean over subsets)" if name == "random" else "")
        offset = (j - (len(names) - 1) / 2) * DODGE
        fig.add_scatter(x=[i + offset for i in range(len(rows))], y=[r["test_acc"] for r in rows], name=label,
                        mode="lines+markers", line={"color": theme.STRATEGY_COLOURS.get(name, theme.CHANCE),
                                                    "dash": dash, "width": 2.5},
                        marker={"symbol": symbol, "size": 9}, customdata=[str(r["kept"]) for r in rows],
                        hovertemplate="%{y:.1%}<br>kept %{customdata}<extra>" + name + "</extra>")
    _axes(fig, prof.n_blocks, prof.chance, keep)
    return _legend_below(theme.layout(fig, f"Six strategies, model trained at p = {prof.config.p:g}",
                                      height=560))


@figure
def p_star(profiles: list[Any], chosen_p: float, keep: int, strategy: str) -> go.Figure:
    """The rule p* = 1 - r/N against the trained rates (`layerdrop.profile`'s results), with the empirically best
    trained p at every r."""
    n = profiles[0].n_blocks
    rs = list(range(1, n + 1))
    fig = go.Figure()
    fig.add_scatter(x=rs, y=[1 - r / n for r in rs], name="rule of thumb p* = 1 - r/N", mode="lines",
                    line={"color": theme.MARK, "width": 2})
    for prof in profiles:
        p = prof.config.p
        mine = abs(p - chosen_p) < 1e-9
        name = f"trained p = {p:g}" + (" (yours)" if mine else "")
        fig.add_scatter(x=[rs[0], rs[-1]], y=[p, p], mode="lines", name=name,
                        line={"color": theme.p_colour(p), "width": 5 if mine else 2.5,
                              "dash": "solid" if mine else "dot"},
                        hoverinfo="skip")
    best_p, best_acc = [], []
    for r in rs:
        accs = [(prof.strategies[strategy][r]["test_acc"], prof.config.p) for prof in profiles]
        acc, p = max(accs)
        best_p.append(p)
        best_acc.append(acc)
    fig.add_scatter(x=rs, y=best_p, mode="markers", name=f"best trained p at this r ({strategy})",
                    marker={"symbol": "star", "size": 18, "color": "#FFFFFF", "line": {"color": "#000000", "width": 2}},
                    customdata=best_acc, hovertemplate="r=%{x}: best p = %{y:g} (%{customdata:.1%})<extra></extra>")
    fig.add_vline(x=keep, line={"color": theme.MARK, "width": 1, "dash": "dash"}, annotation_text=f"r = {keep}",
                  annotation_position="top right")
    fig.update_xaxes(title=f"blocks you want to keep (r, of N = {n})", dtick=1)
    fig.update_yaxes(title="LayerDrop rate p", range=[-0.03, 1.0])
    return _legend_below(theme.layout(fig, "Which p for which depth?", height=560))


@figure
def recovery_curve(r: Any) -> go.Figure:
    """Held-out accuracy of the pruned model during KD recovery (`layerdrop.run`'s result)."""
    return common.recovery_curve(common.fields_of(r), "What fine-tuning (distillation) adds on top",
                                 "pruned, distilling", cut_label=None, base_label="full model", height=360)


def versus_p_of_run(r: Any, height: int = 420) -> go.Figure:
    """The page's main figure from `layerdrop.run`'s result (a notebook's): one line per reference rate under the
    run's strategy, from the curves the result carries."""
    r = common.fields_of(r)
    c = r["config"]
    get = c.get if isinstance(c, dict) else lambda k: getattr(c, k)
    return versus_p(r["by_p"], get("strategy"), get("p"), get("keep"), None, height, r)
