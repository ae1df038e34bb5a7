"""Admission control: who may add work to the engine's queue, and how much (no Streamlit here).

Every distinct link is a distinct training job, so without bounds one visitor could queue hundreds and put every
student behind them. The rules (`Admission.admit`, called by `Engine.submit` under the engine's lock):
- joining a job that already exists (queued, running or done) is always allowed: it adds no work;
- a *standard* job (a page's default view or a preset, and what it needs) is always admitted at its priority: there
  are few of them, they are shared by everyone and warmed before class;
- a *custom* job (any other setting) runs at CUSTOM, below every standard job, and is refused with `Busy` when its
  session already waits for SESSION_JOBS custom jobs, its client address for CLIENT_JOBS, or its address already
  holds its fair share of the queue: at most half of the QUEUE_JOBS places that other addresses leave free (rounded
  up). So no address, and no two, can fill the queue: with 48 places the first address may hold 24, the second 12,
  a third 6, ... and a newcomer finds a place until the last one is taken ("the lab is busy").
An owner is a (session, client) pair. A client whose address is not known (UNKNOWN) is one address like any other,
bounded together; LOCAL (no network connection: bare mode, the test harness) is bounded per session only; jobs
without an owner (warming, the command line) pass unchecked.
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
UNKNOWN = "unknown"  # a connection whose address the server cannot read: one address, bounded like any other
LOCAL = "local"  # no network connection at all (bare mode, AppTest): bounded per session only


def fair_share(places: int, others: int) -> int:
    """How many of `places` one address may hold while other addresses hold `others`: half of what they leave free,
    rounded up (the last free place still goes to whoever asks). Whatever one address holds, at least as many places
    stay free for the rest, so no address ever fills the queue alone."""
    return max(0, places - others + 1) // 2


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
        counted = owner.client != LOCAL
        mine = theirs = queued_mine = queued_others = 0
        for k in self.custom:
            job = live.get(k)
            if job is None or job.future.done():
                continue
            who = self.owners.get(k, set())
            by_session = any(o.session == owner.session for o in who)
            by_client = counted and any(o.client == owner.client for o in who)
            mine += by_session
            theirs += by_client
            if not job.started:
                if by_client or by_session:
                    queued_mine += 1
                else:
                    queued_others += 1
        if mine >= self.session_jobs:
            raise Busy(f"this page already waits for {mine} settings of its own: wait for them, or try a preset "
                       f"(presets and default views are always served first)")
        if counted and theirs >= self.client_jobs:
            raise Busy(f"your network already waits for {theirs} settings: wait for them, or try a preset "
                       f"(presets and default views are always served first)")
        if queued_mine >= fair_share(self.queue_jobs, queued_others):
            if queued_mine == 0:
                raise Busy("the lab is busy: too many settings are waiting to be computed. Try a preset (presets "
                           "and default views are always served first), or this setting again in a few minutes")
            raise Busy(f"your network already waits for {queued_mine} settings, its share of the queue while others "
                       f"wait too: wait for them, or try a preset (presets and default views are always served "
                       f"first)")
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
