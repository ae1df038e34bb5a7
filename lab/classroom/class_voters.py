"""Voters and joins: a student joins an open class and gets a voter identity the server issued (only these vote),
bounded per address by a token bucket per class (`class_joins`: LAYERLAB_JOIN_BURST at once, refilled at
LAYERLAB_JOINS_PER_MINUTE); the browser keeps it signed with the class's own key (`sign_voter`, `voter_of`), and a
network address is stored only as an opaque hash (`client_id`). VoterSide is that part of
lab/classroom/workshop_db.py's Workshop.
"""

from __future__ import annotations

import hmac
import secrets
import time
from typing import Any, Optional

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lab.classroom.class_checks import CLIENT, TOKEN, Flood, Rejected, check, class_code
from lab.classroom.class_engine import writing
from lab.classroom.class_keys import ClassKeys
from lab.classroom.class_tables import join_buckets, joined
from lab.runtime import secret as server_secret
from lab.runtime import settings


def is_member(conn: Connection, code: str, voter: str) -> bool:
    """Whether the server issued `voter` for class `code` (`join`)."""
    return conn.execute(sa.select(joined.c.voter).where(joined.c.code == code, joined.c.voter == voter)) \
        .first() is not None


class VoterSide(ClassKeys):
    """Who may vote in a class, and how a browser and an address are known to it."""

    # Read at each use: one Workshop serves a server for its life, and a course's setting (or a test's) holds at once.
    @property
    def join_burst(self) -> int:
        return settings.get("LAYERLAB_JOIN_BURST")

    @property
    def joins_per_minute(self) -> int:
        return settings.get("LAYERLAB_JOINS_PER_MINUTE")

    def join(self, code: str, client: str = "unknown", now: Optional[float] = None,
             voter: Optional[str] = None) -> str:
        """A student joins the open class `code`: a new voter identity (random, unless `voter` names it) that may
        vote in it. Flood when `client`'s join bucket in this class is empty (LAYERLAB_JOIN_BURST at once, refilled
        at LAYERLAB_JOINS_PER_MINUTE), saying how long to wait."""
        code, client = class_code(code), check(CLIENT, client, "client")
        voter = secrets.token_urlsafe(16) if voter is None else check(TOKEN, voter, "voter")
        now = time.time() if now is None else now
        with writing(self.engine) as conn:
            if not self._live(self._class(conn, code, lock=True), now):
                raise Rejected(f"no class {code} is open: check the code with your lecturer")
            if is_member(conn, code, voter):
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

    def is_joined(self, code: str, voter: Any) -> bool:
        """Whether `voter` is an identity the server issued for class `code` (`join`)."""
        code = class_code(code)
        if not isinstance(voter, str) or not TOKEN.fullmatch(voter):
            return False
        with self.engine.connect() as conn:
            return is_member(conn, code, voter)

    def sign_voter(self, voter: str, code: Optional[str] = None) -> str:
        """`voter.signature`: what the browser keeps, so a reload is the same voter and no one picks another's id.
        With `code`, signed with that class's key (a cookie of one class is worth nothing in another)."""
        voter = check(TOKEN, voter, "voter")
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
