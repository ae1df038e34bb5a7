"""A real browser against a real server: start `streamlit run`, drive Debian's Chromium with Playwright.

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def lab_server(cache_dir: str) -> Iterator[str]:
    """A Streamlit server of the lab in quick mode on a free port; yields its base URL."""
    port = free_port()
    env = dict(os.environ, LAYERLAB_QUICK="1", LAYERLAB_CACHE=cache_dir)
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "main.py"), "--server.headless", "true",
           "--server.port", str(port), "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
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


def wait_idle(page, timeout: float = 300) -> None:  # noqa: ANN001 - a Playwright page
    """Wait until the script has finished and no progress bar is left."""
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
    time.sleep(1.0)
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = page.locator("[data-test-script-state]").first.get_attribute("data-test-script-state")
        if state == "notRunning" and page.locator("[data-testid='stProgress']").count() == 0:
            time.sleep(0.5)
            return
        time.sleep(0.3)
    raise TimeoutError("the page kept running")
