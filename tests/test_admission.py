"""Admission control (lab/runtime/engine/admission.py) on the thread engine: default views and presets are always
admitted and run first; custom settings are bounded per session, per client and overall, with a message; joining a
job adds no work; queued jobs of visitors who left are dropped unless someone else still waits for them."""

import threading
import time
from dataclasses import dataclass

import pytest

from lab.runtime.engine import ThreadEngine
from lab.runtime.engine.admission import CUSTOM, LOCAL, QUEUE_JOBS, UNKNOWN, Busy, Owner, fair_share


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
    monkeypatch.setattr(eng.admission, "queue_jobs", 8)
    _blocked(eng)
    eng.submit("x", gated, Gate(1), owner=A, standard=False)
    eng.submit("x", gated, Gate(2), owner=A, standard=False)
    with pytest.raises(Busy, match="this page already waits for 2"):
        eng.submit("x", gated, Gate(3), owner=A, standard=False)
    eng.submit("x", gated, Gate(1), owner=A, standard=False)  # asking again for one's own job: a join, no new work
    eng.submit("x", gated, Gate(4), owner=B, standard=False)  # another tab, same address
    with pytest.raises(Busy, match="your network already waits for 3"):
        eng.submit("x", gated, Gate(5), owner=B, standard=False)
    monkeypatch.setattr(eng.admission, "client_jobs", 10)  # from here on the fair share is the bound that binds
    # 3 of 8 places taken: the next address may hold half of the 5 left free, rounded up
    c2 = Owner("session-c2", "10.0.0.2")
    for i, who in enumerate((C, C, c2)):
        eng.submit("x", gated, Gate(6 + i), owner=who, standard=False)
    with pytest.raises(Busy, match="your network already waits for 3 settings, its share of the queue"):
        eng.submit("x", gated, Gate(9), owner=c2, standard=False)
    d, e = Owner("session-d", "10.0.0.3"), Owner("session-e", "10.0.0.4")
    eng.submit("x", gated, Gate(10), owner=d, standard=False)  # 6 taken: one place of the two left
    with pytest.raises(Busy, match="its share of the queue"):
        eng.submit("x", gated, Gate(11), owner=d, standard=False)
    eng.submit("x", gated, Gate(12), owner=e, standard=False)  # the last place still goes to whoever asks
    with pytest.raises(Busy, match="the lab is busy.*Try a preset"):
        eng.submit("x", gated, Gate(13), owner=Owner("session-f", "10.0.0.5"), standard=False)
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
    from app import page_admission
    from app.turns import Turns

    monkeypatch.setattr(page_admission, "_pages", Turns(3))
    closed: set[str] = set()
    monkeypatch.setattr(page_admission, "alive", lambda sid: sid not in closed)
    current = {}
    monkeypatch.setattr(page_admission, "owner", lambda: current["who"])

    def visit(session, client="10.0.0.9"):
        current["who"] = Owner(session, client)
        return page_admission.admit_page()

    assert all(visit(f"tab{i}") for i in range(3))
    assert not visit("tab3")  # the fourth page from one address does no work
    assert visit("tab0")  # an admitted page keeps running (its reruns)
    assert visit("other", client="10.0.0.10")  # another address is not affected
    # connections without an address share one bounded bucket; only a session without a connection is not bounded
    assert visit("x", client=UNKNOWN) and visit("y", client=UNKNOWN) and visit("z", client=UNKNOWN)
    assert not visit("w", client=UNKNOWN)
    assert all(visit(f"test-{i}", client=LOCAL) for i in range(5))
    closed.add("tab1")  # a tab was closed: its place is free again
    assert visit("tab3")
    assert not visit("tab4")


def _fill(eng, client: str, sessions: int = 10) -> int:
    """Custom jobs one address gets queued from many tabs, until it is refused; how many."""
    got = 0
    for s in range(sessions):
        who = Owner(f"{client}-tab{s}", client)
        for i in range(100):
            try:
                eng.submit("x", gated, Gate(hash((client, s, i)) % 10**9), owner=who, standard=False)
            except Busy:
                break
            got += 1
    return got


def test_two_addresses_never_fill_the_queue_a_third_still_gets_in(eng):
    """Issue 45: two addresses filled the shared queue of 48 custom jobs and a third student was told "the lab is
    busy". Each address may hold at most half of the places the others leave free."""
    _blocked(eng)
    first, second = _fill(eng, "10.1.0.1"), _fill(eng, "10.2.0.1")
    assert first == fair_share(QUEUE_JOBS, 0) == QUEUE_JOBS // 2
    assert second == fair_share(QUEUE_JOBS, first) < first
    third = eng.submit("x", gated, Gate(999_999), owner=Owner("student", "10.3.0.1"), standard=False)
    assert third.priority == CUSTOM and not third.future.done()
    assert sum(1 for j in eng.jobs.values() if not j.started) <= QUEUE_JOBS


def test_clients_without_an_address_are_one_bounded_address(eng):
    """Issue 45: an "unknown" address switched every per-address bound off. Now it is one address's bucket."""
    _blocked(eng)
    assert _fill(eng, UNKNOWN) == fair_share(QUEUE_JOBS, 0)
    assert eng.submit("x", gated, Gate(888_888), owner=Owner("s", "10.9.0.1"), standard=False).priority == CUSTOM


def test_the_fair_share_leaves_as_much_free_as_one_address_holds():
    for places in (1, 2, 8, 48):
        for others in range(places + 1):
            share = fair_share(places, others)
            assert others + share <= places  # never more than is free
            assert share >= 1 or others == places  # a free place always goes to whoever asks
            assert share <= max(1, places - others - share + 1)  # at least as much stays free (the last place aside)
