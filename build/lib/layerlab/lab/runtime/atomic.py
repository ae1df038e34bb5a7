"""The lab's one atomic writer of files (the store's entries, timings, job progress files)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True


def write_atomically(path: Path, write: Callable[[str], None], durable: bool = True) -> None:
    """The lab's one atomic writer: `write(tmp)` fills a temporary file beside `path`, which is then renamed onto
    it, so a reader (in any process) sees the old file or the new one, never half of one, and a process killed
    mid-write leaves only a `.<name>.*.tmp` file (the next holder of an entry's lock deletes it).

    `durable`: fsync before the rename, so the entry survives a crash of the machine too (stored entries); a
    progress file rewritten four times a second and deleted when its job lands skips it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        if durable:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json_atomically(path: Path, data: Any, durable: bool = True) -> None:
    """`data` as JSON at `path`, atomically (see `write_atomically`)."""
    text = json.dumps(data)
    write_atomically(path, lambda tmp: Path(tmp).write_text(text), durable)
