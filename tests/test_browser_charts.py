"""Rendered truth: every Plotly chart on every page's default view draws marks in Chromium, not only axes.

Runs on the session's one server (tests/conftest.py: quick mode, the store shared with the AppTests and with
tests/test_browser.py, which visits the same views first). The pages come from the catalog (lab/catalog, one
descriptor per experiment), which is what app/shell.py registers, so a new experiment is covered without touching
this file; a second test checks that the running app's navigation lists no page beyond them. One screenshot per
chart goes to artifacts/charts/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .browser import require_chromium, wait_idle
from .chart_marks import chart_marks, empty_subplots, marks_per_subplot

pytestmark = pytest.mark.browser

require_chromium()

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "charts"
# Views that differ from the default only to stay within the suite's time: every order of the Shuffle page's
# default 6 blocks is 720 orders per model even in quick mode; with 3 blocks the page draws the same charts.
QUERY = {"shuffle": "depth=3"}
CHARTLESS = {""}  # Home: text and links only; every experiment page draws its results
CHARTS = {"lens": 6}  # exactly: lens curve, confidence, commitment, digits, influence, triangle
DESKTOP = {"width": 1440, "height": 900}
PROJECTOR = {"width": 1280, "height": 720}
# Each chart's title against its chart's right edge, in pixels (> 0: the title runs past it and is cut off).
TITLE_OVERRUN_JS = """els => els.map(gd => {
  const t = gd.querySelector('.gtitle');
  return t ? [t.textContent, t.getBoundingClientRect().right - gd.getBoundingClientRect().right] : null;
}).filter(x => x && x[1] > 0)"""


def registered_pages() -> list[tuple[str, str]]:
    """(title, url path) of every page app/shell.py registers: Home (path "") and one per experiment's descriptor
    (lab/catalog), which is where the shell reads them from."""
    from lab.catalog import descriptors

    pages = [("Home", "")] + [(d.title, d.name) for d in descriptors().values()]
    assert len(pages) >= 8, pages
    return pages


PAGES = registered_pages()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "untitled"


def test_the_navigation_lists_no_page_beyond_the_catalog_and_home_lists_every_experiment(lab_url, page):
    page.goto(lab_url, timeout=180_000)
    wait_idle(page)
    hrefs = page.locator("[data-testid='stSidebarNav'] a").evaluate_all("els => els.map(e => e.href)")
    listed = {h.split("?")[0].rstrip("/").rsplit("/", 1)[-1] if h.rstrip("/") != lab_url else "" for h in hrefs}
    assert listed and listed <= {path for _, path in PAGES}, (listed, PAGES)
    assert not page.locator("[data-testid='stException']").count()
    for title, path in PAGES:
        if path:  # every experiment page is named on Home
            assert page.locator("[data-testid='stMain']").get_by_text(title).count() >= 1, title  # not the nav


@pytest.mark.parametrize("title, path", PAGES, ids=[p or "home" for _, p in PAGES])
def test_every_chart_draws_marks(lab_url, page, title, path):
    query = QUERY.get(path)
    page.set_viewport_size(DESKTOP)
    # generous: on a loaded machine the server answered a first request after more than 30 s (Playwright's default)
    page.goto(f"{lab_url}/{path}" + (f"?{query}" if query else ""), timeout=180_000)
    wait_idle(page, timeout=600)
    errors = [e.inner_text()[:500] for e in page.locator("[data-testid='stException']").all()]
    assert not errors, (title, errors)
    # the page at a desktop's size, for a person to look at (projector and phone: tests/test_browser.py)
    page.screenshot(path=str(ROOT / "artifacts" / f"{path or 'home'}-desktop.png"))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob(f"{path or 'home'}-*.png"):  # a chart the page no longer draws leaves no picture
        old.unlink()
    charts = page.locator(".js-plotly-plot")
    # A page whose figures never appeared (a failed job shown as a message) must not pass for want of charts.
    assert path in CHARTLESS or charts.count() > 0, f"page {title!r} ({path}) drew no chart at all"
    assert path not in CHARTS or charts.count() == CHARTS[path], (title, charts.count())
    blank, seen = [], []
    for i in range(charts.count()):
        chart = charts.nth(i)
        chart.scroll_into_view_if_needed()
        # Plotly may still be laying out a chart that has just scrolled in: look again for a few seconds.
        for _ in range(10):
            info, png = chart_marks(chart), chart.screenshot(timeout=120_000)
            empty = empty_subplots(info, png)
            if not empty:
                break
            page.wait_for_timeout(500)
        name = info["title"] or f"chart {i + 1}"
        (ARTIFACTS / f"{path or 'home'}-{i + 1:02d}-{_slug(name)}.png").write_bytes(png)
        seen.append({"title": name, "subplots": marks_per_subplot(info, png)})
        if empty:
            blank.append(f"{name!r} (subplots {', '.join(empty)})")
    (ARTIFACTS / f"{path or 'home'}.json").write_text(json.dumps(seen, indent=1))
    assert not blank, f"page {title!r} ({path or '/'}): charts with axes and no marks: {'; '.join(blank)}"
    # Legible on a 1280x720 projector: no chart's title runs past its chart's edge (two long titles side by side
    # were cut off there, while the desktop size above showed them whole).
    page.set_viewport_size(PROJECTOR)
    page.wait_for_timeout(1500)  # Plotly lays the charts out again for the narrower page
    over = charts.evaluate_all(TITLE_OVERRUN_JS)
    assert not over, f"page {title!r} ({path or '/'}) at 1280x720: titles cut off (text, pixels over): {over}"

