"""Turns in a real browser (app/turns.py): with one turn per address, a second page from the same address says it
waits its turn while the first computes, then runs by itself once the first is done."""

import os
import tempfile
import time

import pytest

from .browser import lab_server

pytestmark = pytest.mark.browser
WAIT_TEXT = "1 page of the lab from your network is computing"
SHOTS = os.environ.get("LAYERLAB_SHOTS")  # a folder: screenshots of the waiting page, to look at


def test_a_second_page_waits_its_turn_then_runs(chromium):
    with tempfile.TemporaryDirectory(prefix="layerlab-turns-") as cache, \
            lab_server(cache, env={"LAYERLAB_WORKING_PER_CLIENT": "1", "LAYERLAB_ENGINE": "threads"}) as url:
        first = chromium.new_page(viewport={"width": 1280, "height": 720})
        second = chromium.new_page(viewport={"width": 1280, "height": 720})
        try:
            first.goto(f"{url}/delete?seed=11", timeout=120_000)  # a custom setting: trains a model first
            first.get_by_text("Delete layers").first.wait_for(timeout=120_000)
            second.goto(f"{url}/delete?seed=12", timeout=120_000)
            notice = second.get_by_text(WAIT_TEXT)
            notice.wait_for(timeout=60_000)  # the first page still computes: this one waits, and says so
            if SHOTS:
                second.screenshot(path=os.path.join(SHOTS, "waiting.png"))
            assert not second.get_by_text("Original (held-out)").count()  # it did no work meanwhile
            t0 = time.monotonic()
            second.get_by_text("Original (held-out)").first.wait_for(timeout=600_000)  # its turn came
            assert notice.count() == 0  # the notice is gone once it runs
            if SHOTS:
                second.screenshot(path=os.path.join(SHOTS, "ran.png"))
            assert time.monotonic() - t0 < 600
        finally:
            first.close()
            second.close()
