"""Jobs and their queue: what a page holds while its result is computed, and the engine without worker processes.

`Job` is the page's view of one computation (progress, notices, its future). `Engine` holds what every engine
shares: the job table (process-wide, so a Streamlit rerun never loses a job), a job's key (function + config: a
second asker joins the running job), priorities and queue positions. `ThreadEngine` runs jobs on a few threads of
this process (LAYERLAB_ENGINE=threads; the AppTests use it); the Dask engine is in `cluster.py`.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from lab.runtime.cores import computing
from lab.runtime.engine.admission import Admission, Owner
from lab.runtime.engine.progress_files import read_progress
from lab.runtime.notices import collecting
from lab.runtime.progress import Curves
from lab.runtime.store import config_json, recording_builds

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

MAX_THREADS = 2
BACKGROUND = -10  # the priority of warming jobs: a queued student job always runs before them
KEEP_DONE = 128  # finished jobs remembered (their results also sit in the store)


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
    progress_file: Optional[Path] = None  # where a job that runs in another process reports (progress_files.py)
    priority: int = 0  # higher runs first; BACKGROUND for warming, which must never run ahead of a student
    sent: bool = False  # taken off its engine's queue (to a thread, or to the cluster)
    task: tuple = ()  # what the engine needs to send it: kept so a lifted job can be queued again
    seconds: Optional[float] = None  # how long the job itself ran (not its wait), once done
    builds: list = field(default_factory=list)  # entries it built (store.recording_builds), once done
    dask_future: Any = None  # the Dask engine's handle on the task while it runs: held so the scheduler keeps it
    retries: int = 0  # times it went back to the queue because the cluster died under it (cluster.py)
    curves: Curves = field(default_factory=Curves)  # training curves from its epoch reports (lab/runtime/progress.py)
    _read_at: float = 0.0

    def report(self, fraction: float, message: str) -> None:
        self.started = True
        self.fraction, self.message = fraction, message
        self.curves.add(message)

    def refresh(self) -> None:
        """Read the job's progress file (at most 4 times a second); a no-op for in-process jobs."""
        if self.progress_file is None or time.monotonic() - self._read_at < 0.25:
            return
        self._read_at = time.monotonic()
        data = read_progress(self.progress_file)
        if data and data.get("state") in ("running", "done"):
            self.started = True
            self.fraction = float(data.get("fraction", 0.0))
            self.message = str(data.get("message", ""))
            curves = data.get("curves")
            if curves is not None:  # a file of an older server's worker has none: keep what we have
                self.curves = Curves.from_data(curves)
            for n in data.get("notices", []):
                if n not in self.notices:
                    self.notices.append(str(n))


def _failed(job: Job) -> bool:
    """A finished job that left no result (an error, or dropped before it ran): asking again starts it anew."""
    fut = job.future
    return fut.done() and (fut.cancelled() or fut.exception() is not None)


class Engine:
    """What both engines share: the job table, keys, joining, queue positions."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.lock = threading.Lock()
        self.admission = Admission()

    @staticmethod
    def key(fn: Callable[..., Any], cfg: Any) -> str:
        return f"{fn.__module__}.{fn.__qualname__}:{config_json(cfg)}"

    def submit(self, label: str, fn: Callable[..., Any], cfg: Any, priority: int = 0,
               owner: Optional[Owner] = None, standard: bool = True) -> Job:
        """Start `fn(cfg)` (or join the same job, running or done with a result); returns its Job at once.

        `priority`: queued jobs with a higher one start first (BACKGROUND for warming). A student who joins a
        queued background job lifts it to their priority where the engine can (the thread engine). `owner` and
        `standard` (a default view or preset) go to admission control (admission.py): a new custom job of an
        owner runs at CUSTOM below every standard one, or raises Busy when its bounds are reached."""
        key = self.key(fn, cfg)
        with self.lock:
            job = self.jobs.get(key)
            if job is not None and not _failed(job):
                if priority > job.priority:
                    self._lift(job, priority)
                self.admission.add(key, owner, custom=False)
                return job
            offset = self.admission.admit(key, owner, standard, self.jobs)
            job = self._start(label, fn, cfg, key, priority + offset)
            self.jobs[key] = job
            self.admission.add(key, owner, custom=offset != 0)
            if len(self.jobs) > KEEP_DONE:
                old = [k for k, j in self.jobs.items() if j.future.done()][: len(self.jobs) - KEEP_DONE]
                for k in old:
                    del self.jobs[k]
                self.admission.forget(old)
            return job

    def sweep(self, alive: Callable[[str], bool]) -> int:
        """Drop queued jobs whose every owner's session has ended (nobody else waits for them); returns how many."""
        with self.lock:
            gone = self.admission.orphans(self.jobs, alive)
            for k in gone:
                job = self.jobs.pop(k)
                job.future.cancel()  # its queue entry is skipped when it comes up
                if job.progress_file is not None:
                    job.progress_file.unlink(missing_ok=True)
            self.admission.forget(gone)
        return len(gone)

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
            with collecting() as notices, recording_builds() as builds, computing():
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
