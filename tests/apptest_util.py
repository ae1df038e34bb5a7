"""Shared helpers for AppTest page tests: run a page of the lab in quick mode and check it for errors."""

from __future__ import annotations

import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
MAIN = str(ROOT / "app" / "main.py")


def open_page(page: str, timeout: float = 240) -> AppTest:
    """AppTest of the lab's entry point, switched to pages/<page>.py and run once (models train 1 epoch)."""
    os.environ["LAYERLAB_QUICK"] = "1"
    at = AppTest.from_file(MAIN, default_timeout=timeout)
    at.run()
    assert not at.exception, at.exception
    at.switch_page(str(ROOT / "pages" / f"{page}.py"))
    at.run()
    assert_clean(at)
    return at


def open_with_link(page: str, link: dict[str, str], timeout: float = 600) -> AppTest:
    """Like `open_page`, with `link`'s query parameters set before the page runs (a pasted link)."""
    os.environ["LAYERLAB_QUICK"] = "1"
    at = AppTest.from_file(MAIN, default_timeout=timeout)
    at.run()
    for k, v in link.items():
        at.query_params[k] = v
    at.switch_page(str(ROOT / "pages" / f"{page}.py"))
    at.run()
    assert_clean(at)
    return at


def open_test_app(name: str, timeout: float = 60) -> AppTest:
    """AppTest of tests/apps/<name>.py (a stand-in page a test drives), run once, with no exception."""
    at = AppTest.from_file(str(ROOT / "tests" / "apps" / f"{name}.py"), default_timeout=timeout)
    at.run()
    assert not at.exception, at.exception
    return at


def assert_clean(at: AppTest) -> None:
    """No exception and no error box on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def settle(at: AppTest, limit: float = 300) -> AppTest:
    """Rerun a page until no result is still computing (pages fill in as pieces land; AppTest runs no timers)."""
    import time

    deadline = time.monotonic() + limit
    while any(m.value == "…" for m in at.metric) and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
        assert_clean(at)
    return at


def verdicts(at: AppTest, limit: float = 400.0) -> list[tuple[str, str]]:
    """Rerun until the "Against the paper" section has drawn its claims (pieces land one by one); its verdicts."""
    import time

    from app.claims_view import rendered_verdicts

    deadline = time.monotonic() + limit
    while True:
        got = rendered_verdicts([md.value for md in at.markdown])
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.5)
        at.run()
        assert_clean(at)
