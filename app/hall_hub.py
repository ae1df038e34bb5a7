"""Push, not poll: the light student view's phones wait on one watcher per class (app/hall_route.py).

A phone's live connection (server-sent events) registers with its class's `Room`; while a room has listeners one
task reads the class's public state (lab/classroom/hall.room) every TICK seconds, in a worker thread, and hands the
new state to every listener only when it changed. So 300 idle phones cost one database read per tick and a socket
each; "Next step" and "Reveal" reach them within a tick and a write. A listener keeps only the newest state (a slow
phone skips states, it never queues them).

Bounds: at most LAYERLAB_HALL_STREAMS connections in all and PER_VOTER per joined student, so one student's
cookie (replayed by a script) cannot hold the server's sockets; a hall behind one address is never counted as one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Optional

from lab.runtime import settings

TICK = 0.2  # seconds between a room's reads while phones listen: Next and Reveal arrive within one
HEARTBEAT = 15.0  # seconds between comments on an idle connection (proxies close silent ones)
CACHED = 1024  # classes whose state is kept for a tick (a made-up code is read once a tick at most)
PER_VOTER = 4  # live connections one joined student may hold (a phone and a laptop, a reload or two)
log = logging.getLogger("layerlab.workshop")


_hubs: "weakref.WeakSet[Hub]" = weakref.WeakSet()


def close_all() -> None:
    """End every live phone connection of this process (the server is stopping: its graceful shutdown waits for
    open responses, and a phone's never ends). Safe from a signal handler: the work is handed to each hub's loop."""
    for hub in list(_hubs):
        hub.close()


class Full(Exception):
    """No live connection for this one: the message says why and what to do."""


@dataclass
class Room:
    listeners: set[asyncio.Queue] = field(default_factory=set)
    text: str = ""
    task: Optional[asyncio.Task] = None


class Hub:
    """The class rooms of one server process; `read(code)` gives a class's public state (a blocking call)."""

    def __init__(self, read: Callable[[str], dict[str, Any]], tick: float = TICK,
                 max_streams: Optional[int] = None) -> None:
        self.read = read
        self.tick = tick
        self.max_streams = max_streams
        self._rooms: dict[str, Room] = {}
        self._cache: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._pending: dict[str, asyncio.Future] = {}
        self._voters: dict[tuple[str, str], int] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self.closing = False
        _hubs.add(self)

    def close(self) -> None:
        """No new connections, and every open one ends after its current event (thread- and signal-safe)."""
        self.closing = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._end_all)

    def _end_all(self) -> None:
        for room in self._rooms.values():
            for q in list(room.listeners):
                if q.full():
                    q.get_nowait()
                q.put_nowait(None)  # the end of the stream

    @property
    def streams(self) -> int:
        return sum(len(r.listeners) for r in self._rooms.values())

    def _limit(self) -> int:
        return self.max_streams if self.max_streams is not None else settings.get("LAYERLAB_HALL_STREAMS")

    async def _fresh(self, code: str, force: bool = False) -> str:
        """The class's state as JSON, read at most once a tick however many ask at once (one read in flight per
        class; the answers of classes nobody listens to are kept for a tick in a bounded cache)."""
        hit = self._cache.get(code)
        if hit is not None and not force and time.monotonic() - hit[1] < self.tick:
            return hit[0]
        pending = self._pending.get(code)
        if pending is None:
            pending = asyncio.ensure_future(asyncio.to_thread(self.read, code))
            self._pending[code] = pending
            try:
                text = json.dumps(await pending, sort_keys=True)
            finally:
                self._pending.pop(code, None)
            self._cache[code] = (text, time.monotonic())
            self._cache.move_to_end(code)
            while len(self._cache) > CACHED:
                self._cache.popitem(last=False)
            return text
        await asyncio.shield(pending)
        return self._cache[code][0] if code in self._cache else json.dumps(pending.result(), sort_keys=True)

    async def state(self, code: str) -> dict[str, Any]:
        return json.loads(await self._fresh(code))

    async def _watch(self, code: str) -> None:
        room = self._rooms[code]
        while room.listeners:
            await asyncio.sleep(self.tick)
            try:
                text = await self._fresh(code, force=True)
            except Exception:  # noqa: BLE001 - a database hiccup: the phones keep the last state, the log says why
                log.exception("could not read class %s for its phones", code)
                continue
            if text != room.text and not self.closing:
                room.text = text
                for q in list(room.listeners):
                    if q.full():
                        q.get_nowait()  # a slow phone skips to the newest state
                    q.put_nowait(text)
        room.task = None
        if not room.listeners:
            self._rooms.pop(code, None)

    def admit(self, code: str, voter: str) -> asyncio.Queue:
        """Register a live connection (Full when a bound is reached); pair with `leave`."""
        self._loop = asyncio.get_running_loop()
        if self.closing:
            raise Full("the server is stopping: this page reconnects by itself when it is back")
        if self.streams >= self._limit():
            raise Full("the server holds as many live phone connections as it may: reload in a minute")
        if self._voters.get((code, voter), 0) >= PER_VOTER:
            raise Full(f"this student has {PER_VOTER} live connections to the class already: close a tab")
        self._voters[(code, voter)] = self._voters.get((code, voter), 0) + 1
        q: asyncio.Queue = asyncio.Queue(maxsize=1)
        room = self._rooms.setdefault(code, Room())
        room.listeners.add(q)
        if room.task is None:
            room.task = asyncio.get_running_loop().create_task(self._watch(code))
        return q

    def leave(self, code: str, voter: str, q: asyncio.Queue) -> None:
        room = self._rooms.get(code)
        if room is not None:
            room.listeners.discard(q)
        n = self._voters.get((code, voter), 1) - 1
        if n <= 0:
            self._voters.pop((code, voter), None)
        else:
            self._voters[(code, voter)] = n

    async def events(self, code: str, q: asyncio.Queue) -> AsyncIterator[str]:
        """The connection's server-sent events: the state now, then every change, a comment when idle."""
        first = await self._fresh(code)
        room = self._rooms.get(code)
        if room is not None and not room.text:
            room.text = first
        yield f"data: {first}\n\n"
        while True:
            try:
                text = await asyncio.wait_for(q.get(), timeout=HEARTBEAT)
            except TimeoutError:
                yield ": still here\n\n"
                continue
            if text is None:
                return
            yield f"data: {text}\n\n"
