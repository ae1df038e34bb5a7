"""Real browser: the Layer-lens page draws every chart with marks (lines, bars, heatmap cells), intact and after a
change of route, and fits the projector in presentation mode."""

import pytest

from .browser import require_chromium, settle

pytestmark = pytest.mark.browser

require_chromium()

MARKS = """(el) => {
  const drawn = Array.from(el.querySelectorAll('.scatterlayer .trace path, .barlayer .point path'))
    .filter(p => (p.getAttribute('d') || '').length > 4).length;
  return drawn + el.querySelectorAll('.heatmaplayer image').length;
}"""


# The default view: tests/test_browser_charts.py (6 charts, each with marks)
@pytest.mark.parametrize("query,charts", [("?change=delete&block=1", 6), ("?model=plain&change=swap", 5)])
def test_every_lens_chart_draws_marks(lab_url, page, query, charts):
    page.goto(f"{lab_url}/lens{query}")
    settle(page, "Against the paper")
    assert not page.locator("[data-testid='stException']").count()
    found = page.locator("[data-testid='stPlotlyChart']").all()
    assert len(found) == charts
    for chart in found:
        chart.scroll_into_view_if_needed()
        assert chart.evaluate(MARKS) > 0, chart.inner_text()[:200]


def test_lens_presentation_fits_a_projector(lab_url, chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.goto(f"{lab_url}/lens?present=1&change=random")
        settle(page, "Against the paper")
        box = page.locator(".st-key-layerlab_results [data-testid='stPlotlyChart']").first.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 720, box
    finally:
        context.close()
