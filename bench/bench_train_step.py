"""The digits-ViT training step (recipe: batch 64, AdamW fused, sequential route) three ways, in one run: eager fp32
(the lab's loop), bf16 autocast, and torch.compile (compile time counted apart and amortised over one 40-epoch
training). Reported as CPU-time ratios against eager, with the load average; never asserted.

bf16 pays only where the CPU has bf16 arithmetic (AVX512-BF16 / AMX); elsewhere it is emulated. torch.compile
changes the rounding (fused kernels), so a compiled model is a close sibling, not a copy, like a batched one.
Usage: PYTHONPATH=. .venv/bin/python bench/bench_train_step.py [--steps 60]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from typing import Any, Callable

import torch
import torch.nn.functional as F

from lab.core import recipes
from lab.core.train import make_optimizer
from lab.core.zoo import build, task


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln for ln in f if ln.startswith("flags")), "").split()
    except OSError:
        return "unknown"
    return " ".join(x for x in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if x in flags) or "none listed"


def _steps(step: Callable[[torch.Tensor, torch.Tensor], None], d: Any, n: int) -> float:
    """CPU seconds per step over n steps (after 3 warm-up steps)."""
    gen = torch.Generator().manual_seed(0)
    idx = [torch.randperm(len(d.train), generator=gen)[:recipes.VIT_BATCH] for _ in range(n + 3)]
    for i in idx[:3]:
        step(d.train.x[i], d.train.y[i])
    c = time.process_time()
    for i in idx[3:]:
        step(d.train.x[i], d.train.y[i])
    return (time.process_time() - c) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--skip-compile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("LAYERLAB_THREADS", "1")))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), CPU flags: {_cpu_flags()}; load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    d = task("digits")
    cfg = recipes.vit_model_config("sequential")
    tc = recipes.vit_train_config("sequential", 0, checkpoints=())
    route = tuple(range(cfg.depth))
    steps_per_training = recipes.VIT_EPOCHS * math.ceil(len(d.train) / recipes.VIT_BATCH)

    def stepper(model: Any, forward: Callable[[torch.Tensor], torch.Tensor], bf16: bool = False) -> Callable:
        opt = make_optimizer(model, tc)
        model.train()

        def step(x: torch.Tensor, y: torch.Tensor) -> None:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = F.cross_entropy(forward(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return step

    m0 = build(cfg, 0)
    eager = _steps(stepper(m0, lambda x: m0(x, route)), d, args.steps)
    print(f"eager fp32: {1e3 * eager:.1f} ms CPU per step; load {os.getloadavg()[0]:.2f}", flush=True)
    m1 = build(cfg, 0)
    bf = _steps(stepper(m1, lambda x: m1(x, route), bf16=True), d, args.steps)
    print(f"bf16 autocast: {1e3 * bf:.1f} ms CPU per step: x{eager / bf:.2f} against eager; load "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    if args.skip_compile:
        return
    m2 = build(cfg, 0)
    compiled = torch.compile(lambda x: m2(x, route))
    c = time.process_time()
    st = stepper(m2, compiled)
    st(d.train.x[:recipes.VIT_BATCH], d.train.y[:recipes.VIT_BATCH])  # compiles forward and backward
    compile_s = time.process_time() - c
    comp = _steps(st, d, args.steps)
    whole = (compile_s + comp * steps_per_training) / (eager * steps_per_training)
    print(f"torch.compile: {1e3 * comp:.1f} ms CPU per step: x{eager / comp:.2f} against eager; compile "
          f"{compile_s:.0f} s CPU; one {recipes.VIT_EPOCHS}-epoch training ({steps_per_training} steps), compile "
          f"included: x{1 / whole:.2f}; load {os.getloadavg()[0]:.2f}", flush=True)
    eager2 = _steps(stepper(m0, lambda x: m0(x, route)), d, args.steps)
    print(f"eager fp32 again (drift under load): {1e3 * eager2:.1f} ms CPU per step; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
