"""One engine for heavy work: every training, sweep and table the app asks for goes through `engine()`.

Two implementations behind one interface (`submit(label, fn, cfg) -> Job`, `jobs`, `key`, `ahead`):
- `DaskEngine` (LAYERLAB_ENGINE=dask, the default): a Dask `distributed` cluster. By default a local cluster of
  worker processes (one single-threaded worker per core), started in the background once per server process, so
  training leaves the web server's process and its GIL; with LAYERLAB_SCHEDULER=tcp://host:port the same code uses
  an existing cluster whose workers share the store's folder. `python -m lab warm` uses it too.
- `ThreadEngine` (LAYERLAB_ENGINE=threads): a few threads inside the server process, for machines where worker
  processes are not wanted; the AppTests use it (no cluster to start).

Both honour a job's priority (warming runs at BACKGROUND, below every student's job).

Both keep the app's guarantees. A job is keyed by function + config, and a second asker joins the running job
(across servers and workers the store's per-entry lock builds one config once). The job table lives in the
engine, not in a page run, so a Streamlit rerun never loses a job. A worker cannot call a callback in the server,
so progress, notices and queue state travel through a small JSON file per job under `<store>/jobs/`, written
atomically by whoever runs the job and read by whoever shows it (every worker shares the store anyway). A worker
killed mid-job is noticed by the scheduler, which runs the task again elsewhere; the store's atomic writes mean
the dead worker left no partial entry.

Nothing here imports Streamlit (the app wraps `engine()` in app/jobs.py).
"""

from __future__ import annotations

import atexit
import hashlib
import heapq
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from lab.runtime.notices import collecting
from lab.runtime.store import Store, active_store, config_json, recording_builds, use_store

MAX_THREADS = 2
BACKGROUND = -10  # the priority of warming jobs: a queued student job always runs before them
KEEP_DONE = 128  # finished jobs remembered (their results also sit in the store)
BOARD = "jobs"  # folder of progress files under the store's root
CONNECT_TIMEOUT = "30s"  # how long to try an existing scheduler before every waiting job fails with a message
STALE_QUEUED_S = 2 * 3600  # a "queued" file this old belongs to a server that died: do not count it
WRITE_EVERY_S = 0.25  # progress files are rewritten at most this often (and always at the end)
# Memory bound of each local worker process (LAYERLAB_WORKER_MEMORY, e.g. "2GiB"); a trained model here takes a few
# MB, a training well under 1 GB, so 3 GiB is ample and still bounds a server that runs for a whole term.
WORKER_MEMORY = os.environ.get("LAYERLAB_WORKER_MEMORY", "3GiB")
# Worker processes yield to the web server (nice 10), so page views stay responsive while models train;
# LAYERLAB_WORKER_NICE overrides it (0 on a machine shared with other heavy work, where niced workers starve).
NICENESS = 10


# -- the progress board: one small file per job, shared through the store's folder ----------------------------
def job_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic (temporary file + rename): a reader sees the old state or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_board(path: Path) -> Optional[dict[str, Any]]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class BoardWriter:
    """The progress callback of a job that runs elsewhere: it writes (fraction, message, notices) to the job's file,
    at most every WRITE_EVERY_S."""

    def __init__(self, path: Path, submitted: float, notices: list[str]) -> None:
        self.path, self.submitted, self.notices = path, submitted, notices
        self.fraction, self.message, self.last = 0.0, "starting", 0.0

    def write(self, state: str = "running") -> None:
        self.last = time.monotonic()
        _write_json(self.path, {"state": state, "fraction": self.fraction, "message": self.message,
                                "notices": list(self.notices), "submitted": self.submitted, "pid": os.getpid()})

    def __call__(self, fraction: float, message: str) -> None:
        self.fraction, self.message = fraction, message
        if time.monotonic() - self.last >= WRITE_EVERY_S or fraction >= 1.0:
            self.write()


def worker_environ() -> dict[str, Any]:
    """The environment Dask's nannies give new worker processes, less MALLOC_TRIM_THRESHOLD_.

    Dask sets it to 64 KiB so that glibc hands freed memory back to the OS at once; a training loop that frees and
    allocates the same tensors every step then pays page faults each time: measured on the digits ViT, system time
    0.3-0.4 s -> 3.4-4.2 s and wall time +25-35 % for 4 epochs. The workers' memory limit bounds them instead."""
    import dask

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    return env


_prepared = False


def _prepare_worker() -> None:
    """Once per worker process: torch on one thread (lab/runtime/threads.py), and a lower priority than the web
    server."""
    global _prepared
    if _prepared:
        return
    from lab.runtime.threads import configure_threads

    configure_threads()
    try:
        nice = int(os.environ.get("LAYERLAB_WORKER_NICE", NICENESS))
    except ValueError:
        nice = NICENESS
    try:
        # On Linux a nice value belongs to a thread: this lowers the task thread, which is where a single-threaded
        # worker (and torch with one intra-op thread) does all of its computing.
        if nice > 0:
            os.nice(nice)
    except OSError:  # not allowed here: run at normal priority rather than not at all
        pass
    _prepared = True


def work(fn: Callable[..., Any], cfg: Any, root: str, jid: str, env: dict[str, str],
         submitted: float) -> dict[str, Any]:
    """The task a Dask worker runs: `fn(cfg)` against the shared store, reporting through the job's file.

    Returns the result with the notices raised on the way (they are data, so they cross the process boundary).
    `env` carries the server's quick mode: it is part of the store key, so both sides must agree on it.
    """
    _prepare_worker()
    os.environ.update(env)  # one task at a time per (single-threaded) worker: no other job sees this
    path = Path(root) / BOARD / f"{jid}.json"
    with collecting() as notices, use_store(Store(root)), recording_builds() as builds:
        report = BoardWriter(path, submitted, notices)
        report.write()
        t0 = time.perf_counter()
        result = fn(cfg, progress=report)
        seconds = time.perf_counter() - t0
        report.fraction, report.message = 1.0, "done"
        report.write("done")
    return {"result": result, "notices": list(notices), "seconds": seconds, "builds": list(builds)}


# -- the local cluster's own process ---------------------------------------------------------------------------
# A LocalCluster made inside the web server runs its scheduler on the server's event loop: every heartbeat, task
# transition and progress query of the workers then takes the server's GIL, and cached page views waited behind it
# while two models trained (p95 0.7-1.2 s, issue 21). So the scheduler and the workers' nannies live in a process of
# their own, started with the server; the server holds only a Client. The process exits when its parent does (it
# polls its parent id), so a killed server leaves no cluster behind.
SERVE = "from lab.runtime.engine import serve_cluster; serve_cluster()"
START_TIMEOUT_S = 300.0  # worker processes import torch: slow on a loaded machine


def serve_cluster() -> None:
    """Body of the cluster process (`python -c SERVE WORKERS PARENT_PID ADDRESS_FILE`): a LocalCluster of WORKERS
    single-threaded worker processes; writes its scheduler's address to ADDRESS_FILE, then runs until the parent is
    gone or it is terminated."""
    import dask
    from distributed import LocalCluster

    workers, parent, address_file = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()}):
        # preload: each worker imports the lab (torch) as it starts, in the background at server start-up, not at
        # the first student's job under `nice` (measured on a loaded machine: 15-20 s before a job's first line).
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40, memory_limit=WORKER_MEMORY, scheduler_port=0,
                               preload=["lab.runtime.engine"])
    tmp = address_file.with_suffix(".tmp")
    tmp.write_text(cluster.scheduler_address)
    tmp.replace(address_file)
    while not stop.wait(1.0) and os.getppid() == parent:
        pass
    cluster.close(timeout=30)


def spawn_cluster(workers: int) -> tuple[subprocess.Popen, str]:
    """Start the cluster process (see `serve_cluster`); returns it and its scheduler's address. Its output goes
    where this process's goes (a pipe nobody reads would fill up and stall the workers that inherit it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the workers import what this process can
    with tempfile.TemporaryDirectory(prefix="layerlab-cluster-") as tmp:
        address_file = Path(tmp) / "address"
        proc = subprocess.Popen([sys.executable, "-c", SERVE, str(workers), str(os.getpid()), str(address_file)],
                                env=env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if address_file.exists():
                return proc, address_file.read_text().strip()
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the cluster process did not start (exit status {proc.poll()})")


# -- jobs ------------------------------------------------------------------------------------------------------
@dataclass
class Job:
    """A job as a page sees it. `future` is a concurrent.futures.Future in both engines (the Dask engine completes
    it when the task lands), so pages can call done() / result() / exception() without knowing the engine."""

    label: str
    fraction: float = 0.0
    message: str = "queued: waiting for a free worker"
    notices: list[str] = field(default_factory=list)
    future: Optional[Future] = None
    submitted: float = field(default_factory=time.time)
    started: bool = False
    board: Optional[Path] = None  # the progress file, for a job that runs in another process
    priority: int = 0  # higher runs first; BACKGROUND for warming, which must never run ahead of a student
    sent: bool = False  # taken off its engine's queue (to a thread, or to the cluster)
    task: tuple = ()  # what the engine needs to send it: kept so a lifted job can be queued again
    seconds: Optional[float] = None  # how long the job itself ran (not its wait), once done
    builds: list = field(default_factory=list)  # entries it built (store.recording_builds), once done
    _read_at: float = 0.0

    def report(self, fraction: float, message: str) -> None:
        self.started = True
        self.fraction, self.message = fraction, message

    def refresh(self) -> None:
        """Read the job's progress file (at most 4 times a second); a no-op for in-process jobs."""
        if self.board is None or time.monotonic() - self._read_at < 0.25:
            return
        self._read_at = time.monotonic()
        data = read_board(self.board)
        if data and data.get("state") in ("running", "done"):
            self.started = True
            self.fraction = float(data.get("fraction", 0.0))
            self.message = str(data.get("message", ""))
            for n in data.get("notices", []):
                if n not in self.notices:
                    self.notices.append(str(n))


class Engine:
    """What both engines share: the job table, keys, joining, queue positions."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.lock = threading.Lock()

    @staticmethod
    def key(fn: Callable[..., Any], cfg: Any) -> str:
        return f"{fn.__module__}.{fn.__qualname__}:{config_json(cfg)}"

    def submit(self, label: str, fn: Callable[..., Any], cfg: Any, priority: int = 0) -> Job:
        """Start `fn(cfg)` (or join the same job, running or done with a result); returns its Job at once.

        `priority`: queued jobs with a higher one start first (BACKGROUND for warming). A student who joins a
        queued background job lifts it to their priority where the engine can (the thread engine)."""
        key = self.key(fn, cfg)
        with self.lock:
            job = self.jobs.get(key)
            if job is not None and not (job.future.done() and job.future.exception() is not None):
                if priority > job.priority:
                    self._lift(job, priority)
                return job
            job = self._start(label, fn, cfg, key, priority)
            self.jobs[key] = job
            if len(self.jobs) > KEEP_DONE:
                for k in [k for k, j in self.jobs.items() if j.future.done()][: len(self.jobs) - KEEP_DONE]:
                    del self.jobs[k]
            return job

    def _start(self, label: str, fn: Callable[..., Any], cfg: Any, key: str, priority: int) -> Job:
        raise NotImplementedError

    def _enqueue(self, job: Job) -> None:
        """Put a job on this engine's queue, ordered by (priority, arrival)."""
        raise NotImplementedError

    def _lift(self, job: Job, priority: int) -> None:
        """Raise a job's priority while it is still in this engine's queue (a student asked for what the warmer
        queued): it is queued again, and its old entry is skipped when it comes up (job.sent)."""
        if not job.sent:
            job.priority = priority
            job.submitted = time.time()  # its place in line is now (ahead() counts by priority, then this)
            self._enqueue(job)

    @staticmethod
    def _before(other_priority: int, other_submitted: float, job: Job) -> bool:
        """Whether a queued job starts before `job`: higher priority, or the same and submitted earlier."""
        return other_priority > job.priority or (other_priority == job.priority and other_submitted < job.submitted)

    def ahead(self, job: Job) -> int:
        """How many queued jobs will start before this one (0 once it runs)."""
        job.refresh()
        if job.started or job.future.done():
            return 0
        with self.lock:
            others = list(self.jobs.values())
        n = 0
        for j in others:
            if j is job or j.future.done() or not self._before(j.priority, j.submitted, job):
                continue
            j.refresh()
            n += not j.started
        return n

    def waiting(self, above: int = BACKGROUND) -> int:
        """Jobs of this engine still queued (not started) with a priority above `above`: the warmer waits for 0."""
        with self.lock:
            others = list(self.jobs.values())
        n = 0
        for j in others:
            if j.priority > above and not j.future.done():
                j.refresh()
                n += not j.started
        return n

    def close(self) -> None:
        pass


class ThreadEngine(Engine):
    """Jobs on a few threads of this process (progress by callback), taken from a priority queue: highest
    priority first, then first come first served (a plain ThreadPoolExecutor has no priorities)."""

    name = "threads"

    def __init__(self, workers: int = MAX_THREADS) -> None:
        super().__init__()
        self.queue: "queue.PriorityQueue[tuple[int, int, Any]]" = queue.PriorityQueue()
        self.count = itertools.count()  # ties keep submission order
        self.threads = [threading.Thread(target=self._serve, name=f"layerlab-job-{i}", daemon=True)
                        for i in range(workers)]
        for t in self.threads:
            t.start()

    def _serve(self) -> None:
        while True:
            _, _, job = self.queue.get()
            if job is None:  # close()
                return
            if job.sent or job.future.done():  # a stale entry of a lifted job, or cancelled
                continue
            job.sent = job.started = True
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                result = job.task[0]()
            except BaseException as exc:  # noqa: BLE001 - the failure travels to the page through the future
                job.future.set_exception(exc)
            else:
                job.future.set_result(result)

    def _enqueue(self, job: Job) -> None:
        self.queue.put((-job.priority, next(self.count), job))

    def _start(self, label: str, fn: Callable[..., Any], cfg: Any, key: str, priority: int) -> Job:
        job = Job(label, future=Future(), priority=priority)

        def run() -> Any:
            with collecting() as notices, recording_builds() as builds:
                t0 = time.perf_counter()
                try:
                    return fn(cfg, progress=job.report)
                finally:
                    job.seconds = time.perf_counter() - t0
                    job.notices.extend(notices)
                    job.builds = list(builds)

        job.task = (run,)
        self._enqueue(job)
        return job

    def close(self) -> None:
        while True:  # cancel what never started, then let each thread finish its job and stop
            try:
                _, _, job = self.queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.future.cancel()
        for _ in self.threads:
            self.queue.put((10**9, next(self.count), None))


class DaskEngine(Engine):
    """Jobs as Dask tasks on worker processes (a local cluster, or the one at `address`)."""

    name = "dask"

    def __init__(self, address: Optional[str] = None, workers: Optional[int] = None,
                 store: Optional[Store] = None) -> None:
        super().__init__()
        self.store = store or active_store()
        self.address, self.workers = address, workers
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
        self._capacity = (0, 0.0)  # (worker threads, when asked)
        self._attempts: dict[str, int] = {}
        # Starting worker processes takes seconds (each imports torch): do it in the background, so the page that
        # asked first shows "starting the lab's workers" instead of freezing, and jobs asked meanwhile wait here.
        threading.Thread(target=self._connect, name="layerlab-dask-start", daemon=True).start()

    def _connect(self) -> None:
        try:
            from distributed import Client

            if self.address:
                self.client = Client(self.address, set_as_default=False, timeout=CONNECT_TIMEOUT)
            else:
                # Worker processes, one single-threaded worker per core: a training job runs on its own core, away
                # from the web server's GIL; their scheduler too runs in a process of its own (serve_cluster).
                # No dashboard: nobody looks at it, and its port may be taken. memory_limit bounds each worker: its
                # nanny restarts a worker that reaches 95 % of it (its job then runs again elsewhere), so a
                # long-running server's workers cannot grow without limit.
                self.cluster, address = spawn_cluster(self.workers or max(1, os.cpu_count() or 1))
                self.client = Client(address, set_as_default=False, timeout=CONNECT_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, every job asked for must hear about it
            self.error = RuntimeError(f"the lab's compute cluster could not be started or reached "
                                      f"({type(exc).__name__}: {exc})")
        with self.lock:
            self._ready.set()
            self._pump()

    def threads(self) -> int:
        """Worker threads in the cluster (asked at most every 5 s: workers come and go, a killed one restarts)."""
        n, at = self._capacity
        if time.monotonic() - at > 5.0 and self.client is not None:
            try:
                n = sum(self.client.nthreads().values())
            except Exception:  # noqa: BLE001 - the scheduler is busy or gone: keep the last answer
                pass
            self._capacity = (n, time.monotonic())
        return max(1, n)

    def _pump(self) -> None:
        """Send queued jobs, most urgent first, while a worker thread is free (caller holds self.lock)."""
        if not self._ready.is_set():
            return
        while self._queue and (self.error is not None or self._inflight < self.threads()):
            _, _, job = heapq.heappop(self._queue)
            if job.sent or job.future.done():  # a stale entry of a lifted job
                continue
            job.sent = True
            self._send(job, *job.task)

    def ready(self, timeout: Optional[float] = None) -> bool:
        """Wait until the cluster is up (or failed to come up); True if it is usable."""
        self._ready.wait(timeout)
        return self._ready.is_set() and self.error is None

    def _start(self, label: str, fn: Callable[..., Any], cfg: Any, key: str, priority: int) -> Job:
        jid = job_id(key)
        board = self.store.root / BOARD / f"{jid}.json"
        job = Job(label, board=board, future=Future(), priority=priority)
        _write_json(board, {"state": "queued", "fraction": 0.0, "message": job.message, "notices": [],
                            "submitted": job.submitted, "priority": priority})
        job.task = (fn, cfg, jid, {"LAYERLAB_QUICK": os.environ.get("LAYERLAB_QUICK", "")})
        if not self._ready.is_set():
            job.message = "starting the lab's workers (once per server)"
        self._enqueue(job)
        return job

    def _enqueue(self, job: Job) -> None:
        heapq.heappush(self._queue, (-job.priority, next(self._count), job))
        self._pump()  # (under self.lock, as submit holds it)

    def _send(self, job: Job, fn: Callable[..., Any], cfg: Any, jid: str, env: dict[str, str]) -> None:
        board = job.board
        if self.error is not None:
            board.unlink(missing_ok=True)
            job.future.set_exception(self.error)
            return
        # The task's key names the job, so two servers on one scheduler asking for the same thing share a task.
        # A job asked again after it failed gets a fresh key: the scheduler may still hold the failed task under
        # the old one and would hand back its error. Retries are left to the scheduler's handling of dead workers
        # (a task whose worker died runs again elsewhere); an exception inside the job is deterministic and is
        # reported, not retried.
        n = self._attempts[jid] = self._attempts.get(jid, -1) + 1
        self._inflight += 1
        dfut = self.client.submit(work, fn, cfg, str(self.store.root), jid, env, job.submitted,
                                  key=f"layerlab-{jid}" + (f"-{n}" if n else ""), pure=False,
                                  priority=job.priority)
        job.dask_future = dfut  # type: ignore[attr-defined] - held so the scheduler keeps the task

        def landed(f: Any) -> None:
            try:
                out = f.result()
            except BaseException as exc:  # noqa: BLE001 - any failure travels to the page through the future
                job.future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            else:
                job.notices[:] = list(out["notices"])
                job.seconds = out.get("seconds")
                job.builds = list(out.get("builds", []))
                job.started, job.fraction, job.message = True, 1.0, "done"
                job.future.set_result(out["result"])
            finally:
                board.unlink(missing_ok=True)
                job.dask_future = None  # type: ignore[attr-defined] - let the scheduler forget it
                with self.lock:  # a worker thread is free: send the next job
                    self._inflight -= 1
                    self._pump()

        dfut.add_done_callback(landed)

    def ahead(self, job: Job) -> int:
        """Queued jobs submitted before this one by any server sharing the store (read from the job files)."""
        job.refresh()
        if job.started or job.future.done() or job.board is None:
            return 0
        n, now = 0, time.time()
        for path in job.board.parent.glob("*.json"):
            data = read_board(path)
            if (path != job.board and data and data.get("state") == "queued"
                    and self._before(int(data.get("priority", 0)), data.get("submitted", now), job)
                    and now - data.get("submitted", 0) < STALE_QUEUED_S):
                n += 1
        return n

    def close(self) -> None:
        self._ready.wait(120)
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.terminate()
            try:
                self.cluster.wait(60)
            except subprocess.TimeoutExpired:
                self.cluster.kill()


# -- a pool for tables and sweeps: the same engine, from the command line -----------------------------------------
def compute(calls: Any, workers: int = 2, progress: Any = None, engine: Optional[Engine] = None,
            labels: Optional[list[str]] = None) -> dict[str, Any]:
    """Compute the (entry point, config) calls the store lacks on `engine` (default: a local Dask cluster of
    `workers` single-threaded processes, or the cluster at $LAYERLAB_SCHEDULER; started only if something is
    missing). Returns {"built": [(call index, seconds)], "failed": [(call index, error)]} and, when
    anything was built, "builds": {call index: the entries its job built (store.recording_builds)}; results land in
    the store.
    `labels` name the calls in the progress messages.
    """
    store = active_store()
    for fn, _ in calls:
        if not hasattr(fn, "kind"):  # only a stored result comes back from a worker for the caller to read
            raise TypeError(f"{fn.__qualname__} is not an @entry point: a pool computes stored results only")
    todo, seen = [], set()
    for i, (fn, cfg) in enumerate(calls):  # each missing result once, in the callers' order
        key = Engine.key(fn, cfg)
        if key not in seen and not store.has(fn.kind, cfg):
            seen.add(key)
            todo.append(i)
    built: list[tuple[int, float]] = []
    builds: dict[int, list[dict[str, Any]]] = {}
    failed: list[tuple[int, str]] = []
    if not todo:
        return {"built": built, "failed": failed}
    own = engine is None
    eng = engine or DaskEngine(address=os.environ.get("LAYERLAB_SCHEDULER") or None, workers=max(1, workers),
                               store=store)
    try:
        jobs = {}
        for i in todo:
            fn, cfg = calls[i]
            job = eng.submit(labels[i] if labels else fn.kind, fn, cfg)
            jobs[job.future] = (i, job)  # held here: the engine forgets finished jobs beyond KEEP_DONE
        for n, fut in enumerate(as_completed(jobs), start=1):
            i, job = jobs[fut]
            exc = fut.exception()
            if exc is None:
                built.append((i, job.seconds or 0.0))
                builds[i] = job.builds
            else:  # one failure must not stop the others; the caller reports it
                failed.append((i, f"{type(exc).__name__}: {exc}"))
            if progress is not None:
                progress(n / len(todo), f"{n} of {len(todo)} computed: {labels[i] if labels else calls[i][0].kind}")
    finally:
        if own:
            eng.close()
    return {"built": built, "failed": failed, **({"builds": builds} if builds else {})}


def pool(workers: int = 2) -> Callable[..., list[Any]]:
    """A table's pool (lab/experiment.py `Pool`) on the engine: the missing calls are computed by `workers` worker
    processes side by side, then every result is read from the store here, in order."""

    def run(calls: Any, progress: Any = None) -> list[Any]:
        from lab.runtime.progress import silent

        compute(calls, workers, progress)
        # Read back in order. A call that failed on a worker runs again here and raises its own error (a bad config
        # is a ValueError the CLI turns into one line); one whose worker died simply succeeds this time.
        return [fn(cfg, silent) for fn, cfg in calls]

    return run


# -- the process-wide engine ---------------------------------------------------------------------------------------
_engine: Optional[Engine] = None
_engine_lock = threading.Lock()


def engine_name() -> str:
    """$LAYERLAB_ENGINE: `dask` (default) or `threads`; an unknown value is a clear error."""
    name = os.environ.get("LAYERLAB_ENGINE", "dask").strip().lower() or "dask"
    if name not in ("threads", "dask"):
        raise ValueError(f"LAYERLAB_ENGINE={name!r} is not an engine; use 'threads' or 'dask'")
    return name


def engine() -> Engine:
    """The engine of this process, made on first use (the local cluster starts then, once)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            if engine_name() == "dask":
                _engine = DaskEngine(address=os.environ.get("LAYERLAB_SCHEDULER") or None)
            else:
                _engine = ThreadEngine()
            atexit.register(_engine.close)
        return _engine
