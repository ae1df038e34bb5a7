"""Classes and their lecturer key: starting a class (a code nobody chose, a key shown once, bounded per address),
finding one by its code and checking a typed key (their failures counted per address), closing it, the lecturer's
single-use ticket for the pass, the server's keys per class, and retention (`purge`). ClassKeys is the part of
lab/classroom/workshop_db.py's Workshop that every other part builds on (`_class`, `_live`, `_lecturer`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any, Optional

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lab.classroom import lecturer_pass
from lab.classroom.class_checks import CLIENT, WINDOW, Flood, NotLecturer, check, class_code
from lab.classroom.class_engine import writing
from lab.classroom.class_tables import (
    class_starts,
    classes,
    failures,
    figures,
    join_buckets,
    joined,
    lessons,
    outcomes,
    predictions,
    tickets,
    views,
    votes,
    windows,
)
from lab.runtime import secret as server_secret
from lab.runtime import settings

CLASS_DAYS = 30  # a term's length, and how long a class and its predictions are kept
# Codes handed out by `start_class`: read off a projector and typed on a phone, so no characters that look alike
# (0/O, 1/I/L). 31**6 is about 9e8 codes: a guessed code is almost never a class, and a class found by guessing
# shows only its student view.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
START_WINDOW = 3600.0  # seconds over which LAYERLAB_CLASSES_PER_HOUR counts the classes an address started


@dataclass(frozen=True)
class Opened:
    """A class `start_class` started: its code, and its lecturer key (shown once, never stored)."""

    code: str
    term: int
    key: Optional[str]


def key_hash(key: str) -> str:
    """What is stored of a lecturer key. A key is 144 random bits, so a plain SHA-256 cannot be guessed back."""
    return hashlib.sha256(key.encode()).hexdigest()


class ClassKeys:
    """The classes of the database at `url` and their lecturers. The Workshop it is part of sets these:"""

    url: str
    engine: Engine
    _secret: Optional[bytes]

    # Read at each use: one Workshop serves a server for its life, and a course's setting (or a test's) holds at once.
    @property
    def wrong_per_address(self) -> int:
        return settings.get("LAYERLAB_WRONG_PER_ADDRESS")

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
        client = check(CLIENT, client, "client")
        now = time.time() if now is None else now
        limit = settings.get("LAYERLAB_CLASSES_PER_HOUR")
        self.purge(now)
        with writing(self.engine) as conn:
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
        with writing(self.engine) as conn:
            conn.execute(sa.delete(failures).where(failures.c.at < now - WINDOW))
            conn.execute(sa.insert(failures).values(client=client, kind=kind, at=now))

    def find(self, code: str, client: str = "unknown", now: Optional[float] = None) -> bool:
        """Whether `code` names an open class, for someone who typed or linked it (a join): a code that names none
        (closed, expired or never started: the same answer) counts against `client`, and Flood, without looking,
        once `client` had wrong_per_address such failures in a minute. A right code never counts."""
        code, client = class_code(code), check(CLIENT, client, "client")
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
        code, client = class_code(code), check(CLIENT, client, "client")
        now = time.time() if now is None else now
        with self.engine.connect() as conn:
            self._bounded(conn, client, "key", now)
            row = self._class(conn, code)
        ok = self._live(row, now) and self._key_ok(row, key, now)
        if not ok:
            self._failed(client, "key", now)
        return ok
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
        with writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            conn.execute(sa.update(classes).where(classes.c.code == code).values(closed=now))

    def purge(self, now: Optional[float] = None) -> int:
        """Delete classes opened longer than CLASS_DAYS ago with their predictions, and vote records older than the
        flood window; returns how many classes went."""
        now = time.time() if now is None else now
        old = now - CLASS_DAYS * 86400
        with writing(self.engine) as conn:
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
        with writing(self.engine) as conn:
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
        with writing(self.engine) as conn:
            found = conn.execute(sa.select(tickets).where(tickets.c.ticket_hash == digest)).first()
            if found is None:
                return None
            conn.execute(sa.delete(tickets).where(tickets.c.ticket_hash == digest))
            row = self._class(conn, found.code)
            if found.expires <= now or not self._live(row, now):
                return None
        assert row is not None
        return row.code, lecturer_pass.mint(self.class_key("lecturer", row.code), row.term, row.key_hash, now)

    # -- the server's keys ----------------------------------------------------------------------------------
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
