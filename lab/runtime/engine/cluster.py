"""The Dask engine: jobs as tasks on worker processes, away from the web server's process and its GIL.

By default a local cluster of worker processes (one single-threaded worker per core), started in the background
once per server process, in a process of its own (`spawn_cluster` / `serve_cluster`), over mutual TLS with a
certificate made for each start (`new_credentials`: the loopback is reachable by every local process); with
LAYERLAB_SCHEDULER=tls://host:port the same code uses an existing cluster whose workers share the store's folder,
over mutual TLS (`cluster_security`: a plain tcp:// cluster off the loopback is refused unless explicitly allowed).
Each worker is prepared once (`prepare_worker`: torch on one thread, a lower priority than the web server) and runs
a job with `run_on_worker`, which reports through the job's progress file (progress_files.py). The engine keeps its
own priority queue and sends a job only when a worker thread is free (see `DaskEngine.__init__`).
"""

from __future__ import annotations

import heapq
import ipaddress
import itertools
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from lab.runtime import settings
from lab.runtime.cores import computing
from lab.runtime.engine.jobs import Engine, Job
from lab.runtime.engine.progress_files import (
    PROGRESS_DIR,
    STALE_QUEUED_S,
    ProgressFileWriter,
    job_id,
    progress_file,
    read_progress,
    write_progress,
)
from lab.runtime.notices import collecting
from lab.runtime.progress import Curves
from lab.runtime.store import Store, recording_builds, resolve, use_store

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True
log = logging.getLogger("layerlab.engine")

WATCH_S = 2.0  # how often the engine looks for a dead cluster
HEAL_TIMEOUT_S = 180.0  # how long a heal keeps trying to start or reach a cluster before jobs fail with a message
RETRY_S = 30.0  # after a heal that found no cluster, how long until the next try
SNAPSHOT_S = 2.0  # the queue positions of every waiting page come from one read of the job files this old
STARTING = "starting the lab's workers (once per server)"
RESTARTING = "restarting the lab's workers (they stopped); your job runs as soon as they are back"
CONNECT_TIMEOUT = "30s"  # how long to try an existing scheduler before every waiting job fails with a message
ASK_TIMEOUT_S = 5.0  # a question to the scheduler (its worker threads) that takes longer keeps the last answer
RESULT_TIMEOUT_S = 300.0  # a finished task whose result cannot be fetched within this is taken as lost (rerun once)
# Memory bound of each local worker process: LAYERLAB_WORKER_MEMORY (lab/runtime/settings.py, default 3GiB); a trained
# model here takes a few MB, a training well under 1 GB, so 3 GiB is ample and still bounds a server that runs for a
# whole term. Worker processes yield to the web server (LAYERLAB_WORKER_NICE, default nice 10), so page views stay
# responsive while models train (0 on a machine shared with other heavy work, where niced workers starve).


# Dask's own periodic work, which a lab cluster pays for on every core whether or not a job runs: a statistical
# profiler sampling the task thread every 10 ms (for a dashboard the lab does not serve), memory polled every 100 ms
# by each nanny and worker, the system monitor every 500 ms. An idle 2-worker cluster took 2-3 s of CPU a minute
# with them (bench/bench_cluster_idle.py); the memory limit still holds, checked every second.
QUIET = {"distributed.worker.profile.enabled": False, "distributed.worker.memory.monitor-interval": "1s",
         "distributed.admin.system-monitor.interval": "2s", "distributed.admin.tick.interval": "1s"}


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


def prepare_worker() -> None:
    """Once per worker process: the lab's logging (lab/runtime/logs.py), torch on one thread
    (lab/runtime/threads.py), and a lower priority than the web server."""
    global _prepared
    if _prepared:
        return
    from lab.runtime.logs import configure
    from lab.runtime.threads import configure_threads

    configure(warn_unknown=False)  # the job's layerlab.* lines reach the server's log (its stderr)
    configure_threads()
    nice = settings.get("LAYERLAB_WORKER_NICE")
    lower_priority(nice)
    _prepared = True


def lower_priority(nice: int) -> None:
    """Put this process `nice` steps below normal priority. Windows has no niceness: there a positive value means its
    below-normal priority class (through psutil, which Dask's workers import anyway). Where it is not allowed, the
    worker runs at normal priority rather than not at all."""
    if nice <= 0:
        return
    try:
        if hasattr(os, "nice"):
            # On Linux a nice value belongs to a thread: this lowers the task thread, which is where a
            # single-threaded worker (and torch with one intra-op thread) does all of its computing.
            os.nice(nice)
        else:
            import psutil

            psutil.Process().nice(getattr(psutil, "BELOW_NORMAL_PRIORITY_CLASS", nice))
    except Exception:  # noqa: BLE001 - OSError, psutil.AccessDenied: a priority is a courtesy, not a condition
        pass


def run_on_worker(fn: Callable[..., Any], cfg: Any, root: str, jid: str, env: dict[str, str],
                  submitted: float) -> dict[str, Any]:
    """The task a Dask worker runs: `fn(cfg)` against the shared store, reporting through the job's file.

    Returns the result with the notices raised on the way (they are data, so they cross the process boundary).
    `env` carries the server's quick mode: it is part of the store key, so both sides must agree on it.
    """
    prepare_worker()
    os.environ.update(env)  # one task at a time per (single-threaded) worker: no other job sees this
    path = progress_file(root, jid)
    with collecting() as notices, use_store(Store(root)), recording_builds() as builds, computing():
        report = ProgressFileWriter(path, submitted, notices)
        report.write()
        t0 = time.perf_counter()
        result = fn(cfg, progress=report)
        seconds = time.perf_counter() - t0
        report.fraction, report.message = 1.0, "done"
        report.write("done")
    return {"result": result, "notices": list(notices), "seconds": seconds, "builds": list(builds)}


def _lost(exc: BaseException) -> bool:
    """Whether a task failed because the cluster went away (cancelled by a lost scheduler, a closed connection),
    not because the job raised: only those are run again."""
    from concurrent.futures import CancelledError

    from distributed.client import ClosedClientError

    return isinstance(exc, (CancelledError, ClosedClientError, ConnectionError, EOFError)) or \
        type(exc).__name__ in ("CommClosedError", "FutureCancelledError", "StreamClosedError")


# -- who may use the cluster at LAYERLAB_SCHEDULER ---------------------------------------------------------------
# Whoever reaches a scheduler runs code on its workers, which write the store every app server reads, and can attach
# a worker of their own whose pickled results the servers load. So a cluster off this machine is used only over TLS
# with both sides presenting certificates of the cluster's own CA (Dask's TLS requires and checks the peer's
# certificate on every connection); a plain tcp:// one only on the loopback, or where an operator said so.
TLS_SETTINGS = ("LAYERLAB_TLS_CA", "LAYERLAB_TLS_CERT", "LAYERLAB_TLS_KEY")
ALLOW_PLAINTEXT = "LAYERLAB_ALLOW_PLAINTEXT_CLUSTER"
PLAINTEXT_WARNING = ("LAYERLAB_SCHEDULER is a plain tcp:// cluster off this machine, allowed by "
                     f"{ALLOW_PLAINTEXT}=1: anyone who reaches its port can run code on the workers and hand this "
                     "server results; use tls:// (README: Deploying a course cluster safely)")


def _loopback(host: str) -> bool:
    """Whether `host` is this machine's loopback (by its literal text: a name is not resolved, so a DNS answer cannot
    make a remote host count as local)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cluster_security(address: str, env: Optional[Mapping[str, str]] = None) -> Any:
    """The Dask `Security` a client of the cluster at `address` (LAYERLAB_SCHEDULER) connects with: mutual TLS from
    LAYERLAB_TLS_CA / _CERT / _KEY for a tls:// address; None for a plain tcp:// one on the loopback, or off it where
    LAYERLAB_ALLOW_PLAINTEXT_CLUSTER=1 (a warning each time). Anything else is a `SettingError`, one line naming the
    settings (never the address, which a page may show, nor anything read from the files)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)  # no scheme: Dask's default, tcp
    paths = {name: settings.get(name, env) for name in TLS_SETTINGS}
    if scheme == "tls":
        missing = [name for name, path in paths.items() if not path]
        if missing:
            raise settings.SettingError(f"LAYERLAB_SCHEDULER is a tls:// address, so {', '.join(missing)} must be set "
                                        "too (the cluster's CA certificate, this server's certificate and its key)")
        for name, path in paths.items():
            if not os.path.isfile(path) or not os.access(path, os.R_OK):
                raise settings.SettingError(f"{name} names no readable file")
        if os.stat(paths["LAYERLAB_TLS_KEY"]).st_mode & 0o077:
            log.warning("LAYERLAB_TLS_KEY is readable by other users of this machine: make it 0600")
        from distributed.security import Security

        return Security(tls_ca_file=paths["LAYERLAB_TLS_CA"], tls_client_cert=paths["LAYERLAB_TLS_CERT"],
                        tls_client_key=paths["LAYERLAB_TLS_KEY"], require_encryption=True)
    if scheme != "tcp":
        raise settings.SettingError(f"LAYERLAB_SCHEDULER's {scheme}:// is not supported: use tls://host:port")
    given = [name for name, path in paths.items() if path]
    if given:
        raise settings.SettingError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} set but "
                                    "LAYERLAB_SCHEDULER is not a tls:// address: use tls://host:port")
    try:
        host = parse_host_port(location, 8786)[0]
    except ValueError:
        raise settings.SettingError("LAYERLAB_SCHEDULER is not an address such as tls://host:8786") from None
    if _loopback(host):
        return None
    if not settings.get(ALLOW_PLAINTEXT, env):
        raise settings.SettingError(
            "LAYERLAB_SCHEDULER is a plain tcp:// address off this machine, where anyone who reaches its port could "
            "run code on the workers: use tls:// with LAYERLAB_TLS_CA, LAYERLAB_TLS_CERT and LAYERLAB_TLS_KEY "
            f"(README: Deploying a course cluster safely), or set {ALLOW_PLAINTEXT}=1 on a network no one else "
            "reaches")
    log.warning(PLAINTEXT_WARNING)
    return None


# -- the local cluster's credentials -----------------------------------------------------------------------------
# The loopback is not a boundary: any process on this machine, of any account, reaches 127.0.0.1, and a client of the
# scheduler runs code on the workers as the lab's user (it read the server's secret in a test). So the local cluster
# too speaks mutual TLS, with a key and a self-signed certificate made for each start (Dask's `Security.temporary`):
# the server hands them to the cluster's process in files of a 0700 folder that is gone as soon as the cluster has
# read them, and holds them only in memory after. A client without them cannot connect.
CREDENTIAL_FILES = ("cert.pem", "key.pem")


def local_security(cert: str, key: str) -> Any:
    """Mutual TLS for every role of the local cluster (scheduler, workers, the server's client) from one self-signed
    certificate and its key (PEM text)."""
    from distributed.security import Security

    return Security(require_encryption=True, tls_ca_file=cert, tls_client_cert=cert, tls_client_key=key,
                    tls_scheduler_cert=cert, tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key)


def new_credentials() -> tuple[str, str]:
    """A fresh (certificate, key) pair in PEM, valid for this start of the local cluster only."""
    from distributed.security import Security

    sec = Security.temporary()
    return sec.tls_ca_file, sec.tls_client_key


# -- the local cluster's own process ---------------------------------------------------------------------------
# A LocalCluster made inside the web server runs its scheduler on the server's event loop: every heartbeat, task
# transition and progress query of the workers then takes the server's GIL, and cached page views waited behind it
# while two models trained (p95 0.7-1.2 s). So the scheduler and the workers' nannies live in a process of
# their own, started with the server; the server holds only a Client. The process exits when its parent does (it
# polls its parent id), so a killed server leaves no cluster behind.
SERVE = "from lab.runtime.engine.cluster import serve_cluster; serve_cluster()"
# dashboard_address=None turns the dashboard off, but Dask's scheduler still serves its HTTP routes (health, metrics)
# and binds them to its default port 8787 unless given an address: with another Dask (or another lab's server) on the
# machine, a newcomer's start printed "Port 8787 is already in use". A free loopback port instead, which the lab never
# reads; no setting asks for a dashboard.
SCHEDULER_HTTP = {"dashboard_address": "127.0.0.1:0"}
START_TIMEOUT_S = 300.0  # worker processes import torch: slow on a loaded machine


def serve_cluster() -> None:
    """Body of the cluster process (`python -c SERVE WORKERS PARENT_PID ADDRESS_FILE PRELOAD`): a LocalCluster of
    WORKERS single-threaded worker processes over mutual TLS, with the credentials the parent left beside
    ADDRESS_FILE (`CREDENTIAL_FILES`); writes its scheduler's address to ADDRESS_FILE, then runs until the parent is
    gone or it is terminated."""
    import dask
    from distributed import LocalCluster

    workers, parent, address_file = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    extra = [m for m in (sys.argv[4] if len(sys.argv) > 4 else "").split(",") if m]
    cert, key = ((address_file.parent / name).read_text() for name in CREDENTIAL_FILES)
    security = local_security(cert, key)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ(), **QUIET}):
        # preload: each worker imports the lab (torch) as it starts, in the background at server start-up, not at
        # the first student's job under `nice` (measured on a loaded machine: 15-20 s before a job's first line).
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40, memory_limit=settings.get("LAYERLAB_WORKER_MEMORY"),
                               scheduler_port=0, host="127.0.0.1", protocol="tls://", security=security,
                               preload=["lab.runtime.engine.cluster", *extra], scheduler_kwargs=SCHEDULER_HTTP)
    tmp = address_file.with_suffix(".tmp")
    tmp.write_text(cluster.scheduler_address)
    tmp.replace(address_file)
    parent_alive = _watch(parent)
    while not stop.wait(1.0) and parent_alive():
        pass
    cluster.close(timeout=30)


def _watch(parent: int, by_parentage: bool = os.name != "nt") -> Callable[[], bool]:
    """A check that process `parent` still runs. POSIX re-parents an orphan, so a changed parent id says it; on Windows
    a process's parent id never changes, so psutil asks after that very process (its id and start time)."""
    if by_parentage:
        return lambda: os.getppid() == parent
    import psutil

    try:
        return psutil.Process(parent).is_running
    except psutil.Error:  # already gone
        return lambda: False


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill a cluster's process and its workers: its process group where there are process groups (POSIX), else
    the process and every process it started, found by parentage (Windows)."""
    if hasattr(os, "killpg"):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    else:
        _kill_tree(proc)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        pass


def _ask_to_stop(proc: subprocess.Popen) -> None:
    """Ask the cluster's process to close its cluster (SIGTERM, see `serve_cluster`). Windows cannot send another
    process a signal to handle (`terminate` kills it outright, leaving its workers), so there the whole tree goes."""
    if os.name == "nt":
        _kill_tree(proc)
    else:
        proc.terminate()


def _kill_tree(proc: subprocess.Popen) -> None:
    """Kill `proc` and its descendants, the oldest first (a nanny gone before its worker cannot start another)."""
    import psutil

    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.Error:  # gone already: its workers exit by themselves (Dask's pipe to the parent closed)
        family = []
    if not family:
        proc.kill()
    for p in family:
        try:
            p.kill()
        except psutil.Error:
            pass


def spawn_cluster(workers: int, preload: Sequence[str] = ()) -> tuple[subprocess.Popen, str, Any]:
    """Start the cluster process (see `serve_cluster`); returns it, its scheduler's address (tls://) and the
    `Security` a client connects with. Its output goes where this process's goes (a pipe nobody reads would fill up
    and stall the workers that inherit it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the workers import what this process can
    cert, key = new_credentials()
    with tempfile.TemporaryDirectory(prefix="layerlab-cluster-") as tmp:  # mode 0700: this account only
        os.chmod(tmp, 0o700)
        for name, text in zip(CREDENTIAL_FILES, (cert, key), strict=True):
            path = Path(tmp) / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
        address_file = Path(tmp) / "address"
        # A process group of its own where there are groups (POSIX): a heal kills the whole group, so workers whose
        # cluster died go with it (elsewhere `_kill_group` finds them by parentage).
        proc = subprocess.Popen([sys.executable, "-c", SERVE, str(workers), str(os.getpid()), str(address_file),
                                 ",".join(preload)],
                                env=env, start_new_session=hasattr(os, "killpg"))
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if address_file.exists():  # written after the credentials were read: the folder may go now
                return proc, address_file.read_text().strip(), local_security(cert, key)
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the cluster process did not start (exit status {proc.poll()})")


class DaskEngine(Engine):
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

    # -- healing -----------------------------------------------------------------------------------------------
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
