"""A call with a time bound, run off the caller's thread: how a server checks what a user sent (an uploaded CSV).

Why: a page's script runs on the server's script thread, and a check of a hostile file there held every other
session's page (csv.Sniffer's quadratic regular expression: 17 CPU-seconds for 64 kB, the GIL held throughout).
`run(fn, *args, seconds=...)` hands the call to a small pool of worker threads and waits at most `seconds` for it;
the caller's wait releases the GIL, so other sessions' pages run meanwhile. A call that runs over raises `Overdue`
(a ValueError, so a page's usual handling of bad input shows its one-line message), and the call itself stops at
its next `check()` (a long loop calls it now and then), so an abandoned check does not keep a worker busy.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Any, Callable, Optional, TypeVar

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

WORKERS = 2  # checks at once; more wait their turn (within their own time bound)
T = TypeVar("T")
_pool = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="layerlab-check")
_local = threading.local()


class Overdue(ValueError):
    """A bounded call ran past its time; the message says what took too long, in words for the user."""


def _within(deadline: float, what: str, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    _local.deadline, _local.what = deadline, what
    try:
        if time.monotonic() > deadline:  # waited its whole time for a worker: not started at all
            raise Overdue(what)
        return fn(*args)
    finally:
        _local.deadline = None


def run(fn: Callable[..., T], *args: Any, seconds: float, what: str) -> T:
    """`fn(*args)` on a worker thread, its result or its exception; `Overdue(what)` once `seconds` have passed
    (counted from now, so a wait for a free worker counts too). `what` is the one-line message the user reads."""
    deadline = time.monotonic() + seconds
    future = _pool.submit(_within, deadline, what, fn, args)
    try:
        return future.result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise Overdue(what) from None


def check() -> None:
    """Inside a call that `run` made: raise `Overdue` once its time is up (elsewhere: nothing)."""
    deadline: Optional[float] = getattr(_local, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise Overdue(_local.what)
