"""What the benches report beside their figures: the machine's 1-thread fp32 matmul peak."""

from __future__ import annotations

import time


def peak_gflops() -> float:
    """The machine's 1-thread fp32 matmul peak (three 1024^3 products, the best of them)."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * 1024**3 / best / 1e9
