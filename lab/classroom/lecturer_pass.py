"""The lecturer's pass: what a browser keeps instead of the class's key (issue 60, item 5b).

A key typed once, or handed out by Start a class, lives in that page session's server memory only. For a reload or a
new tab of the same browser to present the class too, the server gives the browser a pass: `EXPIRES.MAC`, an HMAC
(SHA-256) under the class's own key derived from the server's secret (workshop_db.class_key "lecturer") over the
class's term, the hash of its key and the expiry. It carries no key and cannot be turned into one; it is worth
nothing in another class, after PASS_HOURS, once the class is closed, or after the server's secret changes. The
server sets it as an HttpOnly, SameSite=Strict cookie (app/lecturer_route.py), so no page script can read it.

The page never writes that cookie itself: it asks for a ticket (random, 256 bits, kept only as its SHA-256 in the
class database, single use, TICKET_SECONDS to live) and posts the ticket, never the key, to the server's route,
which exchanges it for the pass cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

PASS_HOURS = 12  # a teaching day: the next day's lecture types the key again (or starts a new class)
TICKET_SECONDS = 60.0  # a ticket is posted by the page that got it, at once: a minute is plenty
PASS = re.compile(r"([0-9]{10})\.([0-9a-f]{64})")
TICKET = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)


def _mac(class_key: bytes, term: int, key_hash: str, expires: int) -> str:
    return hmac.new(class_key, f"lecturer-pass|{term}|{key_hash}|{expires}".encode(), "sha256").hexdigest()


def mint(class_key: bytes, term: int, key_hash: str, now: float) -> str:
    """A pass for the class (its term and key hash, under its derived key) that expires PASS_HOURS from `now`."""
    expires = int(now) + PASS_HOURS * 3600
    return f"{expires:010d}.{_mac(class_key, term, key_hash, expires)}"


def valid(class_key: bytes, term: int, key_hash: str, token: object, now: float) -> bool:
    """Whether `token` is a pass this server minted for that class that has not expired (compared in constant
    time; a pass claiming more than PASS_HOURS left is refused whatever its MAC)."""
    if not isinstance(token, str):
        return False
    m = PASS.fullmatch(token)
    if m is None:
        return False
    expires = int(m.group(1))
    if not now < expires <= now + PASS_HOURS * 3600 + 60:
        return False
    return hmac.compare_digest(m.group(2), _mac(class_key, term, key_hash, expires))


def is_pass(token: object) -> bool:
    """Whether `token` has a pass's form (a key never does: keys have no dot)."""
    return isinstance(token, str) and PASS.fullmatch(token) is not None


def new_ticket() -> tuple[str, str]:
    """A fresh ticket and what the database keeps of it (its SHA-256: the ticket is 256 random bits)."""
    ticket = secrets.token_urlsafe(32)
    return ticket, ticket_hash(ticket)


def ticket_hash(ticket: str) -> str:
    return hashlib.sha256(ticket.encode()).hexdigest()
