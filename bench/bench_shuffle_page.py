"""Server time of the Shuffle page's controls, measured with AppTest (reported, never asserted).

The four actions of issue 9, in one run so they share the machine's load:
1. open the page with its default models stored (a returning student), and change "random orders" 50 -> 100,
   which needs no training: the page script's wall time, and whether anything trained;
2. change the depth 6 -> 5 (cold: two new ViTs): seconds until the page first draws its metrics (training
   included) and the extra seconds until the first figures and until every piece has landed;
3. the Re-initialise page with the ViT in focus, cold (its robustness map).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_shuffle_page.py [--cache DIR]   (real models, not quick mode)
The default models of step 1 come from the store given by --cache (default: cache/); warm them first with
`python -m lab shuffle` and `python -m lab shuffle --mode sequential`. Step 2 uses depth 5 and seed 7 so that
it is cold unless this bench ran before with the same store (pass a fresh --seed to force it).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", default=str(ROOT / "cache"))
    ap.add_argument("--seed", type=int, default=7, help="seed of the cold depth change")
    args = ap.parse_args()
    os.environ["LAYERLAB_CACHE"] = args.cache
    os.environ.pop("LAYERLAB_QUICK", None)
    os.environ["LAYERLAB_WARM"] = "0"  # no background warming inside the measurement
    from streamlit.testing.v1 import AppTest

    from lab.core import zoo

    trainings = {"n": 0}
    real = zoo.train

    def counted(*a, **k):  # noqa: ANN002, ANN003, ANN202 - a counting wrapper
        trainings["n"] += 1
        return real(*a, **k)

    zoo.train = counted
    main_py = str(ROOT / "app" / "main.py")
    at = AppTest.from_file(main_py, default_timeout=900)
    at.run()
    at.switch_page(str(ROOT / "pages" / "shuffle.py"))
    t = time.perf_counter()
    at.run()
    print(f"open Shuffle (defaults stored): {time.perf_counter() - t:.2f} s, trainings {trainings['n']}")
    # A server compiles UMAP once at start-up and computes the UMAP view in the background: let both finish, so
    # the timings below are of the page script alone (as for every later student), not of numba's compiler.
    from app import server_engine
    from lab.ops import embed

    t = time.perf_counter()
    embed.warm_umap()
    while any(not j.future.done() for j in list(server_engine.runner().jobs.values())):
        time.sleep(0.2)
    print(f"  (waited {time.perf_counter() - t:.1f} s for UMAP's compile and background jobs)")
    for orders in (100, 200, 50):
        n0, t, c = trainings["n"], time.perf_counter(), time.process_time()
        at.selectbox(key="orders").set_value(orders).run()
        while any(m.value == "…" for m in at.metric):  # a new count of orders is a read of the stored table
            at.run()
        print(f"random orders -> {orders}: {time.perf_counter() - t:.2f} s wall, {time.process_time() - c:.2f} "
              f"CPU-s of server work (load {os.getloadavg()[0]:.1f}), trainings {trainings['n'] - n0}, "
              f"metrics {[m.label for m in at.metric][1]}")
    n0, t = trainings["n"], time.perf_counter()
    at.slider(key="depth").set_value(5)
    at.number_input(key="seed").set_value(args.seed)
    at.run()
    first = time.perf_counter() - t
    pending = sum(m.value == "…" for m in at.metric)
    print(f"depth 6 -> 5, seed {args.seed} (cold): first metrics after {first:.1f} s ({trainings['n'] - n0} "
          f"trainings), {pending} pieces still computing")
    figures_at = None
    while any(m.value == "…" for m in at.metric):
        time.sleep(0.25)
        at.run()
        if figures_at is None and at.get("plotly_chart"):
            figures_at = time.perf_counter() - t
    done = time.perf_counter() - t
    print(f"  first figures after {figures_at if figures_at is not None else done:.1f} s, every piece after "
          f"{done:.1f} s (all 120 orders walked, pruning, probe)")
    at.switch_page(str(ROOT / "pages" / "reinit.py"))
    n0, t = trainings["n"], time.perf_counter()
    at.run()
    print(f"open Re-initialise: {time.perf_counter() - t:.1f} s ({trainings['n'] - n0} trainings)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores)")


if __name__ == "__main__":
    main()
