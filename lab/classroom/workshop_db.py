"""Workshop predictions in a real database (no Streamlit): classes with a lecturer key, one vote per student.

SQLite by default: `workshop.sqlite` in the store's folder, WAL mode (readers never wait for the one writer),
created on first use. `LAYERLAB_DB` takes any SQLAlchemy URL instead, e.g.
`postgresql+psycopg://user@host/layerlab`, so a course with several app servers counts one class in one place.

A class and its lecturer: `start_class` hands out a new code (CODE_LENGTH characters of ALPHABET, which has no
0/O, 1/I/L) and a random key, shown once; only the key's SHA-256 is stored. Codes are never chosen by whoever asks,
so nobody can take a code that a lecturer announced, and nothing ever opens a code again: a closed or expired
class stays closed, its predictions kept until retention deletes them. Starting is bounded per network address
(LAYERLAB_CLASSES_PER_HOUR). The tally, the voting window, Reset, the class's current view and closing need the
key; so does presenting the class (`is_lecturer`), and so do setting the lesson a class follows and moving the
room to another of its steps (`set_lesson`, `move_step`; anyone may read where the room is, `lesson`, since every
student's page follows it). A class is open for CLASS_DAYS from its start, or until its lecturer closes it. Classes
and their predictions (and their lessons) are deleted CLASS_DAYS after their start (`purge`).

The voting window, per question of a class: `waiting` (no vote yet), `open`, `closed` (by the lecturer; open it
again at will) and `revealed` (the lecturer showed the answer to the room: closed for good, until Reset). Only an
open window takes votes, and a voter's first counted vote on a question is final (it was cast before that voter saw
the result, which the page shows right after it), so nobody changes a vote after seeing the answer.

What a vote must pass, checked before anything is written (a rejected vote stores nothing):
- the class code: 3-24 letters, digits and dashes (case does not matter: `test-1` is `TEST-1`), and an open class;
- the question: one of the lab's questions, and the option one of that question's;
- the voter: an identity the server issued when the student joined the class (`join`, recorded in `class_voters`;
  a voter id nobody joined with votes nothing), kept by the browser as an opaque token (app/voters.py signs it
  with `sign_voter`, with the class's own key); the client an opaque hash of the network address (`client_id`: its
  /24 or /48, keyed with the server's key); the keys derive from the server's secret, a 0600 file outside this
  database (lab/runtime/secret.py);
- flood bounds, per voter and per client address (never per class, so no one can block a class): a voter casts at
  most VOTER_PER_MINUTE votes a minute; an address, which may be a lecture hall behind one NAT, at most
  LAYERLAB_VOTES_PER_ADDRESS in one class a minute, and adds at most LAYERLAB_VOTERS_PER_ADDRESS voters to one
  question.
Joining is bounded per address by a token bucket per class (`class_joins`): LAYERLAB_JOIN_BURST identities at once
(a lecture hall behind one NAT joins in it), refilled at LAYERLAB_JOINS_PER_MINUTE, so scripted fresh sessions from
one address add at most that many voters a minute once the burst is spent. Finding a class by its code (`find`, the
join's look-up) and checking a typed lecturer key (`check_key`) count their failures per address (`class_failures`):
after LAYERLAB_WRONG_PER_ADDRESS wrong codes (or, apart, wrong keys) in a minute the address's next tries are
refused until the minute is out; right ones never count, so a hall joining with the right code is never held. A
closed class and a code nobody started get the same answer everywhere.
Every call that takes the lecturer's key also takes the lecturer's pass (lab/classroom/lecturer_pass.py): what a
browser keeps in an HttpOnly cookie instead of the key. `lecturer_ticket` issues a single-use ticket for it to the
session that holds the key (its hash kept in `class_tickets` for TICKET_SECONDS) and `redeem_ticket` exchanges it
for the pass once (app/lecturer_route.py).
SQLite's files are created readable by the server's user only (0600); `class_terms.opened` is indexed for retention.
A repeat vote from the same voter is refused (`Counted`). Writes of one class are serialised (SQLite: BEGIN
IMMEDIATE; PostgreSQL: the class's row locked), so the bounds hold with several servers writing at once. Every
statement is SQLAlchemy Core with bound parameters: nothing a student sends is ever spliced into SQL text.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lab.classroom import lecturer_pass
from lab.runtime import secret as server_secret
from lab.runtime import settings

CODE = re.compile(r"[A-Za-z0-9-]{3,24}")
TOKEN = re.compile(r"[A-Za-z0-9_-]{8,64}")
CLIENT = re.compile(r"[A-Za-z0-9_-]{1,64}")
QUESTION = re.compile(r"[a-z0-9_.-]{1,64}")
WINDOW = 60.0  # seconds of the flood bounds
VOTER_PER_MINUTE = 20  # a student changing their mind is a few votes; a script is hundreds
# One address may be a whole lecture hall behind a NAT, so the per-address bounds are server settings sized for a hall
# (LAYERLAB_VOTERS_PER_ADDRESS new voters per question, LAYERLAB_VOTES_PER_ADDRESS votes a minute per class), read by
# each `Workshop` as `voters_per_address` and `votes_per_address`.
CLASS_DAYS = 30  # a term's length, and how long a class and its predictions are kept
# Codes handed out by `start_class`: read off a projector and typed on a phone, so no characters that look alike
# (0/O, 1/I/L). 31**6 is about 9e8 codes: a guessed code is almost never a class, and a class found by guessing
# shows only its student view.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
START_WINDOW = 3600.0  # seconds over which LAYERLAB_CLASSES_PER_HOUR counts the classes an address started
WINDOW_STATES = ("waiting", "open", "closed", "revealed")
PAGE = re.compile(r"[a-z0-9_]{1,64}")  # a page's name (its file in pages/)
VIEW_QUERY_CHARS = 2000  # the longest student link (query string) a class's current view keeps

meta = sa.MetaData()
# The tables have names of their own, so tables of a schema without lecturer keys in the same database are left
# untouched and never read.
classes = sa.Table(
    "class_terms", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("term", sa.Integer, nullable=False),  # how many times the code was opened
    sa.Column("opened", sa.Float, nullable=False),
    sa.Column("closed", sa.Float, nullable=True),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Index("class_terms_opened", "opened"),  # retention finds old classes without reading every class
)
predictions = sa.Table(
    "class_predictions", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("voter", sa.String(64), primary_key=True),
    sa.Column("client", sa.String(64), nullable=False),
    sa.Column("option", sa.Integer, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
votes = sa.Table(  # every vote cast (replacements included), for the flood bounds; older rows are pruned
    "class_votes", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("code", sa.String(24), nullable=False),
    sa.Column("voter", sa.String(64), nullable=False),
    sa.Column("client", sa.String(64), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("class_votes_voter_at", "voter", "at"),
    sa.Index("class_votes_code_client_at", "code", "client", "at"),
)
joined = sa.Table(  # the voter identities the server issued for a class (`join`): only these vote
    "class_voters", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("voter", sa.String(64), primary_key=True),
    sa.Column("at", sa.Float, nullable=False),
)
join_buckets = sa.Table(  # per class and address: the join token bucket's level at `at`
    "class_joins", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("client", sa.String(64), primary_key=True),
    sa.Column("tokens", sa.Float, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
failures = sa.Table(  # wrong class codes and lecturer keys per address (`find`, `check_key`), pruned after WINDOW
    "class_failures", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("client", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(8), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("class_failures_client_kind_at", "client", "kind", "at"),
)
class_starts = sa.Table(  # who started a class when: the per-address bound on starting (pruned after START_WINDOW)
    "class_starts", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("client", sa.String(64), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("class_starts_client_at", "client", "at"),
)
windows = sa.Table(  # the voting window of a question of a class; no row = waiting
    "class_windows", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("state", sa.String(8), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
views = sa.Table(  # the view a class's lecturer presents now: where "Join a class" takes a student
    "class_views", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("page", sa.String(64), nullable=False),
    sa.Column("query", sa.String(VIEW_QUERY_CHARS), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
lessons = sa.Table(  # the lesson a class follows (its JSON, lab/classroom/lessons.py) and the step the room is on
    "class_lessons", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("lesson", sa.Text, nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
outcomes = sa.Table(  # what the lecturer's run said about a question (lessons.outcome's JSON): the lesson's report
    "class_outcomes", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
figures = sa.Table(  # the figure the lecturer's page drew for a question (Plotly JSON): the light student view's
    "class_figures", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("figure", sa.Text, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
tickets = sa.Table(  # lecturer tickets (`lecturer_ticket`): a ticket's SHA-256 only, deleted when redeemed or expired
    "class_tickets", meta,
    sa.Column("ticket_hash", sa.String(64), primary_key=True),
    sa.Column("code", sa.String(24), nullable=False),
    sa.Column("expires", sa.Float, nullable=False),
)
LESSON_CHARS = 32_000  # a lesson's JSON (lab/classroom/lessons.py: MAX_BYTES)
OUTCOME_CHARS = 4_000  # an outcome's JSON: a claim's statement, numbers and error
OLD_SECRETS = "lab_secrets"  # where the signing secret used to be kept: dropped (lab/runtime/secret.py)


class Rejected(ValueError):
    """A vote, class code or question the database refuses; the message is for the student."""


class Flood(Rejected):
    """Too many votes too fast (from one voter, or from one address)."""


class NotLecturer(Rejected):
    """An action that needs the class's lecturer key, asked without it (or with a wrong one)."""


class NotJoined(Rejected):
    """A vote from a voter id the server never issued for the class (its browser did not join it)."""


class Counted(Rejected):
    """A second vote from a voter whose vote on the question is counted already: the first one stands."""


VOTING_CLOSED = {  # why a vote outside the window is refused, for the student
    "waiting": "voting on this question has not opened yet: wait for your lecturer to open it, then press Reveal",
    "closed": "voting on this question is closed",
    "revealed": "voting on this question closed when the lecturer revealed the answer",
}


class NotVoting(Rejected):
    """A vote outside the question's voting window (not open yet, closed, or the answer revealed)."""

    def __init__(self, message: str, state: str) -> None:
        super().__init__(message)
        self.state = state


@dataclass(frozen=True)
class Tally:
    """The class's predictions on one question: counts in the question's option order."""

    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass(frozen=True)
class Opened:
    """A class `start_class` started: its code, and its lecturer key (shown once, never stored)."""

    code: str
    term: int
    key: Optional[str]


@dataclass(frozen=True)
class LessonState:
    """The lesson an open class follows: its JSON (lab/classroom/lessons.py), the room's step (0-based), the
    steps' question keys and the voting window of the step's question; `at` when the step last moved."""

    lesson: str
    step: int
    questions: tuple[str, ...]
    window: str
    at: float

    @property
    def question(self) -> str:
        return self.questions[self.step]


def class_code(text: Any) -> str:
    """The canonical (upper-case) class code, or Rejected saying the format."""
    if not isinstance(text, str) or not CODE.fullmatch(text):
        raise Rejected("a class code is 3 to 24 letters, digits and dashes, like TEST-1")
    return text.upper()


def _check(pattern: re.Pattern[str], text: Any, what: str) -> str:
    if not isinstance(text, str) or not pattern.fullmatch(text):
        raise Rejected(f"malformed {what}")
    return text


def key_hash(key: str) -> str:
    """What is stored of a lecturer key. A key is 144 random bits, so a plain SHA-256 cannot be guessed back."""
    return hashlib.sha256(key.encode()).hexdigest()


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
            with _writing(eng) as conn:
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
def _writing(eng: Engine) -> Iterator[Connection]:
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



def _tally(conn: Any, code: str, question: str, n_options: int) -> "Tally":
    """The predictions of one question, counted per option (an option outside the question's is not counted)."""
    rows = conn.execute(sa.select(predictions.c.option, sa.func.count())
                        .where(predictions.c.code == code, predictions.c.question == question)
                        .group_by(predictions.c.option)).all()
    counts = [0] * n_options
    for option, n in rows:
        if 0 <= option < n_options:
            counts[option] = int(n)
    return Tally(tuple(counts))

class Workshop:
    """Predictions of every class, in the database at `url` (default: `default_url()`)."""

    def __init__(self, url: Optional[str] = None) -> None:
        self.url = url or default_url()
        self.engine = engine(self.url)
        self._secret: Optional[bytes] = None
        self.voters_per_address: int = settings.get("LAYERLAB_VOTERS_PER_ADDRESS")
        self.votes_per_address: int = settings.get("LAYERLAB_VOTES_PER_ADDRESS")

    # Read at each use: one Workshop serves a server for its life, and a course's setting (or a test's) holds at once.
    @property
    def join_burst(self) -> int:
        return settings.get("LAYERLAB_JOIN_BURST")

    @property
    def joins_per_minute(self) -> int:
        return settings.get("LAYERLAB_JOINS_PER_MINUTE")

    @property
    def wrong_per_address(self) -> int:
        return settings.get("LAYERLAB_WRONG_PER_ADDRESS")

    # -- classes -----------------------------------------------------------------------------------------------
    def _class(self, conn: Connection, code: str, lock: bool = False) -> Optional[sa.Row]:
        q = sa.select(classes).where(classes.c.code == code)
        return conn.execute(q.with_for_update() if lock else q).first()

    @staticmethod
    def _live(row: Optional[sa.Row], now: float) -> bool:
        return row is not None and row.closed is None and now - row.opened < CLASS_DAYS * 86400

    def _key_ok(self, row: Optional[sa.Row], key: Optional[str], now: float) -> bool:
        """Whether `key` is the class's key, or a lecturer pass minted for this class (`lecturer_pass`)."""
        if row is None or not isinstance(key, str):
            return False
        if lecturer_pass.is_pass(key):
            return lecturer_pass.valid(self.class_key("lecturer", row.code), row.term, row.key_hash, key, now)
        return hmac.compare_digest(row.key_hash, key_hash(key))

    def start_class(self, client: str = "unknown", now: Optional[float] = None) -> Opened:
        """A new class: a code nobody chose (ALPHABET, CODE_LENGTH) and its lecturer key (returned this once; only its
        hash is kept). Flood when `client` (an opaque hash of the network address) started
        LAYERLAB_CLASSES_PER_HOUR classes in the last hour."""
        client = _check(CLIENT, client, "client")
        now = time.time() if now is None else now
        limit = settings.get("LAYERLAB_CLASSES_PER_HOUR")
        self.purge(now)
        with _writing(self.engine) as conn:
            if self.engine.dialect.name == "postgresql":  # starts are rare: one at a time, so the count holds
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727028)")
            started = conn.execute(sa.select(sa.func.count()).select_from(class_starts).where(
                class_starts.c.client == client, class_starts.c.at >= now - START_WINDOW)).scalar_one()
            if started >= limit:
                raise Flood(f"your network started {limit} classes in the last hour: use one of them, or try "
                            f"again later")
            for _ in range(20):  # a taken code (open, or closed and kept until retention) is never handed out again
                code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
                if self._class(conn, code) is None:
                    break
            else:
                raise RuntimeError("no free class code after 20 draws")
            key = secrets.token_urlsafe(18)
            conn.execute(sa.insert(classes).values(code=code, term=1, opened=now, closed=None, key_hash=key_hash(key)))
            conn.execute(sa.delete(class_starts).where(class_starts.c.at < now - START_WINDOW))
            conn.execute(sa.insert(class_starts).values(client=client, at=now))
        return Opened(code, 1, key)

    def _bounded(self, conn: Connection, client: str, kind: str, now: float) -> None:
        """Flood when `client` failed `kind` (a class code, a key) wrong_per_address times in the last WINDOW."""
        n = conn.execute(sa.select(sa.func.count()).select_from(failures).where(
            failures.c.client == client, failures.c.kind == kind, failures.c.at >= now - WINDOW)).scalar_one()
        if n >= self.wrong_per_address:
            what = "class codes" if kind == "code" else "lecturer keys"
            raise Flood(f"too many wrong {what} from your network in a minute: wait a minute, then try again")

    def _failed(self, client: str, kind: str, now: float) -> None:
        with _writing(self.engine) as conn:
            conn.execute(sa.delete(failures).where(failures.c.at < now - WINDOW))
            conn.execute(sa.insert(failures).values(client=client, kind=kind, at=now))

    def find(self, code: str, client: str = "unknown", now: Optional[float] = None) -> bool:
        """Whether `code` names an open class, for someone who typed or linked it (a join): a code that names none
        (closed, expired or never started: the same answer) counts against `client`, and Flood, without looking,
        once `client` had wrong_per_address such failures in a minute. A right code never counts."""
        code, client = class_code(code), _check(CLIENT, client, "client")
        now = time.time() if now is None else now
        with self.engine.connect() as conn:
            self._bounded(conn, client, "code", now)
            ok = self._live(self._class(conn, code), now)
        if not ok:
            self._failed(client, "code", now)
        return ok

    def check_key(self, code: str, key: Any, client: str = "unknown", now: Optional[float] = None) -> bool:
        """`is_lecturer` for a key someone typed or a browser's cookie sent: a wrong one counts against `client`,
        and Flood, without looking, once `client` had wrong_per_address wrong keys in a minute."""
        code, client = class_code(code), _check(CLIENT, client, "client")
        now = time.time() if now is None else now
        with self.engine.connect() as conn:
            self._bounded(conn, client, "key", now)
            row = self._class(conn, code)
        ok = self._live(row, now) and self._key_ok(row, key, now)
        if not ok:
            self._failed(client, "key", now)
        return ok

    def join(self, code: str, client: str = "unknown", now: Optional[float] = None,
             voter: Optional[str] = None) -> str:
        """A student joins the open class `code`: a new voter identity (random, unless `voter` names it) that may
        vote in it. Flood when `client`'s join bucket in this class is empty (LAYERLAB_JOIN_BURST at once, refilled
        at LAYERLAB_JOINS_PER_MINUTE), saying how long to wait."""
        code, client = class_code(code), _check(CLIENT, client, "client")
        voter = secrets.token_urlsafe(16) if voter is None else _check(TOKEN, voter, "voter")
        now = time.time() if now is None else now
        with _writing(self.engine) as conn:
            if not self._live(self._class(conn, code, lock=True), now):
                raise Rejected(f"no class {code} is open: check the code with your lecturer")
            if self._joined(conn, code, voter):
                return voter
            where = (join_buckets.c.code == code, join_buckets.c.client == client)
            row = conn.execute(sa.select(join_buckets.c.tokens, join_buckets.c.at).where(*where)).first()
            rate = self.joins_per_minute / 60.0
            tokens = float(self.join_burst) if row is None else \
                min(float(self.join_burst), row.tokens + max(0.0, now - row.at) * rate)
            if tokens < 1.0 and rate <= 0:
                raise Flood(f"{self.join_burst} students joined this class from your network, as many as may")
            if tokens < 1.0:
                wait = max(1, int((1.0 - tokens) / rate + 0.999))
                raise Flood(f"too many students joined from your network just now: try again in {wait} s")
            if row is None:
                conn.execute(sa.insert(join_buckets).values(code=code, client=client, tokens=tokens - 1, at=now))
            else:
                conn.execute(sa.update(join_buckets).where(*where).values(tokens=tokens - 1, at=now))
            conn.execute(sa.insert(joined).values(code=code, voter=voter, at=now))
        return voter

    @staticmethod
    def _joined(conn: Connection, code: str, voter: str) -> bool:
        return conn.execute(sa.select(joined.c.voter).where(joined.c.code == code, joined.c.voter == voter)) \
            .first() is not None

    def is_joined(self, code: str, voter: Any) -> bool:
        """Whether `voter` is an identity the server issued for class `code` (`join`)."""
        code = class_code(code)
        if not isinstance(voter, str) or not TOKEN.fullmatch(voter):
            return False
        with self.engine.connect() as conn:
            return self._joined(conn, code, voter)

    def is_open(self, code: str, now: Optional[float] = None) -> bool:
        code, now = class_code(code), time.time() if now is None else now
        with self.engine.connect() as conn:
            return self._live(self._class(conn, code), now)

    def is_lecturer(self, code: str, key: Optional[str], now: Optional[float] = None) -> bool:
        """Whether `key` is the key of the open class `code`."""
        code, now = class_code(code), time.time() if now is None else now
        with self.engine.connect() as conn:
            row = self._class(conn, code)
        return self._live(row, now) and self._key_ok(row, key, now)

    def _lecturer(self, conn: Connection, code: str, key: Optional[str], now: float) -> None:
        row = self._class(conn, code, lock=True)
        if not (self._live(row, now) and self._key_ok(row, key, now)):
            raise NotLecturer(f"only the lecturer of class {code} (with its key) can do that")

    def close_class(self, code: str, key: Optional[str], now: Optional[float] = None) -> None:
        """End the class (the lecturer's Close): no more votes. Nothing opens its code again, and its predictions
        are kept until retention deletes them."""
        code, now = class_code(code), time.time() if now is None else now
        with _writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            conn.execute(sa.update(classes).where(classes.c.code == code).values(closed=now))

    # -- the voting window -----------------------------------------------------------------------------------
    @staticmethod
    def _window(conn: Connection, code: str, question: str) -> str:
        state = conn.execute(sa.select(windows.c.state).where(windows.c.code == code,
                                                              windows.c.question == question)).scalar()
        return state if state in WINDOW_STATES else "waiting"

    def window(self, code: str, question: str) -> str:
        """The voting window of a question of a class: waiting, open, closed or revealed (anyone may ask)."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        with self.engine.connect() as conn:
            return self._window(conn, code, question)

    def set_window(self, code: str, question: str, state: str, key: Optional[str],
                   now: Optional[float] = None) -> str:
        """The lecturer opens (`open`) or closes (`closed`) voting on a question, or reveals its answer to the room
        (`revealed`, which closes it for good: only Reset starts the question afresh); returns the new state."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        if state not in ("open", "closed", "revealed"):
            raise Rejected("a voting window is open, closed or revealed")
        now = time.time() if now is None else now
        with _writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            was = self._window(conn, code, question)
            if was == "revealed" and state != "revealed":
                raise Rejected("the answer was revealed to the room, so voting on this question is over: Reset the "
                               "question to ask it again")
            where = (windows.c.code == code, windows.c.question == question)
            if not conn.execute(sa.update(windows).where(*where).values(state=state, at=now)).rowcount:
                conn.execute(sa.insert(windows).values(code=code, question=question, state=state, at=now))
        return state

    # -- the class's current view --------------------------------------------------------------------------
    def set_view(self, code: str, key: Optional[str], page: str, query: str, now: Optional[float] = None) -> None:
        """The lecturer's current view (a page and its Student link's query string): where Join takes students."""
        code, now = class_code(code), time.time() if now is None else now
        page = _check(PAGE, page, "page")
        if not isinstance(query, str) or len(query) > VIEW_QUERY_CHARS or not query.isprintable():
            raise Rejected("malformed view")
        with _writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            if not conn.execute(sa.update(views).where(views.c.code == code)
                                .values(page=page, query=query, at=now)).rowcount:
                conn.execute(sa.insert(views).values(code=code, page=page, query=query, at=now))

    def view(self, code: str, now: Optional[float] = None) -> Optional[tuple[str, str]]:
        """The open class's current view (page, query string), or None (no such open class, or no view yet)."""
        code, now = class_code(code), time.time() if now is None else now
        with self.engine.connect() as conn:
            if not self._live(self._class(conn, code), now):
                return None
            row = conn.execute(sa.select(views.c.page, views.c.query).where(views.c.code == code)).first()
        return (row.page, row.query) if row is not None else None

    # -- the lesson a class follows -----------------------------------------------------------------------------
    @staticmethod
    def _questions(text: Any) -> tuple[str, ...]:
        """The question keys of a lesson's JSON, in step order (the lesson itself is checked by lessons.from_json
        before it is stored; here only what the voting windows need)."""
        if not isinstance(text, str) or not 0 < len(text) <= LESSON_CHARS:
            raise Rejected("malformed lesson")
        try:
            steps = json.loads(text)["steps"]
            found = tuple(_check(QUESTION, s["question"], "question") for s in steps)
        except (ValueError, KeyError, TypeError):
            raise Rejected("malformed lesson") from None
        if not found or len(set(found)) != len(found):
            raise Rejected("a lesson has at least one step, each with a question of its own")
        return found

    def _set_window_in(self, conn: Connection, code: str, question: str, state: str, now: float) -> None:
        where = (windows.c.code == code, windows.c.question == question)
        if not conn.execute(sa.update(windows).where(*where).values(state=state, at=now)).rowcount:
            conn.execute(sa.insert(windows).values(code=code, question=question, state=state, at=now))

    def set_lesson(self, code: str, key: Optional[str], lesson: str, now: Optional[float] = None) -> None:
        """The class follows `lesson` (its JSON) from its first step, whose voting opens (the lecturer's)."""
        code, now = class_code(code), time.time() if now is None else now
        qs = self._questions(lesson)
        with _writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            if not conn.execute(sa.update(lessons).where(lessons.c.code == code)
                                .values(lesson=lesson, step=0, at=now)).rowcount:
                conn.execute(sa.insert(lessons).values(code=code, lesson=lesson, step=0, at=now))
            if self._window(conn, code, qs[0]) == "waiting":
                self._set_window_in(conn, code, qs[0], "open", now)

    def lesson(self, code: str, now: Optional[float] = None) -> Optional[LessonState]:
        """The lesson the open class `code` follows and the room's step, or None (no such open class, or no lesson):
        anyone may ask (every student's page follows it)."""
        code, now = class_code(code), time.time() if now is None else now
        with self.engine.connect() as conn:
            if not self._live(self._class(conn, code), now):
                return None
            row = conn.execute(sa.select(lessons.c.lesson, lessons.c.step, lessons.c.at)
                               .where(lessons.c.code == code)).first()
            if row is None:
                return None
            qs = self._questions(row.lesson)
            step = min(max(0, int(row.step)), len(qs) - 1)
            return LessonState(row.lesson, step, qs, self._window(conn, code, qs[step]), float(row.at))

    def move_step(self, code: str, key: Optional[str], to: int, now: Optional[float] = None) -> int:
        """The lecturer moves the room to step `to` (0-based): voting on the step it leaves closes (if it was
        open), and voting on the new step's question opens unless it was closed or revealed before; returns `to`."""
        code, now = class_code(code), time.time() if now is None else now
        with _writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            row = conn.execute(sa.select(lessons.c.lesson, lessons.c.step).where(lessons.c.code == code)).first()
            if row is None:
                raise Rejected(f"class {code} follows no lesson")
            qs = self._questions(row.lesson)
            if not isinstance(to, int) or not 0 <= to < len(qs):
                raise Rejected(f"the lesson has steps 1 to {len(qs)}")
            was = qs[min(max(0, int(row.step)), len(qs) - 1)]
            if was != qs[to] and self._window(conn, code, was) == "open":
                self._set_window_in(conn, code, was, "closed", now)
            if self._window(conn, code, qs[to]) == "waiting":
                self._set_window_in(conn, code, qs[to], "open", now)
            conn.execute(sa.update(lessons).where(lessons.c.code == code).values(step=to, at=now))
        return to

    def set_outcome(self, code: str, key: Optional[str], question: str, outcome: str,
                    now: Optional[float] = None) -> None:
        """What the lecturer's run said about a question (lessons.outcome's JSON), kept for the lesson's report."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        now = time.time() if now is None else now
        if not isinstance(outcome, str) or len(outcome) > OUTCOME_CHARS:
            raise Rejected("malformed outcome")
        with _writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            where = (outcomes.c.code == code, outcomes.c.question == question)
            if not conn.execute(sa.update(outcomes).where(*where).values(outcome=outcome, at=now)).rowcount:
                conn.execute(sa.insert(outcomes).values(code=code, question=question, outcome=outcome, at=now))

    def outcomes(self, code: str, key: Optional[str] = None, now: Optional[float] = None) -> dict[str, str]:
        """{question: outcome JSON} of the class: all of them for its lecturer (the key), and for anyone else only
        those whose answer was revealed to the room (a student's worksheet never shows an answer early)."""
        code, now = class_code(code), time.time() if now is None else now
        with self.engine.connect() as conn:
            row = self._class(conn, code)
            if not self._live(row, now):
                return {}
            rows = conn.execute(sa.select(outcomes.c.question, outcomes.c.outcome)
                                .where(outcomes.c.code == code)).all()
            if self._key_ok(row, key, now):
                return {r.question: r.outcome for r in rows}
            shown = set(conn.execute(sa.select(windows.c.question).where(
                windows.c.code == code, windows.c.state == "revealed")).scalars())
        return {r.question: r.outcome for r in rows if r.question in shown}

    def tallies(self, code: str, key: Optional[str], now: Optional[float] = None) -> dict[str, dict[int, int]]:
        """{question: {option: count}} of every question of the class (the lesson's report): its lecturer's only."""
        code, now = class_code(code), time.time() if now is None else now
        with self.engine.connect() as conn:
            row = self._class(conn, code)
            if not (self._live(row, now) and self._key_ok(row, key, now)):
                raise NotLecturer(f"only the lecturer of class {code} (with its key) sees its tally")
            rows = conn.execute(sa.select(predictions.c.question, predictions.c.option, sa.func.count())
                                .where(predictions.c.code == code)
                                .group_by(predictions.c.question, predictions.c.option)).all()
        out: dict[str, dict[int, int]] = {}
        for question, option, n in rows:
            out.setdefault(question, {})[int(option)] = int(n)
        return out

    def revealed_tally(self, code: str, question: str, n_options: int,
                       now: Optional[float] = None) -> Optional[Tally]:
        """The class's tally of a question once its answer was revealed to the room (anyone may see what the
        projector showed); None before that, or for a class that is not open."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        now = time.time() if now is None else now
        with self.engine.connect() as conn:
            if not self._live(self._class(conn, code), now) or self._window(conn, code, question) != "revealed":
                return None
            return _tally(conn, code, question, n_options)

    def purge(self, now: Optional[float] = None) -> int:
        """Delete classes opened longer than CLASS_DAYS ago with their predictions, and vote records older than the
        flood window; returns how many classes went."""
        now = time.time() if now is None else now
        old = now - CLASS_DAYS * 86400
        with _writing(self.engine) as conn:
            codes = list(conn.execute(sa.select(classes.c.code).where(classes.c.opened < old)).scalars())
            if codes:
                for table in (predictions, windows, views, lessons, outcomes, figures, joined, join_buckets):
                    conn.execute(sa.delete(table).where(table.c.code.in_(codes)))
                conn.execute(sa.delete(classes).where(classes.c.code.in_(codes)))
            conn.execute(sa.delete(votes).where(votes.c.at < now - WINDOW))
            conn.execute(sa.delete(failures).where(failures.c.at < now - WINDOW))
            conn.execute(sa.delete(class_starts).where(class_starts.c.at < now - START_WINDOW))
            conn.execute(sa.delete(tickets).where(tickets.c.expires <= now))
        return len(codes)

    # -- the lecturer's pass -------------------------------------------------------------------------------------
    def lecturer_ticket(self, code: str, key: Optional[str], now: Optional[float] = None) -> str:
        """A ticket for the lecturer pass of class `code`, for a session that holds its key (or a pass):
        random, single use, valid TICKET_SECONDS; only its hash is kept. NotLecturer without the key."""
        code, now = class_code(code), time.time() if now is None else now
        ticket, digest = lecturer_pass.new_ticket()
        with _writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            conn.execute(sa.delete(tickets).where(tickets.c.expires <= now))
            conn.execute(sa.insert(tickets).values(ticket_hash=digest, code=code,
                                                   expires=now + lecturer_pass.TICKET_SECONDS))
        return ticket

    def redeem_ticket(self, ticket: Any, now: Optional[float] = None) -> Optional[tuple[str, str]]:
        """(code, pass) for a ticket `lecturer_ticket` issued that has neither expired nor been redeemed, and whose
        class is still open; None otherwise. The ticket is spent either way."""
        if not isinstance(ticket, str) or not lecturer_pass.TICKET.fullmatch(ticket):
            return None
        now = time.time() if now is None else now
        digest = lecturer_pass.ticket_hash(ticket)
        with _writing(self.engine) as conn:
            found = conn.execute(sa.select(tickets).where(tickets.c.ticket_hash == digest)).first()
            if found is None:
                return None
            conn.execute(sa.delete(tickets).where(tickets.c.ticket_hash == digest))
            row = self._class(conn, found.code)
            if found.expires <= now or not self._live(row, now):
                return None
        assert row is not None
        return row.code, lecturer_pass.mint(self.class_key("lecturer", row.code), row.term, row.key_hash, now)

    # -- voters ----------------------------------------------------------------------------------------------
    def secret(self) -> bytes:
        """The server's master secret (lab/runtime/secret.py: a 0600 file, never in this database); only keys
        derived from it (`class_key`) sign or hash anything."""
        if self._secret is None:
            self._secret = server_secret.master()
        return self._secret

    def class_key(self, purpose: str, code: Optional[str] = None) -> bytes:
        """The key of one purpose ("voter", "client", ...) in one class: each class has keys of its own, so a new
        class's cookies and address hashes differ from the last one's."""
        return server_secret.derive(self.secret(), purpose, *([class_code(code)] if code is not None else []))

    def sign_voter(self, voter: str, code: Optional[str] = None) -> str:
        """`voter.signature`: what the browser keeps, so a reload is the same voter and no one picks another's id.
        With `code`, signed with that class's key (a cookie of one class is worth nothing in another)."""
        voter = _check(TOKEN, voter, "voter")
        return f"{voter}.{hmac.new(self.class_key('voter', code), voter.encode(), 'sha256').hexdigest()[:32]}"

    def voter_of(self, signed: Any, code: Optional[str] = None) -> Optional[str]:
        """The voter id of a signed token (signed for class `code`), or None when it is malformed or its signature
        is wrong."""
        if not isinstance(signed, str) or signed.count(".") != 1:
            return None
        voter, _ = signed.split(".")
        if not TOKEN.fullmatch(voter):
            return None
        return voter if hmac.compare_digest(self.sign_voter(voter, code), signed) else None

    def client_id(self, address: str, code: Optional[str] = None) -> str:
        """The opaque id a vote (or a class start) stores for a network address: the address truncated to its /24
        or /48, keyed with the class's own key; the address itself is never stored."""
        return server_secret.client_hash(self.class_key("client", code), address)

    # -- votes ---------------------------------------------------------------------------------------------------
    def vote(self, code: str, question: str, options: Sequence[str], voter: str, option: str,
             client: str = "unknown", now: Optional[float] = None) -> None:
        """Record this voter's prediction; Rejected (nothing stored) when anything is off: NotVoting outside the
        question's voting window, NotJoined when the server never issued `voter` for the class (`join`), Counted
        when this voter's vote on it is counted already."""
        code = class_code(code)
        question = _check(QUESTION, question, "question")
        voter = _check(TOKEN, voter, "voter")
        client = _check(CLIENT, client, "client")
        if not isinstance(option, str) or option not in options:
            raise Rejected("that answer is not one of this question's options")
        index = list(options).index(option)
        now = time.time() if now is None else now
        closed = Rejected(f"no class {code} is open: check the code with your lecturer")
        with _writing(self.engine) as conn:
            if not self._live(self._class(conn, code, lock=True), now):  # the lock: one class's votes in line
                raise closed
            if not self._joined(conn, code, voter):
                raise NotJoined(f"this browser has not joined class {code}: join it with the code on your "
                                f"lecturer's screen")
            state = self._window(conn, code, question)
            if state != "open":
                raise NotVoting(VOTING_CLOSED[state], state)
            where = (predictions.c.code == code, predictions.c.question == question, predictions.c.voter == voter)
            if conn.execute(sa.select(predictions.c.option).where(*where)).first() is not None:
                raise Counted("this browser's prediction on this question is counted already, and it stands")
            conn.execute(sa.delete(votes).where(votes.c.code == code, votes.c.at < now - WINDOW))
            recent = votes.c.at >= now - WINDOW
            mine = conn.execute(sa.select(sa.func.count()).select_from(votes)
                                .where(votes.c.voter == voter, recent)).scalar_one()
            if mine >= VOTER_PER_MINUTE:
                raise Flood("too many answers from this browser in a minute: wait a moment and try again")
            near = conn.execute(sa.select(sa.func.count()).select_from(votes)
                                .where(votes.c.code == code, votes.c.client == client, recent)).scalar_one()
            if near >= self.votes_per_address:
                raise Flood("too many answers from your network in a minute: try again in a minute")
            n = conn.execute(sa.select(sa.func.count()).select_from(predictions)
                             .where(*where[:2], predictions.c.client == client)).scalar_one()
            if n >= self.voters_per_address:
                raise Flood(f"this question already has {self.voters_per_address} predictions from your network")
            conn.execute(sa.insert(predictions).values(code=code, question=question, voter=voter,
                                                       client=client, option=index, at=now))
            conn.execute(sa.insert(votes).values(code=code, voter=voter, client=client, at=now))

    def tally(self, code: str, question: str, n_options: int, key: Optional[str],
              now: Optional[float] = None) -> Tally:
        """How many of the class predicted each option (in option order): for its lecturer only."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        now = time.time() if now is None else now
        with self.engine.connect() as conn:
            row = self._class(conn, code)
            if not (self._live(row, now) and self._key_ok(row, key, now)):
                raise NotLecturer(f"only the lecturer of class {code} (with its key) sees its tally")
            return _tally(conn, code, question, n_options)

    def mine(self, code: str, question: str, voter: str) -> Optional[int]:
        """This voter's prediction (option index), or None."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        voter = _check(TOKEN, voter, "voter")
        with self.engine.connect() as conn:
            return conn.execute(sa.select(predictions.c.option).where(
                predictions.c.code == code, predictions.c.question == question,
                predictions.c.voter == voter)).scalar()

    def reset(self, code: str, question: str, key: Optional[str], now: Optional[float] = None) -> int:
        """Forget the class's predictions on one question and its voting window (the lecturer's Reset: the question
        waits to be opened again, and everyone may vote on it anew); returns how many predictions went."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        now = time.time() if now is None else now
        with _writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            conn.execute(sa.delete(windows).where(windows.c.code == code, windows.c.question == question))
            return conn.execute(sa.delete(predictions).where(predictions.c.code == code,
                                                             predictions.c.question == question)).rowcount
