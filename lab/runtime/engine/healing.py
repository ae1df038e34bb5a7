"""Healing the Dask engine when its cluster is lost: a watch that finds a dead cluster (`_dead`), and a heal that
sends the jobs it was running back to the queue once, tells every waiting page so and makes a new cluster, or a new
connection, in the background (`_heal`, `_restart`). `_lost` tells a task lost with its cluster from a job's own
error.
"""

from __future__ import annotations

import heapq
import logging
import subprocess
import threading
import time
from typing import Any, Optional

from lab.runtime.engine.local_cluster import _kill_group
from lab.runtime.engine.progress_files import write_progress
from lab.runtime.progress import Curves

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True
log = logging.getLogger("layerlab.engine")

WATCH_S = 2.0  # how often the engine looks for a dead cluster
HEAL_TIMEOUT_S = 180.0  # how long a heal keeps trying to start or reach a cluster before jobs fail with a message
RETRY_S = 30.0  # after a heal that found no cluster, how long until the next try
RESTARTING = "restarting the lab's workers (they stopped); your job runs as soon as they are back"


def _lost(exc: BaseException) -> bool:
    """Whether a task failed because the cluster went away (cancelled by a lost scheduler, a closed connection),
    not because the job raised: only those are run again."""
    from concurrent.futures import CancelledError

    from distributed.client import ClosedClientError

    return isinstance(exc, (CancelledError, ClosedClientError, ConnectionError, EOFError)) or \
        type(exc).__name__ in ("CommClosedError", "FutureCancelledError", "StreamClosedError")


class Healing:
    """`DaskEngine`'s healing, as a base class of it (lab/runtime/engine/cluster.py): the engine holds what these
    methods work on (its lock, queue, running jobs, client and cluster's process) and what they call (`_open`,
    `_workers_up`, `_pump`)."""

    def _dead(self) -> Optional[str]:
        """Why the cluster is unusable (its process exited, the client lost the scheduler), or None."""
        if self.cluster is not None and self.cluster.poll() is not None:
            return f"the cluster's process exited (status {self.cluster.poll()})"
        if self.client is not None and getattr(self.client, "status", "running") in ("closed", "failed", "closing"):
            return f"the client lost the scheduler ({self.client.status})"
        return None

    def _watch(self) -> None:
        """Every WATCH_S: a dead cluster is replaced (a local one restarted, LAYERLAB_SCHEDULER reconnected)."""
        failed_at = None
        while not self._closing.wait(WATCH_S):
            with self.lock:
                if self._healing or not self._ready.is_set():
                    continue
                why = self._dead()
                if self.error is not None:  # no cluster at the last try: try again now and then
                    failed_at = failed_at or time.monotonic()
                    if time.monotonic() - failed_at > RETRY_S:
                        why, failed_at = "trying again to start or reach the cluster", None
                if why:
                    self._heal(why)

    def _heal(self, why: str) -> None:
        """Replace a dead cluster (caller holds self.lock): jobs that were running go back to the queue once (a
        second loss fails them with a message), every waiting page says "restarting the lab's workers", and a new
        cluster (or a new connection) is made in the background; the queue is sent to it."""
        if self._healing or self._closing.is_set():
            return
        log.warning("the lab's workers are gone (%s): restarting them", why)
        self._healing, self.heals = True, self.heals + 1
        self._ready.clear()
        self._gen += 1  # callbacks of the old cluster's tasks are ignored from now on
        running, self._running = list(self._running.values()), {}
        self._inflight = self._inflight_low = 0
        for job in running:
            job.dask_future, job.started = None, False
            if job.retries >= 1:
                job.future.set_exception(RuntimeError("the lab's workers stopped twice while this was computing; "
                                                      "try again"))
                if job.progress_file is not None:
                    job.progress_file.unlink(missing_ok=True)
                continue
            job.retries += 1
            job.sent = False
            heapq.heappush(self._queue, (-job.priority, next(self._count), job))
        for _, _, job in self._queue:
            if not job.future.done() and job.progress_file is not None:
                job.message, job.fraction = RESTARTING, 0.0
                job.curves = Curves()  # it trains again from its first epoch
                write_progress(job.progress_file, {"state": "queued", "fraction": 0.0, "message": RESTARTING,
                                                   "notices": [], "submitted": job.submitted,
                                                   "priority": job.priority})
        old = (self.client, self.cluster)
        self.client = self.cluster = None
        self.error = None
        threading.Thread(target=self._restart, args=old, name="layerlab-dask-heal", daemon=True).start()

    def _restart(self, client: Any, cluster: Optional[subprocess.Popen]) -> None:
        try:
            if client is not None:
                client.close(timeout=5)
        except Exception:  # noqa: BLE001 - it is already broken
            pass
        if cluster is not None:
            _kill_group(cluster)
        deadline = time.monotonic() + HEAL_TIMEOUT_S
        while True:  # a scheduler at LAYERLAB_SCHEDULER may take a while to come back
            self.error = None
            self._open()
            if self.error is None or time.monotonic() > deadline or self._closing.is_set():
                break
            time.sleep(2.0)
        with self.lock:
            self._healing = False
            self._capacity = (0, 0.0)
            self._ready.set()
            log.warning("the lab's workers are back" if self.error is None else "the lab's workers did not come back")
            self._workers_up()
            self._pump()
