"""The engine under load, threads against a local Dask cluster (reported, never asserted).

Per engine, in a process of its own (so one engine's memory does not count against the other):
1. server CPU seconds and wall seconds per cached page view (AppTest of the Delete page, its default result stored);
2. the same page view, repeated while two trainings run through the engine: p50 / p95 server wall time;
3. RSS of the server process at the end (after every distinct setting below went through it);
4. N students asking at once for distinct cold settings (Delete configs with distinct seeds, a smaller teacher):
   p50 / p95 seconds from asking to a finished result.
Usage: PYTHONPATH=. .venv/bin/python bench/bench_engine.py [--students 6] [--cache DIR] [--engines threads,dask]
(LAYERLAB_WORKER_NICE=0 in the environment compares un-niced Dask workers.)
Real models (not quick mode). The store is fresh unless --cache is given, so step 0 trains the page's default
config once (its time is printed, not part of any figure).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOADED_S = 90  # longest stretch of page views while the two trainings run


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def one_engine(name: str, students: int, seed0: int) -> dict:
    import psutil
    from streamlit.testing.v1 import AppTest

    from lab.experiments.delete import experiment as delete
    from lab.runtime import engine as engines
    from lab.runtime.threads import configure_threads

    configure_threads()
    os.environ["LAYERLAB_ENGINE"] = name
    out: dict = {"engine": name}
    t = time.monotonic()
    delete.run(delete.DeleteConfig())  # the page's default, stored (a no-op when the store has it)
    out["warm_default_s"] = round(time.monotonic() - t, 1)

    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
    at.run()
    at.switch_page(str(ROOT / "pages" / "delete.py"))
    at.run()
    assert not at.exception and not at.error

    def view() -> tuple[float, float]:
        w, c = time.monotonic(), time.process_time()
        at.run()
        assert not at.exception and not at.error
        return time.monotonic() - w, time.process_time() - c

    views = [view() for _ in range(5)]
    out["cached_view_cpu_s"] = round(sum(c for _, c in views) / len(views), 3)
    out["cached_view_wall_s"] = round(sum(w for w, _ in views) / len(views), 3)

    t = time.monotonic()
    eng = engines.engine()
    if hasattr(eng, "ready"):
        eng.ready()  # the local cluster starts in the background; time it apart from the trainings
    out["engine_start_s"] = round(time.monotonic() - t, 1)
    out["worker_nice"] = os.environ.get("LAYERLAB_WORKER_NICE", "10") if name == "dask" else None
    # Two trainings (a 15-epoch teacher each) while students view a stored page.
    busy = [eng.submit("train", delete.run, delete.DeleteConfig(seed=seed0 + i, epochs=15, steps=50))
            for i in range(2)]
    # Views back to back for at most LOADED_S: on the thread engine the views' Python holds the GIL most of the
    # time and the trainings starve (measured: 16 min without finishing), so the phase is capped and reports how
    # far the trainings got.
    loaded = []
    t = time.monotonic()
    while not all(j.future.done() for j in busy) and time.monotonic() - t < LOADED_S:
        loaded.append(view()[0])
    out["views_during_training"] = len(loaded)
    if loaded:
        out["loaded_view_p50_s"] = round(pct(loaded, 0.5), 3)
        out["loaded_view_p95_s"] = round(pct(loaded, 0.95), 3)
    for j in busy:
        j.refresh()
    out["training_fraction_during_views"] = [round(1.0 if j.future.done() else j.fraction, 2) for j in busy]
    out["training_s_with_views"] = round(time.monotonic() - t, 1)
    for j in busy:
        j.future.result()
    out["training_s"] = round(time.monotonic() - t, 1)

    # N students at once, each a distinct cold setting.
    t0 = time.monotonic()
    asked = [eng.submit(f"student {i}", delete.run, delete.DeleteConfig(seed=seed0 + 100 + i, epochs=3, steps=100))
             for i in range(students)]
    done: dict[int, float] = {}
    while len(done) < len(asked):
        for i, j in enumerate(asked):
            if i not in done and j.future.done():
                j.future.result()
                done[i] = time.monotonic() - t0
        time.sleep(0.05)
    out["students"] = students
    out["student_p50_s"] = round(pct(list(done.values()), 0.5), 1)
    out["student_p95_s"] = round(pct(list(done.values()), 0.95), 1)
    out["server_rss_mib"] = round(psutil.Process().memory_info().rss / 2**20)
    eng.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--students", type=int, default=6)
    ap.add_argument("--cache", default=None, help="store folder (default: a fresh temporary one)")
    ap.add_argument("--engines", default="threads,dask", help="which engines to compare, comma-separated")
    ap.add_argument("--engine", choices=("threads", "dask"), help=argparse.SUPPRESS)  # the child's run
    ap.add_argument("--seed0", type=int, default=int(time.time()) % 100_000 * 1000, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine:
        print(json.dumps(one_engine(args.engine, args.students, args.seed0)), flush=True)
        os._exit(0)  # skip interpreter teardown of the AppTest's threads
    cache = args.cache or tempfile.mkdtemp(prefix="layerlab-bench-engine-")
    # LAYERLAB_WARM=0: the app's background warmer would add its own training to what is measured.
    env = dict(os.environ, LAYERLAB_CACHE=cache, PYTHONPATH=str(ROOT), LAYERLAB_WARM="0")
    env.pop("LAYERLAB_QUICK", None)
    for i, name in enumerate(args.engines.split(",")):
        # Distinct seeds per engine: each sees cold settings; the default page config is shared (stored once).
        r = subprocess.run([sys.executable, __file__, "--engine", name, "--students", str(args.students),
                            "--seed0", str(args.seed0 + 10_000 * i)], env=env, capture_output=True, text=True)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        print(lines[-1] if lines else f"{name}: failed\n{r.stderr[-3000:]}", flush=True)


if __name__ == "__main__":
    main()
