"""Progress reporting without a UI: a callable that takes (fraction done, message).

Experiments nest work (train a teacher, then recover a student), so `span` maps a child's 0..1 onto a slice
of the parent's range; the page turns the outermost callback into a progress bar, the CLI into `text_progress`
(a tqdm bar on a terminal, plain lines in a file or pipe).

The training loop's epoch reports carry numbers (loss, held-out accuracy): `epoch_of` reads them and `Curves`
collects a job's reports into training curves, which the engine keeps with the job (lab/runtime/engine/) and the
page draws under its progress bar (app/training_view.py).
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import dataclass
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


# -- training curves: the structured content of the training loop's reports ----------------------------------------
# lab/core/train.py reports every epoch as "training: epoch 3/12, loss 1.891, held-out accuracy 83.2 %". Its text is
# read here, once, into numbers (the training loop and the zoo are in every model's code version: a structured
# report there would re-key every stored model); tests/test_training_curve.py runs the loop and checks that every
# report it makes parses. A wrapper may prefix the message, so it is searched, not matched.
_EPOCH = re.compile(r"training: epoch (\d+)/(\d+), loss (-?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|nan|inf))"
                    r"(?:, held-out accuracy (\d+(?:\.\d*)?) %)?", re.IGNORECASE)


@dataclass(frozen=True)
class Epoch:
    """One epoch of a training run as its progress report gives it."""

    epoch: int  # 1-based
    epochs: int  # of the whole run
    loss: float  # mean training loss over the epoch
    acc: Optional[float]  # held-out accuracy in [0, 1] after the epoch; None when the run had no held-out split


def epoch_of(message: str) -> Optional[Epoch]:
    """The epoch a progress message reports, or None when it is not a training loop's epoch report."""
    m = _EPOCH.search(message)
    if m is None:
        return None
    epoch, epochs = int(m.group(1)), int(m.group(2))
    if not 1 <= epoch <= epochs:
        return None
    # rounded: 83.2 % is 0.832, not 0.8320000000000001 (the report gives a tenth of a percent)
    return Epoch(epoch, epochs, float(m.group(3)), None if m.group(4) is None else round(float(m.group(4)) / 100, 6))


class Curves:
    """The training curves of one job, point by point as its reports arrive: a job may train several models in
    turn (one after the other, or interleaved on lanes), so an epoch joins the run it continues (same length, the
    epoch before it last), else starts a new one. Kept as plain numbers so they cross processes in a job's
    progress file (`data` / `from_data`); bounded, as a progress file is rewritten several times a second."""

    MAX_RUNS = 12  # the newest runs are kept
    MAX_EPOCHS = 2000  # per run (a recipe on a small task trains up to 40x its epochs)

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the job's thread adds while a page reads
        self._runs: list[list[Epoch]] = []
        self.points = 0  # epochs added so far: a page redraws the curve only when this changed

    def add(self, message: str) -> bool:
        """Take one progress message; True when it was an epoch report (and so added a point)."""
        e = epoch_of(message)
        if e is None:
            return False
        with self._lock:
            # the oldest run waiting for this epoch: models trained side by side report in turn (A1 B1 A2 B2)
            run = next((r for r in self._runs if r[-1].epochs == e.epochs and r[-1].epoch == e.epoch - 1
                        and len(r) < self.MAX_EPOCHS), None)
            if run is None:
                run = []
                self._runs.append(run)
                del self._runs[:-self.MAX_RUNS]
            run.append(e)
            self.points += 1
        return True

    def runs(self) -> list[list[Epoch]]:
        """A copy of the runs, each in epoch order, in the order they started."""
        with self._lock:
            return [list(r) for r in self._runs]

    def data(self) -> list[dict[str, Any]]:
        """JSON-ready: one {"epochs": n, "points": [[epoch, loss, acc or None], ...]} per run."""
        return [{"epochs": r[0].epochs, "points": [[e.epoch, e.loss, e.acc] for e in r]} for r in self.runs()]

    @classmethod
    def from_data(cls, data: Any) -> "Curves":
        """The curves `data()` wrote (read back from a progress file); whatever does not fit is left out."""
        out = cls()
        for run in data if isinstance(data, list) else []:
            try:
                epochs = int(run["epochs"])
                points = [Epoch(int(p[0]), epochs, float(p[1]), None if p[2] is None else float(p[2]))
                          for p in run["points"]][: cls.MAX_EPOCHS]
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            if points:
                out._runs.append(points)
                out.points += len(points)
        del out._runs[:-cls.MAX_RUNS]
        return out


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
