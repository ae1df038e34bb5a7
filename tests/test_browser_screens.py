"""Pictures of the pages, taken by the browser tests so they stay current, and a chart that follows the browser's dark
theme.

Each experiment page (lab/catalog: one descriptor each) is opened in quick mode at a projector's 1280x720, in its
default view (the Shuffle page at 3 blocks, as tests/test_browser_charts.py opens it, whose store entries it shares),
and once its first chart has drawn marks the window is saved as `artifacts/screenshots/NAME.png` (gitignored) to be
looked at: quick-mode smoke numbers, so never the README's pictures, which tests/screenshots.py takes from the real
recipe. The Delete page is also opened dark: its charts must be drawn on a dark background with light
text and the same colours by meaning (app/theme.py: dark), and that view is saved as `delete-dark.png`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .browser import require_chromium, wait_idle
from .chart_marks import chart_marks, empty_subplots

pytestmark = pytest.mark.browser

require_chromium()

from .test_browser_charts import QUERY  # noqa: E402 - after the skip: the same views, the same store entries

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "screenshots"  # gitignored: the README's pictures are tests/screenshots.py's
PROJECTOR = {"width": 1280, "height": 720}
# What the browser drew: the chart's paper and text, and each trace's colour (a bar's, a line's, a marker's).
DRAWN_JS = """gd => ({paper: gd._fullLayout.paper_bgcolor, plot: gd._fullLayout.plot_bgcolor,
  font: gd._fullLayout.font.color,
  colours: gd._fullData.map(t => [t.name, String(t.type === 'bar' || !t.line ? t.marker.color : t.line.color)])})"""
PAGE_BG_JS = "() => getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor"


def _pages() -> list[tuple[str, str]]:
    from lab.catalog import descriptors

    return [(d.title, d.name) for d in descriptors().values()]


PAGES = _pages()


def _luminance(colour: str) -> float:
    """0 (black) to 1 (white), from '#rrggbb', 'rgb(r, g, b)' or 'white'."""
    colour = {"white": "#ffffff", "black": "#000000"}.get(colour, colour)
    if colour.startswith("#"):
        r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    else:
        r, g, b = (float(v) for v in colour[colour.index("(") + 1:colour.index(")")].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def _open(chromium, url: str, scheme: str):
    """A 1280x720 page in the browser's `scheme` at `url`, its script finished and its first chart drawn with marks
    in view; returns (page, that chart)."""
    page = chromium.new_page(viewport=PROJECTOR, color_scheme=scheme)
    # generous: on a loaded machine a first request has taken over 30 s (Playwright's default)
    page.goto(url, timeout=180_000)
    wait_idle(page, timeout=600)
    errors = [e.inner_text()[:500] for e in page.locator("[data-testid='stException']").all()]
    assert not errors, (url, errors)
    charts = page.locator(".js-plotly-plot")
    assert charts.count() > 0, f"{url} drew no chart"
    chart = charts.first
    chart.scroll_into_view_if_needed()
    for _ in range(20):  # Plotly may still be laying out a chart that has just scrolled in
        empty = empty_subplots(chart_marks(chart), chart.screenshot(timeout=120_000))
        if not empty:
            return page, chart
        page.wait_for_timeout(500)
    raise AssertionError(f"{url}: the first chart has axes and no marks (subplots {empty})")


@pytest.mark.parametrize("title, path", PAGES, ids=[p for _, p in PAGES])
def test_a_current_screenshot_of_every_page(lab_url, chromium, title, path):
    query = QUERY.get(path)
    page, _ = _open(chromium, f"{lab_url}/{path}" + (f"?{query}" if query else ""), "light")
    try:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{path}.png"))  # the window: sidebar, metrics, the first chart
    finally:
        page.close()


def test_a_chart_follows_the_browsers_dark_theme_with_its_colours_by_meaning(lab_url, chromium):
    drawn = {}
    for scheme in ("light", "dark"):
        page, chart = _open(chromium, f"{lab_url}/delete", scheme)
        try:
            drawn[scheme] = {**chart.evaluate(DRAWN_JS), "page": page.evaluate(PAGE_BG_JS)}
            if scheme == "dark":
                page.screenshot(path=str(SHOTS / "delete-dark.png"))
        finally:
            page.close()
    light, dark = drawn["light"], drawn["dark"]
    assert _luminance(dark["page"]) < 0.1, dark  # the page itself went dark (.streamlit/config.toml)
    for key in ("paper", "plot"):
        assert _luminance(light[key]) > 0.9 and _luminance(dark[key]) < 0.1, (key, light[key], dark[key])
    assert _luminance(light["font"]) < 0.4 < 0.9 < _luminance(dark["font"]), (light["font"], dark["font"])
    # Colours by meaning as in light: every trace with a hue keeps its colour; greys (chance) stay within a level.
    assert [n for n, _ in dark["colours"]] == [n for n, _ in light["colours"]]
    for (name, a), (_, b) in zip(light["colours"], dark["colours"], strict=True):
        assert a == b or abs(_luminance(a) - _luminance(b)) < 0.01, (name, a, b)
    assert any(a.upper() == "#D55E00" for _, a in light["colours"]), light  # "cut", drawn in its own colour
