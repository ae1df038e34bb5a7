"""Training throughput of the digits-ViT recipe: M models of one shape trained one at a time (the lab's loop,
lab/core/train.py) against the same M trained together as one batched model (torch.func: stacked weights, vmap), and the
all-orders walk as the lab runs it against a walk whose last block reads only the CLS token. Reported, never
asserted; every figure is a ratio within this one run, with the load average.

Batched training keeps each model's own seed: its initial draw (zoo.build), its batch order (the stream
`train.batches`), the recipe's AdamW step, warm-up and cosine (Adam is elementwise, so one optimizer over stacked
weights is M optimizers). What it cannot keep is bit equality: a batched matmul rounds differently, so a model
trained batched is a close sibling, not a copy; the accuracy columns say how close (against the spread of seeds).
The walk variant is exact in arithmetic (the last block's other tokens never reach the readout); rounding may
differ, so the bench counts the orders whose accuracy moved.
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
from lab.experiments.shuffle import all_orders_accuracy


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


@torch.no_grad()
def walk_cls_last(model: ViT, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    """all_orders_accuracy with the last slot run for the CLS token only (what the readout reads): its keys and
    values still come from every token, its query, projection and MLP from CLS alone."""
    model.eval()
    n = model.n_blocks
    out: list[float] = []

    def last(h: torch.Tensor, b: int, slot: int) -> torch.Tensor:
        blk = model.blocks[b]
        assert blk.slot_embed is None
        bsz, t, w = h.shape
        hd = w // blk.heads
        a = blk.ln1(h)
        qkv = blk.qkv(a).view(bsz, t, 3, blk.heads, hd)
        q = qkv[:, :1, 0].transpose(1, 2)  # [B, heads, 1, hd]
        k, v = qkv[:, :, 1].transpose(1, 2), qkv[:, :, 2].transpose(1, 2)
        att = torch.softmax((q @ k.transpose(-2, -1)) * (hd ** -0.5), dim=-1)
        c = h[:, :1] + blk.proj((att @ v).transpose(1, 2).reshape(bsz, 1, w))
        return c + blk.mlp(blk.ln2(c))

    def walk(h: torch.Tensor, used: list[int]) -> None:
        for b in range(n):
            if b in used:
                continue
            if len(used) == n - 1:
                out.append(float((model.readout(last(h, b, n - 1)).argmax(1) == y).float().mean()))
            else:
                walk(model.run_block(h, b, len(used)), used + [b])

    walk(model.embed(x), [])
    return out


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
    ap.add_argument("--skip-walk", action="store_true", help="training only")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("LAYERLAB_THREADS", "1")))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); load average {os.getloadavg()[0]:.2f}",
          flush=True)
    d = task("digits")
    cfg = recipes.vit_model_config("sequential")
    tcs = [recipes.vit_train_config("sequential", s, args.epochs, checkpoints=()) for s in range(args.models)]

    # the walk: the lab's against the CLS-only last block, on one trained-for-a-bit model (same weights both)
    if not args.skip_walk:
        walks(cfg, d)
    _training(args, cfg, d, tcs)


def walks(cfg: Any, d: Any) -> None:
    wm = build(cfg, 0)
    train(wm, d.train, TrainConfig(epochs=2, batch=64, lr=2e-3, checkpoints=()))
    w0, c0, a0 = timed(lambda: all_orders_accuracy(wm, d.test.x, d.test.y))
    w1, c1, a1 = timed(lambda: walk_cls_last(wm, d.test.x, d.test.y))
    moved = sum(abs(p - q) > 1e-9 for p, q in zip(a0, a1, strict=True))
    print(f"walk of {len(a0)} orders: lab {w0:.1f} s wall ({c0:.1f} s CPU), CLS-only last block {w1:.1f} s wall "
          f"({c1:.1f} s CPU): x{c0 / c1:.2f} in CPU; orders whose accuracy moved: {moved}; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)


def _training(args: argparse.Namespace, cfg: Any, d: Any, tcs: list[TrainConfig]) -> None:
    single: list[tuple[float, float, float]] = []
    if not args.skip_single:
        for s in range(min(args.single, args.models)):
            m = build(cfg, s)
            w, c, log = timed(lambda m=m, tc=tcs[s]: train(m, d.train, tc, d.test))
            single.append((w, c, accuracy(m, d.test.x, d.test.y)))
            print(f"one at a time, seed {s}: {w:.1f} s wall, {c:.1f} s CPU, held-out {single[-1][2]:.1%}; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
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


if __name__ == "__main__":
    main()
