"""A flood of distinct links from one client against a student's preset: seconds until the preset's results are on
the student's page, with and without the flood (reported, never asserted; issue 27).

Each side starts a fresh server (`streamlit run`, the default Dask engine with 2 single-threaded workers, a fresh
store, quick mode so that a run fits a busy 2-core machine) and:
1. with `--flood N` (the flood side): opens N Streamlit sessions from this one address, each on the Delete page with
   a distinct seed (a custom setting, so a distinct training job), over raw websockets (Streamlit's own protocol:
   one `rerun_script` message per session), and keeps them open;
2. opens the Delete page's preset "Plain, 1 deleted" in Chromium as a student would (a cold preset: it trains) and
   times it until its metrics are drawn; then reloads it (stored: served from the store) and times that too;
3. counts what the flood got: jobs admitted (queued or running, from the job files), pages told "not started",
   pages told "too many pages" (the per-address bound on open pages, app/page_admission.py) and pages told to wait
   their turn (the per-address bound on pages that work at once, app/turns.py).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_flood.py [--flood 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import CHROMIUM_ARGS, free_port, wait_idle  # noqa: E402


def _preset_query(page: str, key: str) -> str:
    """The link of a page's preset: the controls it sets away from their defaults (read from its descriptor, so the
    student really opens the preset; a link that misses one control is a custom setting, ranked with the flood)."""
    from urllib.parse import urlencode

    from lab.catalog import get

    d = get(page)
    p = next(p for p in d.presets if p.key == key)
    return urlencode({k: v for k, v in p.settings.items() if d.defaults.get(k) != v})


PRESET = _preset_query("delete", "plain1")  # "Plain, 1 deleted, no recovery" (lab/experiments/delete/descriptor.py)


async def _session(url: str, query: str, hold: float, out: dict[str, int]) -> None:
    """One visitor: a websocket session that asks for the Delete page with `query`, read until `hold` is over."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    try:
        # From 127.0.0.2: one client address of its own (the student's browser comes from 127.0.0.1).
        async with websockets.connect(url, max_size=None, open_timeout=60, local_addr=("127.0.0.2", 0),
                                      ping_timeout=None) as ws:
            msg = BackMsg()
            msg.rerun_script.query_string = query
            msg.rerun_script.page_name = "delete"
            await ws.send(msg.SerializeToString())
            deadline = time.monotonic() + hold
            while time.monotonic() < deadline:
                try:
                    raw = await asyncio.wait_for(ws.recv(), timeout=max(0.1, deadline - time.monotonic()))
                except TimeoutError:
                    break
                fwd = ForwardMsg()
                fwd.ParseFromString(raw)
                if fwd.WhichOneof("type") == "delta" and "not started" in str(fwd.delta):
                    out["refused"] += 1
                if fwd.WhichOneof("type") == "delta" and "Too many pages" in str(fwd.delta):
                    out["pages_refused"] += 1
                if fwd.WhichOneof("type") == "delta" and ("from your network are computing" in str(fwd.delta)
                                                          or "from your network is computing" in str(fwd.delta)):
                    out["waited_turn"] += 1
        out["closed"] += 1
    except Exception as exc:  # noqa: BLE001 - counted: a flood connection the server did not take (or dropped)
        out["failed"] += 1
        out.setdefault("why", repr(exc)[:200])


async def _flood(url: str, n: int, hold: float, out: dict[str, int]) -> None:
    # seed 1-99 and k 1-3 (the controls' ranges; a value out of range falls back to the default): distinct custom links
    await asyncio.gather(*(_session(url, f"seed={1 + i % 99}&k={1 + i // 99}", hold, out) for i in range(n)))


def _server(cache: Path, port: int) -> subprocess.Popen:
    env = dict(os.environ, LAYERLAB_QUICK="1", LAYERLAB_CACHE=str(cache), LAYERLAB_ENGINE="dask", LAYERLAB_WARM="0")
    log = open(cache / "server.log", "ab")  # noqa: SIM115 - the server's for its life
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "main.py"),
                             "--server.headless", "true", "--server.port", str(port), "--server.fileWatcherType",
                             "none", "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("the server did not start")


def _timed(page: Any, url: str, marks: dict[str, float]) -> float:
    """Seconds until the preset's metrics are drawn; `marks["first_paint_s"]`: until the page's title is (the web
    server ran the page's script at all)."""
    t0 = time.perf_counter()
    page.goto(url, timeout=600_000)
    page.get_by_text("Delete layers").first.wait_for(timeout=600_000)
    marks.setdefault("first_paint_s", round(time.perf_counter() - t0, 2))
    page.get_by_text("Original (held-out)").first.wait_for(timeout=600_000)
    took = time.perf_counter() - t0
    wait_idle(page)
    return took


def _job_record(cache: Path) -> dict[str, Any]:
    """The store's timing record of the preset's own entry: how long its job computed and when it ended."""
    for path in (cache / "timings" / "delete").glob("*.json"):
        for line in path.read_text().replace("}{", "}\n{").splitlines():
            rec = json.loads(line)
            cfg = json.loads(rec["config"])
            if cfg.get("arch") == "plain" and cfg.get("k") == 1 and cfg.get("seed") == 0:
                return rec
    return {}


def side(flood: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    cache = Path(tempfile.mkdtemp(prefix="layerlab-flood-"))
    port = free_port()
    proc = _server(cache, port)
    out = {"refused": 0, "closed": 0, "failed": 0, "pages_refused": 0, "waited_turn": 0}
    result: dict[str, Any] = {"flood": flood}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/", timeout=180_000)  # the server and its cluster start
            page.get_by_text("Layer Lab").first.wait_for(timeout=180_000)
            time.sleep(20)  # the workers import torch: not what is measured
            loop_thread = None
            if flood:
                import threading

                loop_thread = threading.Thread(target=lambda: asyncio.run(_flood(
                    f"ws://127.0.0.1:{port}/_stcore/stream", flood, 120.0, out)), daemon=True)
                loop_thread.start()
                time.sleep(15)  # every flood session has asked for its job
                jobs = list((cache / "jobs").glob("*.json"))
                result["flood_jobs_in_engine"] = len(jobs)
            asked = time.time()
            marks: dict[str, float] = {}
            result["cold_preset_s"] = round(_timed(page, f"http://127.0.0.1:{port}/delete?{PRESET}", marks), 2)
            result["cold_first_paint_s"] = marks["first_paint_s"]
            result["stored_preset_s"] = round(_timed(page, f"http://127.0.0.1:{port}/delete?{PRESET}", {}), 2)
            rec = _job_record(cache)
            if rec:  # the page's time = until its job started (script, queue) + the job + drawing
                result["preset_job_s"] = round(float(rec["seconds"]), 2)
                result["preset_job_started_after_s"] = round(float(rec["when"]) - float(rec["seconds"]) - asked, 2)
            if loop_thread is not None:
                loop_thread.join(150)
                result.update(flood_pages_told_too_many=out["pages_refused"], flood_jobs_refused=out["refused"],
                              flood_pages_waiting_their_turn=out["waited_turn"],
                              flood_sessions_closed=out["closed"], flood_sessions_failed=out["failed"],
                              flood_failure=out.get("why", ""))
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flood", type=int, default=200)
    args = ap.parse_args()
    rows = [side(0), side(args.flood)]
    print(json.dumps(rows, indent=1))
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
