"""The Dask engine: jobs as tasks on worker processes, away from the web server's process and its GIL.

By default a local cluster of worker processes (one single-threaded worker per core), started in the background
once per server process, in a process of its own (local_cluster.py), over mutual TLS with a certificate made for each
start (security.py: the loopback is reachable by every local process); with LAYERLAB_SCHEDULER=tls://host:port the
same code uses an existing cluster whose workers share the store's folder, over mutual TLS (security.py:
`cluster_security`: a plain tcp:// cluster off the loopback is refused unless explicitly allowed). Each worker runs
a job with `run_on_worker` (worker.py), which reports through the job's progress file (progress_files.py). The engine
keeps its own priority queue and sends a job only when a worker thread is free (see `DaskEngine.__init__`); a lost
cluster is replaced (healing.py). A course cluster's workers preload this module (README: Deploying a course cluster
safely), which imports everything a job needs.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import subprocess
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from lab.runtime import settings
from lab.runtime.engine.healing import RESTARTING, Healing, _lost
from lab.runtime.engine.jobs import Engine, Job
from lab.runtime.engine.local_cluster import _ask_to_stop, _kill_group, spawn_cluster
from lab.runtime.engine.progress_files import (
    PROGRESS_DIR,
    STALE_QUEUED_S,
    job_id,
    progress_file,
    read_progress,
    write_progress,
)
from lab.runtime.engine.security import cluster_security
from lab.runtime.engine.worker import run_on_worker
from lab.runtime.store import Store, resolve

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True
log = logging.getLogger("layerlab.engine")

SNAPSHOT_S = 2.0  # the queue positions of every waiting page come from one read of the job files this old
STARTING = "starting the lab's workers (once per server)"
CONNECT_TIMEOUT = "30s"  # how long to try an existing scheduler before every waiting job fails with a message
ASK_TIMEOUT_S = 5.0  # a question to the scheduler (its worker threads) that takes longer keeps the last answer
RESULT_TIMEOUT_S = 300.0  # a finished task whose result cannot be fetched within this is taken as lost (rerun once)


class DaskEngine(Healing, Engine):
    """Jobs as Dask tasks on worker processes (a local cluster, or the one at `address`)."""

    name = "dask"

    def __init__(self, address: Optional[str] = None, workers: Optional[int] = None,
                 store: Optional[Store] = None, preload: Sequence[str] = ()) -> None:
        """`preload`: modules each local worker imports as it starts (the experiments a server's pages need), so
        that a visitor's first job on a worker does not wait seconds for its imports."""
        super().__init__()
        self.preload = tuple(preload)
        self.store = resolve(store)
        self.address, self.workers = address, workers
        # Checked here, before anything starts: a cluster the lab will not use is a misconfiguration every page
        # reports (app/jobs.py runner()), not a connection that fails later.
        try:
            self.security = cluster_security(address) if address else None
        except settings.SettingError as exc:
            log.error("the lab's compute cluster is refused: %s", exc)
            raise
        self.cluster: Any = None  # the cluster's process (spawn_cluster), when this engine started one
        self.client: Any = None
        self.error: Optional[Exception] = None
        self._ready = threading.Event()
        # Jobs wait here, by priority, until a worker thread is free. Dask's own priorities order only the tasks
        # queued on one worker (a task is handed to some worker at once): a student's job sent after a warming
        # job could still start after it, on another worker. So the engine sends no more tasks than the cluster
        # has threads, and the most urgent first.
        self._queue: list[tuple[int, int, Job]] = []
        self._count = itertools.count()
        self._inflight = 0
        self._inflight_low = 0  # of which below priority 0 (custom settings, warming)
        self._running: dict[str, Job] = {}  # sent to the cluster and not landed, by job id
        self._gen = 0  # which cluster: bumped by each heal
        self._healing = False
        self._closing = threading.Event()
        self.heals = 0  # clusters replaced so far
        self._snap_lock = threading.Lock()
        self._snap: tuple[float, list[tuple[Path, int, float]]] = (-1e9, [])
        self._capacity = (0, 0.0)  # (worker threads, when asked)
        self._attempts: dict[str, int] = {}
        # Dask runs every future's done-callback of the whole process on ONE thread ("Dask-Callback-Thread"): a
        # callback that blocks (fetching a result from a worker that died, waiting for a lock) would stop every later
        # job of every engine in the process from ever landing. So a landing is only handed over there, and handled
        # on threads of this engine's own, with a bounded wait for its result.
        from concurrent.futures import ThreadPoolExecutor

        self._landings = ThreadPoolExecutor(2, thread_name_prefix="layerlab-landed")
        # Starting worker processes takes seconds (each imports torch): do it in the background, so the page that
        # asked first shows "starting the lab's workers" instead of freezing, and jobs asked meanwhile wait here.
        threading.Thread(target=self._connect, name="layerlab-dask-start", daemon=True).start()

    def _open(self) -> None:
        """Connect a client (starting the local cluster's process first, without an address); sets `client`, or
        `error` with a message for every waiting job."""
        try:
            from distributed import Client

            if self.address:
                self.client = Client(self.address, set_as_default=False, timeout=CONNECT_TIMEOUT,
                                     security=self.security)
            else:
                # Worker processes, one single-threaded worker per core: a training job runs on its own core, away
                # from the web server's GIL; their scheduler too runs in a process of its own (serve_cluster).
                # No dashboard: nobody looks at it, and its port may be taken. memory_limit bounds each worker: its
                # nanny restarts a worker that reaches 95 % of it (its job then runs again elsewhere), so a
                # long-running server's workers cannot grow without limit.
                self.cluster, address, security = spawn_cluster(self.workers or max(1, os.cpu_count() or 1),
                                                                self.preload)
                self.client = Client(address, set_as_default=False, timeout=CONNECT_TIMEOUT, security=security)
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, every job asked for must hear about it
            self.error = RuntimeError(f"the lab's compute cluster could not be started or reached "
                                      f"({type(exc).__name__})")
            log.warning("the lab's compute cluster could not be started or reached", exc_info=exc)

    def _connect(self) -> None:
        self._open()
        with self.lock:
            self._ready.set()
            self._workers_up()
            self._pump()
        threading.Thread(target=self._watch, name="layerlab-dask-watch", daemon=True).start()

    def _workers_up(self) -> None:
        """The workers are up (caller holds self.lock): a job still queued no longer says they are starting."""
        for _, _, job in self._queue:
            if not job.started and job.message in (STARTING, RESTARTING):
                job.message = Job.message

    def threads(self) -> int:
        """Worker threads in the cluster (asked at most every 5 s: workers come and go, a killed one restarts). The
        question is bounded (ASK_TIMEOUT_S): it is asked under the engine's lock, which a landing job waits for."""
        n, at = self._capacity
        client = self.client
        if time.monotonic() - at > 5.0 and client is not None:
            try:
                n = sum(client.nthreads(callback_timeout=ASK_TIMEOUT_S).values())
            except Exception:  # noqa: BLE001 - the scheduler is busy or gone: keep the last answer
                pass
            self._capacity = (n, time.monotonic())
        return max(1, n)

    def _pump(self) -> None:
        """Send queued jobs, most urgent first, while a worker thread is free (caller holds self.lock)."""
        if not self._ready.is_set():
            return
        while self._ready.is_set() and self._queue and (self.error is not None or self._inflight < self.threads()):
            job = self._queue[0][2]
            if job.sent or job.future.done():  # a stale entry of a lifted job, or one dropped (its owners left)
                heapq.heappop(self._queue)
                continue
            if job.priority < 0 and self.error is None and (self._inflight_low >= self.threads() - 1 > 0
                                                            or self._inflight > self._inflight_low):
                # One worker stays free for default views and presets, and while one of them computes no custom
                # or warming job starts beside it: a preset then has the machine's cores to itself (measured with
                # bench/bench_flood.py). The rest of the queue ranks lower, so the loop stops here.
                break
            heapq.heappop(self._queue)
            job.sent = True
            self._send(job, *job.task)

    def ready(self, timeout: Optional[float] = None) -> bool:
        """Wait until the cluster is up (or failed to come up); True if it is usable."""
        self._ready.wait(timeout)
        return self._ready.is_set() and self.error is None

    def _start(self, label: str, fn: Callable[..., Any], cfg: Any, key: str, priority: int) -> Job:
        jid = job_id(key)
        path = progress_file(self.store.root, jid)
        job = Job(label, progress_file=path, future=Future(), priority=priority)
        write_progress(path, {"state": "queued", "fraction": 0.0, "message": job.message, "notices": [],
                              "submitted": job.submitted, "priority": priority})
        job.task = (fn, cfg, jid, {"LAYERLAB_QUICK": os.environ.get("LAYERLAB_QUICK", "")})
        self._snap = (-1e9, [])  # a new queued job: the next queue position is read afresh
        if not self._ready.is_set():
            job.message = STARTING
        self._enqueue(job)
        return job

    def _enqueue(self, job: Job) -> None:
        heapq.heappush(self._queue, (-job.priority, next(self._count), job))
        self._pump()  # (under self.lock, as submit holds it)

    def _send(self, job: Job, fn: Callable[..., Any], cfg: Any, jid: str, env: dict[str, str]) -> None:
        path = job.progress_file
        if self.error is not None:
            path.unlink(missing_ok=True)
            job.future.set_exception(self.error)
            return
        # The task's key names the job, so two servers on one scheduler asking for the same thing share a task.
        # A job asked again after it failed gets a fresh key: the scheduler may still hold the failed task under
        # the old one and would hand back its error. Retries are left to the scheduler's handling of dead workers
        # (a task whose worker died runs again elsewhere); an exception inside the job is deterministic and is
        # reported, not retried.
        n = self._attempts[jid] = self._attempts.get(jid, -1) + 1
        try:
            dfut = self.client.submit(run_on_worker, fn, cfg, str(self.store.root), jid, env, job.submitted,
                                      key=f"layerlab-{jid}" + (f"-{n}" if n else ""), pure=False,
                                      priority=job.priority)
        except Exception as exc:  # noqa: BLE001 - a closed client or a lost scheduler: the job waits for a new one
            job.sent = False
            heapq.heappush(self._queue, (-job.priority, next(self._count), job))
            self._heal(f"submitting failed: {type(exc).__name__}")
            return
        # Counted only once the cluster took it: a failed submit must not hold a worker's place forever.
        self._inflight += 1
        self._inflight_low += job.priority < 0
        self._running[jid] = job
        job.dask_future = dfut  # held so the scheduler keeps the task
        gen = self._gen

        def landed(f: Any) -> None:
            try:
                out, exc = f.result(timeout=RESULT_TIMEOUT_S), None
            except TimeoutError:  # finished, but its result cannot be fetched (its worker went): lost, run again
                out, exc = None, ConnectionError(f"the result was not fetched within {RESULT_TIMEOUT_S:.0f} s")
            except BaseException as e:  # noqa: BLE001 - any failure travels to the page through the future
                out, exc = None, e
            with self.lock:
                if gen != self._gen:  # the cluster was replaced meanwhile: the heal requeued this job
                    return
                if exc is not None and _lost(exc):  # the cluster went away under it, not the job's own error
                    self._heal(f"a task was lost: {type(exc).__name__}")
                    return
                self._running.pop(jid, None)
                self._inflight -= 1
                self._inflight_low -= job.priority < 0
            job.dask_future = None  # let the scheduler forget it
            if exc is not None:
                job.future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            else:
                job.notices[:] = list(out["notices"])
                job.seconds = out.get("seconds")
                job.builds = list(out.get("builds", []))
                job.started, job.fraction, job.message = True, 1.0, "done"
                job.future.set_result(out["result"])
            path.unlink(missing_ok=True)
            with self.lock:  # a worker thread is free: send the next job
                self._pump()

        def hand_over(f: Any) -> None:  # on Dask's one callback thread: nothing here may block
            try:
                self._landings.submit(landed, f)
            except RuntimeError:  # the engine is closed: nobody waits for this job any more
                pass

        dfut.add_done_callback(hand_over)

    def _queued_files(self) -> list[tuple[Path, int, float]]:
        """(file, priority, submitted) of every queued job of every server sharing the store: one read of the job
        files per SNAPSHOT_S for the whole server, however many pages wait (rather than one read per waiting page)."""
        with self._snap_lock:
            if time.monotonic() - self._snap[0] > SNAPSHOT_S:
                found, now = [], time.time()
                for path in (Path(self.store.root) / PROGRESS_DIR).glob("*.json"):
                    data = read_progress(path)
                    if data and data.get("state") == "queued" and now - data.get("submitted", 0) < STALE_QUEUED_S:
                        found.append((path, int(data.get("priority", 0)), float(data.get("submitted", now))))
                self._snap = (time.monotonic(), found)
            return self._snap[1]

    def ahead(self, job: Job) -> int:
        """Queued jobs that start before this one, of any server sharing the store (from the shared snapshot)."""
        job.refresh()
        if job.started or job.future.done() or job.progress_file is None:
            return 0
        return sum(1 for path, priority, submitted in self._queued_files()
                   if path != job.progress_file and self._before(priority, submitted, job))

    def close(self) -> None:
        self._closing.set()
        self._ready.wait(120)
        self._landings.shutdown(wait=False, cancel_futures=True)
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            _ask_to_stop(self.cluster)
            try:
                self.cluster.wait(60)
            except subprocess.TimeoutExpired:
                _kill_group(self.cluster)
