"""Progress reporting without a UI: a callable that takes (fraction done, message).

Experiments nest work (train a teacher, then recover a student), so `span` maps a child's 0..1 onto a slice
of the parent's range; the page turns the outermost callback into a progress bar, the CLI into a text line.
"""

from __future__ import annotations

import sys
from typing import Callable, Optional

# Plumbing: cannot change a number, so editing it keeps every stored result (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

Progress = Callable[[float, str], None]


def silent(fraction: float, message: str) -> None:  # noqa: ARG001 - the no-op default callback
    """A progress callback that ignores every report."""


def span(parent: Optional[Progress], start: float, stop: float) -> Progress:
    """A callback whose 0..1 covers [start, stop] of `parent` (or nothing when there is no parent)."""
    if parent is None:
        return silent

    def child(fraction: float, message: str) -> None:
        f = min(max(fraction, 0.0), 1.0)
        parent(start + (stop - start) * f, message)

    return child


def text_progress(fraction: float, message: str) -> None:
    """A progress line on stderr that redraws itself (the CLI's; stdout stays clean for --json)."""
    bar = "#" * int(fraction * 30)
    sys.stderr.write(f"\r[{bar:<30}] {fraction * 100:5.1f}% {message[:60]:<60}")
    if fraction >= 1.0:
        sys.stderr.write("\r" + " " * 100 + "\r")
    sys.stderr.flush()
