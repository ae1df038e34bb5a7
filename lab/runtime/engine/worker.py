"""A Dask worker of the lab: its processes' environment (`worker_environ`), its preparation once per process
(`prepare_worker`: torch on one thread, a lower priority than the web server) and the task it runs for every job
(`run_on_worker`, which reports through the job's progress file: progress_files.py).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from lab.runtime import settings
from lab.runtime.cores import computing
from lab.runtime.engine.progress_files import ProgressFileWriter, progress_file
from lab.runtime.notices import collecting
from lab.runtime.store import Store, recording_builds, use_store

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True


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
