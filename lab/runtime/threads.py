"""Process-wide runtime settings for torch on a small shared CPU machine.

Why one thread: these models are small, so a second intra-op thread gains little when the machine is quiet
(measured: 12 epochs of the 8x128 teacher in 8.3 s with 2 threads against 10 s with 1), but when several jobs
or processes run at once the threads oversubscribe the 2 cores and spin: 2 epochs took 276 s with 2 threads
against 23 s with 1 on a loaded machine. A classroom server always runs jobs side by side, so 1 is the default.
"""

from __future__ import annotations

import torch

from lab.runtime import settings

# Plumbing: cannot change a number, so editing it keeps every stored result (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True


def configure_threads() -> int:
    """Set torch's intra-op threads from $LAYERLAB_THREADS (default 1); returns the number set. A value that is not a
    whole number from 1 to 64 is a SettingError of one line (lab/runtime/settings.py)."""
    n = settings.get("LAYERLAB_THREADS")
    torch.set_num_threads(n)
    return n
