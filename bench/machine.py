"""What the benches report beside their figures: the machine's 1-thread fp32 matmul peak, its idle CPU and its
load average, on every platform (where one of them cannot be had, it is None and the bench says so)."""

from __future__ import annotations

import os
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


def cpu_ticks(proc_stat: str = "/proc/stat") -> Optional[tuple[float, float]]:
    """(idle, total) CPU time of all CPUs since boot: jiffies from /proc/stat on Linux, else seconds from psutil
    (macOS, Windows); None where neither can tell. Only the ratio of two readings' differences means anything."""
    try:
        with open(proc_stat) as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
        return fields[3] + fields[4], sum(fields)  # idle + iowait, of user .. steal
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil  # a dependency of Dask's distributed
    except ImportError:
        return None
    t = psutil.cpu_times()
    guest = getattr(t, "guest", 0.0) + getattr(t, "guest_nice", 0.0)  # Linux only, and counted in user already
    return t.idle + getattr(t, "iowait", 0.0), sum(t) - guest


def load_average() -> Optional[tuple[float, float, float]]:
    """The 1, 5 and 15 minute load averages; None where the system keeps none (Windows)."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


def load_text() -> str:
    """The load average as a bench prints it."""
    load = load_average()
    if load is None:
        return "load average not available on this platform"
    return f"load average {load[0]:.2f} / {load[1]:.2f} on {os.cpu_count()} cores"


def idle_share(before: Optional[tuple[float, float]], after: Optional[tuple[float, float]]) -> Optional[float]:
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
