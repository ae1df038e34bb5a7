"""Run lab calls off the script thread, share them between sessions, and show their progress: `run` (a progress bar
until the result lands), `Pending` (pieces drawn as they land), `View` (a view's plan run through these), `prefetch`.

Why: a Streamlit rerun (any widget touched) interrupts the script at its next st.* call. If training ran in
the script thread, moving a slider mid-training would throw the work away. Here a job runs in a small
server-wide thread pool: a rerun only stops the *waiting*, the job finishes and lands in the store, and a
second student asking for the same config joins the running job instead of starting another. The engine
(lab/runtime/engine/: a 2-thread pool, or Dask worker processes with LAYERLAB_ENGINE=dask; app/server_engine.py) bounds
how much training runs at once; whichever it is, progress, notices and the queue position reach the page the same way.
A stored result is read in the script thread first (app/stored_results.py); who may submit and when a page works is
app/page_admission.py.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Callable, Optional, Sequence

import streamlit as st

from app import page_admission, query, server_engine, stored_results, training_view
from lab.catalog.presets import Need, by_key
from lab.runtime.engine import Job
from lab.runtime.engine.admission import Busy

log = logging.getLogger("layerlab.jobs")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.~@+-]+){2,}[\\/]?")


def without_paths(exc: BaseException, limit: int = 200) -> str:
    """An exception's text for a page: file paths (which tell a visitor where the server keeps its checkout and its
    store) replaced by "<path>", and cut short."""
    text = _PATH.sub("<path>", str(exc))
    return text[:limit] + ("..." if len(text) > limit else "")


def _status(label: str, job: Job) -> str:
    """The bar's text: the job's own message, or its place in the queue while it waits."""
    job.refresh()
    if not job.started:
        ahead = server_engine.runner().ahead(job)
        if ahead:
            return f"{label}: queued, {ahead} job{'s' if ahead > 1 else ''} ahead of yours"
    return f"{label}: {job.message}"


POLL_S = 0.5  # a waiting page redraws its progress at most this often
RERUN_EVERY_S = 1.0  # a page reruns itself (a piece landed) at most once this often per session
RUN_STARTED = "_layerlab_run_started"  # session_state: when this session's last full run began (app/shell.py)
STANDARD = "_layerlab_standard"  # session_state: this run's settings are a default view or a preset (classroom.py)


def _submit(label: str, fn: Callable[..., Any], cfg: Any, standard: Optional[bool] = None) -> Job:
    """Submit through admission control (lab/runtime/engine/admission.py): this run's settings say whether the job
    is a standard one, unless the caller says; queued jobs of visitors who left are dropped first. Busy when it is
    not admitted."""
    eng = server_engine.runner()
    dropped = eng.sweep(page_admission.alive)
    if dropped:
        log.info("dropped %d queued jobs of visitors who left", dropped)
    if standard is None:
        standard = bool(st.session_state.get(STANDARD, True))
    return eng.submit(label, fn, cfg, owner=page_admission.owner(), standard=standard)


def _started(label: str, fn: Callable[..., Any], cfg: Any, wait: float, standard: Optional[bool] = None) -> Job:
    job = _submit(label, fn, cfg, standard)
    try:
        job.future.result(timeout=wait)  # a quick job returns within this: no bar flashes up
    except Exception:  # noqa: BLE001 - still running (TimeoutError) or failed; the caller handles both
        pass
    return job


# Called with (fn, cfg) for every lab call a page asks of the runner (run, Pending.get, prefetch, View.submit), read
# or computed: tests/test_conformance.py records a page's calls with it and compares them with its plan.
asked_hooks: list[Callable[[Callable[..., Any], Any], None]] = []


def _asked(fn: Callable[..., Any], cfg: Any) -> None:
    for hook in list(asked_hooks):
        hook(fn, cfg)


def run(label: str, fn: Callable[..., Any], cfg: Any) -> Optional[Any]:
    """Result of `fn(cfg, progress=...)`, showing a progress bar while it runs; None (and a message) if it failed."""
    _asked(fn, cfg)
    result = stored_results.lookup(label, fn, cfg)
    if result is not stored_results.MISSING:
        return result
    try:
        job = _started(label, fn, cfg, 0.05)
    except Busy as why:
        st.warning(f"{label}: not started, {query.plain(why)}.", icon=":material/hourglass_disabled:")
        return None
    return _waited(label, job)


def _waited(label: str, job: Job) -> Optional[Any]:
    """Wait for a submitted job with its progress bar; its result, or None (and a message) if it failed."""
    fut = job.future
    if not fut.done():
        shown = (0.0, _status(label, job))
        bar = st.progress(shown[0], text=shown[1])
        curve = training_view.LiveChart(f"layerlab_live_{id(job)}")  # a training's loss and accuracy, as they come
        curve.update(job)
        while not fut.done():
            # Wait on the future itself (it wakes the page the moment the job lands); redraw the bar at most
            # POLL_S apart and only when what it says changed: thirty waiting students must not each send the
            # browser a message several times a second.
            try:
                fut.result(timeout=POLL_S)
            except Exception:  # noqa: BLE001 - still running (TimeoutError) or failed; the loop and _finished tell
                pass
            now = (round(min(max(job.fraction, 0.0), 1.0), 2), _status(label, job))
            if now != shown and not fut.done():
                bar.progress(now[0], text=now[1])
                shown = now
                curve.update(job)
        bar.empty()
        curve.clear()
    return _finished(label, job)


def _finished(label: str, job: Job) -> Optional[Any]:
    """The result of a finished job, showing its notices; None (and a message) if it failed."""
    fut = job.future
    if fut.cancelled():
        st.info(f"{label}: the job was dropped (its page had closed). Rerun the page to compute it.")
        return None
    for n in job.notices:
        st.warning(n, icon="⚠️")
    exc = fut.exception()
    if exc is not None:
        if isinstance(exc, ValueError):
            st.error(f"{label} could not run: {query.plain(exc)}")
        else:
            st.error(f"{label} failed unexpectedly ({type(exc).__name__}: {query.plain(without_paths(exc))}). Try "
                     "again; if it keeps failing, tell your teacher which settings you used (copy the page link).")
            log.error("%s failed", label, exc_info=exc)  # the full text, paths included, goes to the server log
        return None
    return fut.result()


def log_failure(job: Job) -> None:
    """Write why a finished job left no result to the server log (for a page that says so in its own words)."""
    fut = job.future
    if fut.cancelled():
        log.info("%s: the job was dropped (its page had closed)", job.label)
    elif fut.exception() is not None:
        log.error("%s failed", job.label, exc_info=fut.exception())


def prefetch(label: str, fn: Callable[..., Any], cfg: Any) -> None:
    """Start `fn(cfg)` in the background unless it is stored, so that it runs beside what the page waits for."""
    _asked(fn, cfg)
    _start_missing(label, fn, cfg)


def _start_missing(label: str, fn: Callable[..., Any], cfg: Any) -> None:
    if stored_results.lookup(label, fn, cfg) is stored_results.MISSING:
        try:
            _submit(label, fn, cfg)
        except Busy:  # only a head start: the page asks again when it needs it
            pass


class Pending:
    """Results a page draws as they arrive: the first figures come at once, the rest fill in.

    `get` answers from the store or a finished job, or starts the job and returns None (draw a placeholder);
    `show()` (once, where the progress should appear) draws a bar per missing result and polls once a second,
    rerunning the page as soon as one of them lands. A rerun interrupts only the polling, never the jobs.
    """

    def __init__(self) -> None:
        self.keys: list[str] = []

    def get(self, label: str, fn: Callable[..., Any], cfg: Any, wait: float = 0.3,
            standard: Optional[bool] = None) -> Optional[Any]:
        """`standard`: whether the job counts as a default view's or preset's (None: as this run's settings say)."""
        _asked(fn, cfg)
        result = stored_results.lookup(label, fn, cfg)
        if result is not stored_results.MISSING:
            return result
        try:
            job = _started(label, fn, cfg, wait, standard)
        except Busy as why:
            st.warning(f"{label}: not started, {query.plain(why)}.", icon=":material/hourglass_disabled:")
            return None
        if job.future.done():
            return _finished(label, job)
        self.keys.append(server_engine.runner().key(fn, cfg))
        return None

    def show(self) -> None:
        if self.keys:
            st.session_state[page_admission.WAITING] = True  # the page keeps its turn while it polls (take_turn)
            _poll(tuple(self.keys))


class View:
    """A view's plan (its descriptor's `plan(settings)`, lab/catalog/presets.py: `Need`) run through the job runner:
    the page asks for each call by its key and draws what comes back; it makes no lab call of its own.

    `run(key)` waits with a progress bar (`jobs.run`), `run_all()` submits every missing call at once (they compute
    side by side) and then waits for each in the plan's order, `get(key)` answers at once or starts the job and
    returns None (drawn as it lands: `show()` polls, as `Pending`), `prefetch(key)` starts one in the background and
    `submit(key)` hands back the engine's job. Each behaves as the function it wraps: a stored result first, in
    this thread; admission control; a message and None for a call that failed or was refused. `prefix` starts
    every label (a pinned setting's calls say so); `pending` polls this view's calls with another's."""

    def __init__(self, plan: Sequence[Need], prefix: str = "", pending: Optional[Pending] = None) -> None:
        self.calls = by_key(plan)
        self.prefix = prefix
        self.pending = Pending() if pending is None else pending

    def __contains__(self, key: str) -> bool:
        return key in self.calls

    def need(self, key: str) -> Need:
        """One call of the plan; a KeyError naming the plan's keys when it has no such call."""
        if key not in self.calls:
            raise KeyError(f"the plan has no call {key!r}; it has {', '.join(self.calls)}")
        return self.calls[key]

    def cfg(self, key: str) -> Any:
        return self.need(key).cfg

    def label(self, key: str) -> str:
        return self.prefix + self.need(key).label

    def run(self, key: str) -> Optional[Any]:
        n = self.need(key)
        return run(self.label(key), n.fn, n.cfg)

    def run_all(self, keys: Optional[Sequence[str]] = None) -> dict[str, Optional[Any]]:
        """{key: result} of `keys` (default: every call the plan always makes), submitted together."""
        keys = [k for k, n in self.calls.items() if not n.optional] if keys is None else list(keys)
        out: dict[str, Optional[Any]] = {}
        jobs: dict[str, Job] = {}
        for key in keys:
            n = self.need(key)
            _asked(n.fn, n.cfg)
            got = stored_results.lookup(self.label(key), n.fn, n.cfg)
            if got is not stored_results.MISSING:
                out[key] = got
                continue
            try:
                jobs[key] = _started(self.label(key), n.fn, n.cfg, 0.0)
            except Busy as why:
                st.warning(f"{self.label(key)}: not started, {query.plain(why)}.",
                           icon=":material/hourglass_disabled:")
                out[key] = None
        for key, job in jobs.items():
            out[key] = _waited(self.label(key), job)
        return {k: out[k] for k in keys}

    def head_start(self, beside: Sequence[Need] = ()) -> None:
        """Start every call the plan always makes that is not stored, in the plan's order, then `beside` (the calls
        the view's claims at other seeds rest on), so that the engine's workers compute them side by side while the
        page waits for the first: a page that asks for its calls one after another kept one worker of two idle
        (Delete's default view, an empty store: 28.7 s of its own calls on one worker, then its seeds). A stored
        call costs a file check; a call refused by admission control is asked again where the page needs it."""
        for key, n in self.calls.items():
            if not n.optional:
                prefetch(self.label(key), n.fn, n.cfg)
        for n in beside:  # not the page's own calls (the claims' at other seeds): not recorded as asked
            _start_missing(n.label, n.fn, n.cfg)

    def get(self, key: str, wait: float = 0.3) -> Optional[Any]:
        n = self.need(key)
        return self.pending.get(self.label(key), n.fn, n.cfg, wait)

    def prefetch(self, key: str) -> None:
        n = self.need(key)
        prefetch(self.label(key), n.fn, n.cfg)

    def submit(self, key: str) -> Job:
        """The engine's job of one call (joined when it runs or is stored), for a page that polls it itself."""
        n = self.need(key)
        _asked(n.fn, n.cfg)
        return server_engine.runner().submit(self.label(key), n.fn, n.cfg)

    def show(self) -> None:
        """The bars of the calls `get` left computing, polled until they land (`Pending.show`)."""
        self.pending.show()


def mark_run() -> None:
    """Note that a full run of the page begins (app/shell.py): the polling below reruns the page at most once a
    second after it."""
    st.session_state[RUN_STARTED] = time.monotonic()


@st.fragment(run_every=RERUN_EVERY_S)
def _poll(keys: tuple[str, ...]) -> None:
    """Only this fragment reruns while pieces are computing (the bars); the whole page reruns when one lands, and
    never sooner than RERUN_EVERY_S after its last full run."""
    jobs = [j for j in (server_engine.runner().jobs.get(k) for k in keys) if j is not None]
    since = time.monotonic() - st.session_state.get(RUN_STARTED, 0.0)
    if (not jobs or any(j.future.done() for j in jobs)) and since >= RERUN_EVERY_S:
        st.rerun()  # the whole page: it draws what landed and polls for the rest
    for i, j in enumerate(jobs):
        text = _status(j.label, j)
        st.progress(min(max(j.fraction, 0.0), 1.0), text=text)
        training_view.live(j, f"layerlab_live_{i}")
