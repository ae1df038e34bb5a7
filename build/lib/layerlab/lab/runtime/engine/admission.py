"""Admission control: who may add work to the engine's queue, and how much (no Streamlit here).

Every distinct link is a distinct training job, so without bounds one visitor could queue hundreds and put every
student behind them. The rules (`Admission.admit`, called by `Engine.submit` under the engine's lock):
- joining a job that already exists (queued, running or done) is always allowed: it adds no work;
- a *standard* job (a page's default view or a preset, and what it needs) is always admitted at its priority: there
  are few of them, they are shared by everyone and warmed before class;
- a *custom* job (any other setting) runs at CUSTOM, below every standard job, and is refused with `Busy` when its
  session already waits for SESSION_JOBS custom jobs, its client address (when known) for CLIENT_JOBS, or the
  whole queue holds QUEUE_JOBS custom jobs that have not started.
An owner is a (session, client) pair; jobs without an owner (warming, the command line) pass unchecked.
`Admission.sweep` drops queued jobs whose every owner has left (the app tells which sessions are alive).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

CUSTOM = -1  # the priority of a setting outside the presets: after every default view and preset, before warming
SESSION_JOBS = 12  # a page's pieces (Shuffle asks for about 8 at once, a pin adds its own), not a queue of one's own
CLIENT_JOBS = 24  # one address may be a classroom behind a NAT
QUEUE_JOBS = 48  # custom jobs waiting, from everyone: beyond that the lab is busy
UNKNOWN = "unknown"  # a client whose address the server does not know: bounded per session only


@dataclass(frozen=True)
class Owner:
    """Who asked for a job: the page session and an opaque id of its network address."""

    session: str
    client: str


class Busy(RuntimeError):
    """A job that was not admitted; the message is for the page."""


class Admission:
    """The owners of each job (by job key) and the bounds on custom work."""

    def __init__(self, session_jobs: int = SESSION_JOBS, client_jobs: int = CLIENT_JOBS,
                 queue_jobs: int = QUEUE_JOBS) -> None:
        self.session_jobs, self.client_jobs, self.queue_jobs = session_jobs, client_jobs, queue_jobs
        self.owners: dict[str, set[Owner]] = {}
        self.custom: set[str] = set()  # keys of jobs admitted as custom

    def admit(self, key: str, owner: Optional[Owner], standard: bool, live: dict[str, Any]) -> int:
        """Check a new job (not a join) against the bounds; returns the priority offset to use (0 or CUSTOM), or
        raises Busy. `live` maps job keys to the engine's jobs (for what is still waiting)."""
        if standard or owner is None:
            return 0
        mine = theirs = queued = 0
        for k in self.custom:
            job = live.get(k)
            if job is None or job.future.done():
                continue
            who = self.owners.get(k, set())
            mine += any(o.session == owner.session for o in who)
            theirs += owner.client != UNKNOWN and any(o.client == owner.client for o in who)
            queued += not job.started
        if mine >= self.session_jobs:
            raise Busy(f"this page already waits for {mine} settings of its own: wait for them, or try a preset "
                       f"(presets and default views are always served first)")
        if theirs >= self.client_jobs:
            raise Busy(f"your network already waits for {theirs} settings: wait for them, or try a preset "
                       f"(presets and default views are always served first)")
        if queued >= self.queue_jobs:
            raise Busy("the lab is busy: too many settings are waiting to be computed. Try a preset (presets and "
                       "default views are always served first), or this setting again in a few minutes")
        return CUSTOM

    def add(self, key: str, owner: Optional[Owner], custom: bool) -> None:
        if owner is not None:
            self.owners.setdefault(key, set()).add(owner)
        if custom:
            self.custom.add(key)

    def forget(self, keys: Iterable[str]) -> None:
        for k in keys:
            self.owners.pop(k, None)
            self.custom.discard(k)

    def orphans(self, live: dict[str, Any], alive: Callable[[str], bool]) -> list[str]:
        """Keys of queued jobs (not started) that had owners and whose every owner's session has ended."""
        gone = []
        for k, who in self.owners.items():
            job = live.get(k)
            if job is None or job.future.done() or job.started or job.sent:
                continue
            if who and not any(alive(o.session) for o in who):
                gone.append(k)
        return gone
