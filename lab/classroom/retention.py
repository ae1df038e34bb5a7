"""Retention on a timer: what the lab keeps about a class and its students' files is deleted when its time is up,
whether or not anyone opens a class or uploads again.

Each pass deletes
- classes CLASS_DAYS after their start, with their predictions, and expired flood records (lab/classroom/
  workshop_db.py: `Workshop.purge`);
- uploaded CSVs no page used for LAYERLAB_UPLOAD_DAYS (lab/classroom/uploads.py: `expire`).
Why a timer: purging only when a class was opened let a 40-day-old class (its students' predictions) stay as long as
nobody opened another. One daemon thread per server process (`start`, called as the server boots and by the page
shell), a pass at once and then every EVERY_S. What it purges is fixed when it starts (the database's URL and the
store's folder); a SQLite database that was never made is not made by it. A pass that fails is logged and tried
again at the next; several servers of one course each run theirs (a purge is idempotent).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

EVERY_S = 3600.0
log = logging.getLogger("layerlab.retention")
Task = tuple[str, Callable[[], Any]]


class Retention:
    """Run `tasks` (name, function) now and then every `every` seconds on a daemon thread, until `stop`."""

    def __init__(self, tasks: Sequence[Task], every: float = EVERY_S) -> None:
        self.tasks, self.every = list(tasks), every
        self.passes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="layerlab-retention", daemon=True)

    def start(self) -> Retention:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def run_once(self) -> None:
        for name, task in self.tasks:
            try:
                done = task()
                if done:
                    log.info("retention: %s: %s deleted", name, done if isinstance(done, int) else len(done))
            except Exception:  # noqa: BLE001 - logged; the next pass tries again
                log.exception("retention: %s could not be purged", name)
        self.passes += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self.every)


def tasks(url: Optional[str] = None, root: Optional[Path | str] = None) -> list[Task]:
    """The server's retention: the workshop database at `url` (default: LAYERLAB_DB or the store's SQLite) and the
    uploads under the store's folder `root` (default: the active store's)."""
    from lab.classroom import class_engine, uploads, workshop_db
    from lab.runtime import settings
    from lab.runtime.store import active_store

    url = url or class_engine.default_url()
    root = Path(root) if root is not None else Path(active_store().root)
    sqlite_file = Path(url[len("sqlite:///"):]) if url.startswith("sqlite:///") else None

    def classes() -> int:
        if sqlite_file is not None and not sqlite_file.exists():  # no class was ever opened here
            return 0
        return workshop_db.Workshop(url).purge()

    def csvs() -> list[str]:
        return uploads.expire(root, settings.get("LAYERLAB_UPLOAD_DAYS"))

    return [("classes", classes), ("uploads", csvs)]


_server: Optional[Retention] = None
_lock = threading.Lock()


def start(every: float = EVERY_S) -> Retention:
    """This process's retention thread (started on the first call; later calls return it)."""
    global _server
    with _lock:
        if _server is None:
            _server = Retention(tasks(), every).start()
        return _server
