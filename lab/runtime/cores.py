"""This machine's cores as leases, so that a job can borrow a core nobody computes on.

Every job the engine runs holds one core while it computes (`computing()`: an exclusive lock on one of N slot files,
N = the cores this process may run on; lab/runtime/locks.py). A job whose work splits into independent pieces (the
all-orders walk, the models an experiment trains side by side) runs them in *lanes* (`lanes()`): its own thread,
plus one thread for each core it could borrow. A borrowed core goes back as soon as another job asks for one: a job
that finds every core held says so (it touches a `wanted` file) and waits up to WAIT_S for a lane to finish its
piece and let go.

Why lanes and not more torch threads: torch runs one op on several threads by splitting its loops, and for a
training step the split changes the rounding (measured: weights differ by 1e-7 after 5 steps at 2 threads), so a
model trained on a quiet machine would differ from one trained on a busy one. A lane runs whole pieces on one
thread each, with the same single-threaded kernels as without lanes: the numbers cannot depend on the load.
(`torch.set_num_threads` is also process-wide, which would spill onto the other jobs of a threaded server.)

The slot files live in $LAYERLAB_CORES_DIR (default: a folder of this user's in the temp folder), one set per
machine: processes that share it (web servers, Dask workers, the CLI) share the count. Locks die with their process,
so a killed job frees its core. `LAYERLAB_LANES=0` switches borrowing off (benchmarks' "before").
"""

from __future__ import annotations

import contextvars
import getpass
import os
import re
import stat
import tempfile
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence, TypeVar

from lab.runtime import locks, settings
from lab.runtime.progress import Progress, silent

# Plumbing: where a piece runs cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

WAIT_S = 3.0  # how long a job that found every core held waits for a borrower to give one back
POLL_S = 0.05
T = TypeVar("T")


class _Core:
    """This job's own core: the fd of its slot lock (-1: it computes without one) and the thread that runs the job
    (only that thread may lend the core: a lane that waits leaves the job's other lanes computing)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.thread = threading.get_ident()


_held: ContextVar[Optional[_Core]] = ContextVar("layerlab_core_held", default=None)


def held_core() -> Optional[int]:
    """The fd of the core this job holds, -1 when it computes without one, None outside a job."""
    core = _held.get()
    return None if core is None else core.fd


_private: set[str] = set()  # folders already checked by this process


def _user() -> str:
    """This user, for the default folder's name: the user id where there is one (POSIX), else the login name
    (Windows, whose temp folder is already the user's own)."""
    if hasattr(os, "getuid"):
        return str(os.getuid())
    try:
        name = getpass.getuser()
    except Exception:  # noqa: BLE001 - no name to be had (3.13 raises OSError; older versions others)
        name = "user"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "user"


def _owned(info: os.stat_result) -> bool:
    """Whether a folder belongs to this user. Without user ids (Windows) st_uid is always 0 and says nothing; there
    the folder lies in the user's own temp folder, which other users cannot write."""
    return not hasattr(os, "getuid") or info.st_uid == os.getuid()


def folder() -> Path:
    """The slot files' folder, private to this user: in a shared temp folder another user could make it first (a
    symlink, or a folder of theirs) and then hold every core or read which jobs run."""
    d = Path(settings.get("LAYERLAB_CORES_DIR") or Path(tempfile.gettempdir()) / f"layerlab-cores-{_user()}")
    if str(d) in _private:
        return d
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(d)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or not _owned(info):
        raise PermissionError(f"the core-lease folder {d} is not a folder of this user: remove it, or set "
                              f"LAYERLAB_CORES_DIR to a folder of your own")
    if stat.S_IMODE(info.st_mode) & 0o077:  # made with the umask's mode: others must not reach the slots
        os.chmod(d, 0o700)
    _private.add(str(d))
    return d


def n_cores() -> int:
    """Cores this process may run on ($LAYERLAB_CORES overrides, e.g. under a CPU quota)."""
    override = settings.get("LAYERLAB_CORES")
    if override is not None:
        return override
    return usable_cores()


def usable_cores() -> int:
    """Cores this process may run on, as the system says: its affinity mask where the system has one for Python
    (Linux, the BSDs), else Python 3.13's count of the same (`os.process_cpu_count`, which also knows Windows'
    affinity), else every core of the machine (macOS has no affinity to ask about)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    count = getattr(os, "process_cpu_count", os.cpu_count)()
    return max(1, count or 1)  # None: the system could not tell


def lanes_enabled() -> bool:
    return bool(settings.get("LAYERLAB_LANES"))


def _try_take() -> Optional[int]:
    """An fd holding a free core's lock, or None when every core is held."""
    d = folder()
    for i in range(n_cores()):
        fd = os.open(d / f"core-{i}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if locks.take(fd, wait=False):
                return fd
        except OSError:  # a slot that cannot be locked counts as held: the job computes anyway, without lanes
            pass
        os.close(fd)
    return None


def _give(fd: int) -> None:
    try:
        locks.give(fd)
    finally:
        os.close(fd)


def _want() -> None:
    (folder() / "wanted").touch()


def _someone_borrows() -> bool:
    """Whether any process holds a borrowed core (borrowers hold a shared lock on `borrowing`)."""
    fd = os.open(folder() / "borrowing", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if locks.take(fd, wait=False):
            locks.give(fd)
            return False
        return True
    except OSError:
        return True
    finally:
        os.close(fd)


def _wanted_since(t: float) -> bool:
    try:
        return (folder() / "wanted").stat().st_mtime > t
    except FileNotFoundError:
        return False


def _take_asking(wait_s: float) -> int:
    """A free core's fd; when every core is held and one of them is borrowed, ask for it back and wait up to
    `wait_s`; -1 when none came (the job computes anyway)."""
    fd = _try_take()
    if fd is None and _someone_borrows():  # else every core computes a job of its own: no one to wait for
        _want()
        end = time.monotonic() + wait_s
        while fd is None and time.monotonic() < end:
            time.sleep(POLL_S)
            fd = _try_take()
            if fd is None:
                _want()  # again: a borrow that began after the first ask must see it too
    return fd if fd is not None else -1


@contextmanager
def computing(wait_s: float = WAIT_S) -> Iterator[None]:
    """Around one job: hold a core. When every core is held and one of them is borrowed, ask for it back and wait up
    to `wait_s`; then compute anyway (a job is never refused: the lease only decides who may borrow)."""
    if _held.get() is not None:  # nested: the job already holds one
        yield
        return
    core = _Core(_take_asking(wait_s))
    token = _held.set(core)
    try:
        yield
    finally:
        _held.reset(token)
        if core.fd >= 0:
            _give(core.fd)


@contextmanager
def lent(wait_s: float = WAIT_S) -> Iterator[None]:
    """Around a wait for another job's work (a store entry it is building): this job's core is free for the
    waiting time, so the builder's lanes may borrow it (two jobs that need the same table: one walks it on both
    cores instead of one walking while the other holds a core to sleep on). Afterwards the job takes a core again
    as `computing` does (asking a borrower for it back, up to `wait_s`). Outside a job, in a lane, or without a
    core of its own, nothing to lend."""
    core = _held.get()
    if core is None or core.fd < 0 or core.thread != threading.get_ident():
        yield
        return
    _give(core.fd)
    core.fd = -1
    try:
        yield
    finally:
        try:
            core.fd = _take_asking(wait_s)
        except OSError:  # the lease folder gone or unlockable: compute on, without a core (as `_try_take` would)
            core.fd = -1


class _Borrow:
    """The cores a run of lanes borrowed: `grow()` borrows a free one (the caller starts a lane on it), `keep()` says
    whether a borrowed lane may start another piece."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.fds: list[int] = []
        self.own: Optional[int] = None
        self.flag: Optional[int] = None  # a shared lock on `borrowing` while any core is borrowed
        self.since = time.time()
        self.lock = threading.Lock()
        self.able = limit > 0 and lanes_enabled() and _torch_threads() == 1

    def grow(self) -> bool:
        """Borrow one more free core (up to the limit); True when one was borrowed."""
        if not self.able:
            return False
        with self.lock:
            if len(self.fds) >= self.limit:
                return False
            # outside an engine job (a test, a script), or in one that found no core free: take our own first
            if held_core() in (None, -1) and self.own is None:
                self.own = _try_take()
                if self.own is None:
                    return False
            fd = _try_take()
            if fd is None:
                return False
            if self.flag is None:
                flag = os.open(folder() / "borrowing", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    locks.take(flag, shared=True)
                except OSError:
                    # no shared locks here (Windows without pywin32): a job could not see this borrow to ask for
                    # the core back, so this run computes on its own core alone
                    os.close(flag)
                    _give(fd)
                    self.able = False
                    return False
                self.flag = flag
            self.fds.append(fd)
            self.since = time.time()  # a job that asked before this borrow has its core (or stopped waiting)
            return True

    def keep(self) -> bool:
        with self.lock:
            if self.fds and _wanted_since(self.since):
                self._give_all()
            return bool(self.fds)

    def give_one(self) -> None:
        """A lane that ran out of work gives its core back at once, not when the last lane ends."""
        with self.lock:
            if self.fds:
                _give(self.fds.pop())
            self._unflag()

    def _give_all(self) -> None:
        for fd in self.fds:
            _give(fd)
        self.fds.clear()
        self._unflag()

    def _unflag(self) -> None:
        if not self.fds and self.flag is not None:
            _give(self.flag)
            self.flag = None

    def close(self) -> None:
        with self.lock:
            self._give_all()
            if self.own is not None:
                _give(self.own)
                self.own = None


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def lanes(tasks: Sequence[Callable[[Progress], T]], progress: Progress = silent, limit: int = 1) -> list[T]:
    """Run independent `tasks` (each `task(progress)`), in order on this thread and on up to `limit` borrowed cores;
    returns their results in order. After a failure no task starts; the first failure in task order is raised once
    every lane has stopped.

    A lane runs a task inside a copy of this thread's context (the active store, the build records, the notices
    sink are context variables) with torch's grad mode off or on as here. Progress is the mean of the tasks'
    fractions, so it only moves forward whichever lane reports."""
    n = len(tasks)
    results: list[Optional[T]] = [None] * n
    errors: list[Optional[BaseException]] = [None] * n
    fractions = [0.0] * n
    lock = threading.Lock()

    def report(i: int) -> Progress:
        def child(f: float, message: str) -> None:
            with lock:
                fractions[i] = min(max(f, fractions[i]), 1.0)
                total = sum(fractions) / n
            progress(total, message)

        return child

    def work(i: int, _: Callable[[int], None]) -> None:
        try:
            results[i] = tasks[i](report(i))
        except BaseException as exc:
            errors[i] = exc
            raise

    try:
        spread(range(n), work, limit)
    except BaseException:
        first = next((e for e in errors if e is not None), None)
        if first is None:  # not a task's failure (an interrupt): as it came
            raise
        raise first from None  # the first in task order, not in time, is the one to report
    return results  # type: ignore[return-value]


def spread(seeds: Sequence[T], work: Callable[[T, Callable[[T], None]], None], limit: int = 1) -> None:
    """Work through `seeds` and whatever the work adds: `work(item, push)` may `push` new items (a tree's subtrees,
    split as they are reached), on this thread and on up to `limit` borrowed cores. Items are taken last in, first
    out, so a tree is walked depth first and little waits in the queue. The first failure is raised once every lane
    has stopped (the others stop taking work). Context and grad mode travel as in `lanes`."""
    import torch

    stack: list[T] = list(reversed(seeds))
    errors: list[BaseException] = []
    state = {"active": 0}
    cond = threading.Condition()
    grad = torch.is_grad_enabled()

    def push(item: T) -> None:
        with cond:
            stack.append(item)
            cond.notify()

    def get() -> Optional[T]:
        with cond:
            while True:
                if errors:
                    return None
                if stack:
                    state["active"] += 1
                    return stack.pop()
                if state["active"] == 0:  # nothing queued and nobody can add more: done
                    cond.notify_all()
                    return None
                cond.wait()

    def run(item: T) -> None:
        try:
            with torch.set_grad_enabled(grad):
                work(item, push)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            with cond:
                errors.append(exc)
        finally:
            with cond:
                state["active"] -= 1
                cond.notify_all()

    def lane(borrow: _Borrow, ctx: contextvars.Context) -> None:
        try:
            while borrow.keep():
                item = get()
                if item is None:
                    return
                ctx.run(run, item)
        finally:
            borrow.give_one()

    borrow = _Borrow(limit)
    threads: list[threading.Thread] = []
    try:
        while True:
            while len(stack) > 1 and borrow.grow():  # work for a second lane, and a free core: borrow it
                t = threading.Thread(target=lane, args=(borrow, contextvars.copy_context()), daemon=True,
                                     name=f"layerlab-lane-{len(threads)}")
                threads.append(t)
                t.start()
            item = get()
            if item is None:
                break
            run(item)
        for t in threads:
            t.join()
    finally:
        borrow.close()
    if errors:
        raise errors[0]
