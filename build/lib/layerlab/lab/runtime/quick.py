"""Quick mode (LAYERLAB_QUICK=1): every model trains for one epoch and every recovery for a few steps.

It exists for the UI smoke tests (AppTest, browser), which check that pages run, not what they find; the
science tests use explicit small configs instead. Never set it for numbers you report.
"""

from __future__ import annotations

import os


def quick() -> bool:
    """True when LAYERLAB_QUICK is set to a non-empty value other than 0."""
    return os.environ.get("LAYERLAB_QUICK", "") not in ("", "0")


def epochs(n: int) -> int:
    return 1 if quick() else n


def steps(n: int) -> int:
    return min(n, 10) if quick() else n
