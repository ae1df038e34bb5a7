"""One engine for heavy work: every training, sweep and table the app asks for goes through `engine()`.

Two implementations behind one interface (`submit(label, fn, cfg) -> Job`, `jobs`, `key`, `ahead`):
- `DaskEngine` (LAYERLAB_ENGINE=dask): a Dask `distributed` cluster. By default a local cluster of worker
  processes (one single-threaded worker per core), started lazily, once per server process, so training leaves
  the web server's process and its GIL; with LAYERLAB_SCHEDULER=tcp://host:port the same code uses an existing
  cluster whose workers share the store's folder.
- `ThreadEngine` (LAYERLAB_ENGINE=threads, the default): the in-process thread pool the app always had; the
  AppTests use it (no cluster to start).

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
import json
import os
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .notices import collecting
from .store import Store, active_store, config_json, use_store

MAX_THREADS = 2
KEEP_DONE = 128  # finished jobs remembered (their results also sit in the store)
BOARD = "jobs"  # folder of progress files under the store's root
CONNECT_TIMEOUT = "30s"  # how long to try an existing scheduler before every waiting job fails with a message
STALE_QUEUED_S = 2 * 3600  # a "queued" file this old belongs to a server that died: do not count it
WRITE_EVERY_S = 0.25  # progress files are rewritten at most this often (and always at the end)
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


_prepared = False


def _prepare_worker() -> None:
    """Once per worker process: torch on one thread (lab/runtime.py), and a lower priority than the web server."""
    global _prepared
    if _prepared:
        return
    from .runtime import configure_threads

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
    with collecting() as notices, use_store(Store(root)):
        report = BoardWriter(path, submitted, notices)
        report.write()
        result = fn(cfg, progress=report)
        report.fraction, report.message = 1.0, "done"
        report.write("done")
    return {"result": result, "notices": list(notices)}


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

    def submit(self, label: str, fn: Callable[..., Any], cfg: Any) -> Job:
        """Start `fn(cfg)` (or join the same job, running or done with a result); returns its Job at once."""
        key = self.key(fn, cfg)
        with self.lock:
            job = self.jobs.get(key)
            if job is not None and not (job.future.done() and job.future.exception() is not None):
                return job
            job = self._start(label, fn, cfg, key)
            self.jobs[key] = job
            if len(self.jobs) > KEEP_DONE:
                for k in [k for k, j in self.jobs.items() if j.future.done()][: len(self.jobs) - KEEP_DONE]:
                    del self.jobs[k]
            return job

    def _start(self, label: str, fn: Callable[..., Any], cfg: Any, key: str) -> Job:
        raise NotImplementedError

    def ahead(self, job: Job) -> int:
        """How many queued jobs were submitted before this one (0 once it runs)."""
        job.refresh()
        if job.started or job.future.done():
            return 0
        with self.lock:
            others = list(self.jobs.values())
        n = 0
        for j in others:
            if j is job or j.future.done() or j.submitted >= job.submitted:
                continue
            j.refresh()
            n += not j.started
        return n

    def close(self) -> None:
        pass


class ThreadEngine(Engine):
    """Jobs in a thread pool of this process (progress by callback)."""

    name = "threads"

    def __init__(self, workers: int = MAX_THREADS) -> None:
        super().__init__()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="layerlab-job")

    def _start(self, label: str, fn: Callable[..., Any], cfg: Any, key: str) -> Job:
        job = Job(label)

        def run() -> Any:
            job.started = True
            with collecting() as notices:
                try:
                    return fn(cfg, progress=job.report)
                finally:
                    job.notices.extend(notices)

        job.future = self.pool.submit(run)
        return job

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


class DaskEngine(Engine):
    """Jobs as Dask tasks on worker processes (a local cluster, or the one at `address`)."""

    name = "dask"

    def __init__(self, address: Optional[str] = None, workers: Optional[int] = None,
                 store: Optional[Store] = None) -> None:
        super().__init__()
        self.store = store or active_store()
        self.address, self.workers = address, workers
        self.cluster: Any = None
        self.client: Any = None
        self.error: Optional[Exception] = None
        self._ready = threading.Event()
        self._waiting: list[tuple[Job, tuple]] = []
        self._attempts: dict[str, int] = {}
        # Starting worker processes takes seconds (each imports torch): do it in the background, so the page that
        # asked first shows "starting the lab's workers" instead of freezing, and jobs asked meanwhile wait here.
        threading.Thread(target=self._connect, name="layerlab-dask-start", daemon=True).start()

    def _connect(self) -> None:
        try:
            from distributed import Client, LocalCluster

            if self.address:
                self.client = Client(self.address, set_as_default=False, timeout=CONNECT_TIMEOUT)
            else:
                # Worker processes, one single-threaded worker per core: a training job runs on its own core, away
                # from the web server's GIL. No dashboard: nobody looks at it, and its port may be taken.
                self.cluster = LocalCluster(n_workers=self.workers or max(1, os.cpu_count() or 1),
                                            threads_per_worker=1, processes=True, dashboard_address=None,
                                            silence_logs=40)
                self.client = Client(self.cluster, set_as_default=False)
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, every job asked for must hear about it
            self.error = RuntimeError(f"the lab's compute cluster could not be started or reached "
                                      f"({type(exc).__name__}: {exc})")
        with self.lock:
            self._ready.set()
            waiting, self._waiting = self._waiting, []
            for job, args in waiting:
                self._send(job, *args)

    def ready(self, timeout: Optional[float] = None) -> bool:
        """Wait until the cluster is up (or failed to come up); True if it is usable."""
        self._ready.wait(timeout)
        return self._ready.is_set() and self.error is None

    def _start(self, label: str, fn: Callable[..., Any], cfg: Any, key: str) -> Job:
        jid = job_id(key)
        board = self.store.root / BOARD / f"{jid}.json"
        job = Job(label, board=board, future=Future())
        _write_json(board, {"state": "queued", "fraction": 0.0, "message": job.message, "notices": [],
                            "submitted": job.submitted})
        args = (fn, cfg, jid, {"LAYERLAB_QUICK": os.environ.get("LAYERLAB_QUICK", "")})
        if self._ready.is_set():  # (under self.lock, as _connect's hand-over is)
            self._send(job, *args)
        else:
            job.message = "starting the lab's workers (once per server)"
            self._waiting.append((job, args))
        return job

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
        dfut = self.client.submit(work, fn, cfg, str(self.store.root), jid, env, job.submitted,
                                  key=f"layerlab-{jid}" + (f"-{n}" if n else ""), pure=False)
        job.dask_future = dfut  # type: ignore[attr-defined] - held so the scheduler keeps the task

        def landed(f: Any) -> None:
            try:
                out = f.result()
            except BaseException as exc:  # noqa: BLE001 - any failure travels to the page through the future
                job.future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            else:
                job.notices[:] = list(out["notices"])
                job.started, job.fraction, job.message = True, 1.0, "done"
                job.future.set_result(out["result"])
            finally:
                board.unlink(missing_ok=True)
                job.dask_future = None  # type: ignore[attr-defined] - let the scheduler forget it

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
                    and data.get("submitted", now) < job.submitted and now - data.get("submitted", 0) < STALE_QUEUED_S):
                n += 1
        return n

    def close(self) -> None:
        self._ready.wait(120)
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


# -- the process-wide engine ---------------------------------------------------------------------------------------
_engine: Optional[Engine] = None
_engine_lock = threading.Lock()


def engine_name() -> str:
    """$LAYERLAB_ENGINE: `threads` (default) or `dask`; an unknown value is a clear error."""
    name = os.environ.get("LAYERLAB_ENGINE", "threads").strip().lower() or "threads"
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
