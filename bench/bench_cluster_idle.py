"""What Dask's own periodic work costs a lab cluster (reported, never asserted): CPU seconds a minute of an idle
2-worker cluster, and one job's wall and CPU seconds, with Dask's defaults against the lab's QUIET settings
(lab/runtime/engine/local_cluster.py: no statistical profiler, slower memory, system and tick monitors).

Each variant runs in a process of its own (a fresh Dask config), one after the other, on the same machine.
Usage: PYTHONPATH=. .venv/bin/python bench/bench_cluster_idle.py [--idle 60] [--epochs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tree_cpu(root: int) -> float:
    """utime + stime (s) of every live descendant of process `root`."""
    tick = os.sysconf("SC_CLK_TCK")
    procs: dict[int, tuple[int, float]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                st = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            procs[int(p)] = (int(st[1]), (int(st[11]) + int(st[12])) / tick)

    def under(pid: int) -> bool:
        while pid in procs and pid > 1:
            pid = procs[pid][0]
            if pid == root:
                return True
        return False

    return sum(c for pid, (_, c) in procs.items() if under(pid))


def job(epochs: int) -> float:
    """One digits-ViT training of `epochs` epochs on the worker; its thread CPU seconds."""
    from dataclasses import replace

    from lab.core import page_models
    from lab.core.train import train
    from lab.core.zoo import build, task
    from lab.runtime.threads import configure_threads

    configure_threads()
    spec = page_models.vit_spec("sequential", seed=0, epochs=epochs)
    data = task(spec.task)
    c0 = time.thread_time()
    train(build(spec.model, spec.train.seed), data.train, replace(spec.train, checkpoints=()), data.test)
    return time.thread_time() - c0


def child(quiet: bool, idle_s: float, epochs: int) -> dict[str, float]:
    import dask
    from distributed import Client, LocalCluster

    from lab.runtime.engine.local_cluster import QUIET

    with dask.config.set(QUIET if quiet else {}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40)
        client = Client(cluster)
        client.run(lambda: __import__("torch").zeros(1).sum())  # both workers up with torch imported
        client.submit(job, 1, pure=False).result()  # warm: data loaded, first kernels run
        time.sleep(5)
        me = os.getpid()
        c0, t0 = tree_cpu(me) + time.process_time(), time.perf_counter()
        time.sleep(idle_s)
        idle = (tree_cpu(me) + time.process_time() - c0) / (time.perf_counter() - t0) * 60
        c0, t0 = tree_cpu(me) + time.process_time(), time.perf_counter()
        task_cpu = client.submit(job, epochs, pure=False).result()
        wall = time.perf_counter() - t0
        total = tree_cpu(me) + time.process_time() - c0
        client.close()
        cluster.close()
    return {"idle_cpu_per_min": idle, "job_wall": wall, "job_thread_cpu": task_cpu, "job_all_cpu": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--idle", type=float, default=60.0, help="seconds of idleness measured")
    ap.add_argument("--epochs", type=int, default=2, help="epochs of the measured job")
    ap.add_argument("--child", choices=("default", "quiet"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child == "quiet", args.idle, args.epochs)))
        return
    one, five, _ = os.getloadavg()
    print(f"load average {one:.2f} / {five:.2f} on {os.cpu_count()} cores; idle {args.idle:.0f} s, "
          f"job: {args.epochs} epochs of the digits ViT")
    out = {}
    for name in ("default", "quiet"):
        r = subprocess.run([sys.executable, __file__, "--child", name, "--idle", str(args.idle),
                            "--epochs", str(args.epochs)], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        if r.returncode:
            sys.exit(f"the {name} run failed:\n{r.stderr[-2000:]}")
        out[name] = json.loads(r.stdout.strip().splitlines()[-1])
        o = out[name]
        print(f"{name:>8}: idle {o['idle_cpu_per_min']:.2f} CPU s a minute; job {o['job_wall']:.1f} s wall, "
              f"{o['job_thread_cpu']:.1f} s on its thread, {o['job_all_cpu']:.1f} s CPU in all processes")
    d, q = out["default"], out["quiet"]
    print(f"quiet / default: idle CPU {q['idle_cpu_per_min'] / max(d['idle_cpu_per_min'], 1e-9):.2f}, "
          f"job wall {q['job_wall'] / d['job_wall']:.2f}, job CPU in all processes "
          f"{q['job_all_cpu'] / d['job_all_cpu']:.2f}")


if __name__ == "__main__":
    main()
