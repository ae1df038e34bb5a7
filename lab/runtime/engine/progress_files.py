"""Progress that crosses processes: one small JSON file per job under `<store>/jobs/`.

A Dask worker cannot call back into the server that asked for its job, but every worker shares the store's folder.
So the server writes a job's file as `queued` (with its submission time and priority) when it submits it, the worker
rewrites it as `running` with (fraction, message, notices, pid, training curves) as the job reports progress, and the
server reads it when a page redraws the job's bar or counts the jobs ahead of a student's. Writes go through the
store's atomic writer (a reader never sees half a file); they skip its fsync, as a progress file lives only while its
job runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Optional

from lab.runtime.atomic import write_json_atomically
from lab.runtime.progress import Curves

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

PROGRESS_DIR = "jobs"  # folder of progress files under the store's root
STALE_QUEUED_S = 2 * 3600  # a "queued" file this old belongs to a server that died: do not count it
WRITE_EVERY_S = 0.25  # progress files are rewritten at most this often (and always at the end)


def job_id(key: str) -> str:
    """A job's file name (without .json): a hash of its engine key (function + config), the same in every process."""
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def progress_file(root: Path | str, jid: str) -> Path:
    """The progress file of job `jid` in the store at `root`."""
    return Path(root) / PROGRESS_DIR / f"{jid}.json"


def write_progress(path: Path, data: dict[str, Any]) -> None:
    """Replace a job's progress file atomically (no fsync: see the module docstring)."""
    write_json_atomically(path, data, durable=False)


def read_progress(path: Path) -> Optional[dict[str, Any]]:
    """A job's progress file, or None if it is gone or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class ProgressFileWriter:
    """The progress callback of a job that runs in another process: it writes (fraction, message, notices, the
    training curves so far) to the job's file, at most every WRITE_EVERY_S (and always the final report). The
    curves collect every report here, so an epoch between two writes is in the next one."""

    def __init__(self, path: Path, submitted: float, notices: list[str]) -> None:
        self.path, self.submitted, self.notices = path, submitted, notices
        self.fraction, self.message, self.last = 0.0, "starting", 0.0
        self.curves = Curves()

    def write(self, state: str = "running") -> None:
        self.last = time.monotonic()
        write_progress(self.path, {"state": state, "fraction": self.fraction, "message": self.message,
                                   "notices": list(self.notices), "submitted": self.submitted, "pid": os.getpid(),
                                   "curves": self.curves.data()})

    def __call__(self, fraction: float, message: str) -> None:
        self.fraction, self.message = fraction, message
        self.curves.add(message)
        if time.monotonic() - self.last >= WRITE_EVERY_S or fraction >= 1.0:
            self.write()
