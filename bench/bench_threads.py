"""Native thread pools beside torch's: a linear probe (lab/ops/embed.py) and a PCA with numpy's and scipy's BLAS at
every core against one thread (what lab/runtime/threads.py sets), alone and with a second process computing the
same beside it. Same predictions either way; the figures are wall and CPU seconds per call. With `--store`, also
Shuffle's slot probe and PCA view (lab/experiments/shuffle) on the stored 40-epoch digits ViT of seed 0 (the store
must hold it: a warmed course's), both ways. With `--beside-training`, a digits ViT trains for 8 epochs (torch on one
thread, as a worker trains) alone, then beside a second process fitting probes with its pools at every core, then at
one thread: what a warm's two workers do to each other.

    PYTHONPATH=. .venv/bin/python bench/bench_threads.py [--reps 10] [--store PATH] [--beside-training]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np


def one(reps: int, n: int) -> tuple[float, float, int]:
    """(wall s, CPU s, correct predictions) per probe + PCA, with every native pool at `n` threads."""
    import sklearn.linear_model  # noqa: F401 - loads scipy's BLAS, so that the limit reaches it
    from threadpoolctl import threadpool_limits

    from lab.ops.embed import linear_probe_correct, pca_2d

    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 64)).astype(np.float32)
    y = rng.integers(0, 10, 3000)
    with threadpool_limits(n):
        linear_probe_correct(x[:200], y[:200], x[200:300], y[200:300])  # first-call costs out of the figure
        t, w = time.process_time(), time.perf_counter()
        for _ in range(reps):
            correct = int(linear_probe_correct(x[:2000], y[:2000], x[2000:], y[2000:]).sum())
            pca_2d(x)
        return (time.perf_counter() - w) / reps, (time.process_time() - t) / reps, correct


def shuffle_probe(n: int, mode: str) -> tuple[float, float, float]:
    """(wall s, CPU s, probe accuracy) of Shuffle's slot probe and view on the stored ViT, every pool at `n`."""
    import sklearn.linear_model  # noqa: F401
    from threadpoolctl import threadpool_limits

    from lab.core.zoo import trained
    from lab.experiments.shuffle import experiment as X

    t = trained(X.ModelConfig(depth=6, epochs=40, mode=mode, seed=0, task="digits").spec)
    with threadpool_limits(n):
        w, c = time.perf_counter(), time.process_time()
        probe = X.position_probe(t.model, t.data, 0)
        feats, _ = X.view_points(t.model, t.data, 0)
        X.embed.pca_2d(feats)
        return time.perf_counter() - w, time.process_time() - c, probe["acc"]


def train_vit_seconds() -> float:
    """Seconds to train a digits ViT for 8 epochs into a throwaway store, torch on one thread."""
    import tempfile

    import torch

    torch.set_num_threads(1)
    os.environ["LAYERLAB_CACHE"] = tempfile.mkdtemp(prefix="layerlab-bench-threads-")
    from lab.core.page_models import vit_spec
    from lab.core.zoo import trained

    t = time.perf_counter()
    trained(vit_spec("sequential", epochs=8, seed=int(time.time()) % 1000))
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--store", help="a store holding the 40-epoch digits ViTs of seed 0 (Shuffle's probe)")
    ap.add_argument("--beside-training", action="store_true", help="a ViT's training beside a probing process")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        wall, cpu, correct = one(a.reps, a.child)
        print(f"{wall:.4f} {cpu:.4f} {correct}")
        return
    from bench.machine import peak_gflops
    from lab.runtime.cores import usable_cores

    cores = usable_cores()
    print(f"1-thread matmul peak {peak_gflops():.0f} GFLOP/s, {cores} cores; per probe + PCA:")
    for side_by_side in (1, 2):
        for n in (cores, 1):
            cmd = [sys.executable, __file__, "--reps", str(a.reps), "--child", str(n)]
            procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(side_by_side)]
            outs = [p.communicate()[0].split() for p in procs]
            wall = max(float(o[0]) for o in outs)
            cpu = sum(float(o[1]) for o in outs) / len(outs)
            print(f"  {side_by_side} process(es), {n} thread(s) per pool: {wall * 1000:7.1f} ms wall, "
                  f"{cpu * 1000:7.1f} ms CPU, {outs[0][2]} correct")
    if a.beside_training:
        print("a digits ViT, 8 epochs, torch on 1 thread:")
        train_vit_seconds()  # imports and the data's first load out of the figures
        print(f"  alone: {train_vit_seconds():.1f} s")
        for n in (cores, 1):
            cmd = [sys.executable, __file__, "--reps", "100000", "--child", str(n)]
            other = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
            try:
                time.sleep(3)  # the other process is fitting by now
                print(f"  beside a process probing with {n} thread(s) per pool: {train_vit_seconds():.1f} s")
            finally:
                other.kill()
                other.wait()
    if a.store:
        os.environ["LAYERLAB_CACHE"] = a.store
        print("Shuffle's slot probe and PCA view, stored 40-epoch digits ViT, seed 0:")
        for mode in ("shuffle", "sequential"):
            for n in (cores, 1):
                wall, cpu, acc = shuffle_probe(n, mode)
                print(f"  {mode}, {n} thread(s) per pool: {wall:6.2f} s wall, {cpu:6.2f} s CPU, probe accuracy "
                      f"{100 * acc:.1f} %")


if __name__ == "__main__":
    main()

