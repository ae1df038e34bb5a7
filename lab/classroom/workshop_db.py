"""Workshop predictions in a real database (no Streamlit): one vote per (class, question, browser session).

SQLite by default: `workshop.sqlite` in the store's folder, WAL mode (readers never wait for the one writer),
created on first use. `LAYERLAB_DB` takes any SQLAlchemy URL instead, e.g.
`postgresql+psycopg://user@host/layerlab`, so a course with several app servers counts one class in one place.

What a vote must pass, checked before anything is written (a rejected vote stores nothing):
- the class code: 3-24 letters, digits and dashes (case does not matter: `test-1` is `TEST-1`), and a class the
  lecturer opened (the presentation view with `class=CODE` opens it): a typo never creates a class of its own;
- the question: one of the lab's questions, and the option one of that question's;
- the session: an opaque token of the browser session (the app draws it; never shown);
- flood bounds: a session casts at most SESSION_PER_MINUTE votes a minute, a class takes at most CLASS_PER_MINUTE
  votes a minute and at most CLASS_VOTERS predictions per question.
A repeat vote from the same session replaces that session's vote. Every statement is SQLAlchemy Core with bound
parameters: nothing a student sends is ever spliced into SQL text.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine

CODE = re.compile(r"[A-Za-z0-9-]{3,24}")
SESSION = re.compile(r"[A-Za-z0-9_-]{8,64}")
QUESTION = re.compile(r"[a-z0-9_.-]{1,64}")
WINDOW = 60.0  # seconds of the flood bounds
SESSION_PER_MINUTE = 20  # a student changing their mind is a few votes; a script is hundreds
CLASS_PER_MINUTE = 600
CLASS_VOTERS = 500  # predictions per (class, question): a lecture hall, not the internet
CLASS_DAYS = 30  # a class opened longer ago than this is closed (a code is reused next term)

meta = sa.MetaData()
classes = sa.Table(
    "workshop_classes", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("opened", sa.Float, nullable=False),
)
predictions = sa.Table(
    "workshop_predictions", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("session", sa.String(64), primary_key=True),
    sa.Column("option", sa.Integer, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
votes = sa.Table(  # every vote cast (replacements included), for the flood bounds; older rows are pruned
    "workshop_votes", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("code", sa.String(24), nullable=False),
    sa.Column("session", sa.String(64), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("workshop_votes_code_at", "code", "at"),
    sa.Index("workshop_votes_session_at", "session", "at"),
)


class Rejected(ValueError):
    """A vote, class code or question the database refuses; the message is for the student."""


class Flood(Rejected):
    """Too many votes too fast (from one session, or in one class)."""


@dataclass(frozen=True)
class Tally:
    """The class's predictions on one question: counts in the question's option order."""

    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


def class_code(text: Any) -> str:
    """The canonical (upper-case) class code, or Rejected saying the format."""
    if not isinstance(text, str) or not CODE.fullmatch(text):
        raise Rejected("a class code is 3 to 24 letters, digits and dashes, like TEST-1")
    return text.upper()


def _check(pattern: re.Pattern[str], text: Any, what: str) -> str:
    if not isinstance(text, str) or not pattern.fullmatch(text):
        raise Rejected(f"malformed {what}")
    return text


def default_url() -> str:
    """LAYERLAB_DB, or a SQLite file in the store's folder."""
    url = os.environ.get("LAYERLAB_DB", "").strip()
    if url:
        return url
    from lab.runtime.store import active_store

    root = Path(active_store().root)
    return f"sqlite:///{root / 'workshop.sqlite'}"


@functools.lru_cache(maxsize=8)
def engine(url: str) -> Engine:
    """One engine (connection pool) per URL per process; the tables are created on first use."""
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        eng = sa.create_engine(url, connect_args={"timeout": 10, "check_same_thread": False})

        @sa.event.listens_for(eng, "connect")
        def _pragmas(conn: Any, _record: Any) -> None:  # WAL: many readers (the polling tallies), one writer
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=10000")
            cur.close()
    else:
        eng = sa.create_engine(url, pool_pre_ping=True)
    meta.create_all(eng)
    return eng


class Workshop:
    """Predictions of every class, in the database at `url` (default: `default_url()`)."""

    def __init__(self, url: Optional[str] = None) -> None:
        self.url = url or default_url()
        self.engine = engine(self.url)
        self._lock = threading.Lock()  # SQLite allows one writer; this keeps one process's writers in line

    # -- classes -----------------------------------------------------------------------------------------------
    def open_class(self, code: str, now: Optional[float] = None) -> str:
        """Open (or keep open) a class; returns its canonical code. The lecturer's presentation view calls this."""
        code, now = class_code(code), time.time() if now is None else now
        with self._lock, self.engine.begin() as conn:
            done = conn.execute(sa.update(classes).where(classes.c.code == code).values(opened=now)).rowcount
            if not done:
                conn.execute(sa.insert(classes).values(code=code, opened=now))
        return code

    def is_open(self, code: str, now: Optional[float] = None) -> bool:
        code, now = class_code(code), time.time() if now is None else now
        with self.engine.connect() as conn:
            opened = conn.execute(sa.select(classes.c.opened).where(classes.c.code == code)).scalar()
        return opened is not None and now - opened < CLASS_DAYS * 86400

    # -- votes ---------------------------------------------------------------------------------------------------
    def vote(self, code: str, question: str, options: Sequence[str], session: str, option: str,
             now: Optional[float] = None) -> None:
        """Record (or replace) this session's prediction; Rejected (nothing stored) when anything is off."""
        code = class_code(code)
        question = _check(QUESTION, question, "question")
        session = _check(SESSION, session, "session")
        if not isinstance(option, str) or option not in options:
            raise Rejected("that answer is not one of this question's options")
        index = list(options).index(option)
        now = time.time() if now is None else now
        if not self.is_open(code, now):
            raise Rejected(f"no class {code} is open: check the code, or ask the lecturer to open it (their "
                           f"presentation view with this class opens it)")
        with self._lock, self.engine.begin() as conn:
            conn.execute(sa.delete(votes).where(votes.c.at < now - WINDOW))
            recent = votes.c.at >= now - WINDOW
            mine = conn.execute(sa.select(sa.func.count()).select_from(votes)
                                .where(votes.c.session == session, recent)).scalar_one()
            if mine >= SESSION_PER_MINUTE:
                raise Flood("too many answers from this browser in a minute: wait a moment and try again")
            theirs = conn.execute(sa.select(sa.func.count()).select_from(votes)
                                  .where(votes.c.code == code, recent)).scalar_one()
            if theirs >= CLASS_PER_MINUTE:
                raise Flood("this class is answering faster than the lab accepts: try again in a minute")
            where = (predictions.c.code == code, predictions.c.question == question, predictions.c.session == session)
            replaced = conn.execute(sa.update(predictions).where(*where).values(option=index, at=now)).rowcount
            if not replaced:
                n = conn.execute(sa.select(sa.func.count()).select_from(predictions)
                                 .where(*where[:2])).scalar_one()
                if n >= CLASS_VOTERS:
                    raise Flood(f"this question already has {CLASS_VOTERS} predictions in this class")
                conn.execute(sa.insert(predictions).values(code=code, question=question, session=session,
                                                           option=index, at=now))
            conn.execute(sa.insert(votes).values(code=code, session=session, at=now))

    def tally(self, code: str, question: str, n_options: int) -> Tally:
        """How many of the class predicted each option (in option order)."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(predictions.c.option, sa.func.count())
                                .where(predictions.c.code == code, predictions.c.question == question)
                                .group_by(predictions.c.option)).all()
        counts = [0] * n_options
        for option, n in rows:
            if 0 <= option < n_options:
                counts[option] = int(n)
        return Tally(tuple(counts))

    def mine(self, code: str, question: str, session: str) -> Optional[int]:
        """This session's prediction (option index), or None."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        session = _check(SESSION, session, "session")
        with self.engine.connect() as conn:
            return conn.execute(sa.select(predictions.c.option).where(
                predictions.c.code == code, predictions.c.question == question,
                predictions.c.session == session)).scalar()

    def reset(self, code: str, question: str) -> int:
        """Forget the class's predictions on one question (the lecturer's Reset); returns how many went."""
        code, question = class_code(code), _check(QUESTION, question, "question")
        with self._lock, self.engine.begin() as conn:
            return conn.execute(sa.delete(predictions).where(predictions.c.code == code,
                                                             predictions.c.question == question)).rowcount
