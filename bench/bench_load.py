"""Cached page views while the lab trains: wall seconds per view (AppTest) with two trainings running on the Dask
engine, against the same views with nothing running; this checkout against another commit, in one run.

Each side runs in a child process of its own checkout (`--before REF`: a git worktree, as bench_views.py makes),
with the default engine (a local Dask cluster of 2 single-threaded workers) on the store bench_views.py filled in
quick mode (run it first: every page's default view must be stored). The child
1. starts the engine and opens the pages (their results are stored; what a page computes on every visit, the
   Shuffle page's UMAP, is let finish);
2. reruns the pages in turn for `--idle` seconds with nothing training: p50 / p95 of the wall time of a rerun;
3. submits two trainings (`burn`: the digits ViT's training step on random data, for `--train` seconds each, one
   per worker) and reruns the pages in turn until both have finished: p50 / p95 again, and how many training steps
   the workers made (what the views cost the trainings).
The goal (issue 21): p95 <= 0.5 s under training. The load average is printed: other users' work counts too.
Usage: PYTHONPATH=. .venv/bin/python bench/bench_load.py [--before REF] [--pages delete,layerdrop] [--train 60]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 0.5
PAGES = ("delete", "reinit", "layerdrop", "iot", "rearrange", "shuffle")


@dataclass(frozen=True)
class Burn:
    """A training that runs for `seconds`; `stamp` makes each bench run's jobs new (never served from the store)."""

    seconds: float = 60.0
    tag: int = 0
    stamp: float = 0.0


def burn(cfg: Burn, progress: Any) -> dict[str, Any]:
    """The digits ViT's training step (batch 256, Adam) on random data, repeated for cfg.seconds."""
    import torch

    from lab.core.models.vit import ViT, ViTConfig

    torch.manual_seed(cfg.tag)
    model = ViT(ViTConfig())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(256, 64), torch.randint(0, 10, (256,))
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < cfg.seconds:
        loss = model.loss(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
        if steps % 10 == 0:
            progress(min(1.0, (time.perf_counter() - t0) / cfg.seconds), f"step {steps}")
    return {"steps": steps, "seconds": time.perf_counter() - t0}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def _views(ats: list[Any], until: Any) -> list[float]:
    out: list[float] = []
    i = 0
    while not until():
        t = time.perf_counter()
        ats[i % len(ats)].run()
        out.append(time.perf_counter() - t)
        i += 1
    return out


def measure(root: Path, pages: list[str], idle_s: float, train_s: float) -> dict[str, Any]:
    from streamlit.testing.v1 import AppTest

    from bench.bench_load import Burn as B
    from bench.bench_load import burn as burn_fn
    from lab.runtime import engine as engines

    eng = engines.engine()
    t = time.perf_counter()
    eng.ready(600)
    start_s = time.perf_counter() - t
    ats = []
    for page in pages:
        at = AppTest.from_file(str(root / "app" / "main.py"), default_timeout=600)
        at.run()
        at.switch_page(str(root / "pages" / f"{page}.py"))
        at.run()
        deadline = time.monotonic() + 900  # what a page computes on every visit (the Shuffle page's UMAP) lands
        while any(not j.future.done() for j in list(eng.jobs.values())) and time.monotonic() < deadline:
            time.sleep(0.5)
        at.run()
        ats.append(at)
    deadline = time.monotonic() + idle_s
    idle = _views(ats, lambda: time.monotonic() > deadline)
    stamp = time.time()
    trainings = [eng.submit("burn", burn_fn, B(seconds=train_s, tag=i, stamp=stamp)) for i in range(2)]
    while not all(j.started or j.future.done() for j in trainings):  # both running before we measure
        for j in trainings:
            j.refresh()
        time.sleep(0.2)
    busy = _views(ats, lambda: all(j.future.done() for j in trainings))
    steps = [j.future.result()["steps"] for j in trainings]
    eng.close()
    return {"engine_start_s": start_s, "idle": idle, "busy": busy, "train_steps": steps,
            "idle_p50": _pct(idle, 0.5), "idle_p95": _pct(idle, 0.95),
            "busy_p50": _pct(busy, 0.5), "busy_p95": _pct(busy, 0.95)}


def _run_child(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    env = dict(os.environ)
    # `lab` and `app` from the measured checkout; `bench` (a namespace package) from both, so the workers find burn
    env.update(PYTHONPATH=os.pathsep.join([str(root), str(ROOT)]), LAYERLAB_CACHE=args.store, LAYERLAB_QUICK="1",
               LAYERLAB_WARM="0", LAYERLAB_ENGINE="dask", LAYERLAB_THREADS="1")
    env.pop("LAYERLAB_SCHEDULER", None)
    cmd = [sys.executable, str(ROOT / "bench" / "bench_load.py"), "--child", str(root), "--out", out, "--pages",
           ",".join(args.pages), "--idle", str(args.idle), "--train", str(args.train)]
    subprocess.run(cmd, cwd=root, env=env, check=True)
    data = json.loads(Path(out).read_text())
    os.unlink(out)
    return data


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="a commit to compare with (e.g. main)")
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--idle", type=float, default=20.0, help="seconds of views with nothing training")
    ap.add_argument("--train", type=float, default=60.0, help="seconds each of the two trainings runs")
    ap.add_argument("--store", default=str(Path(tempfile.gettempdir()) / "layerlab-bench-views-store"))
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.pages = [p for p in args.pages.split(",") if p]
    if args.child:
        sys.path[:0] = [args.child, str(ROOT)]
        from lab.runtime.threads import configure_threads

        configure_threads()
        Path(args.out).write_text(json.dumps(measure(Path(args.child), args.pages, args.idle, args.train)))
        return
    from bench.bench_views import load, worktree

    print(f"cached views while two trainings run (AppTest wall seconds per rerun); {load()}")
    sides = {}
    if args.before:
        sides["before"] = _run_child(worktree(args.before), args)
    sides["after"] = _run_child(ROOT, args)
    print("side     views idle/busy   idle p50  p95   busy p50  p95   training steps   goal busy p95 <= 0.5 s")
    for name, d in sides.items():
        print(f"{name:7s}  {len(d['idle']):5d}/{len(d['busy']):<5d}  {d['idle_p50']:8.3f} {d['idle_p95']:5.3f}  "
              f"{d['busy_p50']:8.3f} {d['busy_p95']:5.3f}   {str(d['train_steps']):15s}  "
              f"{'met' if d['busy_p95'] <= GOAL_S else 'NOT met'}")
    if "before" in sides:
        b, a = sides["before"], sides["after"]
        print(f"after / before: busy p95 {a['busy_p95'] / b['busy_p95']:.2f}, busy p50 "
              f"{a['busy_p50'] / b['busy_p50']:.2f}, training steps "
              f"{sum(a['train_steps']) / max(1, sum(b['train_steps'])):.2f}")
    print(f"at the end: {load()}")
    if args.json:
        Path(args.json).write_text(json.dumps({**sides, "load": load()}, indent=1))


if __name__ == "__main__":
    main()
