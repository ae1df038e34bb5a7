"""Votes, the voting window and the tally. The window, per question of a class: `waiting` (no vote yet), `open`,
`closed` (by the lecturer; open it again at will) and `revealed` (the answer shown to the room: closed for good,
until Reset). Only an open window takes votes, and a voter's first counted vote on a question is final. A vote is
bounded per voter (VOTER_PER_MINUTE) and per address (LAYERLAB_VOTES_PER_ADDRESS a minute in one class,
LAYERLAB_VOTERS_PER_ADDRESS voters on one question). VoteSide is that part of lab/classroom/workshop_db.py's
Workshop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lab.classroom.class_checks import (
    CLIENT,
    QUESTION,
    TOKEN,
    WINDOW,
    Counted,
    Flood,
    NotJoined,
    NotLecturer,
    NotVoting,
    Rejected,
    check,
    class_code,
)
from lab.classroom.class_engine import writing
from lab.classroom.class_keys import ClassKeys
from lab.classroom.class_tables import predictions, votes, windows
from lab.classroom.class_voters import is_member

VOTER_PER_MINUTE = 20  # a student changing their mind is a few votes; a script is hundreds
WINDOW_STATES = ("waiting", "open", "closed", "revealed")
VOTING_CLOSED = {  # why a vote outside the window is refused, for the student
    "waiting": "voting on this question has not opened yet: wait for your lecturer to open it, then press Reveal",
    "closed": "voting on this question is closed",
    "revealed": "voting on this question closed when the lecturer revealed the answer",
}


@dataclass(frozen=True)
class Tally:
    """The class's predictions on one question: counts in the question's option order."""

    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


def tally_of(conn: Any, code: str, question: str, n_options: int) -> Tally:
    """The predictions of one question, counted per option (an option outside the question's is not counted)."""
    rows = conn.execute(sa.select(predictions.c.option, sa.func.count())
                        .where(predictions.c.code == code, predictions.c.question == question)
                        .group_by(predictions.c.option)).all()
    counts = [0] * n_options
    for option, n in rows:
        if 0 <= option < n_options:
            counts[option] = int(n)
    return Tally(tuple(counts))


def window_of(conn: Connection, code: str, question: str) -> str:
    """The voting window of a question of a class (no row: waiting)."""
    state = conn.execute(sa.select(windows.c.state).where(windows.c.code == code,
                                                          windows.c.question == question)).scalar()
    return state if state in WINDOW_STATES else "waiting"


def put_window(conn: Connection, code: str, question: str, state: str, now: float) -> None:
    """Set the voting window of a question of a class, inside the caller's write transaction."""
    where = (windows.c.code == code, windows.c.question == question)
    if not conn.execute(sa.update(windows).where(*where).values(state=state, at=now)).rowcount:
        conn.execute(sa.insert(windows).values(code=code, question=question, state=state, at=now))


class VoteSide(ClassKeys):
    """A class's votes, voting windows and tallies."""

    # One address may be a whole lecture hall behind a NAT, so the per-address bounds are server settings sized for a
    # hall (LAYERLAB_VOTERS_PER_ADDRESS new voters per question, LAYERLAB_VOTES_PER_ADDRESS votes a minute per class),
    # which the Workshop reads into these.
    voters_per_address: int
    votes_per_address: int

    def window(self, code: str, question: str) -> str:
        """The voting window of a question of a class: waiting, open, closed or revealed (anyone may ask)."""
        code, question = class_code(code), check(QUESTION, question, "question")
        with self.engine.connect() as conn:
            return window_of(conn, code, question)

    def set_window(self, code: str, question: str, state: str, key: Optional[str],
                   now: Optional[float] = None) -> str:
        """The lecturer opens (`open`) or closes (`closed`) voting on a question, or reveals its answer to the room
        (`revealed`, which closes it for good: only Reset starts the question afresh); returns the new state."""
        code, question = class_code(code), check(QUESTION, question, "question")
        if state not in ("open", "closed", "revealed"):
            raise Rejected("a voting window is open, closed or revealed")
        now = time.time() if now is None else now
        with writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            was = window_of(conn, code, question)
            if was == "revealed" and state != "revealed":
                raise Rejected("the answer was revealed to the room, so voting on this question is over: Reset the "
                               "question to ask it again")
            where = (windows.c.code == code, windows.c.question == question)
            if not conn.execute(sa.update(windows).where(*where).values(state=state, at=now)).rowcount:
                conn.execute(sa.insert(windows).values(code=code, question=question, state=state, at=now))
        return state

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
        code, question = class_code(code), check(QUESTION, question, "question")
        now = time.time() if now is None else now
        with self.engine.connect() as conn:
            if not self._live(self._class(conn, code), now) or window_of(conn, code, question) != "revealed":
                return None
            return tally_of(conn, code, question, n_options)

    def vote(self, code: str, question: str, options: Sequence[str], voter: str, option: str,
             client: str = "unknown", now: Optional[float] = None) -> None:
        """Record this voter's prediction; Rejected (nothing stored) when anything is off: NotVoting outside the
        question's voting window, NotJoined when the server never issued `voter` for the class (`join`), Counted
        when this voter's vote on it is counted already."""
        code = class_code(code)
        question = check(QUESTION, question, "question")
        voter = check(TOKEN, voter, "voter")
        client = check(CLIENT, client, "client")
        if not isinstance(option, str) or option not in options:
            raise Rejected("that answer is not one of this question's options")
        index = list(options).index(option)
        now = time.time() if now is None else now
        closed = Rejected(f"no class {code} is open: check the code with your lecturer")
        with writing(self.engine) as conn:
            if not self._live(self._class(conn, code, lock=True), now):  # the lock: one class's votes in line
                raise closed
            if not is_member(conn, code, voter):
                raise NotJoined(f"this browser has not joined class {code}: join it with the code on your "
                                f"lecturer's screen")
            state = window_of(conn, code, question)
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
        code, question = class_code(code), check(QUESTION, question, "question")
        now = time.time() if now is None else now
        with self.engine.connect() as conn:
            row = self._class(conn, code)
            if not (self._live(row, now) and self._key_ok(row, key, now)):
                raise NotLecturer(f"only the lecturer of class {code} (with its key) sees its tally")
            return tally_of(conn, code, question, n_options)

    def mine(self, code: str, question: str, voter: str) -> Optional[int]:
        """This voter's prediction (option index), or None."""
        code, question = class_code(code), check(QUESTION, question, "question")
        voter = check(TOKEN, voter, "voter")
        with self.engine.connect() as conn:
            return conn.execute(sa.select(predictions.c.option).where(
                predictions.c.code == code, predictions.c.question == question,
                predictions.c.voter == voter)).scalar()

    def reset(self, code: str, question: str, key: Optional[str], now: Optional[float] = None) -> int:
        """Forget the class's predictions on one question and its voting window (the lecturer's Reset: the question
        waits to be opened again, and everyone may vote on it anew); returns how many predictions went."""
        code, question = class_code(code), check(QUESTION, question, "question")
        now = time.time() if now is None else now
        with writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            conn.execute(sa.delete(windows).where(windows.c.code == code, windows.c.question == question))
            return conn.execute(sa.delete(predictions).where(predictions.c.code == code,
                                                             predictions.c.question == question)).rowcount
