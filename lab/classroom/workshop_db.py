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

The parts, one idea each: lab/classroom/class_tables.py (the tables), class_engine.py (opening the database, the
write transaction), class_checks.py (the formats and the refusals), class_keys.py (classes, the lecturer's key and
pass, retention), class_voters.py (joins and voter identities), class_votes.py (votes, voting windows, tallies) and
class_lessons.py (the current view, the lesson's steps, outcomes). Workshop joins them; the refusals are offered here
with it.
"""

from __future__ import annotations

from typing import Optional

from lab.classroom.class_checks import Counted, Flood, NotJoined, NotLecturer, NotVoting, Rejected
from lab.classroom.class_engine import default_url, engine
from lab.classroom.class_lessons import LessonSide
from lab.classroom.class_voters import VoterSide
from lab.classroom.class_votes import VoteSide
from lab.runtime import settings

__all__ = ["Counted", "Flood", "NotJoined", "NotLecturer", "NotVoting", "Rejected", "Workshop"]


class Workshop(VoterSide, VoteSide, LessonSide):
    """Predictions of every class, in the database at `url` (default: `default_url()`)."""

    def __init__(self, url: Optional[str] = None) -> None:
        self.url = url or default_url()
        self.engine = engine(self.url)
        self._secret: Optional[bytes] = None
        self.voters_per_address: int = settings.get("LAYERLAB_VOTERS_PER_ADDRESS")
        self.votes_per_address: int = settings.get("LAYERLAB_VOTES_PER_ADDRESS")
