"""Progress reporting without a UI: a callable that takes (fraction done, message).

Experiments nest work (train a teacher, then recover a student), so `span` maps a child's 0..1 onto a slice
of the parent's range; the page turns the outermost callback into a progress bar, the CLI into `text_progress`
(a tqdm bar on a terminal, plain lines in a file or pipe).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Optional, TextIO

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


class _TextProgress:
    """The state behind `text_progress`: a tqdm bar on a terminal, else a plain line now and then.

    A bar redraws itself with carriage returns, which turn a log file or a CI transcript into one unreadable line,
    so a stream that is not a terminal gets whole lines instead: the first report, then at most one line per
    `every_s` seconds and only after `step` more of the work (or after `heartbeat_s`, so a long silent stretch still
    shows the run is alive), and the end. A report of 1.0 closes the bar, and the next report starts a new one (a
    table reports several pools in turn)."""

    def __init__(self, every_s: float = 1.0, step: float = 0.10, heartbeat_s: float = 30.0) -> None:
        self.every_s, self.step, self.heartbeat_s = every_s, step, heartbeat_s
        self._lock = threading.Lock()  # the engine's threads may report while the main thread does
        self._bar: Any = None
        self._open = False
        self._t0 = self._last_t = 0.0
        self._last_f = 0.0

    def __call__(self, fraction: float, message: str) -> None:
        f = min(max(fraction, 0.0), 1.0)
        stream = sys.stderr
        with self._lock:
            if _is_terminal(stream):
                self._draw(stream, f, message)
            else:
                self._line(stream, f, message)

    def _draw(self, stream: TextIO, f: float, message: str) -> None:
        if self._bar is None:
            from tqdm import tqdm

            # tqdm draws nothing on a terminal that reports no size (a fresh pseudo-terminal in a container)
            sized = min(_size(stream)) > 0
            self._bar = tqdm(total=1.0, initial=f, desc=message[:60], file=stream, leave=False, dynamic_ncols=sized,
                             ncols=None if sized else 100, nrows=None if sized else 24,
                             bar_format="{percentage:5.1f}% |{bar:30}| {elapsed}<{remaining} {desc}")
        else:
            self._bar.set_description_str(message[:60], refresh=False)
            self._bar.update(f - self._bar.n)  # tqdm limits how often it redraws
        if f >= 1.0:
            self._bar.close()
            self._bar = None

    def _line(self, stream: TextIO, f: float, message: str) -> None:
        now = time.monotonic()
        if not self._open:
            self._open, self._t0 = True, now
        # abs: a fraction that falls back is news too (a next pool that reports without the last one's end)
        elif f < 1.0 and (now - self._last_t < self.every_s
                          or (abs(f - self._last_f) < self.step and now - self._last_t < self.heartbeat_s)):
            return
        self._last_t, self._last_f = now, f
        stream.write(f"[{f * 100:5.1f}% {now - self._t0:6.0f} s] {' '.join(message.split())}\n")
        stream.flush()
        if f >= 1.0:
            self._open = False


def _size(stream: Any) -> tuple[int, int]:
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return 0, 0
    return size.columns, size.lines


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a replaced or closed stream is no terminal
        return False


_TEXT = _TextProgress()


def text_progress(fraction: float, message: str) -> None:
    """The CLI's progress on stderr (stdout stays clean for --json): a bar on a terminal, newline-terminated lines
    in a file or pipe (see `_TextProgress`). A plain function, so a pool can take it by reference."""
    _TEXT(fraction, message)
