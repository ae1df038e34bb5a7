"""The mark counter of tests/test_browser_charts.py can fail: figures drawn by Plotly.js in Chromium, without the
lab's server, some of them drawing nothing.

The broken case is the IOT page's main chart as it was before its x axis was declared categorical: the same
figure with the axis type left to Plotly's inference ("-") draws axes and no bar.
"""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

from app import figures_iot, figures_shuffle, theme

from .browser import require_chromium
from .chart_marks import chart_marks, empty_subplots

pytestmark = pytest.mark.browser

require_chromium()

ORDERS = ["0123", "1032", "3210"]
TR = {"orders": ORDERS, "order_acc": [0.91, 0.62, 0.55], "sequential_acc": 0.93, "ensemble_acc": 0.9,
      "iot_acc": 0.92, "oracle_acc": 0.97, "chance": 0.1, "choice_confusion": [[0.5, 0.1, 0.0], [0.1, 0.2, 0.0],
                                                                                  [0.0, 0.0, 0.1]],
      "oracle_agreement": 0.8}
OBS = {"orders": ORDERS, "fixed_acc": [0.93, 0.9, 0.89], "best_fixed_acc": 0.93}


def _iot_accuracy(axis_type: str | None) -> go.Figure:
    fig = go.Figure(figures_iot.accuracy(TR, OBS).to_dict())  # a copy: built figures are shared (app/figcache.py)
    if axis_type is not None:
        fig.update_xaxes(type=axis_type)
    return fig


def _only_reference_lines() -> go.Figure:
    fig = go.Figure()
    fig.add_hline(y=0.5)
    fig.add_scatter(x=[None], y=[None], mode="lines", name="chance")
    fig.update_xaxes(range=[0, 1])
    return theme.layout(fig, "Reference lines only")


def _embedding(n: int) -> go.Figure:
    xy = [[i * 0.1, (i % 7) * 0.2] for i in range(n)]
    return figures_shuffle.embedding(xy, [i % 4 for i in range(n)], "slot", "PCA")


def _collapse_half_empty() -> go.Figure:
    """Two panels, the second with no data: one empty subplot must be reported, not hidden by the other."""
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[0.2, 0.5, 0.4], mode="lines+markers"))
    fig.set_subplots(rows=1, cols=2)
    fig.add_scatter(x=[None], y=[None], row=1, col=2)
    return fig


FIGURES = {  # name: (figure, the subplots that draw nothing)
    "iot accuracy, axis type inferred (the bug)": (_iot_accuracy("-"), ["xy"]),
    "iot accuracy, as built": (_iot_accuracy(None), []),
    "iot confusion heatmap": (figures_iot.confusion(TR), []),
    "reference lines only": (_only_reference_lines(), ["xy"]),
    "embedding, WebGL points": (_embedding(40), []),
    "embedding, no points": (_embedding(0), ["xy"]),
    "two panels, one empty": (_collapse_half_empty(), ["x2y2"]),
}


@pytest.fixture(scope="module")
def drawn(chromium, tmp_path_factory):
    """Every figure of FIGURES drawn by Plotly.js (the python package's copy, the same major version as
    Streamlit's) in one static page."""
    from plotly.offline import get_plotlyjs

    html = ["<html><body style='margin:0'><script>", get_plotlyjs(), "</script>"]
    for i, (fig, _) in enumerate(FIGURES.values()):
        spec = json.loads(fig.to_json())
        html.append(f"<div id='f{i}' style='width:1000px'></div><script>Plotly.newPlot('f{i}', "
                    f"{json.dumps(spec['data'])}, {json.dumps(spec['layout'])})</script>")
    path = tmp_path_factory.mktemp("charts") / "figures.html"
    path.write_text("".join(html) + "</body></html>")
    page = chromium.new_page(viewport={"width": 1100, "height": 800})
    page.goto(path.as_uri(), timeout=180_000)  # 4 MB of inline Plotly.js: slow to parse on a loaded machine
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .cartesianlayer').length >= "
                           f"{len(FIGURES)}", timeout=180_000)
    yield page
    page.close()


@pytest.mark.parametrize("name", list(FIGURES))
def test_marks_are_counted_where_drawn_and_only_there(drawn, name):
    i = list(FIGURES).index(name)
    chart = drawn.locator(f"#f{i}")
    chart.scroll_into_view_if_needed()
    drawn.wait_for_timeout(200)
    info = chart_marks(chart)
    assert empty_subplots(info, chart.screenshot()) == FIGURES[name][1], info


def test_the_broken_iot_chart_has_blank_bars_in_the_dom(drawn):
    """Why counting <path> elements is not enough: the unplaced bars are paths too, with the blank path M0,0Z."""
    chart = drawn.locator("#f0")
    assert chart.locator(".barlayer .point path").count() > 0
    assert chart_marks(chart)["subplots"][0]["marks"]["bars"] == 0
