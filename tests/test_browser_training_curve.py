"""Chromium: a custom setting's page draws its model's training curve while it trains, and the curve grows (its marks
counted at two moments); once the model is stored, "How this model learned" draws the same curve (issue 48, part 5).

The server is the lab as `make app` serves it (app/serve.py, the Dask engine: the curve crosses from a worker in the
job's progress file), on a store of its own and out of quick mode: quick mode trains one epoch, and a curve of one
epoch cannot grow. The Delete page's residual MLP at a seed no preset uses is the real recipe, 12 epochs of about half
a second each here, so the curve grows for several seconds; the test stops the server once it has seen the curve
stored (the rest of the page, the sweep over k of both MLPs, is not its business).
"""

from __future__ import annotations

import time

import pytest

from .browser import ROOT, lab_server, require_chromium
from .chart_marks import chart_marks

pytestmark = pytest.mark.browser

require_chromium()

ARTIFACTS = ROOT / "artifacts" / "training-curve"
LIVE = "[class*='st-key-layerlab_live'] .js-plotly-plot"  # app/jobs.py: the curve under a job's bar
STORED = ".st-key-layerlab_learned_fig .js-plotly-plot"  # app/training_view.py: the expander's figure
EPOCHS = 12  # the Delete page's MLP recipe (lab/core/recipes.py: MLP_EPOCHS)


def _marks(page, selector: str) -> int:  # noqa: ANN001 - a Playwright page
    """Markers drawn in the last chart that matches (both panels: one per epoch each); 0 while there is none, or
    while the page is replacing it."""
    charts = page.locator(selector)
    try:
        if charts.count() == 0:
            return 0
        return sum(sp["marks"]["points"] for sp in chart_marks(charts.last)["subplots"])
    except Exception:  # noqa: BLE001 - the chart was swapped for the next epoch's between the two calls
        return 0


def _wait_for(page, selector: str, above: int, timeout_s: float) -> int:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        n = _marks(page, selector)
        if n > above:
            return n
        page.wait_for_timeout(150)
    return _marks(page, selector)


def _scroll_to(page, selector: str) -> None:  # noqa: ANN001 - a Playwright page
    """Scroll the last chart that matches into view for a screenshot. The live chart is replaced at every epoch (and
    more often while the page's other calls train beside it), so the element found may be detached before the
    scroll: find it again, a few times."""
    for _ in range(10):
        try:
            page.locator(selector).last.scroll_into_view_if_needed(timeout=5_000)
            return
        except Exception:  # noqa: BLE001 - Playwright's Error: not attached to the DOM, or not stable in time
            page.wait_for_timeout(200)


def test_a_custom_setting_draws_a_training_curve_that_grows_while_it_trains(chromium, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = {"LAYERLAB_QUICK": "0", "LAYERLAB_WARM": "0"}
    with lab_server(str(tmp_path / "store"), env=env, log_name="training-curve.log") as url:
        page = chromium.new_page(viewport={"width": 1280, "height": 720})  # the projector's size
        try:
            page.goto(f"{url}/delete?seed=7", timeout=180_000)  # seed 7: no preset's, so nothing is stored
            first = _wait_for(page, LIVE, 0, 600)  # the cluster starts, the model trains its first epoch
            assert first > 0, "no training curve appeared under the progress bar"
            _scroll_to(page, LIVE)
            page.screenshot(path=str(ARTIFACTS / "1-live-first.png"))
            second = _wait_for(page, LIVE, first, 120)
            page.screenshot(path=str(ARTIFACTS / "2-live-later.png"))
            print(f"training curve marks: {first} at the first moment, {second} at the second")
            assert second > first, (first, second)
            assert second <= 2 * EPOCHS and first % 2 == 0  # a loss and an accuracy mark per epoch, no more

            # Stored with the model: after the run lands, the expander draws the whole curve from the store.
            summary = page.get_by_text("How this model learned").first
            summary.wait_for(timeout=600_000)
            summary.click()
            stored = _wait_for(page, STORED, 2 * EPOCHS - 1, 120)
            _scroll_to(page, STORED)
            page.screenshot(path=str(ARTIFACTS / "3-stored.png"))
            assert stored == 2 * EPOCHS, stored
            assert page.get_by_text(f"residual MLP, 7 blocks, seed 7: {EPOCHS} epochs").first.is_visible()
        finally:
            page.close()
