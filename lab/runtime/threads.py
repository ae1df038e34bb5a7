"""Process-wide runtime settings for torch and the native thread pools on a small shared CPU machine.

Why one thread: these models are small, so a second intra-op thread gains little when the machine is quiet
(measured: 12 epochs of the 8x128 teacher in 8.3 s with 2 threads against 10 s with 1), but when several jobs
or processes run at once the threads oversubscribe the 2 cores and spin: 2 epochs took 276 s with 2 threads
against 23 s with 1 on a loaded machine. A classroom server always runs jobs side by side, so 1 is the default.

The same holds for the pools beside torch's: numpy's and scipy's OpenBLAS, OpenMP and numba each start one thread
per core by default, and the lab's matrices are too small to split. A linear probe plus a PCA on 2,000 x 64
features (bench/bench_threads.py, 2 cores) took 80.5 ms wall and 160 ms CPU with 2 threads per pool against 13.0 ms
with 1 alone, and 344 ms against 12.9 ms with a second process doing the same: the idle threads spin. Same
predictions either way. So every pool gets the same count.
"""

from __future__ import annotations

import os
import sys

import torch

from lab.runtime import settings

# Plumbing: cannot change a number, so editing it keeps every stored result (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

# Read when a library loads (scipy's OpenBLAS, numba): set for those not loaded yet and for child processes.
POOL_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                  "NUMBA_NUM_THREADS")


def configure_threads() -> int:
    """Set torch's intra-op threads and every native pool's (BLAS, OpenMP, numba) from $LAYERLAB_THREADS (default
    1); returns the number set. A value that is not a whole number from 1 to 64 is a SettingError of one line
    (lab/runtime/settings.py)."""
    n = settings.get("LAYERLAB_THREADS")
    torch.set_num_threads(n)
    limit_pools(n)
    return n


def limit_pools(n: int) -> None:
    """Give the native pools beside torch's `n` threads: those already loaded now (threadpoolctl, which finds
    OpenBLAS, MKL, OpenMP and Accelerate on Linux and macOS), and those loaded later through their environment
    variables (which child processes inherit)."""
    for name in POOL_VARIABLES:
        os.environ[name] = str(n)
    from threadpoolctl import threadpool_limits

    threadpool_limits(n)
    numba = sys.modules.get("numba")  # only where it is loaded already: importing it costs a second
    if numba is not None:
        try:
            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        except Exception:  # noqa: BLE001 - a pool that cannot be set runs with its own count, numbers unchanged
            pass
