"""Pages every student can read (issue 63), in a real Chromium at 1280x720, light and dark: on every page the first
Tab stop is the skip link and it moves the focus into the page's content; a focused link wears the focus ring
(app/a11y.py), not the current page's fill; no label, button word or chosen value is cut.

Each page is first checked by axe-core (axe-playwright-python, a test dependency, drives it through Playwright)
against WCAG 2.1 A and AA: no serious or critical violation.
"""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

from app import a11y
from lab.catalog import descriptors

from .browser import wait_idle

pytestmark = pytest.mark.browser

PAGES = ["", *descriptors()]  # Home, then every experiment's page
SCHEMES = ("light", "dark")

ACTIVE = "() => { const a = document.activeElement; return a ? (a.getAttribute('data-testid') || a.tagName) : null }"
# Every text box or one-line label on the page whose words overflow it (a hidden file input has no words to cut).
CUT = r"""() => Array.from(document.querySelectorAll(
    'input:not([type=file]):not([type=hidden]), .stMarkdownEllipsis, [data-testid=stMetricLabel] p, button p'))
  .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
  .filter(e => { const c = getComputedStyle(e); return e.tagName === 'INPUT' || c.overflowX !== 'visible'
                                                       || c.textOverflow === 'ellipsis'; })
  .map(e => (e.value || e.textContent || '').trim())"""


def _hex_rgb(colour: str) -> str:
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def _open(chromium, scheme: str):  # noqa: ANN202 - a Playwright context and page
    context = chromium.new_context(viewport={"width": 1280, "height": 720}, color_scheme=scheme)
    page = context.new_page()
    return context, page


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("path", PAGES)
def test_axe_skip_link_focus_ring_and_no_cut_label(lab_url, chromium, path, scheme):
    context, page = _open(chromium, scheme)
    try:
        page.goto(f"{lab_url}/{path}")
        wait_idle(page, timeout=600)
        result = Axe().run(page, options={
            "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
            "resultTypes": ["violations"]})
        bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in result.response["violations"]
               if v["impact"] in ("serious", "critical")]
        assert bad == [], bad
        # The skip link: the first Tab stop, shown when focused, and Enter lands in the content, past the sidebar
        page.keyboard.press("Tab")
        assert page.evaluate(ACTIVE) == "stSkipToContent"
        skip = page.get_by_test_id("stSkipToContent")
        assert skip.is_visible() and skip.bounding_box()["width"] > 20
        page.keyboard.press("Enter")
        assert page.evaluate("() => !!document.activeElement.closest('[data-testid=stMain]')")
        # A focused page link (not the current page) wears the ring and no fill: the fill says "current page"
        page.goto(f"{lab_url}/{path}")
        wait_idle(page, timeout=600)
        for _ in range(5):
            page.keyboard.press("Tab")
            style = page.evaluate("""() => { const a = document.activeElement;
                return a.getAttribute('data-testid') === 'stSidebarNavLink' && !a.getAttribute('aria-current')
                  ? (({outlineStyle, outlineWidth, outlineColor, backgroundColor}) =>
                     ({outlineStyle, outlineWidth, outlineColor, backgroundColor}))(getComputedStyle(a)) : null }""")
            if style:
                break
        assert style, "no page link among the first Tab stops"
        assert style["outlineStyle"] == "solid" and float(style["outlineWidth"][:-2]) >= 2, style
        assert style["outlineColor"] == _hex_rgb(a11y.FOCUS_RING), style
        current = page.evaluate("() => getComputedStyle(document.querySelector("
                                "'[data-testid=stSidebarNavLink][aria-current=page]')).backgroundColor")
        assert style["backgroundColor"] != current, (style, current)
        # No label cut (the select's chosen value, a metric's label, a preset's words)
        assert page.evaluate(CUT) == [], path
    finally:
        context.close()
