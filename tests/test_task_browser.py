"""Your own CSV end to end in a real browser (issue 31): upload a small generated table on the Delete page, press "Use
this file", and the page runs on it and its link names it (`task=csv:<16 hex>`); that link value opens Re-initialise
and LayerDrop on the same file, and both draw their charts. A bad file (a missing value, one class only) shows its
one message and changes nothing: no task chosen, nothing stored.

Its own server (quick mode, the thread engine) and store, so it does not depend on what other tests trained.
LAYERLAB_SHOTS=<folder> saves a screenshot of each step there.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from .browser import lab_server, require_chromium, wait_idle
from .chart_marks import chart_marks, marks_per_subplot

pytestmark = pytest.mark.browser

require_chromium()

SHOTS = os.environ.get("LAYERLAB_SHOTS")
CSV_TASK = re.compile(r"csv:[0-9a-f]{16}")


def table(rows: int = 300, classes: int = 3, seed: int = 0) -> str:
    """3 numeric columns and a text label; the classes are clusters a small MLP separates."""
    rng = np.random.default_rng(seed)
    lines = ["length,width,depth,kind"]
    for i in range(rows):
        y = i % classes
        x = rng.normal(size=3) + 2.0 * y
        lines.append(",".join(f"{v:.3f}" for v in x) + f",kind_{y}")
    return "\n".join(lines) + "\n"


def _shot(page, name: str) -> None:  # noqa: ANN001 - a Playwright page
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def _link_task(page) -> str | None:  # noqa: ANN001
    values = parse_qs(urlparse(page.url).query).get("task")
    return values[0] if values else None


def _no_exception(page) -> None:  # noqa: ANN001
    errors = [e.inner_text()[:400] for e in page.locator("[data-testid='stException']").all()]
    assert not errors, errors


def _upload(page, path: Path) -> None:  # noqa: ANN001
    """Choose `path` in the sidebar's "Use your own CSV" and press "Use this file"."""
    sidebar = page.locator("[data-testid='stSidebar']")
    uploader = sidebar.locator("[data-testid='stFileUploader']")
    if not uploader.is_visible():
        sidebar.get_by_text("Use your own CSV").click()
    # The note of the previous file stays (and the button stays enabled) until a rerun has seen the new file; the
    # chip shows while the file is still uploading, so a click then would check the previous file again.
    old_note = sidebar.locator("[data-testid='stExpander']").filter(has=uploader).locator("[data-testid='stAlert']")
    had_note = old_note.count() > 0
    uploader.locator("input[type='file']").set_input_files(str(path))
    sidebar.locator("[data-testid='stFileChipName']").filter(has_text=path.name).wait_for(timeout=60_000)
    if had_note:
        old_note.first.wait_for(state="detached", timeout=60_000)
    wait_idle(page)
    button = sidebar.get_by_role("button", name="Use this file")
    deadline = time.monotonic() + 30
    while not button.is_enabled() and time.monotonic() < deadline:  # enabled by the rerun that saw the file
        page.wait_for_timeout(200)
    button.click()


def _marks(page) -> int:  # noqa: ANN001
    """Marks drawn by every Plotly chart of the page (each scrolled into view first)."""
    charts = page.locator(".js-plotly-plot")
    total = 0
    for i in range(charts.count()):
        chart = charts.nth(i)
        chart.scroll_into_view_if_needed()
        for _ in range(10):  # plotly may still be laying out a chart that has just scrolled in
            n = sum(sum(m.values()) for m in marks_per_subplot(chart_marks(chart)).values())
            if n:
                break
            page.wait_for_timeout(300)
        total += n
    return total


def _stored_csvs(cache: str) -> list[str]:
    folder = Path(cache) / "data"
    return sorted(p.name for p in folder.glob("*.csv")) if folder.is_dir() else []


def test_your_own_csv_runs_delete_reinit_and_layerdrop_and_a_bad_one_changes_nothing(chromium, tmp_path):
    t0 = time.monotonic()
    good, missing, one_class = tmp_path / "mine.csv", tmp_path / "missing.csv", tmp_path / "one_class.csv"
    good.write_text(table())
    rows = table().splitlines()
    cells = rows[6].split(",")
    cells[1] = ""  # one missing value, row 7 as a spreadsheet counts
    missing.write_text("\n".join([*rows[:6], ",".join(cells), *rows[7:]]) + "\n")
    one_class.write_text("\n".join(["a,b,c,label"] + [f"{i},{2 * i},{3 * i},same" for i in range(40)]) + "\n")
    times = {}
    with tempfile.TemporaryDirectory(prefix="layerlab-csv-") as cache, \
            lab_server(cache, env={"LAYERLAB_ENGINE": "threads", "LAYERLAB_QUICK": "1"}) as url:
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{url}/delete", timeout=120_000)
            page.get_by_text("Original (held-out)").first.wait_for(timeout=300_000)
            wait_idle(page)
            times["delete, default"] = time.monotonic() - t0

            # A bad file: its one message, and nothing changes (no task in the link, nothing stored)
            for bad, message in ((missing, "has 1 missing values (rows 7)"), (one_class, "has only one class")):
                _upload(page, bad)
                page.locator("[data-testid='stAlertContentError']").filter(has_text=message).wait_for(timeout=60_000)
                wait_idle(page)
                _shot(page, f"bad-{bad.stem}")
                assert _link_task(page) is None and _stored_csvs(cache) == []
                _no_exception(page)
            times["bad files"] = time.monotonic() - t0

            # The good file: stored, chosen, run, and named by the link
            _upload(page, good)
            deadline = time.monotonic() + 60
            while _link_task(page) is None and time.monotonic() < deadline:
                page.wait_for_timeout(250)
            task = _link_task(page)
            assert task and CSV_TASK.fullmatch(task), page.url
            page.get_by_text(f"On Your CSV ({task[4:]})").first.wait_for(timeout=300_000)  # the run on the file
            wait_idle(page)
            _no_exception(page)
            assert len(_stored_csvs(cache)) == 1
            cards = page.locator("[data-testid='stMetric']")
            assert cards.count() >= 4 and "%" in cards.first.inner_text()
            assert page.get_by_text("3 classes: 180 training inputs").count()  # "How it works" on the file
            _shot(page, "delete-csv")
            times["delete, your CSV"] = time.monotonic() - t0

            # The link value opens the other two pages on the same file
            for path, card in (("reinit", "Trained (held-out)"), ("layerdrop", "Pruned to 4 of 8")):
                page.goto(f"{url}/{path}?task={task}", timeout=120_000)
                page.get_by_text(card).first.wait_for(timeout=300_000)
                wait_idle(page)
                _no_exception(page)
                assert _link_task(page) == task
                assert page.locator("[data-testid='stSidebar']").get_by_text(f"Your CSV ({task[4:]})").count()
                assert _marks(page) > 0, f"{path}: no chart drew a mark"
                _shot(page, f"{path}-csv")
                times[f"{path}, your CSV"] = time.monotonic() - t0
        finally:
            page.close()
    print("seconds since start:", {k: round(v, 1) for k, v in times.items()})
