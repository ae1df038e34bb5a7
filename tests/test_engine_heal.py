"""The Dask engine heals and keeps a worker for presets (lab/runtime/engine/cluster.py): a killed local cluster is
replaced without a server restart and the job that was running is resubmitted once; a submit that fails holds no
worker's place; custom settings never take the last free worker; the local cluster listens on loopback only."""

import os
import signal
import time
from pathlib import Path

import pytest

from lab.runtime.engine import DaskEngine
from lab.runtime.engine.admission import Owner
from lab.runtime.store import Store

from .test_engine import Slow, slow


def _started(job, limit=120):
    deadline = time.monotonic() + limit
    while not job.started:
        assert time.monotonic() < deadline, "the job did not start"
        job.refresh()
        time.sleep(0.05)


@pytest.fixture
def engine_of(tmp_path):
    made = []

    def make(workers):
        eng = DaskEngine(workers=workers, store=Store(tmp_path / f"store{len(made)}"))
        made.append(eng)
        assert eng.ready(600)
        return eng

    yield make
    for eng in made:
        eng.close()


def test_a_killed_cluster_heals_and_the_running_job_is_resubmitted_once(engine_of, tmp_path):
    eng = engine_of(1)
    address = eng.client.scheduler.address
    assert address.startswith("tls://127.0.0.1:")  # nothing off this machine reaches the cluster, nor without its keys
    assert all(w.startswith("tls://127.0.0.1:") for w in eng.client.scheduler_info()["workers"])
    attempts = tmp_path / "attempts"
    job = eng.submit("slow", slow, Slow(steps=16, pause=0.25, tag=71, attempts=str(attempts)))
    _started(job)
    killed = time.monotonic()
    os.kill(eng.cluster.pid, signal.SIGKILL)  # the cluster's process dies mid-job
    messages = set()
    while not job.future.done():
        assert time.monotonic() - killed < 400, "the job never finished after the cluster died"
        job.refresh()
        messages.add(job.message)
        if eng._ready.is_set() and eng.heals and "healed" not in messages:
            messages.add("healed")
            print(f"heal: a new cluster was ready {time.monotonic() - killed:.1f} s after the kill")
        time.sleep(0.1)
    print(f"heal: the job finished {time.monotonic() - killed:.1f} s after the kill")
    assert job.future.result() == {"steps": 16, "tag": 71}  # no traceback: the result
    assert eng.heals == 1 and job.retries == 1
    assert any("restarting the lab's workers" in m for m in messages), messages
    assert len(attempts.read_text().split()) == 2  # ran again once, on the new cluster
    assert eng.client.scheduler.address != address
    later = eng.submit("slow", slow, Slow(steps=1, pause=0.05, tag=72))
    assert later.future.result(timeout=120) == {"steps": 1, "tag": 72}  # the healed engine serves new jobs
    assert eng._inflight == 0 and not eng._running  # and holds no place for the dead cluster's tasks


def test_a_submit_that_fails_holds_no_place_and_the_job_still_runs(engine_of, monkeypatch):
    from distributed.client import ClosedClientError

    eng = engine_of(1)
    real, calls = eng.client.submit, []

    def broken(*args, **kw):
        calls.append(1)
        raise ClosedClientError("closed")  # what a client of a dead cluster raises

    monkeypatch.setattr(eng.client, "submit", broken)
    job = eng.submit("slow", slow, Slow(steps=1, pause=0.05, tag=73))  # no exception reaches the caller
    assert calls and eng._inflight == 0
    assert job.future.result(timeout=400) == {"steps": 1, "tag": 73}  # on the replacement cluster
    assert eng.heals == 1 and eng._inflight == 0
    del real


def test_custom_settings_never_take_the_last_free_worker(engine_of, tmp_path):
    eng = engine_of(2)
    deadline = time.monotonic() + 120
    while eng.threads() < 2:  # both workers up
        assert time.monotonic() < deadline
        eng._capacity = (0, 0.0)
        time.sleep(0.5)
    visitor = Owner("flood", "10.9.9.9")
    custom = [eng.submit("custom", slow, Slow(steps=40, pause=0.25, tag=80 + i), owner=visitor, standard=False)
              for i in range(3)]
    time.sleep(1.0)
    assert sum(j.sent for j in custom) == 1  # one worker computes custom settings, the other stays free
    preset = eng.submit("preset", slow, Slow(steps=2, pause=0.1, tag=90), owner=Owner("student", "10.1.1.1"))
    assert preset.sent  # sent at once, not queued behind the flood
    assert preset.future.result(timeout=120) == {"steps": 2, "tag": 90}
    assert sum(not j.future.done() for j in custom) == 3  # the flood is still computing or waiting
    assert Path(eng.store.root).exists()


def test_no_custom_job_starts_beside_a_computing_preset(engine_of):
    eng = engine_of(2)
    deadline = time.monotonic() + 120
    while eng.threads() < 2:  # both workers up: a custom job could take the second
        assert time.monotonic() < deadline
        eng._capacity = (0, 0.0)
        time.sleep(0.5)
    preset = eng.submit("preset", slow, Slow(steps=12, pause=0.25, tag=95), owner=Owner("student", "10.1.1.1"))
    _started(preset)
    custom = eng.submit("custom", slow, Slow(steps=1, pause=0.0, tag=96), owner=Owner("flood", "10.9.9.9"),
                        standard=False)
    time.sleep(1.0)
    assert not custom.sent and not preset.future.done()  # the preset has the machine to itself
    assert preset.future.result(timeout=120) == {"steps": 12, "tag": 95}
    assert custom.future.result(timeout=120) == {"steps": 1, "tag": 96}  # then the custom one runs


def test_a_landing_that_blocks_stops_no_other_job(engine_of, monkeypatch):
    """Dask runs the done-callbacks of every future in the process on one thread. A landing that blocks there (a
    result fetched from a worker that died) once stopped every later job of the process from ever landing (the CI
    run that hung in the warm tests after the heal tests). Landings run on the engine's own threads instead."""
    import threading

    from distributed.client import Future

    eng = engine_of(2)
    stuck = threading.Event()
    real = Future.result

    def result(self, timeout=None):
        if self.key in blocked:
            stuck.wait(120)  # a fetch that hangs (released at the end of the test)
        return real(self, timeout)

    blocked: set[str] = set()
    monkeypatch.setattr(Future, "result", result)
    try:
        first = eng.submit("first", slow, Slow(steps=2, pause=0.5, tag=91))
        deadline = time.monotonic() + 120
        while first.dask_future is None and not first.future.done():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        dfut = first.dask_future
        assert dfut is not None
        blocked.add(dfut.key)
        while not dfut.done():  # the task finished on its worker; its landing now hangs fetching the result
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.5)
        second = eng.submit("second", slow, Slow(steps=1, pause=0.0, tag=92))
        landed_on: list[str] = []
        second.future.add_done_callback(lambda _: landed_on.append(threading.current_thread().name))
        assert second.future.result(timeout=60) == {"steps": 1, "tag": 92}  # lands while the first one's hangs
        assert landed_on and landed_on[0].startswith("layerlab-landed")  # not Dask's one callback thread
        assert not first.future.done()
    finally:
        stuck.set()
    assert first.future.result(timeout=120) == {"steps": 2, "tag": 91}
