"""A throwaway PostgreSQL server for tests: Debian's postgresql 15 binaries, a fresh cluster in a temp folder,
TCP on a free local port, trust auth. PostgreSQL refuses to run as root, so as root it runs as `nobody`."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from .browser import free_port


def bin_dir() -> Optional[Path]:
    """The newest installed PostgreSQL's bin folder (Debian lays them out by version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        raise RuntimeError("running as root without `runuser`: cannot start PostgreSQL as an unprivileged user")
    return [runuser, "-u", "nobody", "--", *cmd]


@contextmanager
def postgres() -> Iterator[str]:
    """A running server; yields its SQLAlchemy URL (psycopg 3). Stopped and deleted afterwards."""
    bins = bin_dir()
    if bins is None:
        raise FileNotFoundError("PostgreSQL is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="layerlab-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "nobody")
    data, port = root / "data", free_port()
    try:
        subprocess.run(_as_owner([str(bins / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                                  "-E", "UTF8", "--no-sync"]), check=True, capture_output=True, timeout=120)
        opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(_as_owner([str(bins / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"),
                                  "-w", "-t", "60", "start"]), check=True, capture_output=True, timeout=90)
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(_as_owner([str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                           capture_output=True, timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)
