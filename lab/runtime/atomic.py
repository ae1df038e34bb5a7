"""The lab's one atomic writer of files (the store's entries, timings, job progress files)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

# How a writer in Rust (safetensors: "Error while serializing: I/O error: No space left on device (os error 28)")
# reports the operating system's error: its own exception type, not an OSError.
_OS_ERROR = re.compile(r"\(os error (\d+)\)")


class WriteFailed(OSError):
    """A file could not be written (a full disk, a quota, a read-only folder), whichever writer met it; `errno` is
    the operating system's code and the message, one line, names the file and the cause."""


def _failed(path: Path, exc: BaseException) -> WriteFailed | None:
    """`exc`, met while writing `path`, as a WriteFailed; None when it is not the operating system's refusal."""
    if isinstance(exc, OSError):
        code, cause = exc.errno, exc.strerror or str(exc)
    else:
        m = _OS_ERROR.search(str(exc))
        if m is None:
            return None
        code = int(m.group(1))
        cause = os.strerror(code)
    out = WriteFailed(f"cannot write {path}: {cause}")
    out.errno = code
    return out


def write_atomically(path: Path, write: Callable[[str], None], durable: bool = True) -> None:
    """The lab's one atomic writer: `write(tmp)` fills a temporary file beside `path`, which is then renamed onto
    it, so a reader (in any process) sees the old file or the new one, never half of one, and a process killed
    mid-write leaves only a `.<name>.*.tmp` file (the next holder of an entry's lock deletes it). A write the
    operating system refuses (a full disk: OSError ENOSPC, or a writer's own error that reports one, as safetensors'
    does) raises `WriteFailed`, and nothing is left behind.

    `durable`: fsync before the rename, so the entry survives a crash of the machine too (stored entries); a
    progress file rewritten four times a second and deleted when its job lands skips it."""
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        write(tmp)
        if durable:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except Exception as exc:
        failed = _failed(path, exc)
        if failed is None:
            raise
        raise failed from exc
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def write_json_atomically(path: Path, data: Any, durable: bool = True) -> None:
    """`data` as JSON at `path`, atomically (see `write_atomically`)."""
    text = json.dumps(data)
    write_atomically(path, lambda tmp: Path(tmp).write_text(text), durable)
