"""Speed and fidelity of the digits-ViT recipe (`lab.core.recipes`) on this machine (reported, never asserted).

In one run, so that the figures share the machine's load: the 1-thread fp32 matmul peak (large square
matmuls), then for each mode and seed one training exactly as the zoo runs it (held-out accuracy after every
epoch included), its wall and CPU seconds and achieved GFLOP/s, and the all-orders walk (720 orders over the
397 test images at depth 6) with its GFLOP/s. FLOPs are counted analytically from the shapes (matmuls only;
training = 3x forward), so GFLOP/s / peak says how much of the machine the work uses.
`--variants` also times one epoch of the speed alternatives that were tried (batch, optimizer, attention).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_vit.py [--quick] [--modes sequential,shuffle] [--seeds 0,1]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Callable

import torch
import torch.nn.functional as F

from lab.core import recipes
from lab.core.models import ViTConfig, accuracy
from lab.core.models import vit as vit_module
from lab.core.train import TrainConfig, train
from lab.core.zoo import build, task
from lab.experiments.shuffle.experiment import all_orders_accuracy


def matmul_peak(n: int, reps: int) -> float:
    """GFLOP/s of n x n fp32 matmuls (the best of `reps` runs after a warm-up), in CPU time like every
    GFLOP/s figure here: on a shared machine wall time also counts the time other processes hold the core."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        a @ b
        best = min(best, time.process_time() - t)
    return 2 * n**3 / best / 1e9


def block_flops(cfg: ViTConfig) -> int:
    """Forward matmul FLOPs of one block on one image (qkv, attention scores and values, projection, MLP)."""
    t, w = cfg.n_patches + 1, cfg.width
    return 2 * t * w * (3 * w + w + 2 * cfg.mlp_ratio * w) + 2 * 2 * t * t * w


def forward_flops(cfg: ViTConfig) -> int:
    """Forward matmul FLOPs of the whole model on one image (the stem and head are included, though tiny)."""
    stem = 2 * cfg.n_patches * cfg.channels * cfg.patch**2 * cfg.width
    return stem + cfg.depth * block_flops(cfg) + 2 * cfg.width * cfg.n_classes


def timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def n_walk_block_runs(n: int) -> int:
    """Block runs of the prefix-sharing walk over all orders of n blocks: sum over k of n!/(n-k)!."""
    total, level = 0, 1
    for k in range(n):
        level *= n - k
        total += level
    return total


def sdpa_attention(self: vit_module.Block, h: torch.Tensor) -> torch.Tensor:
    """The block's attention through torch's fused kernel (a variant timed by --variants)."""
    b, t, w = h.shape
    q, k, v = self.qkv(h).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
    return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, w))


def variants(peak: float) -> None:
    """One epoch (1,400 images, seconds per epoch) of each speed alternative, sequential mode."""
    d = task("digits")
    explicit = vit_module.Block.attention
    cfg = recipes.vit_model_config("sequential")
    flops = 3 * forward_flops(cfg) * len(d.train)
    print("\nspeed variants: one epoch of training (1,400 images), sequential")
    print(f"{'batch':>5} {'optimizer':>14} {'attention':>9} {'wall s':>7} {'cpu s':>6} {'GFLOP/s':>8} {'of peak':>8}")
    for batch, opt, fused, attn in [(64, "adam", False, "explicit"), (64, "adamw", True, "explicit"),
                                    (64, "adamw", True, "sdpa"), (128, "adamw", True, "explicit"),
                                    (256, "adam", False, "explicit"), (256, "adamw", False, "explicit"),
                                    (256, "adamw", True, "explicit"), (256, "adamw", True, "sdpa"),
                                    (512, "adamw", True, "explicit")]:
        vit_module.Block.attention = sdpa_attention if attn == "sdpa" else explicit
        try:
            m = build(cfg, 0)
            tc = TrainConfig(epochs=1, batch=batch, lr=1e-3, optimizer=opt, fused=fused, checkpoints=())
            train(m, d.train, tc)  # warm-up epoch: allocator and kernels
            w, c, _ = timed(lambda m=m, tc=tc: train(m, d.train, tc))
        finally:
            vit_module.Block.attention = explicit
        print(f"{batch:>5} {opt + (' fused' if fused else ''):>14} {attn:>9} {w:7.2f} {c:6.2f} "
              f"{flops / c / 1e9:8.1f} {flops / c / 1e9 / peak:8.0%}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a tiny smoke run: 1 epoch, 1 seed, 60 test images")
    ap.add_argument("--modes", default="sequential,shuffle")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--variants", action="store_true", help="also time the speed alternatives")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread; load average at start: {os.getloadavg()[0]:.2f}")
    peak = max(matmul_peak(1024, 10), matmul_peak(2048, 4))
    print(f"fp32 matmul peak (1 thread, square 1024/2048, CPU time): {peak:.1f} GFLOP/s")
    d = task("digits")
    seeds = [0] if args.quick else [int(s) for s in args.seeds.split(",")]
    epochs = 1 if args.quick else recipes.VIT_EPOCHS
    xt, yt = (d.test.x[:60], d.test.y[:60]) if args.quick else (d.test.x, d.test.y)
    print(f"\nrecipe: {recipes.vit_train_config('sequential', 0, epochs)}; stem_scale {recipes.STEM_SCALE}")
    print(f"{'mode':>10} {'seed':>4} {'in order':>8} {'orders mean':>11} {'min':>6} {'max':>6} "
          f"{'train wall':>10} {'cpu':>6} {'GFLOP/s':>8} {'of peak':>7} {'walk wall':>9} {'cpu':>6} "
          f"{'GFLOP/s':>8} {'of peak':>7}")
    for mode in args.modes.split(","):
        for seed in seeds:
            cfg = recipes.vit_model_config(mode)
            tc = recipes.vit_train_config(mode, seed, epochs)
            m = build(cfg, seed)
            tw, tcpu, _ = timed(lambda m=m, tc=tc: train(m, d.train, tc, d.test))
            train_gf = 3 * forward_flops(cfg) * len(d.train) * epochs / tcpu / 1e9
            in_order = accuracy(m, xt, yt)
            ww, wcpu, accs = timed(lambda m=m: all_orders_accuracy(m, xt, yt))
            walk_gf = (n_walk_block_runs(cfg.depth) * block_flops(cfg) * len(xt)) / wcpu / 1e9
            print(f"{mode:>10} {seed:>4} {in_order:8.1%} {sum(accs) / len(accs):11.1%} {min(accs):6.1%} "
                  f"{max(accs):6.1%} {tw:10.1f} {tcpu:6.1f} {train_gf:8.1f} {train_gf / peak:7.0%} "
                  f"{ww:9.1f} {wcpu:6.1f} {walk_gf:8.1f} {walk_gf / peak:7.0%}", flush=True)
    if args.variants:
        variants(peak)


if __name__ == "__main__":
    main()
