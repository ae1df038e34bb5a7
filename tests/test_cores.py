"""lab/runtime/cores.py: jobs hold a core each, lanes borrow only free cores and give them back when a job asks, and
running pieces in lanes changes nothing but where they run (results in order, context and errors carried over)."""

import contextvars
import threading
import time

import pytest
import torch

from lab.runtime import cores
from lab.runtime.store import Store, active_store, use_store


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A private set of two cores (no other process on this machine shares them)."""
    monkeypatch.setenv("LAYERLAB_CORES_DIR", str(tmp_path / "cores"))
    monkeypatch.setenv("LAYERLAB_CORES", "2")
    monkeypatch.delenv("LAYERLAB_LANES", raising=False)
    assert torch.get_num_threads() == 1  # lanes borrow only when torch runs one thread (the lab's setting)


def slow_tasks(n, seen):
    def task(i):
        def run(report):
            seen.append(threading.current_thread().name)
            time.sleep(0.05)
            report(1.0, f"task {i}")
            return i * i
        return run
    return [task(i) for i in range(n)]


def test_lanes_borrow_a_free_core_and_keep_the_order(machine):
    seen, reports = [], []
    out = cores.lanes(slow_tasks(8, seen), progress=lambda f, m: reports.append(f))
    assert out == [i * i for i in range(8)]
    assert len(set(seen)) == 2  # this thread and one lane on the borrowed core
    assert reports == sorted(reports) and reports[-1] == pytest.approx(1.0)  # progress only moves forward
    # every core is free again afterwards
    fds = [cores._try_take(), cores._try_take()]
    assert None not in fds
    for fd in fds:
        cores._give(fd)


def test_no_lane_when_every_core_computes(machine):
    held = [cores._try_take(), cores._try_take()]  # two other jobs
    try:
        seen = []
        assert cores.lanes(slow_tasks(4, seen)) == [0, 1, 4, 9]
        assert set(seen) == {threading.current_thread().name}
    finally:
        for fd in held:
            cores._give(fd)


def test_a_core_that_comes_free_gets_a_lane(machine):
    held = [cores._try_take()]  # another job holds one core; ours takes the other below
    seen = []

    def task(i):
        def run(report):
            seen.append(threading.current_thread().name)
            if i == 0:
                cores._give(held.pop())  # one job ends while the first piece runs
            time.sleep(0.05)
            return i
        return run

    try:
        with cores.computing(wait_s=0.0):
            assert cores.held_core() not in (None, -1)
            assert cores.lanes([task(i) for i in range(8)]) == list(range(8))
        assert seen[0] == threading.current_thread().name and len(set(seen)) == 2
    finally:
        for fd in held:
            cores._give(fd)


def test_a_job_without_a_core_takes_one_before_it_borrows(machine):
    """A job that found both cores held computes on none of its own: when one comes free it is the job's own core,
    not a second lane (that would put three threads on two cores)."""
    held = [cores._try_take(), cores._try_take()]
    seen = []

    def task(i):
        def run(report):
            seen.append(threading.current_thread().name)
            if i == 0:
                cores._give(held.pop())
            time.sleep(0.02)
            return i
        return run

    try:
        with cores.computing(wait_s=0.0):
            assert cores.held_core() == -1
            cores.lanes([task(i) for i in range(6)])
        assert set(seen) == {threading.current_thread().name}
    finally:
        for fd in held:
            cores._give(fd)


def test_switched_off(machine, monkeypatch):
    monkeypatch.setenv("LAYERLAB_LANES", "0")
    seen = []
    cores.lanes(slow_tasks(4, seen))
    assert set(seen) == {threading.current_thread().name}


def test_a_job_that_asks_gets_the_borrowed_core_back(machine):
    borrow = cores._Borrow(1)
    assert borrow.grow() and not borrow.grow()  # our own core and the other one: the machine is full
    assert borrow.keep()
    got = {}

    def job():
        with cores.computing(wait_s=5.0):
            got["core"] = cores.held_core()

    t = threading.Thread(target=job)
    t0 = time.monotonic()
    t.start()
    while borrow.keep() and time.monotonic() - t0 < 5.0:  # a lane checks between pieces
        time.sleep(0.02)
    t.join()
    assert not borrow.keep()
    assert got["core"] not in (None, -1)  # the job got a core of its own, not "none free"
    assert time.monotonic() - t0 < 4.0
    borrow.close()


def test_a_job_does_not_wait_when_no_core_is_borrowed(machine):
    held = [cores._try_take(), cores._try_take()]  # two jobs computing, nobody borrowing
    try:
        t0 = time.monotonic()
        with cores.computing(wait_s=5.0):
            assert cores.held_core() == -1
        assert time.monotonic() - t0 < 1.0
    finally:
        for fd in held:
            cores._give(fd)


def test_lanes_carry_the_context_and_the_first_error(machine, tmp_path):
    store = Store(tmp_path / "store")
    seen = []

    def task(i):
        def run(report):
            seen.append(active_store().root)
            if i in (3, 5):
                raise ValueError(f"bad {i}")
            time.sleep(0.02)
            return i
        return run

    with use_store(store), pytest.raises(ValueError, match="bad 3"):
        cores.lanes([task(i) for i in range(8)])
    assert seen and set(seen) == {store.root}


def test_spread_works_through_what_the_work_adds(machine):
    """A binary tree of depth 6, split as it is reached: every leaf visited once, on two threads."""
    leaves, threads = [], set()
    lock = threading.Lock()

    def work(item, push):
        depth, path = item
        threads.add(threading.current_thread().name)
        if depth == 6:
            time.sleep(0.005)
            with lock:
                leaves.append(path)
            return
        push((depth + 1, path + "0"))
        push((depth + 1, path + "1"))

    cores.spread([(0, "")], work)
    assert sorted(leaves) == sorted(format(i, "06b") for i in range(64))
    assert len(threads) == 2


def test_spread_raises_the_failure_and_stops(machine):
    def work(item, push):
        if item == 3:
            raise RuntimeError("piece 3 failed")
        if item < 20:
            push(item + 1)

    with pytest.raises(RuntimeError, match="piece 3 failed"):
        cores.spread([0], work)


def test_the_lease_folder_is_private_to_its_user(tmp_path, monkeypatch):
    import os
    import stat

    monkeypatch.setenv("LAYERLAB_CORES_DIR", str(tmp_path / "fresh"))
    d = cores.folder()
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o777)
    os.chmod(loose, 0o777)
    monkeypatch.setenv("LAYERLAB_CORES_DIR", str(loose))
    assert stat.S_IMODE(os.stat(cores.folder()).st_mode) == 0o700  # tightened
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")  # planted by someone else: refused, not followed
    monkeypatch.setenv("LAYERLAB_CORES_DIR", str(tmp_path / "link"))
    with pytest.raises(PermissionError, match="not a folder of this user"):
        cores.folder()
    monkeypatch.setattr(os, "getuid", lambda: 12345)  # a folder owned by another user
    monkeypatch.setenv("LAYERLAB_CORES_DIR", str(tmp_path / "fresh2"))
    (tmp_path / "fresh2").mkdir()
    with pytest.raises(PermissionError, match="not a folder of this user"):
        cores.folder()


@pytest.mark.parametrize("same_store", [True, False], ids=["threads of one store", "two stores (file lock)"])
def test_a_job_waiting_for_anothers_build_lends_it_its_core(machine, tmp_path, same_store):
    """Two jobs, a core each, need the same store entry: the one that waits for the other's build gives its core
    for the wait, so the builder's lanes borrow it (both cores walk the build); afterwards the waiter has a core
    again and reads the builder's result. Without the loan the builder finds no free core: one lane."""
    stores = [Store(tmp_path / "s")] * 2 if same_store else [Store(tmp_path / "s"), Store(tmp_path / "s")]
    waiting, seen, got = threading.Event(), [], {}

    def build():
        waiting.wait(5.0)
        time.sleep(0.3)  # the waiter is now blocked on the entry's lock
        return sum(cores.lanes(slow_tasks(8, seen)))

    def job(name, store, before=None):
        with cores.computing(wait_s=0.0):
            got[name + " core before"] = cores.held_core()
            if before:
                before()
            got[name] = store.json("lent", {"k": 1}, build)
            got[name + " core after"] = cores.held_core()

    builder = threading.Thread(target=job, args=("builder", stores[0]))
    builder.start()
    time.sleep(0.1)  # the builder holds the entry's lock
    waiter = threading.Thread(target=job, args=("waiter", stores[1], waiting.set))
    waiter.start()
    builder.join(10)
    waiter.join(10)
    assert got["builder"] == got["waiter"] == sum(i * i for i in range(8))
    assert len(set(seen)) == 2  # the builder's thread and a lane on the waiter's core
    assert got["waiter core before"] not in (None, -1) and got["waiter core after"] not in (None, -1)
    assert got["builder core before"] not in (None, -1)


def test_a_lane_that_waits_lends_nothing(machine):
    """Only the job's own thread may lend its core: a lane that waits leaves the core to the job's other lanes."""
    out = {}
    with cores.computing(wait_s=0.0):
        own = cores.held_core()

        def lane():
            with cores.lent():
                out["in lane"] = cores.held_core()

        t = threading.Thread(target=contextvars.copy_context().run, args=(lane,))  # as lanes run
        t.start()
        t.join()
        with cores.lent():
            out["lent"] = cores.held_core()
            out["free"] = cores._try_take()
            cores._give(out["free"])
        out["after"] = cores.held_core()
    assert out["in lane"] == own  # the lane sees the job's core and leaves it held
    assert out["lent"] == -1 and out["free"] is not None and out["after"] not in (None, -1) and own != -1
