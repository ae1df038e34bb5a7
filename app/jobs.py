"""Run lab calls off the script thread, share them between sessions, and show their progress.

Why: a Streamlit rerun (any widget touched) interrupts the script at its next st.* call. If training ran in
the script thread, moving a slider mid-training would throw the work away. Here a job runs in a small
server-wide thread pool: a rerun only stops the *waiting*, the job finishes and lands in the store, and a
second student asking for the same config joins the running job instead of starting another. The engine
(lab/runtime/engine/: a 2-thread pool, or Dask worker processes with LAYERLAB_ENGINE=dask) bounds how much training
runs at once; whichever it is, progress, notices and the queue position reach the page the same way.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Optional, Sequence

import streamlit as st

from app import figcache, query, training_view
from app.clients import client_address
from app.turns import Turns
from lab.catalog.presets import Need, by_key
from lab.classroom import warm
from lab.runtime import engine as engines
from lab.runtime import quick, settings
from lab.runtime.engine import Job
from lab.runtime.engine.admission import LOCAL, Busy, Owner
from lab.runtime.notices import collecting
from lab.runtime.store import NotCached, active_store, cached_only, config_json, read_hooks, shared_reads

log = logging.getLogger("layerlab.jobs")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.~@+-]+){2,}[\\/]?")
JobRunner = engines.Engine  # what runner() returns: `submit`, `jobs`, `key`, `ahead` (lab/runtime/engine/)


@st.cache_resource(show_spinner=False)
def _engine() -> JobRunner:
    # The local workers import every page's experiment as they start (in the background, at server start): a
    # visitor's first job on a fresh worker then starts at once instead of after seconds of imports. A server
    # started by app/serve.py (`make app`) made the engine as it booted; this finds that one.
    from lab.catalog import config_modules

    return engines.engine(preload=config_modules())


def start_engine() -> None:
    """Start the server's engine with its first page run (a local cluster comes up in the background), so that
    the first visitor who needs a job does not wait for its workers to start and import the lab."""
    try:
        _engine()
    except ValueError:  # misconfigured: the page that needs a job says so (runner())
        pass


def runs_in_process() -> bool:
    """Whether the server's jobs run in this process (the threads engine), not on worker processes; False when the
    engine is misconfigured (each page says so)."""
    try:
        return _engine().name == "threads"
    except ValueError:
        return False


@st.cache_resource(show_spinner=False)
def background_warmer() -> Optional[warm.Background]:
    """Once per server: warm every page's default view on the engine at BACKGROUND priority (lab/classroom/warm.py);
    None in quick mode, with LAYERLAB_WARM=0, or when the engine is misconfigured (each page then says so)."""
    if quick.quick() or not settings.get("LAYERLAB_WARM"):
        return None
    try:
        eng = _engine()
    except ValueError:
        return None
    return warm.Background(eng, warm.default_views)


def runner() -> JobRunner:
    """The server-wide engine (one per Streamlit process, shared by every session): threads or Dask workers
    (LAYERLAB_ENGINE). An unknown engine stops the page with one clear message; a cluster that cannot be started or
    reached fails each job with a message saying so (lab/runtime/engine/)."""
    try:
        return _engine()
    except ValueError as exc:
        st.error(f"The lab is misconfigured: {exc}")
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises; this keeps the type checker honest


def without_paths(exc: BaseException, limit: int = 200) -> str:
    """An exception's text for a page: file paths (which tell a visitor where the server keeps its checkout and its
    store) replaced by "<path>", and cut short."""
    text = _PATH.sub("<path>", str(exc))
    return text[:limit] + ("..." if len(text) > limit else "")


def _status(label: str, job: Job) -> str:
    """The bar's text: the job's own message, or its place in the queue while it waits."""
    job.refresh()
    if not job.started:
        ahead = runner().ahead(job)
        if ahead:
            return f"{label}: queued, {ahead} job{'s' if ahead > 1 else ''} ahead of yours"
    return f"{label}: {job.message}"


_MISSING = object()
POLL_S = 0.5  # a waiting page redraws its progress at most this often
RERUN_EVERY_S = 1.0  # a page reruns itself (a piece landed) at most once this often per session
RUN_STARTED = "_layerlab_run_started"  # session_state: when this session's last full run began (app/shell.py)
# Stored results already read, one shared object per store entry (by the entry's full path, so two stores or quick
# mode never mix): an entry never changes once written (its name hashes what it depends on), so a rerun or another
# session gets the same object without reading and parsing the file again, and app/figcache.py keys the figures
# drawn from it by that name. Shared: pages must not change a result (they build new dicts from it).
MAX_RESULTS = figcache.MAX_REGISTERED
_results: OrderedDict[str, Any] = OrderedDict()
_results_lock = threading.Lock()
# Every entry read in the script thread (a function that reads several, like rearrange.all_models, included) keys
# the figures drawn from it by its file (lab/runtime/store.py: shared_reads).
read_hooks.append(figcache.register)


def entry_key(fn: Callable[..., Any], cfg: Any) -> Optional[str]:
    """The store entry that holds `fn(cfg)` (its path), or None for a function that is not a cached entry point."""
    kind = getattr(fn, "kind", None)
    if kind is None:
        return None
    store = active_store()
    return str(store.path(store.key(kind, cfg), ".json"))


def _composed_key(fn: Callable[..., Any], cfg: Any) -> Optional[str]:
    """The memo key of a function that is not an entry point but only puts stored entries together (a page's
    comparison of several stored profiles, with their claims). `_stored` computes it from the store alone
    (`cached_only`), and a stored entry never changes under a running server, so the answer holds for the server's
    life; computing it again cost a cached view 20-40 ms (issue 21)."""
    try:
        about = config_json(cfg)
    except (TypeError, ValueError):  # not a config the store could key: computed each time, as before
        return None
    return f"composed:{fn.__module__}.{fn.__qualname__}:{active_store().root}:{quick.quick()}:{about}"


def _remember(key: Optional[str], result: Any) -> Any:
    if key is None or result is None:
        return result
    with _results_lock:
        _results[key] = result
        _results.move_to_end(key)
        while len(_results) > MAX_RESULTS:
            _results.popitem(last=False)
    figcache.register(key, result)
    return result


def stored(label: str, fn: Callable[..., Any], cfg: Any) -> Optional[Any]:
    """fn(cfg) read from the store now, starting nothing; None where it is not stored (or its config is invalid,
    which the page is told)."""
    result = _stored(label, fn, cfg)
    return None if result is _MISSING else result


def _stored(label: str, fn: Callable[..., Any], cfg: Any) -> Any:
    """The stored result, read in this thread (never queued behind other students' training); _MISSING if it is
    not stored; None (with a message) if the config is invalid."""
    try:
        key = entry_key(fn, cfg) or _composed_key(fn, cfg)
        with _results_lock:
            if key in _results:
                _results.move_to_end(key)
                return _results[key]
        with collecting() as notices, cached_only(), shared_reads():
            result = fn(cfg, progress=lambda f, m: None)
        for n in notices:
            st.warning(n, icon="⚠️")
        return result if notices else _remember(key, result)  # a rebuilt entry is read afresh next time
    except NotCached:
        return _MISSING
    except ValueError as exc:
        st.error(f"{label} could not run: {query.plain(exc)}")
        return None


STANDARD = "_layerlab_standard"  # session_state: this run's settings are a default view or a preset (classroom.py)


def owner() -> Optional[Owner]:
    """Who asks: this page session and its client address (app/clients.py; admission control bounds each); None
    outside a page."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
    except Exception:  # noqa: BLE001 - bare mode
        return None
    if ctx is None:
        return None
    return Owner(ctx.session_id, client_address())


def _alive(session_id: str) -> bool:
    try:
        from streamlit.runtime import Runtime

        answer = Runtime.instance().is_active_session(session_id)
    except Exception:  # noqa: BLE001 - no runtime: nobody is known to have left
        return True
    return answer if isinstance(answer, bool) else True  # AppTest's runtime is a stand-in that knows nobody


# Open pages (sessions) per client address: a classroom behind a NAT, not a flood. LAYERLAB_PAGES_PER_CLIENT
# raises it where a whole lecture hall reaches the lab through one address. Both bounds are made at the first page,
# not at import: a mistyped value is then the start-up check's one line (app/shell.py), not an import traceback.
_pages: Optional[Turns] = None  # a place is held until its session ends (never released by a run)
_bounds_lock = threading.Lock()


def _bound(which: str) -> Turns:
    """`_pages` or `_turns`, made from its setting on first use."""
    global _pages, _turns
    with _bounds_lock:
        if _pages is None:
            _pages = Turns(settings.get("LAYERLAB_PAGES_PER_CLIENT"))
        if _turns is None:
            _turns = Turns(settings.get("LAYERLAB_WORKING_PER_CLIENT"))
        return _pages if which == "pages" else _turns


def pages_per_client() -> int:
    """How many pages one address may have open (LAYERLAB_PAGES_PER_CLIENT)."""
    return _bound("pages").limit


def admit_page() -> bool:
    """Whether this page session may run: one address keeps at most pages_per_client() sessions (every run of a page
    takes the web server's CPU, so 200 tabs or scripted sessions from one address would slow every student's page).
    Sessions that have ended free their place. Connections without an address share one place-holder (UNKNOWN);
    only a session without a connection (LOCAL: bare mode, AppTest) is not bounded."""
    who = owner()
    if who is None or who.client == LOCAL:
        return True
    return _bound("pages").try_take(who.client, who.session, _alive)


# Pages of one address that work (run their script or wait for jobs) at once (app/turns.py); the rest wait their
# turn without using the server's CPU. LAYERLAB_WORKING_PER_CLIENT raises it where a hall shares one address.
_turns: Optional[Turns] = None
WAITING = "_layerlab_waits_for_jobs"  # session_state: this run left jobs to wait for (it keeps its turn)


def take_turn() -> bool:
    """Hold one of this address's turns before the page works, waiting (with a notice) while the address's other
    pages hold them all; False if the session ended meanwhile. Not bounded without a connection (LOCAL)."""
    st.session_state[WAITING] = False
    who = owner()
    turns = _bound("turns")
    if who is None or who.client == LOCAL or turns.try_take(who.client, who.session, _alive):
        return True
    note = st.empty()
    busy = "1 page of the lab from your network is" if turns.limit == 1 else \
        f"{turns.limit} pages of the lab from your network are"
    note.info(f"{busy} computing; this one starts as soon as {'it' if turns.limit == 1 else 'one of them'} is done. "
              f"Close the pages you no longer need.", icon=":material/hourglass_top:")
    got = turns.wait(who.client, who.session, _alive)
    note.empty()
    return got


def end_turn() -> None:
    """At the end of a page's run: give the turn back unless the page left jobs to wait for (its polling works)."""
    who = owner()
    if who is not None and who.client != LOCAL and not st.session_state.get(WAITING, False):
        _bound("turns").release(who.client, who.session)


def _submit(label: str, fn: Callable[..., Any], cfg: Any, standard: Optional[bool] = None) -> Job:
    """Submit through admission control (lab/runtime/engine/admission.py): this run's settings say whether the job
    is a standard one, unless the caller says; queued jobs of visitors who left are dropped first. Busy when it is
    not admitted."""
    eng = runner()
    dropped = eng.sweep(_alive)
    if dropped:
        log.info("dropped %d queued jobs of visitors who left", dropped)
    if standard is None:
        standard = bool(st.session_state.get(STANDARD, True))
    return eng.submit(label, fn, cfg, owner=owner(), standard=standard)


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
    result = _stored(label, fn, cfg)
    if result is not _MISSING:
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
    if _stored(label, fn, cfg) is _MISSING:
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
        result = _stored(label, fn, cfg)
        if result is not _MISSING:
            return result
        try:
            job = _started(label, fn, cfg, wait, standard)
        except Busy as why:
            st.warning(f"{label}: not started, {query.plain(why)}.", icon=":material/hourglass_disabled:")
            return None
        if job.future.done():
            return _finished(label, job)
        self.keys.append(runner().key(fn, cfg))
        return None

    def show(self) -> None:
        if self.keys:
            st.session_state[WAITING] = True  # the page keeps its turn while it polls (take_turn)
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
            got = _stored(self.label(key), n.fn, n.cfg)
            if got is not _MISSING:
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
        return runner().submit(self.label(key), n.fn, n.cfg)

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
    jobs = [j for j in (runner().jobs.get(k) for k in keys) if j is not None]
    since = time.monotonic() - st.session_state.get(RUN_STARTED, 0.0)
    if (not jobs or any(j.future.done() for j in jobs)) and since >= RERUN_EVERY_S:
        st.rerun()  # the whole page: it draws what landed and polls for the rest
    for i, j in enumerate(jobs):
        text = _status(j.label, j)
        st.progress(min(max(j.fraction, 0.0), 1.0), text=text)
        training_view.live(j, f"layerlab_live_{i}")
