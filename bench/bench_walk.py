"""The all-orders walk of a trained depth-6 digits ViT (the Shuffle page's table: 720 orders x 397 held-out digits)
and the pruning curve: the lab's walk (lab/ops/walk.py: shared prefixes, the last block for the CLS row only) against
the walk before it (shared prefixes, every block in full), in one run, with the load average; the lab's walk on
one lane and in lanes (lab/runtime/cores.py: subtrees on a core nobody else computes on), in wall time. Also the
per-row cost of one block at several batch sizes: evaluating many orders per pass would only pay if it fell with the
batch.
Checks that both walks give identical accuracies (they must: same bits). Reported, never asserted.
Usage: LAYERLAB_CACHE=/work/store PYTHONPATH=. .venv/bin/python bench/bench_walk.py [--mode shuffle] [--seed 0]
(trains the model into the store if it is missing: minutes).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable

import torch

from lab.core.models import RoutedModel, correct
from lab.core.page_models import vit_spec
from lab.core.zoo import trained
from lab.experiments.shuffle import experiment as shuffle


@torch.no_grad()
def walk_before(model: RoutedModel, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    """The walk as the lab ran it before lab/ops/walk.py: depth first, every block in full."""
    model.eval()
    n = model.n_blocks
    out: list[float] = []

    def go(h: torch.Tensor, used: list[int]) -> None:
        if len(used) == n:
            out.append(float((model.readout(h).argmax(1) == y).float().mean()))
            return
        for b in range(n):
            if b not in used:
                go(model.run_block(h, b, len(used)), used + [b])

    go(model.embed(x), [])
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


@torch.no_grad()
def block_cost(model: RoutedModel, x: torch.Tensor) -> None:
    h = model.embed(x)
    for rows in (128, len(x), 4 * len(x), 16 * len(x)):
        hb = h.repeat(-(-rows // len(x)), 1, 1)[:rows]
        model.run_block(hb, 0, 0)
        reps = max(1, 8 * len(x) // rows)
        c = time.process_time()
        for _ in range(reps):
            model.run_block(hb, 0, 0)
        per = (time.process_time() - c) / reps / rows * len(x)
        print(f"  one block on {rows:>5} digits: {1e3 * per:.1f} ms CPU per {len(x)} digits; {load()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="shuffle")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-pruning", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("LAYERLAB_THREADS", "1")))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); {load()}", flush=True)
    t = trained(vit_spec(args.mode, 6, args.seed))
    m, x, y = t.model, t.data.test.x, t.data.test.y
    block_cost(m, x)
    w0, c0, a0 = timed(lambda: walk_before(m, x, y))
    print(f"all-orders walk, before: {w0:.1f} s wall, {c0:.1f} s CPU; {load()}", flush=True)
    os.environ["LAYERLAB_LANES"] = "0"
    w1, c1, a1 = timed(lambda: shuffle.all_orders_accuracy(m, x, y))
    print(f"all-orders walk, now, one lane: {w1:.1f} s wall, {c1:.1f} s CPU: x{c0 / c1:.2f} in CPU time; identical "
          f"accuracies: {a0 == a1} ({len(a1)} orders); {load()}", flush=True)
    os.environ["LAYERLAB_LANES"] = "1"
    w4, c4, a4 = timed(lambda: shuffle.all_orders_accuracy(m, x, y))
    print(f"all-orders walk, now, in lanes (a free core borrowed when there is one): {w4:.1f} s wall, {c4:.1f} s CPU: "
          f"x{w0 / w4:.2f} in wall time against before, x{w1 / w4:.2f} against one lane; identical: {a0 == a4}; "
          f"{load()}", flush=True)
    if args.skip_pruning:
        return
    import lab.experiments.shuffle.experiment as sh

    def prune_before() -> list[Any]:
        real = sh.walk.route_outcomes
        sh.walk.route_outcomes = lambda mm, xx, yy, rs, *a: [correct(mm, xx, yy, tuple(r)) for r in rs]  # type: ignore
        try:
            return sh.pruning_curve(m, x, y, sh.PRUNE_DRAWS, args.seed)
        finally:
            sh.walk.route_outcomes = real  # type: ignore

    w2, c2, p0 = timed(prune_before)
    w3, c3, p1 = timed(lambda: sh.pruning_curve(m, x, y, sh.PRUNE_DRAWS, args.seed))
    print(f"pruning curve: one accuracy() per route {c2:.1f} s CPU, one walk {c3:.1f} s CPU: x{c2 / c3:.2f}; "
          f"identical: {p0 == p1}; {load()}", flush=True)
    # The Shuffle page's table and pruning curve: two walks (the curve's routes walked on their own) against one (the
    # table's walk scores the shorter orders on its way and the curve reads them), on one lane.
    os.environ["LAYERLAB_LANES"] = "0"
    w5, c5, _ = timed(lambda: (sh.all_orders_outcomes(m, x, y), sh.pruning_curve(m, x, y, sh.PRUNE_DRAWS, args.seed)))
    w6, c6, (full, shorter) = timed(lambda: sh.orders_walk(m, x, y))
    same = all(torch.equal(shorter[r], correct(m, x, y, r)) for r in list(shorter)[::97])
    print(f"table and pruning curve, one lane: two walks {c5:.1f} s CPU, one walk {c6:.1f} s CPU: x{c5 / c6:.2f}; "
          f"shorter orders identical to per-route evaluation (every 97th checked): {same}; {load()}", flush=True)


if __name__ == "__main__":
    main()
