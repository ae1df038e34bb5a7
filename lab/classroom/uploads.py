"""Uploaded CSVs over time: when one expires, and how much of the server's space one network address may keep.

lab/core/data_csv.py checks an upload and stores it under `<store>/data/<sha256>.csv` (content-addressed: the same
bytes are one file); this module is the bookkeeping around it, kept apart so that data_csv (which every model's
code version reaches) never changes for it. Why: uploads were never deleted, and 8 sessions of 5 uploads filled
the server's space for everyone.
- A use: a page that shows a CSV task marks it (`used`: the file's modification time, at most once an hour per file
  and process). The bytes never change, so the time is free to mean "last used"; uploading the same bytes again is
  a use too (`record`).
- Expiry (`expire`, run by the retention timer, lab/classroom/retention.py): a CSV unused for LAYERLAB_UPLOAD_DAYS
  is deleted with its records; a link that names it then asks for the file again.
- Per address (`room`): each upload records who sent it (`<store>/data/owners/<uploader>/<sha256>`, an empty file;
  the uploader is a keyed hash of the address's /24 or /48, lab/runtime/secret.py). One address may keep at most
  LAYERLAB_UPLOAD_MB_PER_ADDRESS, and never more than half of the space that the others leave free of STORE_BYTES
  (rounded up; the fair share of lab/runtime/engine/admission.py), so no address fills the server's space.
- Refused files count too (`refused`, `refused_bytes`): the check of a file the server then refuses costs the
  server as much as one it keeps, so for REFUSED_WINDOW_S each refusal counts its bytes (at least REFUSED_FLOOR)
  against the same per-address bound, and pressing "Use this file" on a bad file again and again is bounded. Kept
  in this process's memory: a restarted server forgets them, as it forgets its sessions.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Optional

from lab.runtime import secret

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

# data_csv's own values, repeated because importing it imports torch (two seconds before the server listens);
# tests/test_uploads.py keeps them equal.
DATA_DIR = "data"
MAX_MB = 5  # the page's upload limit in Streamlit's megabytes (MiB), data_csv.MAX_BYTES rounded up: the browser's
# limit (st.file_uploader's max_upload_size) and the server's (server.maxUploadSize, .streamlit/config.toml)
STORE_BYTES = 200_000_000  # every stored CSV of the server together
OWNERS = "owners"
TOUCH_EVERY_S = 3600.0
_CSV = re.compile(r"[0-9a-f]{64}")
REFUSED_WINDOW_S = 3600.0  # how long a refused file counts against its network's bound
REFUSED_FLOOR = 100_000  # bytes a refusal counts at least: a tiny bad file is not free to send again and again
_touched: dict[str, float] = {}
_touched_lock = threading.Lock()
_refused: dict[str, list[tuple[float, int]]] = {}  # uploader -> (when, bytes counted) of its refused files
_refused_lock = threading.Lock()


def folder(root: Path | str) -> Path:
    return Path(root) / DATA_DIR


def _csvs(root: Path | str) -> list[Path]:
    where = folder(root)
    return [p for p in where.glob("*.csv") if _CSV.fullmatch(p.stem)] if where.is_dir() else []


def stored_bytes(root: Path | str) -> int:
    """Bytes of every stored CSV."""
    return sum(_size(p) for p in _csvs(root))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # expired meanwhile
        return 0


def uploader(address: str) -> str:
    """The id an upload records for a network address: its /24 or /48, keyed with the server's secret."""
    return secret.client_hash(secret.derive(secret.master(), "upload"), address)


def used(path: Path, now: Optional[float] = None) -> None:
    """Mark the stored CSV at `path` as used now (its expiry starts again); cheap to call on every page run."""
    now = time.time() if now is None else now
    with _touched_lock:
        if now - _touched.get(str(path), float("-inf")) < TOUCH_EVERY_S:
            return
        _touched[str(path)] = now
    try:
        os.utime(path, (now, now))
    except FileNotFoundError:
        pass


def record(path: Path, client: str, now: Optional[float] = None) -> None:
    """`client` uploaded the stored CSV at `path` (a use of it too)."""
    marker = path.parent / OWNERS / client / path.stem
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    now = time.time() if now is None else now
    with _touched_lock:
        _touched[str(path)] = now
    os.utime(path, (now, now))


def held(root: Path | str, client: str) -> int:
    """Bytes of the stored CSVs that `client` uploaded."""
    mine = folder(root) / OWNERS / client
    if not mine.is_dir():
        return 0
    return sum(_size(folder(root) / f"{m.name}.csv") for m in mine.iterdir() if _CSV.fullmatch(m.name))


def refused(client: str, size: int, now: Optional[float] = None) -> None:
    """The server checked a file of `size` bytes from `client` and refused it."""
    now = time.time() if now is None else now
    with _refused_lock:
        for who in [w for w, seen in _refused.items() if seen[-1][0] <= now - REFUSED_WINDOW_S]:
            del _refused[who]  # nothing of theirs counts any more
        _refused.setdefault(client, []).append((now, max(size, REFUSED_FLOOR)))


def refused_bytes(client: str, now: Optional[float] = None) -> int:
    """Bytes of `client`'s files refused in the last REFUSED_WINDOW_S (each at least REFUSED_FLOOR)."""
    now = time.time() if now is None else now
    with _refused_lock:
        recent = [(t, n) for t, n in _refused.get(client, []) if t > now - REFUSED_WINDOW_S]
        if recent:
            _refused[client] = recent
        else:
            _refused.pop(client, None)
        return sum(n for _, n in recent)


def room(root: Path | str, client: str, per_address: int, store_bytes: int = STORE_BYTES) -> int:
    """Bytes `client` may still add: at most `per_address` in all, and never more than half of what the other
    uploaders leave free of `store_bytes` (rounded up)."""
    mine = held(root, client)
    others = max(0, stored_bytes(root) - mine)
    share = max(0, store_bytes - others + 1) // 2
    return max(0, min(per_address, share) - mine)


def expire(root: Path | str, days: float, now: Optional[float] = None) -> list[str]:
    """Delete the stored CSVs not used for `days` days, and records of CSVs that are gone; returns the deleted
    files' names."""
    now = time.time() if now is None else now
    gone = []
    for path in _csvs(root):
        try:
            if now - path.stat().st_mtime > days * 86400:
                path.unlink()
                gone.append(path.name)
        except FileNotFoundError:
            pass
    owners = folder(root) / OWNERS
    if owners.is_dir():
        for who in owners.iterdir():
            for marker in who.iterdir() if who.is_dir() else ():
                if not (folder(root) / f"{marker.name}.csv").exists():
                    marker.unlink(missing_ok=True)
            try:
                who.rmdir()  # only when empty
            except OSError:
                pass
    return gone
