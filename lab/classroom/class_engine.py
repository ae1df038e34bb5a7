"""Opening the class database: its URL (LAYERLAB_DB, or a SQLite file in the store's folder), one engine per URL per
process with the tables created on first use (SQLite: a 0600 file in WAL mode), and the write transaction every
change of a class runs in (SQLite: BEGIN IMMEDIATE, so the bounds hold with several servers writing at once).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from pathlib import Path
from typing import Any, Iterator

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lab.classroom.class_tables import OLD_SECRETS, meta
from lab.runtime import settings


def default_url() -> str:
    """LAYERLAB_DB, or a SQLite file in the store's folder."""
    url = settings.get("LAYERLAB_DB")
    if url:
        return url
    from lab.runtime.store import active_store

    root = Path(active_store().root)
    return f"sqlite:///{root / 'workshop.sqlite'}"


SCHEMA_TRIES = 8


def create_schema(eng: Engine) -> None:
    """Create the tables once. Several processes opening a fresh database at once race on "create if missing":
    PostgreSQL takes an advisory lock first; SQLite takes its write lock (BEGIN IMMEDIATE) and a loser retries."""
    for attempt in range(SCHEMA_TRIES):
        try:
            with writing(eng) as conn:
                if eng.dialect.name == "postgresql":
                    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727027)")
                meta.create_all(conn)
                for table in meta.sorted_tables:  # create_all makes indexes only with their table: older ones too
                    for index in table.indexes:
                        index.create(conn, checkfirst=True)
                if sa.inspect(conn).has_table(OLD_SECRETS):  # a secret beside what it protects: gone
                    sa.Table(OLD_SECRETS, sa.MetaData()).drop(conn)
            return
        except (sa.exc.OperationalError, sa.exc.ProgrammingError, sa.exc.IntegrityError):
            if attempt == SCHEMA_TRIES - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def _private_files(path: Path) -> None:
    """Create the SQLite file readable by the server's user only (0600) before SQLite opens it, and tighten one made
    before: SQLite makes its -wal and -shm files with the database file's mode, so they follow."""
    if str(path) in ("", ":memory:"):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for f in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            if f.stat().st_mode & 0o077:
                os.chmod(f, 0o600)
        except FileNotFoundError:
            pass


@functools.lru_cache(maxsize=8)
def engine(url: str) -> Engine:
    """One engine (connection pool) per URL per process; the tables are created on first use."""
    if url.startswith("sqlite:///"):
        _private_files(Path(url[len("sqlite:///"):]))
        eng = sa.create_engine(url, connect_args={"timeout": 15, "check_same_thread": False})

        @sa.event.listens_for(eng, "connect")
        def _pragmas(conn: Any, _record: Any) -> None:  # WAL: many readers (the polling tallies), one writer
            cur = conn.cursor()
            cur.execute("PRAGMA busy_timeout=15000")  # first: switching to WAL itself waits for the lock
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()
    else:
        try:
            eng = sa.create_engine(url, pool_pre_ping=True)
        except ModuleNotFoundError as missing:  # SQLAlchemy imports the URL's driver here, before any connection
            raise MissingDriver(missing_driver(url, missing.name or "")) from missing
    create_schema(eng)
    return eng


class MissingDriver(RuntimeError):
    """LAYERLAB_DB names a database whose Python driver is not installed."""


POSTGRES_EXTRA = 'pip install "layer-lab[postgres]"'


def missing_driver(url: str, module: str) -> str:
    """What to do when the driver `module` of the database at `url` is missing; names no part of the URL past its
    scheme (it may hold a password). PostgreSQL's driver is an optional extra (pyproject.toml: `postgres`), since only
    a course with several app servers needs it."""
    scheme = url.split(":", 1)[0]
    if scheme.split("+", 1)[0] in ("postgresql", "postgres"):
        hint = f"{POSTGRES_EXTRA} installs psycopg"
        if scheme != "postgresql+psycopg":
            hint += ", and LAYERLAB_DB must then start with postgresql+psycopg://"
        return f"LAYERLAB_DB names a PostgreSQL database, but its driver ({module}) is not installed: {hint}"
    return f"LAYERLAB_DB names a {scheme} database, but its Python driver ({module}) is not installed"


@contextlib.contextmanager
def writing(eng: Engine) -> Iterator[Connection]:
    """A write transaction. SQLite's default (deferred) one reads, then fails to upgrade when another process wrote
    meanwhile; BEGIN IMMEDIATE takes the write lock up front (waiting up to busy_timeout)."""
    if eng.dialect.name != "sqlite":
        with eng.begin() as conn:
            yield conn
        return
    with eng.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")  # the driver leaves BEGIN / COMMIT to us
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.exec_driver_sql("ROLLBACK")
            raise
        conn.exec_driver_sql("COMMIT")
