"""A real browser against a real server: start it as `make app` does (app/serve.py), drive Debian's Chromium with
Playwright.

Never `playwright install`: we point Playwright at /usr/bin/chromium (Debian's package).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require(found: bool, in_ci: str, skipped: str) -> None:
    """The guard of a test module that needs a program Debian installs (Chromium, PostgreSQL), called at its top:
    when `found` is false the module is skipped with `skipped` on a developer's machine, and fails with `in_ci` in
    CI (CI set: .ci/run installs them), where a missing browser must never pass as a skip."""
    if found:
        return
    if os.environ.get("CI"):
        raise RuntimeError(in_ci)
    import pytest

    pytest.skip(skipped, allow_module_level=True)


def require_chromium() -> None:
    """`require` Debian's chromium: the guard of every real-browser test module."""
    require(chromium_path() is not None, "CI needs Debian's chromium for the browser test (.ci/run installs it)",
            "chromium is not installed (apt-get install chromium)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def lab_server(cache_dir: str, env: dict[str, str] | None = None, log_name: str = "server.log") -> Iterator[str]:
    """A Streamlit server of the lab in quick mode on the Dask engine, on a free port, using the store at cache_dir
    (and `env` on top); yields its URL."""
    port = free_port()
    # The real server runs the app's default engine, a local Dask cluster (2 worker processes): every page the
    # browser tests visit gets its results from worker processes, as in a classroom.
    env = {**os.environ, "LAYERLAB_QUICK": "1", "LAYERLAB_CACHE": cache_dir, "LAYERLAB_ENGINE": "dask", **(env or {})}
    cmd = [sys.executable, "-m", "app.serve", "--server.headless", "true",  # as `make app` starts it
           "--server.port", str(port), "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"]
    # The server's log goes to a file beside the store (an unread pipe could fill up and block the server).
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    log = open(Path(cache_dir) / log_name, "ab")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError("the Streamlit server did not start within 90 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def wait_healthy(port: int, seconds: float = 120) -> None:
    """Wait until the lab's server on `port` answers Streamlit's health check (RuntimeError when it never does)."""
    import urllib.request

    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the server on port {port} did not answer its health check within {seconds:.0f} s")


def wait_idle(page, timeout: float = 300) -> None:  # noqa: ANN001 - a Playwright page
    """Wait until the script has finished: no progress bar, no loading skeleton, and idle for 1.5 s in a row.

    The stretch of idleness matters on a loaded machine, where the rerun may not have started yet when we look.
    """
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
    deadline = time.time() + timeout
    idle_since = None
    while time.time() < deadline:
        # Read in one step, without waiting: the element is missing until the app has connected and, on a loaded
        # machine, for moments while it redraws (a locator would wait 30 s for it, then raise). Missing = busy.
        state = page.evaluate("() => document.querySelector('[data-test-script-state]')"
                              "?.getAttribute('data-test-script-state') ?? null")
        busy = (state != "notRunning" or page.locator("[data-testid='stProgress']").count() > 0
                or page.locator("[data-testid='stSkeleton']").count() > 0)
        if busy:
            idle_since = None
        elif idle_since is None:
            idle_since = time.time()
        elif time.time() - idle_since > 1.5:
            return
        time.sleep(0.25)
    raise TimeoutError("the page kept running")


def settle(page, text: str, timeout_ms: int = 600_000) -> None:  # noqa: ANN001 - a Playwright page
    """Wait for `text` to appear, then for the script to finish (on a loaded machine a rerun may start late)."""
    page.get_by_text(text).first.wait_for(timeout=timeout_ms)
    wait_idle(page)
