"""The server's secret: it signs voter cookies and keys the hashes of client addresses (the workshop database, the
upload records).

Why a file of its own: it used to be a row of the workshop database, beside the hashes it keys, in a file created
world-readable, so whoever could read the database could forge any voter's cookie and reverse every hashed address
by trying each address of a campus range. Now:
- it is the file LAYERLAB_SECRET_FILE, else `workshop.secret` in the store's folder: never in the database. A file
  that is missing is made (256 random bits as hex; written whole, then linked into place, so two servers starting
  at once agree on the first one); it is readable by the server's user only (0600), and a looser one is tightened,
  with a warning. The app servers of one course share it: one store, or the same LAYERLAB_SECRET_FILE;
- nothing uses it directly: `derive(master, purpose, *parts)` is an HMAC of it for one purpose and one class, so
  each class signs its cookies and hashes its addresses with a key of its own (a new class's cookies differ, and one
  address's hash in one class says nothing about another class).
Not an environment variable: the lab's Dask workers and every child process inherit the environment.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from lab.runtime import settings
from lab.runtime.addresses import truncated

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

NAME = "workshop.secret"  # in the store's folder, beside the SQLite database but not in it
MIN_CHARS = 32  # a secret shorter than 128 bits of hex is refused
log = logging.getLogger("layerlab.secret")
_cache: dict[tuple[str, int, int], bytes] = {}
_lock = threading.Lock()


def path() -> Path:
    """Where the secret lives: LAYERLAB_SECRET_FILE, else `workshop.secret` in the active store's folder."""
    given = settings.get("LAYERLAB_SECRET_FILE")
    if given:
        return Path(given).expanduser()
    from lab.runtime.store import active_store

    return Path(active_store().root) / NAME


def _create(where: Path) -> None:
    """Make the secret file, 0600, whole or not at all; a file that appeared meanwhile (another server) is kept."""
    where.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=f".{where.name}.", suffix=".tmp")  # mkstemp: mode 0600
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, where)  # fails if it exists: the first server's secret wins, readers never see half of one
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: create-exclusive instead
            try:
                out = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                return
            with os.fdopen(out, "w") as fh:
                fh.write(Path(tmp).read_text())
    finally:
        os.unlink(tmp)


def _private(where: Path, mode: int) -> None:
    """Tighten a secret file that others may read (made by hand, or copied) to 0600, saying so."""
    if mode & 0o077:
        log.warning("the secret file %s was readable by other users (mode %o): made private (0600)", where,
                    stat.S_IMODE(mode))
        os.chmod(where, 0o600)


def master(where: Optional[Path] = None) -> bytes:
    """The secret (made when missing; see the module docstring); ValueError when the file holds too little."""
    where = path() if where is None else where
    for attempt in range(20):
        try:
            st = where.stat()
        except FileNotFoundError:
            _create(where)
            continue
        _private(where, st.st_mode)
        stamp = (str(where), st.st_mtime_ns, st.st_size)
        with _lock:
            if stamp in _cache:
                return _cache[stamp]
        value = where.read_text().strip()
        if len(value) >= MIN_CHARS:
            with _lock:
                _cache[stamp] = value.encode()
            return value.encode()
        time.sleep(0.05 * (attempt + 1))  # only the fallback writer leaves a file briefly short
    raise ValueError(f"the secret file {where} holds fewer than {MIN_CHARS} characters: delete it (a new one is made) "
                     f"or write a long random text into it")


def derive(secret: bytes, purpose: str, *parts: str) -> bytes:
    """A key for one purpose (and one class): an HMAC of the master secret, never the secret itself."""
    return hmac.new(secret, "\x00".join((purpose, *parts)).encode(), hashlib.sha256).digest()


def client_hash(key: bytes, address: str) -> str:
    """An opaque id of a client address: the address truncated to its /24 or /48 (lab/runtime/addresses.py), then
    keyed with `key`; 24 hex digits."""
    return hmac.new(key, truncated(address).encode(), hashlib.sha256).hexdigest()[:24]
