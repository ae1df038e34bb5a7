"""File locks on every platform the lab runs on: exclusive or shared, waiting or not, and gone with their process.

The store builds each entry once across processes (lab/runtime/store.py) and the core leases count jobs across
processes (lab/runtime/cores.py); both need locks that the system drops when their holder dies, so a killed worker
never leaves an entry or a core locked. They go through portalocker (https://github.com/wolph/portalocker):
- Linux, macOS, the BSDs: `flock`. A lock belongs to one open file, so two opens of one file exclude each other even
  within a process (the leases' threads rely on that), and the kernel drops it when the last descriptor closes.
- Windows: `msvcrt.locking` for exclusive locks and `LockFileEx` for shared ones (pywin32, portalocker's `win32`
  extra); a lock belongs to one handle, and Windows drops it when the process ends. Windows's waiting msvcrt lock
  gives up after about 10 s (10 tries, 1 s apart), where flock waits for good: `take` asks again until it has the
  lock, so a wait for an entry being trained lasts as long as the training, as on Linux.
Locking here is advisory everywhere that matters: the lock files are never read or written, only locked.
"""

from __future__ import annotations

import time
from typing import IO, Any, Union

import portalocker
from portalocker import LockFlags
from portalocker.exceptions import AlreadyLocked, LockException

# Plumbing: a lock decides who computes, never what (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

RETRY_S = 0.05  # pause before asking again after a waiting lock gave up (Windows)

Lockable = Union[int, IO[Any]]  # an OS file descriptor, or an open file


def take(f: Lockable, *, shared: bool = False, wait: bool = True) -> bool:
    """Lock `f` (exclusive, or shared with other shared holders). With `wait`, until it is ours (True); without,
    False at once when another open file holds a conflicting lock. A failure other than "held" (a file system
    without locks; shared locks on Windows without pywin32) raises OSError."""
    flags = LockFlags.SHARED if shared else LockFlags.EXCLUSIVE
    if not wait:
        flags |= LockFlags.NON_BLOCKING
    while True:
        try:
            portalocker.lock(f, flags)
            return True
        except AlreadyLocked:
            if not wait:
                return False
        except LockException as exc:
            raise OSError(f"cannot lock {_name(f)}: {exc}") from exc
        except ImportError as exc:  # portalocker's word for "no shared locks on this Windows"
            raise OSError(f"cannot lock {_name(f)}: {exc}") from exc
        time.sleep(RETRY_S)


def give(f: Lockable) -> None:
    """Unlock `f`."""
    try:
        portalocker.unlock(f)
    except LockException as exc:
        raise OSError(f"cannot unlock {_name(f)}: {exc}") from exc


def _name(f: Lockable) -> str:
    return f"descriptor {f}" if isinstance(f, int) else str(getattr(f, "name", f))
