"""Training throughput of the digits-ViT recipe: M models of one shape trained one at a time (the lab's loop,
lab/core/train.py) against the same M trained together as one batched model (torch.func: stacked weights, vmap).
(The all-orders walk is measured in bench/bench_walk.py.) Reported, never asserted; every figure is a ratio within
this one run, with the load average.

Batched training keeps each model's own seed: its initial draw (zoo.build), its batch order (the stream
`train.batches`), the recipe's AdamW step, warm-up and cosine (Adam is elementwise, so one optimizer over stacked
weights is M optimizers). What it cannot keep is bit equality: a batched matmul rounds differently, so a model
trained batched is a close sibling, not a copy; the accuracy columns say how close (against the spread of seeds).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_batched.py [--models 4] [--epochs 40] [--skip-single]
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import time
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

from lab.core import recipes, streams
from lab.core.models import accuracy
from lab.core.models.vit import ViT
from lab.core.train import TrainConfig, lr_factor, train
from lab.core.zoo import build, task


def train_batched(models: list[ViT], cfgs: list[TrainConfig], d: Any) -> list[list[float]]:
    """Train `models` (one shape, one recipe, each its own seed) together; returns each one's held-out accuracy
    after every epoch, as lab.core.train.train records it. The models' weights are updated in place."""
    cfg = cfgs[0]
    assert all(c.epochs == cfg.epochs and c.batch == cfg.batch and c.lr == cfg.lr for c in cfgs)
    m = len(models)
    base = copy.deepcopy(models[0]).to("meta")
    params, buffers = stack_module_state(models)

    def one(p: dict, b: dict, x: torch.Tensor) -> torch.Tensor:
        return functional_call(base, (p, b), (x,))

    fwd = vmap(one)
    leaves = list(params.values())
    decay = [p for p in leaves if p.ndim == 3]  # a weight matrix of each model
    rest = [p for p in leaves if p.ndim != 3]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": rest, "weight_decay": 0.0}], lr=cfg.lr, fused=True)
    n = len(d.train)
    steps = math.ceil(n / cfg.batch)
    total = cfg.epochs * steps
    warm = round(cfg.warmup * total)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, warm))
    gens = [streams.generator("train.batches", c.seed) for c in cfgs]
    curves: list[list[float]] = [[] for _ in range(m)]
    xt = d.test.x.expand(m, *d.test.x.shape)
    for _ in range(cfg.epochs):
        orders = torch.stack([torch.randperm(n, generator=g) for g in gens])
        for s in range(steps):
            idx = orders[:, s * cfg.batch:(s + 1) * cfg.batch]
            logits = fwd(params, buffers, d.train.x[idx])
            loss = F.cross_entropy(logits.flatten(0, 1), d.train.y[idx].flatten(), reduction="none")
            loss = loss.view(m, -1).mean(1).sum()  # each model's own mean: its gradient is its own
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        with torch.no_grad():
            acc = (fwd(params, buffers, xt).argmax(-1) == d.test.y).float().mean(1)
        for i in range(m):
            curves[i].append(float(acc[i]))
    with torch.no_grad():
        for i, model in enumerate(models):
            model.load_state_dict({k: v[i] for k, v in params.items()}, strict=False)
    return curves


def timed(fn: Any) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=4, help="models of one shape (seeds 0..M-1)")
    ap.add_argument("--epochs", type=int, default=recipes.VIT_EPOCHS)
    ap.add_argument("--skip-single", action="store_true", help="batched only (no one-at-a-time reference)")
    ap.add_argument("--single", type=int, default=2, help="models trained one at a time for the reference")
    ap.add_argument("--lanes", action="store_true", help="also: the same models in lanes (lab/runtime/cores.py), "
                    "one per free core, in wall time; weights must equal the one-at-a-time ones bit for bit")
    ap.add_argument("--skip-batched", action="store_true", help="no vmap-batched training")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("LAYERLAB_THREADS", "1")))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); load average {os.getloadavg()[0]:.2f}",
          flush=True)
    d = task("digits")
    cfg = recipes.vit_model_config("sequential")
    tcs = [recipes.vit_train_config("sequential", s, args.epochs, checkpoints=()) for s in range(args.models)]

    _training(args, cfg, d, tcs)


def _training(args: argparse.Namespace, cfg: Any, d: Any, tcs: list[TrainConfig]) -> None:
    single: list[tuple[float, float, float]] = []
    alone: list[ViT] = []
    if not args.skip_single:
        for s in range(min(args.single, args.models)):
            m = build(cfg, s)
            w, c, log = timed(lambda m=m, tc=tcs[s]: train(m, d.train, tc, d.test))
            alone.append(m)
            single.append((w, c, accuracy(m, d.test.x, d.test.y)))
            print(f"one at a time, seed {s}: {w:.1f} s wall, {c:.1f} s CPU, held-out {single[-1][2]:.1%}; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    if args.lanes:
        _lanes(args, cfg, d, tcs, single, alone)
    if args.skip_batched:
        return
    models = [build(cfg, s) for s in range(args.models)]
    w, c, curves = timed(lambda: train_batched(models, tcs, d))
    accs = [accuracy(m, d.test.x, d.test.y) for m in models]
    print(f"batched, {args.models} models: {w:.1f} s wall, {c:.1f} s CPU; held-out "
          f"{', '.join(f'{a:.1%}' for a in accs)} (seeds 0..{args.models - 1}); load {os.getloadavg()[0]:.2f}",
          flush=True)
    if single:
        per_single = sum(x[1] for x in single) / len(single)
        print(f"models per CPU-minute: one at a time {60 / per_single:.2f}, batched {60 * args.models / c:.2f}: "
              f"x{per_single * args.models / c:.2f}")
        print(f"held-out, one at a time: {', '.join(f'{x[2]:.1%}' for x in single)}; batched same seeds: "
              f"{', '.join(f'{a:.1%}' for a in accs[:len(single)])}")


def _lanes(args: argparse.Namespace, cfg: Any, d: Any, tcs: list[TrainConfig],
           single: list[tuple[float, float, float]], alone: list[ViT]) -> None:
    """The same trainings as tasks of `cores.lanes` (what IOT's orders trained alone do): wall time per model."""
    from lab.runtime import cores

    n = len(single) or args.single
    models = [build(cfg, s) for s in range(n)]
    threads: set[str] = set()

    def task(i: int) -> Any:
        def run(_: Any) -> None:
            import threading

            threads.add(threading.current_thread().name)
            train(models[i], d.train, tcs[i], d.test)
        return run

    w, c, _ = timed(lambda: cores.lanes([task(i) for i in range(n)]))
    same = alone and all(torch.equal(a, b) for m0, m1 in zip(alone, models, strict=True) for a, b in
                         zip(m0.state_dict().values(), m1.state_dict().values(), strict=True))
    print(f"in lanes, {n} models on {len(threads)} thread(s): {w:.1f} s wall, {c:.1f} s CPU; weights equal to one at "
          f"a time: {same if alone else 'not compared'}; load {os.getloadavg()[0]:.2f}", flush=True)
    if single:
        per = sum(x[0] for x in single) / len(single)
        print(f"models per wall-minute: one at a time {60 / per:.2f}, in lanes {60 * n / w:.2f}: x{per * n / w:.2f}")


if __name__ == "__main__":
    main()
