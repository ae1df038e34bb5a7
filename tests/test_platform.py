"""Every platform a lecturer has: the lab runs where Linux-only calls are missing (macOS has no
`os.sched_getaffinity`; Windows has no `os.getuid`, `os.killpg`, `os.nice`), and its file locks keep their meaning
(exclusive, shared, non-blocking; gone with their process) through lab/runtime/locks.py.

The end-to-end tests run the CLI and one Dask job in processes whose `os` module lacks those calls: a
`sitecustomize.py` first on PYTHONPATH deletes them at interpreter start, in every process the run starts (the
cluster's process, its nanny and worker inherit PYTHONPATH), and logs each process it ran in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lab.runtime import cores, locks
from lab.runtime.settings import SettingError

ROOT = Path(__file__).resolve().parents[1]
MISSING = ("sched_getaffinity", "process_cpu_count", "getuid", "killpg", "nice")  # process_cpu_count: Python 3.13+
SHIM = textwrap.dedent("""\
    import os
    for name in os.environ["LAYERLAB_TEST_SHIM_MISSING"].split(","):
        if hasattr(os, name):
            delattr(os, name)
    log = os.environ.get("LAYERLAB_TEST_SHIM_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\\n")
    """)


def without_linux_calls(tmp_path: Path, missing: tuple[str, ...] = MISSING) -> dict[str, str]:
    """An environment whose Python processes lack the calls `missing`, with a private store and lease folder."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SHIM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAYERLAB_")}
    env.update(PYTHONPATH=os.pathsep.join([str(shim), str(ROOT)]), LAYERLAB_QUICK="1",
               LAYERLAB_CACHE=str(tmp_path / "cache"), LAYERLAB_CORES_DIR=str(tmp_path / "cores"),
               LAYERLAB_WARM="0", LAYERLAB_TEST_SHIM_LOG=str(tmp_path / "shim.log"),
               LAYERLAB_TEST_SHIM_MISSING=",".join(missing))
    # getpass.getuser() (torch asks) reads the login name from the environment before it asks for the user id; on
    # Windows USERNAME is always set, in a container maybe none of them
    env.setdefault("USERNAME", "student")
    return env


def shimmed_pids(tmp_path: Path) -> list[int]:
    return [int(x) for x in (tmp_path / "shim.log").read_text().split()]


def test_the_shim_removes_the_calls(tmp_path):
    """The premise of the end-to-end tests: in a shimmed process the old `len(os.sched_getaffinity(0))` raises."""
    probe = f"import os; print(sorted(n for n in {MISSING!r} if hasattr(os, n)))"
    out = subprocess.run([sys.executable, "-c", probe], env=without_linux_calls(tmp_path), cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert len(shimmed_pids(tmp_path)) == 1


def test_the_cli_computes_without_linux_only_calls(tmp_path):
    env = without_linux_calls(tmp_path)
    out = subprocess.run([sys.executable, "-m", "lab", "delete", "--json"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads(out.stdout)
    assert doc["command"] == "delete" and doc["result"]["config"] == doc["config"]
    assert shimmed_pids(tmp_path)  # it ran with the calls gone
    assert list((tmp_path / "cores").glob("core-*.lock"))  # and held a core like an engine job


ENGINE_JOB = textwrap.dedent("""\
    import json, os, sys
    from lab.experiments.reinit.experiment import ReinitConfig, run
    from lab.runtime.engine import DaskEngine
    from lab.runtime.plain import to_plain
    from lab.runtime.store import Store

    cfg = ReinitConfig(model="residual", blocks=2, width=8, epochs=1)
    eng = DaskEngine(workers=1, store=Store(sys.argv[1]))
    try:
        assert eng.ready(240), f"the cluster did not start: {eng.error}"
        remote = eng.submit("reinit", run, cfg).future.result(timeout=240)
    finally:
        eng.close()
    local = run(cfg, store=Store(sys.argv[2]))  # here, in this process
    same = lambda r: {k: v for k, v in to_plain(r).items() if "seconds" not in k}  # timings differ between runs
    print(json.dumps({"same": same(remote) == same(local), "keys": sorted(same(remote)),
                      "nice": hasattr(os, "nice")}))
    """)


def test_a_dask_job_runs_without_linux_only_calls(tmp_path):
    """One real job on a local Dask cluster of one worker, every process of it without the calls: the worker takes
    a core (`computing`), lowers its priority (no `os.nice`), and the cluster shuts down. `os.getuid` stays: Dask
    asks for it wherever `sys.platform` is not win32, so a Linux process without it is no platform Dask runs on (the
    lab's own use of it is checked above and in test_the_lease_folder_without_user_ids)."""
    env = without_linux_calls(tmp_path, tuple(m for m in MISSING if m != "getuid"))
    out = subprocess.run([sys.executable, "-c", ENGINE_JOB, str(tmp_path / "store"), str(tmp_path / "local")],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=540)
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["nice"] is False and doc["keys"]
    assert doc["same"]  # the worker's numbers are this process's numbers
    assert len(set(shimmed_pids(tmp_path))) >= 3  # this process, the cluster's, and at least its worker
    assert list((tmp_path / "cores").glob("core-*.lock"))  # the job held a core


# -- cores a process may use ----------------------------------------------------------------------------------
def test_n_cores_falls_back_in_order(monkeypatch):
    monkeypatch.delenv("LAYERLAB_CORES", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    monkeypatch.setattr(os, "process_cpu_count", lambda: 6, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert cores.n_cores() == 3  # the affinity mask first (Linux: what this process may run on)
    monkeypatch.delattr(os, "sched_getaffinity")
    assert cores.n_cores() == 6  # then Python 3.13's count of the same (macOS, Windows)
    monkeypatch.delattr(os, "process_cpu_count")
    assert cores.n_cores() == 8  # then the machine's
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # "undeterminable"
    assert cores.n_cores() == 1
    monkeypatch.setenv("LAYERLAB_CORES", "4")
    assert cores.n_cores() == 4  # the setting overrides all of them
    monkeypatch.setenv("LAYERLAB_CORES", "0")
    with pytest.raises(SettingError, match="LAYERLAB_CORES"):
        cores.n_cores()


def test_the_lease_folder_without_user_ids(tmp_path, monkeypatch):
    """Windows: no `os.getuid`. The default folder is named by the user's login name in the (per-user) temp folder,
    and it still works as a lease folder."""
    monkeypatch.delenv("LAYERLAB_CORES_DIR", raising=False)
    monkeypatch.setenv("LAYERLAB_CORES", "1")
    monkeypatch.delattr(os, "getuid")
    monkeypatch.setattr(cores.tempfile, "gettempdir", lambda: str(tmp_path))
    d = cores.folder()
    assert d.parent == tmp_path and d.name.startswith("layerlab-cores-") and d.is_dir()
    fd = cores._try_take()
    assert fd is not None and cores._try_take() is None  # one core, held
    cores._give(fd)


# -- locks ----------------------------------------------------------------------------------------------------
def test_locks_exclude_other_opens_and_share_shared(tmp_path):
    path = tmp_path / "a.lock"
    a, b, c = (open(path, "a+") for _ in range(3))
    try:
        assert locks.take(a, wait=False)
        assert not locks.take(b, wait=False)  # another open file of the same process is another holder
        assert not locks.take(b, shared=True, wait=False)
        locks.give(a)
        assert locks.take(b, shared=True, wait=False) and locks.take(c, shared=True, wait=False)
        assert not locks.take(a, wait=False)  # an exclusive lock waits for every shared holder
        locks.give(b)
        locks.give(c)
        assert locks.take(a, wait=False)
    finally:
        for f in (a, b, c):
            f.close()


HOLDER = textwrap.dedent("""\
    import sys, time
    from lab.runtime import locks
    fh = open(sys.argv[1], "a+")
    locks.take(fh, shared=sys.argv[2] == "shared")
    print("held", flush=True)
    time.sleep(600)
    """)


@pytest.mark.parametrize("kind", ["exclusive", "shared"])
def test_a_lock_dies_with_its_process(tmp_path, kind):
    path = tmp_path / "a.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), kind], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with open(path, "a+") as fh:
            assert not locks.take(fh, wait=False)
            holder.kill()  # no chance to unlock: the system must drop the lock
            holder.wait(30)
            deadline = time.monotonic() + 10
            while not locks.take(fh, wait=False):
                assert time.monotonic() < deadline, "the dead process's lock was not released"
                time.sleep(0.05)
            locks.give(fh)
    finally:
        holder.kill()
        holder.wait(30)


def test_a_blocking_lock_that_gives_up_is_asked_again(tmp_path, monkeypatch):
    """Windows's blocking `msvcrt.locking` gives up after 10 tries 1 s apart (portalocker then raises AlreadyLocked);
    a store entry being trained is locked for minutes, so `take` keeps asking until it has the lock."""
    real = locks.portalocker.lock
    refusals = []

    def gives_up_twice(fh, flags):
        if not flags & locks.LockFlags.NON_BLOCKING and len(refusals) < 2:
            refusals.append(flags)
            raise locks.AlreadyLocked("gave up")
        return real(fh, flags)

    monkeypatch.setattr(locks.portalocker, "lock", gives_up_twice)
    monkeypatch.setattr(locks, "RETRY_S", 0.0)
    path = tmp_path / "a.lock"
    with open(path, "a+") as a, open(path, "a+") as b:
        assert locks.take(a) is True
        assert len(refusals) == 2
        assert not locks.take(b, wait=False)  # a holds it for real
        locks.give(a)


def test_borrowing_stops_where_shared_locks_are_missing(tmp_path, monkeypatch):
    """Windows without pywin32 has no shared lock: a run of lanes then computes on its own core alone (no borrowed
    one, which nobody could ask back), and gives back what it took."""
    monkeypatch.setenv("LAYERLAB_CORES_DIR", str(tmp_path / "cores"))
    monkeypatch.setenv("LAYERLAB_CORES", "2")
    monkeypatch.delenv("LAYERLAB_LANES", raising=False)
    real = locks.portalocker.lock

    def no_shared(fh, flags):
        if flags & locks.LockFlags.SHARED:
            raise ImportError("Shared locks on Windows require the win32 extra (pywin32)")
        return real(fh, flags)

    monkeypatch.setattr(locks.portalocker, "lock", no_shared)
    borrow = cores._Borrow(1)
    assert borrow.able
    assert not borrow.grow() and not borrow.able
    borrow.close()
    fds = [cores._try_take(), cores._try_take()]  # both cores free again
    assert None not in fds
    for fd in fds:
        cores._give(fd)
    assert cores.lanes([lambda report, i=i: i * i for i in range(4)]) == [0, 1, 4, 9]


# -- the cluster's process: priority, stopping, watching its parent -------------------------------------------------
def test_a_worker_lowers_its_priority_without_os_nice(tmp_path):
    """Where `os.nice` is missing, psutil lowers the worker (on Windows: the below-normal class)."""
    probe = textwrap.dedent("""\
        import psutil
        before = psutil.Process().nice()
        from lab.runtime.engine.worker import lower_priority
        lower_priority(5)
        print(before, psutil.Process().nice())
        """)
    env = without_linux_calls(tmp_path, ("nice",))
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    before, after = map(int, out.stdout.split())
    assert after == max(before, 5)  # psutil sets the niceness itself (a lower one is not allowed unprivileged)


SPAWNER = textwrap.dedent("""\
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(child.pid, flush=True)
    time.sleep(600)
    """)


def test_killing_a_cluster_without_process_groups_takes_its_workers(monkeypatch):
    """Windows has no `os.killpg`: the cluster's process and every process it started are found and killed."""
    import psutil

    from lab.runtime.engine import local_cluster

    monkeypatch.delattr(os, "killpg")
    proc = subprocess.Popen([sys.executable, "-c", SPAWNER], stdout=subprocess.PIPE, text=True)
    worker = None
    try:
        assert proc.stdout is not None
        worker = psutil.Process(int(proc.stdout.readline()))
        local_cluster._kill_group(proc)
        assert proc.poll() is not None
        deadline = time.monotonic() + 10
        while worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE:  # an orphan's zombie is dead too
            assert time.monotonic() < deadline, "the cluster's worker survived it"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(30)
        if worker is not None and worker.is_running():
            worker.kill()


def test_the_cluster_sees_its_parent_end_without_parentage():
    """Windows never changes a process's parent id: the cluster watches its parent process itself."""
    from lab.runtime.engine import local_cluster

    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        alive = local_cluster._watch(parent.pid, by_parentage=False)
        assert alive()
        parent.kill()
        parent.wait(30)
        assert not alive()
    finally:
        parent.kill()
        parent.wait(30)
    assert not local_cluster._watch(parent.pid, by_parentage=False)()  # gone before the watch began
    assert local_cluster._watch(os.getppid(), by_parentage=True)()


# -- what the benches report ----------------------------------------------------------------------------------
@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="compares with Linux's /proc/stat")
def test_idle_cpu_without_proc_stat_agrees_with_it():
    """macOS and Windows have no /proc/stat: psutil's CPU times stand in (seconds, not jiffies), and read the same."""
    from bench import machine

    proc = machine.cpu_ticks()
    fallback = machine.cpu_ticks(proc_stat="/nonexistent/stat")
    assert proc is not None and fallback is not None
    tick = os.sysconf("SC_CLK_TCK")
    assert fallback[1] == pytest.approx(proc[1] / tick, rel=0.01)  # same CPU time, read a moment apart
    assert fallback[0] == pytest.approx(proc[0] / tick, rel=0.01)
    later = machine.cpu_ticks(proc_stat="/nonexistent/stat")
    share = machine.idle_share(fallback, later)
    assert share is not None and 0.0 <= share <= 1.0


def test_the_load_average_where_there_is_none(monkeypatch):
    from bench import machine

    assert machine.load_text().startswith("load average ")
    monkeypatch.delattr(os, "getloadavg")  # Windows
    assert machine.load_average() is None
    assert machine.load_text() == "load average not available on this platform"
