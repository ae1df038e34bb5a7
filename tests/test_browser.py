"""One real browser session: open the Delete page, move the slider, see the figures re-render.

Skipped on a developer machine without Debian's chromium; in CI (CI=true) a missing browser is a failure.
"""

import os

import pytest

from .browser import CHROMIUM_ARGS, chromium_path, lab_server, wait_idle

pytestmark = pytest.mark.browser

if chromium_path() is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI needs Debian's chromium for the browser test (.ci/run installs it)")
    pytest.skip("chromium is not installed (apt-get install chromium)", allow_module_level=True)


def test_delete_page_in_a_real_browser(tmp_path, request):
    from playwright.sync_api import sync_playwright

    with lab_server(str(tmp_path / "cache")) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/delete")
        wait_idle(page)
        assert page.locator("[data-testid='stException']").count() == 0
        charts = page.locator("[data-testid='stPlotlyChart']")
        assert charts.count() >= 5
        assert page.get_by_text("Cut: 2 deleted").count() == 1

        # Move the slider with the keyboard, as a student would: focus its thumb and press the right arrow.
        thumb = page.locator("[data-testid='stSlider'] input[type='range']").first
        thumb.focus()
        thumb.press("ArrowRight")
        wait_idle(page)
        assert page.get_by_text("Cut: 3 deleted").count() == 1
        assert page.locator("[data-testid='stException']").count() == 0
        assert page.locator("[data-testid='stPlotlyChart']").count() >= 5
        assert "k=3" in page.url  # the control is mirrored in the link
        page.screenshot(path=str(tmp_path / "delete.png"), full_page=True)

        # A hand-edited link with a bad value gets a message, not a traceback.
        page.goto(f"{url}/delete?k=99&arch=tree")
        wait_idle(page)
        assert page.get_by_text("was ignored").count() >= 1
        assert page.locator("[data-testid='stException']").count() == 0
        browser.close()
