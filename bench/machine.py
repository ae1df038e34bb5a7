"""What the benches report beside their figures: the machine's 1-thread fp32 matmul peak, and its idle CPU."""

from __future__ import annotations

import time
from typing import Optional


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


def cpu_ticks() -> Optional[tuple[int, int]]:
    """(idle, total) jiffies of all CPUs since boot, from /proc/stat (None where there is none)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return fields[3] + fields[4], sum(fields)  # idle + iowait, of user .. steal


def idle_share(before: Optional[tuple[int, int]], after: Optional[tuple[int, int]]) -> Optional[float]:
    """The share of CPU time left idle between two `cpu_ticks()` readings (None if either is missing)."""
    if before is None or after is None:
        return None
    return (after[0] - before[0]) / max(1, after[1] - before[1])


# The machine issue 29's goals were set on: its 1-thread matmul peak read 84-87 GFLOP/s. This shared host's peak has
# read 65-165 GFLOP/s on different days, and a full warm's worker seconds followed it: 1,389 s at 165 and 2,772 s at
# 67-83 (peak x seconds 229k and 208k, 10 % apart). So a run's time at the reference peak is an estimate, not a
# measurement; it is what lets runs on different days be compared with the goals at all.
REFERENCE_GFLOPS = 85.0


def at_reference(seconds: float, *peaks: float) -> float:
    """`seconds` scaled to the reference machine by the mean of the peaks measured around the run."""
    mean = sum(peaks) / len(peaks)
    return seconds * mean / REFERENCE_GFLOPS
