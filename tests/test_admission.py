"""Admission control (lab/runtime/engine/admission.py) on the thread engine: default views and presets are always
admitted and run first; custom settings are bounded per session, per client and overall, with a message; joining a
job adds no work; queued jobs of visitors who left are dropped unless someone else still waits for them."""

import threading
import time
from dataclasses import dataclass

import pytest

from lab.runtime.engine import ThreadEngine
from lab.runtime.engine.admission import CUSTOM, Busy, Owner


@dataclass(frozen=True)
class Gate:
    tag: int = 0


RELEASE = threading.Event()
STARTED: list[int] = []


def gated(cfg: Gate, progress):  # not a stored entry point: each test's jobs really run
    STARTED.append(cfg.tag)
    RELEASE.wait(30)
    return {"tag": cfg.tag}


@pytest.fixture
def eng():
    RELEASE.clear()
    STARTED.clear()
    e = ThreadEngine(workers=1)
    yield e
    RELEASE.set()
    e.close()


A, B = Owner("session-a", "10.0.0.1"), Owner("session-b", "10.0.0.1")
C = Owner("session-c", "10.0.0.2")


def _blocked(eng):
    """A standard job holds the one worker, so everything after it waits in the queue."""
    job = eng.submit("busy", gated, Gate(-1), owner=C)
    deadline = time.monotonic() + 10
    while -1 not in STARTED:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return job


def test_custom_jobs_rank_below_standard_ones_and_standard_ones_are_never_refused(eng, monkeypatch):
    monkeypatch.setattr(eng.admission, "session_jobs", 1)
    _blocked(eng)
    custom = eng.submit("custom", gated, Gate(1), owner=A, standard=False)
    assert custom.priority == CUSTOM
    for i in range(5):  # presets and default views: as many as a page needs
        assert eng.submit("preset", gated, Gate(10 + i), owner=A).priority == 0
    RELEASE.set()
    for job in list(eng.jobs.values()):
        job.future.result(timeout=30)
    assert STARTED.index(1) > max(STARTED.index(10 + i) for i in range(5))  # the custom one ran last


def test_bounds_per_session_per_client_and_overall_say_so(eng, monkeypatch):
    monkeypatch.setattr(eng.admission, "session_jobs", 2)
    monkeypatch.setattr(eng.admission, "client_jobs", 3)
    monkeypatch.setattr(eng.admission, "queue_jobs", 4)
    _blocked(eng)
    eng.submit("x", gated, Gate(1), owner=A, standard=False)
    eng.submit("x", gated, Gate(2), owner=A, standard=False)
    with pytest.raises(Busy, match="this page already waits for 2"):
        eng.submit("x", gated, Gate(3), owner=A, standard=False)
    eng.submit("x", gated, Gate(1), owner=A, standard=False)  # asking again for one's own job: a join, no new work
    eng.submit("x", gated, Gate(4), owner=B, standard=False)  # another tab, same address
    with pytest.raises(Busy, match="your network already waits for 3"):
        eng.submit("x", gated, Gate(5), owner=B, standard=False)
    eng.submit("x", gated, Gate(6), owner=C, standard=False)  # elsewhere: the fourth custom job in the queue
    with pytest.raises(Busy, match="the lab is busy.*Try a preset"):
        eng.submit("x", gated, Gate(7), owner=Owner("session-d", "10.0.0.3"), standard=False)
    assert eng.submit("preset", gated, Gate(8), owner=A).priority == 0  # a preset still goes through
    eng.submit("warm", gated, Gate(9), standard=False)  # no owner (warming, the CLI): not a visitor's work


def test_queued_jobs_of_visitors_who_left_are_dropped_unless_someone_else_waits(eng):
    running = _blocked(eng)
    left = eng.submit("x", gated, Gate(1), owner=A, standard=False)
    shared = eng.submit("x", gated, Gate(2), owner=A, standard=False)
    eng.submit("x", gated, Gate(2), owner=C, standard=False)  # C waits for the same job
    ownerless = eng.submit("warm", gated, Gate(3))
    assert eng.sweep(lambda session: session != "session-a") == 1  # A closed their page
    assert left.future.cancelled() and not shared.future.done() and not ownerless.future.done()
    assert not running.future.done()  # a running job is never dropped
    again = eng.submit("x", gated, Gate(1), owner=C, standard=False)  # asked again later: a fresh job
    assert again is not left and not again.future.done()
    RELEASE.set()
    assert again.future.result(timeout=30) == {"tag": 1} and shared.future.result(timeout=30) == {"tag": 2}
    assert 1 in STARTED and STARTED.count(1) == 1  # the dropped one never ran


def test_one_address_keeps_a_bounded_number_of_open_pages(monkeypatch):
    from app import jobs
    from app.turns import Turns

    monkeypatch.setattr(jobs, "_pages", Turns(3))
    monkeypatch.setattr(jobs, "PAGES_PER_CLIENT", 3)
    closed: set[str] = set()
    monkeypatch.setattr(jobs, "_alive", lambda sid: sid not in closed)
    current = {}
    monkeypatch.setattr(jobs, "owner", lambda: current["who"])

    def visit(session, client="10.0.0.9"):
        current["who"] = Owner(session, client)
        return jobs.admit_page()

    assert all(visit(f"tab{i}") for i in range(3))
    assert not visit("tab3")  # the fourth page from one address does no work
    assert visit("tab0")  # an admitted page keeps running (its reruns)
    assert visit("other", client="10.0.0.10")  # another address is not affected
    assert visit("x", client="unknown") and visit("y", client="unknown")  # an unknown address is not bounded
    closed.add("tab1")  # a tab was closed: its place is free again
    assert visit("tab3")
    assert not visit("tab4")
