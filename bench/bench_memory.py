"""Server memory over many distinct settings (reported, never asserted).

One AppTest session of the Delete page asks for N distinct settings in turn (seed 0..99 x plain/residual), each cold,
so each one trains a teacher through the engine and lands in a fresh store. We record the resident memory (RSS) of
the server process every 20 settings, and of the engine's worker processes where there are any. Quick mode (1-epoch
models), so 200 settings take minutes: what is measured is what the server keeps per setting, not training quality.

Why memory stays bounded (what this bench checks): results live in the store, not in the server; the engine keeps at
most KEEP_DONE finished jobs (lab/engine.py); with the Dask engine the models are built in worker processes, whose
memory the nanny caps and whose tasks free what they allocated.
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

    from lab import engine as engines

    os.environ["LAYERLAB_ENGINE"] = name
    me = psutil.Process()
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
    at.run()
    at.switch_page(str(ROOT / "pages" / "delete.py"))
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    out: dict = {"engine": name, "settings": settings, "rss_mib": [], "worker_rss_mib": []}
    t0 = time.monotonic()
    for i in range(settings):
        arch = ("residual", "plain")[i // 100 % 2]
        at.selectbox(key="arch").set_value(arch)
        at.number_input(key="seed").set_value(i % 100)
        at.run()
        assert not at.exception and not at.error, (i, at.exception, at.error)
        if (i + 1) % 20 == 0 or i == 0:
            workers = [c for c in me.children(recursive=True) if "python" in c.name().lower()]
            out["rss_mib"].append([i + 1, mib(me.memory_info().rss)])
            out["worker_rss_mib"].append([i + 1, sum(mib(c.memory_info().rss) for c in workers)])
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
        r = subprocess.run([sys.executable, __file__, "--engine", name, "--settings", str(args.settings)], env=env,
                           capture_output=True, text=True)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        print(lines[-1] if lines else f"{name}: failed\n{r.stderr[-3000:]}", flush=True)


if __name__ == "__main__":
    main()
