"""Server memory over many distinct settings (reported, never asserted).

One AppTest session of the Delete page asks for N distinct settings in turn (seed x architecture x k x selection,
recovery none), each cold: every one is a job on the engine (a search over the trained teacher), every 70th trains a
new pair of teachers, and all land in a fresh store. We record the resident memory (RSS) of
the server process every 20 settings, and of the engine's worker processes where there are any. Quick mode (1-epoch
models), so 200 settings take minutes: what is measured is what the server keeps per setting, not training quality.

Why memory stays bounded (what this bench checks): results live in the store, not in the server; the engine keeps at
most KEEP_DONE finished jobs (lab/runtime/engine/jobs.py); with the Dask engine the models are built in worker
processes, whose memory the nanny caps and whose tasks free what they allocated.
Usage: PYTHONPATH=. .venv/bin/python bench/bench_memory.py [--settings 200] [--engines threads,dask]
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


def mib(rss: int) -> int:
    return round(rss / 2**20)


def one_engine(name: str, settings: int) -> dict:
    import psutil
    from streamlit.testing.v1 import AppTest

    from lab.runtime import engine as engines

    os.environ["LAYERLAB_ENGINE"] = name
    me = psutil.Process()
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
    at.run()
    at.switch_page(str(ROOT / "pages" / "delete.py"))
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    out: dict = {"engine": name, "settings": settings, "rss_mib": [], "worker_rss_mib": []}
    t0 = time.monotonic()
    grid = [(seed, arch, k, sel) for seed in range(100) for arch in ("residual", "plain") for k in range(1, 8)
            for sel in ("greedy", "evenly-spaced", "influence", "random", "optimal")]
    for i, (seed, arch, k, sel) in enumerate(grid[:settings]):
        at.number_input(key="seed").set_value(seed)
        at.selectbox(key="arch").set_value(arch)
        at.slider(key="k").set_value(k)
        at.selectbox(key="select").set_value(sel)
        at.run()
        assert not at.exception and not at.error, (i, at.exception, at.error)
        if (i + 1) % 20 == 0 or i == 0:
            workers = [c for c in me.children(recursive=True) if "python" in c.name().lower()]
            out["rss_mib"].append([i + 1, mib(me.memory_info().rss)])
            out["worker_rss_mib"].append([i + 1, sum(mib(c.memory_info().rss) for c in workers)])
            print(json.dumps({"progress": i + 1, "rss_mib": out["rss_mib"][-1][1],
                              "worker_rss_mib": out["worker_rss_mib"][-1][1]}), flush=True)
    out["seconds"] = round(time.monotonic() - t0, 1)
    out["jobs_remembered"] = len(engines.engine().jobs)
    engines.engine().close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--settings", type=int, default=200)
    ap.add_argument("--engines", default="threads,dask")
    ap.add_argument("--engine", choices=("threads", "dask"), help=argparse.SUPPRESS)  # the child's run
    args = ap.parse_args()
    if args.engine:
        print(json.dumps(one_engine(args.engine, args.settings)), flush=True)
        os._exit(0)  # skip interpreter teardown of the AppTest's threads
    for name in args.engines.split(","):
        env = dict(os.environ, LAYERLAB_CACHE=tempfile.mkdtemp(prefix="layerlab-bench-mem-"), PYTHONPATH=str(ROOT),
                   LAYERLAB_QUICK="1", LAYERLAB_WARM="0")
        r = subprocess.Popen([sys.executable, __file__, "--engine", name, "--settings", str(args.settings)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for line in r.stdout:  # progress lines as they come, then the summary
            if line.startswith("{"):
                print(name, line.strip(), flush=True)
        r.wait()


if __name__ == "__main__":
    main()
