"""Turns: how many pages of one client address may work at once.

Every page session runs its script, and polls for the jobs it waits on, in the web server's one process. A bound on open
pages (app/page_admission.py `admit_page`) and on queued jobs (lab/runtime/engine/admission.py) is not enough: 50
admitted pages from one address, each redrawing its progress once a second, took the server's CPU from every other
student (a student's preset page: first paint 0.7 s -> 29 s under a flood of 200 links, bench/bench_flood.py). So a page
of one address works (runs its script, or waits for its jobs) only while it holds one of that address's turns; the
others wait, blocked on a condition (no CPU, no messages), and start when a turn frees or their session ends.
A page that waits for no job gives its turn back when its script ends, so stored views pass through in a moment.
The same bound, never given back but by a session's end, caps the open pages of an address (app/page_admission.py).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

MAX_CLIENTS = 5000  # beyond this many addresses, those none of whose sessions is alive are forgotten


class Turns:
    """At most `limit` sessions per client work at once; the rest wait in `wait` (no CPU) until a turn frees."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._holders: dict[str, set[str]] = {}  # client -> its sessions holding a turn
        self._cv = threading.Condition()

    def holders(self, client: str) -> int:
        with self._cv:
            return len(self._holders.get(client, ()))

    def holds(self, client: str, session: str) -> bool:
        with self._cv:
            return session in self._holders.get(client, ())

    def try_take(self, client: str, session: str, alive: Callable[[str], bool]) -> bool:
        """Take a turn if one is free (a turn of an ended session is freed first); True if this session holds one."""
        with self._cv:
            held = self._holders.setdefault(client, set())
            if session in held:
                return True
            if len(held) >= self.limit:
                held.difference_update([s for s in held if not alive(s)])
            if len(held) >= self.limit:
                return False
            held.add(session)
            if len(self._holders) > MAX_CLIENTS:  # a long term's visitors: forget addresses with no live session
                for c in [c for c, sids in self._holders.items() if not any(alive(s) for s in sids)]:
                    del self._holders[c]
            return True

    def wait(self, client: str, session: str, alive: Callable[[str], bool], timeout: float = 3600.0,
             tick: float = 1.0) -> bool:
        """Block until this session holds a turn (True), or its session ended or `timeout` passed (False).
        `tick`: how often ended sessions are looked for (a closed tab frees its turn without telling anyone)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while not self.try_take(client, session, alive):
                left = deadline - time.monotonic()
                if left <= 0 or not alive(session):
                    return False
                self._cv.wait(min(tick, left))
            return True

    def release(self, client: str, session: str) -> None:
        with self._cv:
            held = self._holders.get(client)
            if held is not None and session in held:
                held.discard(session)
                if not held:
                    del self._holders[client]
                self._cv.notify_all()
