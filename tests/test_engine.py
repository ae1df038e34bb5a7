"""The Dask engine: same results as in-process, progress and notices reach the caller, queue positions, a killed
worker's job runs again and leaves no partial entry. One LocalCluster (2 single-threaded worker processes) for the
module, closed at the end."""

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.experiment import entry
from lab.runtime.engine import BACKGROUND, DaskEngine, ThreadEngine, engine_name
from lab.runtime.engine.progress_files import PROGRESS_DIR, job_id, progress_file, read_progress
from lab.runtime.notices import notify
from lab.runtime.store import Store


@dataclass(frozen=True)
class Slow:
    """A job that takes `steps * pause` seconds, reporting each step; `tag` makes distinct configs."""

    steps: int = 8
    pause: float = 0.25
    tag: int = 0
    attempts: str = ""  # a file each attempt appends a line to (counts the runs of a retried job)
    fail: bool = False
    log: str = ""  # a file each job appends its tag to when it starts (the order jobs start in)


@entry("test-slow")
def slow(cfg: Slow, progress):
    if cfg.attempts:
        with open(cfg.attempts, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    if cfg.log:
        with open(cfg.log, "a") as fh:
            fh.write(f"{cfg.tag}\n")
    if cfg.fail:
        raise ValueError("this config is not allowed")
    for i in range(cfg.steps):
        progress(i / cfg.steps, f"step {i + 1} of {cfg.steps}")
        time.sleep(cfg.pause)
    notify("a notice raised in the worker")
    return {"steps": cfg.steps, "tag": cfg.tag}


def wait(job, limit=120):
    deadline = time.monotonic() + limit
    seen = []
    while not job.future.done():
        assert time.monotonic() < deadline, "the job did not finish"
        job.refresh()
        seen.append((job.fraction, job.message))
        time.sleep(0.1)
    return seen


def _imported() -> bool:
    return True


@pytest.fixture(scope="module")
def dask_engine(tmp_path_factory):
    eng = DaskEngine(workers=2, store=Store(tmp_path_factory.mktemp("dask-store")))
    # Starting the cluster's process and its workers (each imports torch) is not what these tests time: on a
    # loaded machine it alone took over a minute, eating the first test's limit.
    eng.ready(600)
    # Each worker imports this module (and with it torch and the lab) on its first task; under a loaded suite that
    # import alone has taken a minute, which the killed-worker test's wait for "step 3" is not meant to time.
    eng.client.run(_imported)
    yield eng
    eng.close()


def test_engine_setting_is_checked(monkeypatch):
    monkeypatch.setenv("LAYERLAB_ENGINE", "spark")
    with pytest.raises(ValueError, match="LAYERLAB_ENGINE='spark' is not allowed"):
        engine_name()
    monkeypatch.setenv("LAYERLAB_ENGINE", "Threads")
    assert engine_name() == "threads"
    monkeypatch.delenv("LAYERLAB_ENGINE")
    assert engine_name() == "dask"  # the app's default: training leaves the web server's process


def test_an_unreachable_scheduler_fails_the_job_with_a_message(tmp_path, monkeypatch):
    import socket

    import lab.runtime.engine.cluster

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(lab.runtime.engine.cluster, "CONNECT_TIMEOUT", "1s")
    eng = DaskEngine(address=f"tcp://127.0.0.1:{port}", store=Store(tmp_path))
    job = eng.submit("slow", slow, Slow(tag=5))
    assert job.message.startswith("starting") or job.future.done()
    assert isinstance(job.future.exception(timeout=60), RuntimeError)
    assert "could not be started or reached" in str(job.future.exception())
    assert not list((tmp_path / PROGRESS_DIR).glob("*.json"))
    eng.close()


def test_the_local_cluster_refuses_a_client_without_its_credentials(dask_engine):
    """The lab's own cluster listens on the loopback, which every local process and account reaches: it speaks
    mutual TLS with a certificate made for this start, so its address alone lets nobody in (issue 60)."""
    import ssl

    from distributed import Client
    from distributed.security import Security

    from tests.tls_certs import handshake

    address = dask_engine.client.scheduler.address
    assert address.startswith("tls://127.0.0.1:"), address
    assert dask_engine.client.run(_imported)  # the control: the server's client is in
    port = int(address.rsplit(":", 1)[1])
    for where, security in ((f"tcp://127.0.0.1:{port}", None),  # plain TCP to the TLS port
                            (address, Security.temporary())):  # TLS with a certificate of its own making
        with pytest.raises((OSError, TimeoutError)):
            Client(where, timeout="3s", set_as_default=False, security=security)
    anyone = ssl.create_default_context()  # TLS that trusts whatever the scheduler shows, with no certificate
    anyone.check_hostname, anyone.verify_mode = False, ssl.CERT_NONE
    try:
        assert handshake(port, anyone) == b""
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        pass


def test_results_match_the_in_process_run(dask_engine, tmp_path):
    from lab.experiments.reinit.experiment import ReinitConfig, run

    cfg = ReinitConfig(model="residual", blocks=2, width=8, epochs=1)
    job = dask_engine.submit("reinit", run, cfg)
    wait(job)
    remote = job.future.result()
    local = run(cfg, store=Store(tmp_path))

    def comparable(r):  # wall-clock timings differ between any two runs
        from lab.runtime.plain import to_plain

        return {k: v for k, v in to_plain(r).items() if "seconds" not in k}

    assert comparable(remote) == comparable(local)
    # The result landed in the engine's (shared) store: the server now serves it without a job.
    assert run(cfg, store=dask_engine.store) == remote
    assert dask_engine.submit("reinit", run, cfg) is job  # a second asker joins the finished job


def test_progress_and_notices_reach_the_caller(dask_engine):
    job = dask_engine.submit("slow", slow, Slow(tag=1))
    seen = wait(job)
    assert job.future.result() == {"steps": 8, "tag": 1}
    steps = {m for _, m in seen if m.startswith("step")}
    assert len(steps) >= 2, seen  # several intermediate reports crossed the process boundary
    assert any(0 < f < 1 for f, _ in seen)
    assert job.notices == ["a notice raised in the worker"]
    deadline = time.monotonic() + 10  # the task is released just after the future is set: the scheduler forgets it
    while job.dask_future is not None:
        assert time.monotonic() < deadline, "the Dask future was never released"
        time.sleep(0.05)
    assert not progress_file(dask_engine.store.root, job_id(dask_engine.key(slow, Slow(tag=1)))).exists()


def test_errors_come_back_as_themselves(dask_engine, tmp_path):
    cfg = Slow(fail=True, attempts=str(tmp_path / "attempts"))
    job = dask_engine.submit("slow", slow, cfg)
    wait(job)
    assert isinstance(job.future.exception(), ValueError)
    assert "not allowed" in str(job.future.exception())
    again = dask_engine.submit("slow", slow, cfg)  # asked again after a failure: the job really runs again
    assert again is not job
    wait(again)
    assert isinstance(again.future.exception(), ValueError)
    assert len((tmp_path / "attempts").read_text().split()) == 2


def test_queue_position_counts_jobs_submitted_earlier(dask_engine):
    jobs = [dask_engine.submit("slow", slow, Slow(steps=6, pause=0.25, tag=10 + i)) for i in range(4)]
    deadline = time.monotonic() + 60
    while not (jobs[0].started and jobs[1].started) and time.monotonic() < deadline:
        for j in jobs:
            j.refresh()
        time.sleep(0.1)
    # Two workers run the first two; the third waits first in line, the fourth has one job ahead of it.
    assert [dask_engine.ahead(j) for j in jobs] == [0, 0, 0, 1]
    for j in jobs:
        wait(j)
    assert [j.future.result()["tag"] for j in jobs] == [10, 11, 12, 13]


def test_threads_engine_counts_the_queue_too(tmp_path):
    eng = ThreadEngine(workers=1)
    try:
        from lab.runtime.store import use_store

        with use_store(Store(tmp_path)):
            jobs = [eng.submit("slow", slow, Slow(steps=3, pause=0.2, tag=20 + i)) for i in range(3)]
            time.sleep(0.1)
            assert [eng.ahead(j) for j in jobs] == [0, 0, 1]
            for j in jobs:
                wait(j)
        assert jobs[2].future.result()["tag"] == 22 and jobs[2].notices == ["a notice raised in the worker"]
    finally:
        eng.close()


def test_a_killed_worker_is_retried_and_leaves_no_partial_entry(dask_engine, tmp_path):
    attempts = tmp_path / "attempts"
    cfg = Slow(steps=20, pause=0.25, tag=99, attempts=str(attempts))
    job = dask_engine.submit("slow", slow, cfg)
    board = progress_file(dask_engine.store.root, job_id(dask_engine.key(slow, cfg)))
    deadline = time.monotonic() + 300  # generous: a loaded suite slows the workers, not what this test checks
    data = None
    while time.monotonic() < deadline:
        data = read_progress(board)
        if data and data.get("state") == "running" and str(data.get("message", "")).startswith("step 3"):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the job never reached step 3; its progress board last read {data!r}")
    victim = data["pid"]
    os.kill(victim, signal.SIGKILL)  # the worker process dies mid-job
    entry_path = dask_engine.store.path(dask_engine.store.key("test-slow", cfg), ".json")
    assert not entry_path.exists()
    wait(job, limit=180)
    assert job.future.result() == {"steps": 20, "tag": 99}
    pids = attempts.read_text().split()
    assert len(pids) == 2 and pids[0] == str(victim) != pids[1]  # it ran again, in another process
    assert entry_path.exists()
    assert not list(Path(dask_engine.store.root).rglob("*.tmp"))


def _started_order(log: Path) -> list[int]:
    return [int(t) for t in log.read_text().split()]


def test_a_students_job_starts_before_earlier_background_work(dask_engine, tmp_path, monkeypatch):
    # Capacity 1 (as if the cluster had one worker thread): what the engine sends next is its choice alone, whatever
    # state the module's workers are in (one may still be importing after the killed-worker test).
    monkeypatch.setattr(dask_engine, "threads", lambda: 1)
    log = str(tmp_path / "log")
    blocker = dask_engine.submit("busy", slow, Slow(steps=6, pause=0.25, tag=40, log=log))
    deadline = time.monotonic() + 60
    while not blocker.started:  # (a queued blocker would count as ahead of the student)
        assert time.monotonic() < deadline
        blocker.refresh()
        time.sleep(0.05)
    warming = dask_engine.submit("warm", slow, Slow(steps=1, pause=0.1, tag=50, log=log), priority=BACKGROUND)
    time.sleep(0.2)
    student = dask_engine.submit("student", slow, Slow(steps=1, pause=0.1, tag=51, log=log))
    assert dask_engine.ahead(student) == 0 and dask_engine.ahead(warming) == 1  # the student's job is next
    assert dask_engine.waiting() == 1  # the warmer would hold back now
    for j in (blocker, warming, student):
        wait(j)
    assert _started_order(Path(log)) == [40, 51, 50]


def test_threads_engine_runs_by_priority_and_a_student_lifts_a_queued_warm_job(tmp_path):
    eng = ThreadEngine(workers=1)
    log = str(tmp_path / "log")
    try:
        from lab.runtime.store import use_store

        with use_store(Store(tmp_path)):
            block = eng.submit("busy", slow, Slow(steps=4, pause=0.1, tag=1, log=log))
            time.sleep(0.1)
            w1 = eng.submit("warm", slow, Slow(steps=1, pause=0.0, tag=2, log=log), priority=BACKGROUND)
            w2 = eng.submit("warm", slow, Slow(steps=1, pause=0.0, tag=3, log=log), priority=BACKGROUND)
            student = eng.submit("student", slow, Slow(steps=1, pause=0.0, tag=4, log=log))
            lifted = eng.submit("student", slow, Slow(steps=1, pause=0.0, tag=3, log=log))  # asks for w2's config
            assert lifted is w2 and w2.priority == 0
            assert eng.waiting() == 2 and eng.waiting(above=0) == 0
            assert [eng.ahead(j) for j in (w1, w2, student)] == [2, 1, 0]
            for j in (block, w1, w2, student):
                wait(j)
        assert _started_order(Path(log)) == [1, 4, 3, 2]
        assert all(j.seconds is not None for j in (block, w1, w2, student))
    finally:
        eng.close()


def test_compute_builds_each_missing_result_once_and_a_pool_reads_them_in_order(dask_engine):
    from lab.experiment import serial
    from lab.runtime.engine import compute
    from lab.runtime.store import use_store

    cfgs = [Slow(steps=1, pause=0.0, tag=60 + i) for i in range(3)]
    calls = [(slow, c) for c in cfgs] + [(slow, cfgs[0])]  # the last one asks for the first again
    with use_store(dask_engine.store):
        slow(cfgs[2], progress=lambda f, m: None)  # stored already: not computed again
        out = compute(calls, engine=dask_engine)
        assert sorted(i for i, _ in out["built"]) == [0, 1] and not out["failed"]
        assert all(dask_engine.store.has("test-slow", c) for c in cfgs)
        assert serial(calls) == [{"steps": 1, "tag": t} for t in (60, 61, 62, 60)]
        assert compute(calls, engine=dask_engine) == {"built": [], "failed": []}  # nothing left to do
    with pytest.raises(TypeError, match="not an @entry"):
        compute([(lambda cfg, progress: 1, cfgs[0])])


def _malloc_trim() -> object:
    return os.environ.get("MALLOC_TRIM_THRESHOLD_")


def test_workers_do_not_return_memory_to_the_os_after_every_free(dask_engine):
    # Dask's default (64 KiB) made training 25-35 % slower in workers than in a plain process
    # (lab/runtime/engine/worker.py: worker_environ).
    assert dask_engine.ready(120)
    assert set(dask_engine.client.run(_malloc_trim).values()) == {None}


def test_jobs_asked_while_the_workers_start_stop_saying_so_once_they_are_up(dask_engine, monkeypatch):
    """A job asked before the cluster is reachable says the workers are starting; once they are up, one still
    waiting for a worker says so instead (a newcomer's bars must not claim the workers are still starting)."""
    from lab.runtime.engine import cluster

    opened = cluster.DaskEngine._open

    def slow_open(self):  # the connection takes a second, as a starting cluster would
        time.sleep(1.0)
        opened(self)

    monkeypatch.setattr(cluster.DaskEngine, "_open", slow_open)
    # the local cluster's own credentials, as a course cluster's would come from LAYERLAB_TLS_*
    monkeypatch.setattr(cluster, "cluster_security", lambda address, env=None: dask_engine.client.security)
    eng = DaskEngine(address=dask_engine.client.scheduler.address, store=dask_engine.store)
    try:
        jobs = [eng.submit("slow", slow, Slow(steps=8, pause=0.25, tag=40 + i)) for i in range(3)]
        assert [j.message for j in jobs] == [cluster.STARTING] * 3
        assert eng.ready(60)
        waiting = [j for j in jobs if not j.started]
        assert waiting, "two workers cannot have started three jobs"
        assert all(j.message != cluster.STARTING for j in waiting)
        for j in jobs:
            wait(j)
    finally:
        eng.close()
