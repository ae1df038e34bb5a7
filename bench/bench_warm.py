"""Warm everything before class (issue 29, goal 1: <= 10 minutes on 2 cores): reported, never asserted.

Runs `python -m lab warm`'s plan (every page's default view and every preset) into a fresh, empty store in real mode
on the lab's engine (a local Dask cluster of `--workers` single-threaded workers), as a lecturer would before class.
Reports the wall time against the goal, the worker seconds by page and the dearest results with the models their
jobs trained, beside the machine's 1-thread matmul peak and the load average. `--quick` runs the same plan in quick
mode (one epoch per model, minutes): the plan's shape (how many results, how many models), not its cost.

The machine's idle share over the run (from /proc/stat) says how much of the wall time no worker computed: a worker
waiting on the store's lock for a model another one trains shows there. `--plan-order` submits in plan order instead
of dealt round-robin over the settings (`warm.interleaved`): the "before" of that change.

`--timings-from STORE` starts the empty store with another store's build timings (its `timings/` folder) and no
results: a warm after a code change re-keyed every result, when the lab knows what each one costs here. That is when
the order of the jobs matters: `--cheapest-first` submits them cheapest first, the "before" of `warm.dearest_first`.

Usage: PYTHONPATH=. .venv/bin/python bench/bench_warm.py [--pages delete iot] [--workers 2] [--quick] [--plan-order]
       [--timings-from STORE [--cheapest-first]] [--keep] [--json F]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_S = 600.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", nargs="+", default=None, help="pages to warm (default: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="quick mode: the plan's shape in minutes, not its cost")
    ap.add_argument("--plan-order", action="store_true", help="submit in plan order, not round-robin over settings")
    ap.add_argument("--timings-from", help="a store whose build timings (not results) the empty store starts with")
    ap.add_argument("--cheapest-first", action="store_true", help="submit the cheapest first (the old order)")
    ap.add_argument("--keep", action="store_true", help="keep the store (its path is printed) for --timings-from")
    ap.add_argument("--json", help="also write the summary here")
    args = ap.parse_args()
    store = tempfile.mkdtemp(prefix="layerlab-warm-bench-")
    if args.timings_from:
        shutil.copytree(Path(args.timings_from) / "timings", Path(store) / "timings")
    os.environ.update(LAYERLAB_CACHE=store, LAYERLAB_QUICK="1" if args.quick else "0")  # before the lab reads them
    from bench.machine import REFERENCE_GFLOPS, at_reference, cpu_ticks, idle_share, peak_gflops
    from lab.classroom import warm
    from lab.runtime.progress import text_progress

    peak = peak_gflops()
    one, five, _ = os.getloadavg()
    print(f"warm everything into an empty store ({'quick' if args.quick else 'real'} mode), {args.workers} workers; "
          f"1-thread matmul peak {peak:.0f} GFLOP/s; load average {one:.2f} / {five:.2f} on {os.cpu_count()} cores",
          flush=True)
    if args.plan_order:
        warm.interleaved = list  # the "before": each setting's results back to back
    if args.cheapest_first:
        warm.dearest_first = lambda items, est=None: list(items)  # the "before": `missing`'s order, cheapest first
    items = warm.plan(args.pages or warm.pages())
    ticks0 = cpu_ticks()
    t0 = time.perf_counter()
    summary = warm.warm(items, workers=args.workers, progress=text_progress)
    wall = time.perf_counter() - t0
    idle = idle_share(ticks0, cpu_ticks())
    built = summary["built"]
    worker_s = sum(b["seconds"] for b in built)
    by_page: collections.Counter[str] = collections.Counter()
    for b in built:
        by_page[b["page"]] += b["seconds"]
    trainings = sum(len(b["trained"]) for b in built)  # each model trains once (the store's lock), in one job
    trained_s = sum(m["seconds"] for b in built for m in b["trained"])
    print(f"\n{len(items)} results ({len(built)} built, {len(summary['failed'])} failed) in {wall:.0f} s = "
          f"{wall / 60:.1f} min: {wall / GOAL_S:.2f} x the goal of {GOAL_S / 60:.0f} min"
          + (f"; the machine was idle {idle:.1%} of the time" if idle is not None else "")
          + (" (plan order)" if args.plan_order else "") + (" (cheapest first)" if args.cheapest_first else "")
          + (f" (timings from {args.timings_from})" if args.timings_from else ""))
    print(f"worker time {worker_s:.0f} s over {args.workers} workers ({worker_s / max(wall, 1e-9):.2f} busy on "
          f"average); {trainings} models trained in {trained_s:.0f} s ({trained_s / max(worker_s, 1e-9):.0%})")
    print("by page (worker seconds, share):")
    for page, sec in by_page.most_common():
        print(f"  {page:<10} {sec:8.0f} s  {sec / max(worker_s, 1e-9):5.1%}")
    print("the dearest results:")
    for b in sorted(built, key=lambda b: -b["seconds"])[:15]:
        what = "; ".join(f"{m['model']} ({m['seconds']:.0f} s)" for m in b["trained"]) or "no model trained"
        print(f"  {b['seconds']:7.1f} s  {b['page']}: {b['setting']}: {b['result']}  [trained: {what}]")
    for f in summary["failed"]:
        print(f"  FAILED {f['page']}: {f['setting']}: {f['result']}: {f['error']}")
    one, five, _ = os.getloadavg()
    # measured again: on a shared host the machine's speed drifts by a fifth within an hour (152 -> 128 GFLOP/s
    # between two runs), which decides whether two warms' wall times can be compared at all
    peak_end = peak_gflops()
    print(f"at the end: load average {one:.2f} / {five:.2f}; matmul peak {peak_end:.0f} GFLOP/s "
          f"({peak_end / max(peak, 1e-9):.2f} x the start's)")
    ref = at_reference(wall, peak, peak_end)
    print(f"scaled to the goal's machine ({REFERENCE_GFLOPS:.0f} GFLOP/s, an estimate): about {ref:.0f} s = "
          f"{ref / GOAL_S:.2f} x the goal")
    if args.json:
        out: dict[str, Any] = {"peak_gflops": peak, "peak_gflops_end": peak_end, "wall_s": wall,
                               "wall_s_at_reference": ref, "worker_s": worker_s, "quick": args.quick,
                               "idle_share": idle, "plan_order": args.plan_order,
                               "cheapest_first": args.cheapest_first, "timings_from": args.timings_from,
                               "by_page": dict(by_page), "summary": summary}
        Path(args.json).write_text(json.dumps(out, indent=1))
    if args.keep:
        print(f"the store is kept at {store}")
    else:
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
