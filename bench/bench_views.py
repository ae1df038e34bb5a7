"""Server CPU per cached page view (AppTest), this checkout against another commit, as ratios in one run.

A cached view is a rerun of a page whose results are all stored (a student who moves nothing, or comes back):
everything it costs is the page script, its store lookups and its figures. For each page the bench opens it in
quick mode (one epoch per model: the figures have the same shape as the real ones), lets every job land, then
reruns it 5 times and takes the median of the process CPU time of each rerun (the script runs in this process;
the thread engine is idle by then).

`--before REF` measures REF in a git worktree of its own (created once under the temp folder), in a child process,
right before this checkout, on the same store (entries are keyed by code version, so each side reads its own), so
both sides see the same load; the report gives after / before per page. The load average is printed with it.
Usage: PYTHONPATH=. .venv/bin/python bench/bench_views.py [--before REF] [--pages a,b] [--reruns 5] [--store DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("home", "delete", "shuffle", "reinit", "layerdrop", "iot", "rearrange", "lens", "matrix")
GOAL_S = 0.1  # the median of a cached view (server-like)
GOAL_MAX_S = 0.3  # no cached view over this (issue 29: 200 reruns of every page)


def _settle(at: Any, server_engine: Any, limit: float) -> int:
    """Rerun until every job the page started has landed and a rerun starts no new one; returns the runs."""
    deadline = time.monotonic() + limit
    runs, seen = 0, -1
    while time.monotonic() < deadline:
        table = server_engine.runner().jobs
        while any(not j.future.done() for j in list(table.values())) and time.monotonic() < deadline:
            time.sleep(0.3)
        at.run()
        runs += 1
        if at.exception:
            raise RuntimeError(f"page failed: {[e.value for e in at.exception]}")
        now = len(table)
        if now == seen and all(j.future.done() for j in list(table.values())):
            return runs
        seen = now
    return runs


def _share_script_cache() -> Callable[[bool], None]:
    """AppTest compiles the entry script and the page on every run (a fresh ScriptCache per run); a server compiles
    each once. Returns a switch: on, every run shares one cache, as in the server."""
    from streamlit.runtime.scriptrunner import script_cache
    from streamlit.testing.v1 import app_test

    shared = script_cache.ScriptCache()

    def switch(on: bool) -> None:
        app_test.ScriptCache = (lambda: shared) if on else script_cache.ScriptCache  # type: ignore[assignment]

    return switch


def _reruns(at: Any, n: int) -> tuple[list[float], list[float]]:
    cpu, wall = [], []
    for _ in range(n):
        c, w = time.process_time(), time.perf_counter()
        at.run()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return cpu, wall


def measure(root: Path, pages: list[str], reruns: int, limit: float) -> dict[str, Any]:
    """CPU seconds per cached rerun of each page (median), with the wall seconds; runs in the checkout `root`.
    `cpu_s`: as AppTest runs it (the page compiled each run); `server_cpu_s`: with the script compiled once, as a
    server runs it (the figure the goal is about)."""
    from streamlit.testing.v1 import AppTest

    from app import server_engine

    switch = _share_script_cache()

    out: dict[str, Any] = {}
    for page in pages:
        at = AppTest.from_file(str(root / "app" / "main.py"), default_timeout=limit)
        at.run()
        at.switch_page(str(root / "pages" / f"{page}.py"))
        t = time.perf_counter()
        settle_runs = _settle(at, server_engine, limit)
        warm_s = time.perf_counter() - t
        cpu, wall = _reruns(at, reruns)
        switch(True)
        at.run()  # compiles into the shared cache
        scpu, swall = _reruns(at, reruns)
        switch(False)
        out[page] = {"cpu_s": statistics.median(cpu), "wall_s": statistics.median(wall), "cpu_all": cpu,
                     "server_cpu_s": statistics.median(scpu), "server_wall_s": statistics.median(swall),
                     "server_cpu_all": scpu, "figures": len(at.get("plotly_chart")), "settle_runs": settle_runs,
                     "settle_s": warm_s, "errors": [e.value for e in at.error]}
        print(f"  {page:10s} cpu {out[page]['cpu_s']:.3f} s (server-like {out[page]['server_cpu_s']:.3f} s)  wall "
              f"{out[page]['wall_s']:.3f} s  figures {out[page]['figures']}  (settled in {warm_s:.0f} s)",
              file=sys.stderr, flush=True)
    return out


def _child_env(root: Path, store: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(root), LAYERLAB_CACHE=store, LAYERLAB_QUICK="1", LAYERLAB_WARM="0",
               LAYERLAB_ENGINE="threads", LAYERLAB_THREADS="1")
    return env


def _run_child(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, str(ROOT / "bench" / "bench_views.py"), "--child", str(root), "--out", out,
           "--pages", ",".join(args.pages), "--reruns", str(args.reruns), "--limit", str(args.limit)]
    subprocess.run(cmd, cwd=root, env=_child_env(root, args.store), check=True)
    data = json.loads(Path(out).read_text())
    os.unlink(out)
    return data


def worktree(ref: str) -> Path:
    """A detached worktree of `ref` under the temp folder (made once per commit; the shared venv runs it)."""
    sha = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"layerlab-bench-{sha[:10]}"
    if not (path / "app" / "main.py").exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True,
                       capture_output=True)
    return path


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def tail(values: list[float]) -> tuple[float, float, float]:
    """p50, p99 and max of the reruns' CPU seconds."""
    v = sorted(values)
    return v[len(v) // 2], v[min(len(v) - 1, int(0.99 * len(v)))], v[-1]


def report(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """One line per page: AppTest as is, then with the script compiled once (a server); the goal is on the latter.
    Then the tail of the server-like reruns: p50 / p99 / max, before and after."""
    lines = ["page        AppTest cpu: before   after  ratio   script cached: before   after  ratio   goal <= 0.1 s"]
    for page, a in after.items():
        b = (before or {}).get(page)
        cols = []
        for k in ("cpu_s", "server_cpu_s"):
            bv = b.get(k, float("nan")) if b else float("nan")
            ratio = f"{a[k] / bv:.2f}" if b and bv > 0 else "-"
            cols.append(f"{bv:17.3f} {a[k]:7.3f} {ratio:>6s}")
        lines.append(f"{page:10s} {cols[0]}   {cols[1]}         {'met' if a['server_cpu_s'] <= GOAL_S else 'NOT met'}")
    lines.append(f"page        server-like CPU per rerun, p50 / p99 / max: before | after  goal: max <= {GOAL_MAX_S} s")
    for page, a in after.items():
        b = (before or {}).get(page)
        bt = "/".join(f"{x:.3f}" for x in tail(b["server_cpu_all"])) if b else "-"
        at = tail(a["server_cpu_all"])
        lines.append(f"{page:10s} {bt:>23s} | {'/'.join(f'{x:.3f}' for x in at)}   "
                     f"{'met' if at[2] <= GOAL_MAX_S else 'NOT met'} ({len(a['server_cpu_all'])} reruns)")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="a commit to compare with (e.g. main)")
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--reruns", type=int, default=5)
    ap.add_argument("--limit", type=float, default=1800.0, help="seconds a page may take to settle")
    ap.add_argument("--store", default=str(Path(tempfile.gettempdir()) / "layerlab-bench-views-store"))
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.pages = [p for p in args.pages.split(",") if p]
    if args.child:
        sys.path.insert(0, args.child)
        from lab.runtime.threads import configure_threads

        configure_threads()
        Path(args.out).write_text(json.dumps(measure(Path(args.child), args.pages, args.reruns, args.limit)))
        return
    print(f"cached page views, server CPU per rerun (median of {args.reruns}); {load()}")
    before = None
    if args.before:
        print(f"before: {args.before}", file=sys.stderr)
        before = _run_child(worktree(args.before), args)
    print("after: this checkout", file=sys.stderr)
    after = _run_child(ROOT, args)
    for line in report(before, after):
        print(line)
    print(f"at the end: {load()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"before": before, "after": after, "load": load()}, indent=1))


if __name__ == "__main__":
    main()
