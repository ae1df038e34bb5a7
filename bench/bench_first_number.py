"""A newcomer's first number (issue 29, goal 3): reported, never asserted.

Per page, a fresh server started as `make app` starts it (the Dask engine, warming on, real mode, not quick) on an
empty store; Headless Chromium opens the page the moment the server accepts connections. Measured from that
`goto`: seconds until the page shows its first number (a metric whose value holds a digit, not a count such as
"0 of 6"), until it first shows a held-out accuracy anywhere (a metric, or a training bar's "held-out accuracy
88.4 %" after an epoch: the goal's number), and until it has settled (every metric has its value, no progress bar,
the script idle, for 3 s in a row). Also what the page said while the newcomer waited (its progress bars and
message boxes at the first number), and the CPU seconds the server side (app server, workers) and the browser side
(Chromium, Playwright's driver) took meanwhile: in a classroom the browser runs on the students' machines, here it
shares the 2 cores with the training. Pages run one after another, each with its own server and store, with the load
average and the machine's 1-thread matmul peak beside them.
Goal: first number <= 15 s, settled <= 60 s.

Usage: PYTHONPATH=. .venv/bin/python bench/bench_first_number.py [--pages delete,shuffle] [--limit 900] [--no-warm]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import peak_gflops  # noqa: E402
from tests.browser import CHROMIUM_ARGS, chromium_path, lab_server  # noqa: E402

PAGES = ("delete", "shuffle", "reinit", "layerdrop", "iot", "rearrange", "lens", "matrix")
GOAL_FIRST_S, GOAL_SETTLED_S = 15.0, 60.0
COUNT = re.compile(r"^(\d+) of (\d+)$")  # a progress count ("0 of 6" cells done) is not a result
HELD_OUT = re.compile(r"held-out accuracy \d")  # a training bar's accuracy after an epoch (lab/core/train.py)

# One read of the page's state, in the browser: metric values, whether anything is still running, and the texts of
# progress bars and status boxes (what a newcomer reads while waiting).
STATE_JS = """() => {
  const vals = [...document.querySelectorAll("[data-testid='stMetricValue']")].map(e => e.innerText.trim());
  const run = document.querySelector('[data-test-script-state]')?.getAttribute('data-test-script-state') ?? null;
  const bars = [...document.querySelectorAll("[data-testid='stProgress']")].map(e => e.innerText.trim());
  const notes = [...document.querySelectorAll("[data-testid='stAlert']")].map(e => e.innerText.trim()).slice(0, 4);
  return {vals, run, bars, notes};
}"""


CLIENT = ("chrom", "headless", "node")  # the browser and Playwright's driver: in a classroom, not on the server


def cpu_by_side() -> dict[str, float]:
    """CPU seconds so far of this bench's child processes: the browser side (Chromium, Playwright's driver), which a
    classroom runs on the students' machines, and the server side (the app server and its Dask workers)."""
    import psutil

    out = {"client": 0.0, "server": 0.0}
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times()
            side = "client" if any(w in p.name().lower() for w in CLIENT) else "server"
            out[side] += t.user + t.system
        except psutil.Error:  # ended meanwhile
            continue
    return out


def one_page(browser: Any, page_name: str, limit: float, warm: bool = True) -> dict[str, Any]:
    store = tempfile.mkdtemp(prefix=f"layerlab-first-{page_name}-")
    env = {"LAYERLAB_QUICK": "0", "LAYERLAB_WARM": "1" if warm else "0", "LAYERLAB_ENGINE": "dask"}
    out: dict[str, Any] = {"page": page_name, "first_s": None, "shown_s": None, "settled_s": None, "said": None}
    with lab_server(store, env=env, log_name="bench-server.log") as url:
        pg = browser.new_page(viewport={"width": 1280, "height": 720})
        cpu0 = cpu_by_side()
        t0 = time.perf_counter()
        pg.goto(f"{url}/{page_name}", timeout=int(limit * 1000))
        quiet_since = None
        while time.perf_counter() - t0 < limit:
            s = pg.evaluate(STATE_JS)
            now = time.perf_counter() - t0
            numbers = [v for v in s["vals"] if any(c.isdigit() for c in v) and not COUNT.match(v)]
            if out["first_s"] is None and numbers:
                out["first_s"], out["first_value"] = now, numbers[0]
                out["said"] = s["bars"] + s["notes"]
            held = [b for b in s["bars"] if HELD_OUT.search(b)]
            if out["shown_s"] is None and (numbers or held):
                out["shown_s"], out["shown_value"] = now, (held[0] if held else numbers[0])
            # a metric still counting ("2 of 6") or empty is pending; a word ("off": Re-initialise's Recovery) is final
            pending = [v for v in s["vals"] if not v or ((m := COUNT.match(v)) and int(m[1]) < int(m[2]))]
            busy = s["run"] != "notRunning" or s["bars"] or not s["vals"] or pending
            if busy:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= 3.0:
                out["settled_s"] = quiet_since
                break
            time.sleep(0.2)
        cpu1 = cpu_by_side()
        out["cpu_s"] = {side: round(cpu1[side] - cpu0[side], 1) for side in cpu0}
        out["cpu_wall_s"] = round(time.perf_counter() - t0, 1)
        pg.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--limit", type=float, default=900.0, help="seconds a page may take to settle")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--no-warm", action="store_true", help="servers without the background warmer (what it costs)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    peak = peak_gflops()
    one, five, _ = os.getloadavg()
    print(f"a newcomer's first number, empty store, real mode; 1-thread matmul peak {peak:.0f} GFLOP/s; "
          f"load average {one:.2f} / {five:.2f} on {os.cpu_count()} cores")
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for name in [x for x in args.pages.split(",") if x]:
            r = one_page(browser, name, args.limit, warm=not args.no_warm)
            rows.append(r)
            first = "-" if r["first_s"] is None else f"{r['first_s']:.1f} s"
            settled = "-" if r["settled_s"] is None else f"{r['settled_s']:.1f} s"
            shown = "-" if r["shown_s"] is None else f"{r['shown_s']:.1f} s"
            ok = (r["shown_s"] is not None and r["shown_s"] <= GOAL_FIRST_S
                  and r["settled_s"] is not None and r["settled_s"] <= GOAL_SETTLED_S)
            print(f"{name:10s} first held-out number {shown:>9s} ({r.get('shown_value', '')[-40:]})  "
                  f"first result {first:>9s} ({r.get('first_value', '')})  settled {settled:>9s}  "
                  f"goal {'met' if ok else 'NOT met'}  CPU s over {r['cpu_wall_s']} s: server "
                  f"{r['cpu_s']['server']}, browser {r['cpu_s']['client']}  said: {r['said']}", flush=True)
        browser.close()
    one, five, _ = os.getloadavg()
    print(f"at the end: load average {one:.2f} / {five:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"peak_gflops": peak, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
