"""The test suite's time (issue 29, goal 2: <= 10 minutes on 2 cores): reported, never asserted.

Runs the suite as `make test` does (pytest with the project's options; CI=true, so the browser and database tests
run rather than skip), and reports its wall time against the goal, the CPU time of pytest and of the processes it
started and waited for, the test count and the slowest tests (pytest's own `--durations` list), beside the machine's
1-thread matmul peak and the load average. Run it on a quiet machine: the suite shares the cores with whatever else
runs.

Usage: PYTHONPATH=. .venv/bin/python bench/bench_suite.py [pytest arguments, e.g. tests/test_vit.py]
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_S = 600.0


def main() -> None:
    from bench.machine import peak_gflops

    peak = peak_gflops()
    one, five, _ = os.getloadavg()
    print(f"the suite, as make test runs it; 1-thread matmul peak {peak:.0f} GFLOP/s; load average {one:.2f} / "
          f"{five:.2f} on {os.cpu_count()} cores", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "--durations=20", "-p", "no:cacheprovider", *sys.argv[1:]],
                          cwd=ROOT, env={**os.environ, "CI": "true"}, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = proc.stdout.splitlines()
    slow = [ln for ln in out if re.match(r"^\d+\.\d+s (call|setup|teardown) ", ln)]
    tally = next((ln.strip("= ") for ln in reversed(out) if re.search(r"\d+ (passed|failed)", ln)), "no tally")
    print(f"{tally}; exit status {proc.returncode}")
    print(f"wall {wall:.0f} s = {wall / 60:.1f} min: {wall / GOAL_S:.2f} x the goal of {GOAL_S / 60:.0f} min; CPU "
          f"user {use.ru_utime:.0f} s + system {use.ru_stime:.0f} s ({(use.ru_utime + use.ru_stime) / wall:.2f} cores "
          f"busy on average)")
    print("the slowest 20:")
    for ln in slow[:20]:
        print(f"  {ln}")
    one, five, _ = os.getloadavg()
    # No figure scaled to the goal's machine here (bench_warm has one): the suite also waits on servers and browsers,
    # and its wall times followed the peak less closely (550 s at 165 GFLOP/s, 1,077 s at 66-72: 20 % apart).
    print(f"at the end: load average {one:.2f} / {five:.2f}; matmul peak {peak_gflops():.0f} GFLOP/s")
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
