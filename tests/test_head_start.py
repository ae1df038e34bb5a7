"""A page's head start (app/jobs.py `View.head_start`): on its first run a view starts every call its plan always
makes, and the calls its claims at other seeds rest on, though the page then asks for its first call only; each
runs once, an optional call is left until asked for, and a stored call is not run again."""

import time
import uuid
from pathlib import Path

from streamlit.testing.v1 import AppTest

from .apptest_util import open_test_app

STARTED = ["first", "second", "third", "seed1-a", "seed1-b"]


def _open(monkeypatch, run: str, log: Path) -> AppTest:
    monkeypatch.setenv("HEAD_START_RUN", run)
    monkeypatch.setenv("HEAD_START_LOG", str(log))
    return open_test_app("head_start_demo")


def _started(log: Path, n: int, limit: float = 30) -> list[str]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        names = log.read_text().split() if log.exists() else []
        if len(names) >= n:
            time.sleep(0.5)  # anything more (a call run twice, the optional one) would show by now
            return log.read_text().split()
        time.sleep(0.1)
    return log.read_text().split() if log.exists() else []


def test_a_view_starts_its_whole_plan_and_its_seeds_calls_on_its_first_run(monkeypatch, tmp_path):
    log, run = tmp_path / "log", uuid.uuid4().hex
    _open(monkeypatch, run, log)  # the page waited for "first" only, and ran once
    names = _started(log, len(STARTED))
    assert sorted(names) == sorted(STARTED)  # each once; "asked-for" (optional) not started
    assert names[0] == "first" or names[1] == "first"  # the page's first call is among the first two dispatched
    # a second visit: everything is stored, nothing runs again
    log.unlink()
    _open(monkeypatch, run, log)
    time.sleep(0.5)
    assert not log.exists()
