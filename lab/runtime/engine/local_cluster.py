"""The local Dask cluster's own process: started with the server (`spawn_cluster`), its body (`serve_cluster`: a
LocalCluster of single-threaded worker processes over mutual TLS, Dask's periodic work turned down: `QUIET`), and
how it is stopped or killed with its workers (`_ask_to_stop`, `_kill_group`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from lab.runtime import settings
from lab.runtime.engine.security import CREDENTIAL_FILES, local_security, new_credentials
from lab.runtime.engine.worker import worker_environ

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

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


# A LocalCluster made inside the web server runs its scheduler on the server's event loop: every heartbeat, task
# transition and progress query of the workers then takes the server's GIL, and cached page views waited behind it
# while two models trained (p95 0.7-1.2 s). So the scheduler and the workers' nannies live in a process of
# their own, started with the server; the server holds only a Client. The process exits when its parent does (it
# polls its parent id), so a killed server leaves no cluster behind.
SERVE = "from lab.runtime.engine.local_cluster import serve_cluster; serve_cluster()"
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
