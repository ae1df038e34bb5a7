"""One engine for heavy work: every training, sweep and table the app asks for goes through `engine()`.

Two implementations behind one interface (`submit(label, fn, cfg, priority, owner, standard) -> Job`, `jobs`,
`key`, `ahead`, `waiting`, `sweep`; admission control in `admission.py`):
- `DaskEngine` (LAYERLAB_ENGINE=dask, the default; `cluster.py`): a Dask `distributed` cluster of worker processes,
  so training leaves the web server's process and its GIL; with LAYERLAB_SCHEDULER=tls://host:port an existing one.
  Its parts: the local cluster's process (`local_cluster.py`), who may use a cluster (`security.py`), a worker's
  side (`worker.py`), replacing a lost cluster (`healing.py`).
- `ThreadEngine` (LAYERLAB_ENGINE=threads; `jobs.py`): a few threads inside the server process, for machines where
  worker processes are not wanted; the AppTests use it (no cluster to start).

Both honour a job's priority (warming runs at BACKGROUND, below every student's job) and keep the app's guarantees:
a job is keyed by function + config and a second asker joins it; the job table lives in the engine, so a Streamlit
rerun never loses a job. Progress crosses processes through files (`progress_files.py`); the command line's tables
and warming use the same engine (`batch.py`). Nothing here imports Streamlit (the app wraps `engine()` in
app/jobs.py).
"""

from __future__ import annotations

import atexit
import threading
from typing import Optional, Sequence

from lab.runtime import settings
from lab.runtime.engine.batch import compute, pool
from lab.runtime.engine.cluster import DaskEngine
from lab.runtime.engine.jobs import BACKGROUND, KEEP_DONE, MAX_THREADS, Engine, Job, ThreadEngine
from lab.runtime.engine.local_cluster import serve_cluster, spawn_cluster
from lab.runtime.engine.progress_files import PROGRESS_DIR, job_id, progress_file, read_progress
from lab.runtime.engine.worker import worker_environ

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

__all__ = ["BACKGROUND", "KEEP_DONE", "MAX_THREADS", "PROGRESS_DIR", "DaskEngine", "Engine", "Job", "ThreadEngine",
           "compute", "engine", "engine_name", "job_id", "pool", "progress_file", "read_progress", "serve_cluster",
           "spawn_cluster", "worker_environ"]

_engine: Optional[Engine] = None
_engine_lock = threading.Lock()


def engine_name() -> str:
    """$LAYERLAB_ENGINE: `dask` (default) or `threads`; another value is a SettingError (a ValueError) of one line."""
    return settings.get("LAYERLAB_ENGINE")


def engine(preload: Sequence[str] = ()) -> Engine:
    """The engine of this process, made on first use (the local cluster starts then, once; its workers import
    `preload` as they start)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            if engine_name() == "dask":
                _engine = DaskEngine(address=settings.get("LAYERLAB_SCHEDULER") or None, preload=preload)
            else:
                _engine = ThreadEngine()
            atexit.register(_engine.close)
        return _engine
