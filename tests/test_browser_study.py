"""A page's study map in a real browser (issue 58, part 4): the Re-initialise page's shipped width study on digits,
its cells computed in quick mode into the server's store, draws in Chromium with a pooled mark at every value and a
dot per seed; the window is saved (artifacts/screenshots/reinit-study.png, gitignored) to be looked at. (Every
page's map shares this figure, app/figures_study.py; this study is the cheapest to compute: 25 cells of small
MLPs, about a quarter of the Delete study's CPU.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from .browser import require_chromium, wait_idle
from .chart_marks import chart_marks, marks_per_subplot

pytestmark = pytest.mark.browser

require_chromium()

SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"


def test_a_pages_study_map_has_a_mark_at_every_value(lab_url, chromium, monkeypatch):
    from lab.study import compute, shipped

    study = shipped.by_name()["reinit-plain-width-digits"]
    monkeypatch.setenv("LAYERLAB_QUICK", "1")  # the server's mode: the same stored cells
    compute.read(study)  # every cell, computed here into the store the server reads
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(f"{lab_url}/{study.page}", timeout=120_000)
        wait_idle(page)
        chart = page.locator(f".st-key-study_map_{study.name} .js-plotly-plot").first
        chart.scroll_into_view_if_needed(timeout=120_000)
        page.wait_for_timeout(500)
        info = chart_marks(chart)
        marks = marks_per_subplot(info)
        points = sum(m.get("points", 0) for m in marks.values())
        # a dot per seed at every value, and a pooled mark at every value
        assert points >= len(study.values) * (len(study.seeds) + 1), marks
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{study.page}-study.png"))
    finally:
        page.close()
