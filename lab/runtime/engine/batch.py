"""Batch runs from the command line: tables and warming compute their missing results on the same engine as pages.

`compute(calls)` submits the (entry point, config) calls the store lacks, each once, and waits; `pool(workers)` wraps
it as a table's `Pool` (lab/experiment.py). So the lab has one executor for pages, tables and warming.
"""

from __future__ import annotations

from concurrent.futures import as_completed
from typing import Any, Callable, Optional

from lab.runtime import settings
from lab.runtime.engine.cluster import DaskEngine
from lab.runtime.engine.jobs import Engine
from lab.runtime.store import active_store

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True


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
    eng = engine or DaskEngine(address=settings.get("LAYERLAB_SCHEDULER") or None, workers=max(1, workers),
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
