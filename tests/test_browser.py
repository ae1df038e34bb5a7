"""Real-browser tests: one Streamlit server and one Debian Chromium for the session, every page visited.

Skipped on a developer machine without Debian's chromium; in CI (CI=true) a missing browser is a failure.
"""

from pathlib import Path

import pytest

from .browser import require_chromium, settle, wait_idle

pytestmark = pytest.mark.browser

require_chromium()


def no_exception(page) -> None:
    errors = [e.inner_text()[:1500] for e in page.locator("[data-testid='stException']").all()]
    assert not errors, errors


def test_delete_page_presets_scroll_and_the_slider_follows(lab_url, page, tmp_path):
    page.goto(f"{lab_url}/delete")
    settle(page, "Cut: 2 deleted")
    no_exception(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 5

    # Each click of a "Try this" button, far below the results, scrolls them back up to just under Streamlit's
    # fixed header (not under it: aligned with the window's top, the metric labels were hidden). Two in a row: the
    # second run draws the scroll element at the same place as the first's, and must scroll all the same.
    header = page.locator("[data-testid='stHeader']").first.bounding_box()
    below_header = header["y"] + header["height"] if header else 0.0
    for key, k in (("plain1", 1), ("res4", 4)):
        button = page.locator(f".st-key-tryb_{key} button").first  # the "Try this" section, far below the results
        button.scroll_into_view_if_needed()
        assert results_top(page) < 0, key
        button.click()
        settle(page, f"Cut: {k} deleted")
        page.wait_for_timeout(500)
        top = results_top(page)
        assert below_header - 1 <= top < page.viewport_size["height"] / 2, (key, top, below_header)
        assert f"k={k}" in page.url
        if key == "plain1":
            assert "arch=plain" in page.url  # the short value, not the label "plain MLP"
    no_exception(page)

    # Move the slider with the keyboard, as a student would: focus it and press the right arrow.
    slider = page.get_by_role("slider", name="Blocks deleted")  # an <input type=range>
    slider.focus()
    slider.press("ArrowRight")
    settle(page, "Cut: 5 deleted")
    no_exception(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 4  # no recovery curve: recovery is off
    assert "k=5" in page.url  # the control is mirrored in the link
    page.screenshot(path=str(tmp_path / "delete.png"), full_page=True)

    # A hand-edited link with bad values gets a message, not a traceback.
    page.goto(f"{lab_url}/delete?k=99&arch=tree")
    settle(page, "was ignored")
    no_exception(page)


def results_top(page) -> float:
    box = page.locator(".st-key-layerlab_results").first.bounding_box()
    assert box is not None
    return box["y"]


def test_reinit_page(lab_url, page, tmp_path):
    page.goto(f"{lab_url}/reinit")
    settle(page, "In focus: stem of the plain MLP")
    no_exception(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 4  # heatmaps, per class, 2 distance views
    assert page.get_by_role("heading", name="Against the paper").count() == 1

    # A shared link sets model, layer and operation.
    page.goto(f"{lab_url}/reinit?model=residual&layer=blocks.1&op=rerand")
    settle(page, "In focus: blocks.1 of the residual MLP, re-randomised")
    no_exception(page)

    # A "Try this" button sets several controls, and the link follows.
    page.get_by_role("button", name="Re-randomise, then distil").first.click()  # the toolbar's copy
    settle(page, "How fast does it come back?")
    assert "recovery=kd" in page.url
    page.screenshot(path=str(tmp_path / "reinit.png"), full_page=True)

    page.goto(f"{lab_url}/reinit?layer=blocks.9")
    settle(page, "was ignored")
    no_exception(page)


def test_layerdrop_page(lab_url, page, tmp_path):
    page.goto(f"{lab_url}/layerdrop")
    settle(page, "Which p for which depth?")
    no_exception(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 3
    assert page.get_by_text("Pruned to 4 of 8", exact=True).count() == 1

    slider = page.get_by_role("slider", name="Blocks kept")
    slider.focus()
    slider.press("ArrowRight")
    settle(page, "Pruned to 5 of 8")
    assert "keep=5" in page.url
    no_exception(page)
    page.screenshot(path=str(tmp_path / "layerdrop.png"), full_page=True)

    # A shared link sets the training rate; a hand-edited bad one gets a message, not a traceback.
    page.goto(f"{lab_url}/layerdrop?p=0.25&keep=6")
    settle(page, "Full model (p = 0.25)")
    assert page.get_by_text("the rule's choice for keeping 6 of 8").count() == 1
    page.goto(f"{lab_url}/layerdrop?p=0.93")
    settle(page, "was ignored")
    no_exception(page)


def test_shuffle_page(lab_url, page, tmp_path):
    page.goto(f"{lab_url}/shuffle?depth=3")
    settle(page, "All 6 orders")
    no_exception(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 4  # orders, pruning, embedding, probe
    page.get_by_role("button", name="Prune half the blocks").first.click()
    wait_idle(page, timeout=600)
    assert "removed=3" in page.url  # the control is mirrored in the link
    no_exception(page)
    page.screenshot(path=str(tmp_path / "shuffle.png"), full_page=True)


# -- classroom tools (app/classroom.py) --------------------------------------------------------------------
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"  # gitignored; CI keeps it as the run's artefacts
SIZES = {"projector": (1280, 720), "phone": (390, 844)}  # desktop: tests/test_browser_charts.py


def test_a_compared_link_shows_both_runs_in_a_fresh_browser(lab_url, chromium):
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{lab_url}/delete?arch=plain&k=1&recovery=none&pin=k.1")
        settle(page, "Cut: 1 deleted")
        no_exception(page)
        assert page.get_by_text("Original (held-out)").count() == 2
        assert page.get_by_text("Pinned").count() >= 1
        assert page.locator("[data-testid='stPlotlyChart']").count() >= 2 + 1  # both main figures and the rest
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "delete-compared.png"))
    finally:
        context.close()


def test_presentation_mode_fits_the_main_figure_on_a_projector(lab_url, chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.goto(f"{lab_url}/delete?present=1")
        settle(page, "Cut: 2 deleted")
        assert page.locator("[data-testid='stSidebar']").is_hidden()
        box = page.locator(".st-key-layerlab_results [data-testid='stPlotlyChart']").first.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 720, box
        page.screenshot(path=str(ARTIFACTS / "delete-present-1280x720.png"))
    finally:
        context.close()


@pytest.mark.parametrize("path", ["", "delete", "reinit", "layerdrop", "shuffle?depth=3", "iot", "rearrange"])
def test_screenshots_of_every_page_at_two_sizes(lab_url, chromium, path):
    """Artefacts for a person to look at (projector, phone; the desktop ones come from tests/test_browser_charts.py,
    which visits every page at that size); the test only checks that each page drew."""
    ARTIFACTS.mkdir(exist_ok=True)
    for size, (w, h) in SIZES.items():
        context = chromium.new_context(viewport={"width": w, "height": h})
        try:
            page = context.new_page()
            page.goto(f"{lab_url}/{path}")
            wait_idle(page, timeout=600)
            no_exception(page)
            name = (path.split("?")[0] or "home")
            page.screenshot(path=str(ARTIFACTS / f"{name}-{size}.png"))
        finally:
            context.close()
