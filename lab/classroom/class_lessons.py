"""What the room follows: the lecturer's current view (where Join takes a student), the lesson a class follows and
the step the room is on (moving it closes the old step's voting and opens the new one's), and the outcomes of the
lecturer's runs (the lesson's report, shown to students once a question's answer is revealed). LessonSide is that
part of lab/classroom/workshop_db.py's Workshop.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Optional

import sqlalchemy as sa

from lab.classroom.class_checks import PAGE, QUESTION, Rejected, check, class_code
from lab.classroom.class_engine import writing
from lab.classroom.class_keys import ClassKeys
from lab.classroom.class_tables import LESSON_CHARS, OUTCOME_CHARS, VIEW_QUERY_CHARS, lessons, outcomes, views, windows
from lab.classroom.class_votes import put_window, window_of


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


def lesson_questions(text: Any) -> tuple[str, ...]:
    """The question keys of a lesson's JSON, in step order (the lesson itself is checked by lessons.from_json
    before it is stored; here only what the voting windows need)."""
    if not isinstance(text, str) or not 0 < len(text) <= LESSON_CHARS:
        raise Rejected("malformed lesson")
    try:
        steps = json.loads(text)["steps"]
        found = tuple(check(QUESTION, s["question"], "question") for s in steps)
    except (ValueError, KeyError, TypeError):
        raise Rejected("malformed lesson") from None
    if not found or len(set(found)) != len(found):
        raise Rejected("a lesson has at least one step, each with a question of its own")
    return found


class LessonSide(ClassKeys):
    """A class's current view, its lesson and step, and its outcomes."""

    # -- the class's current view --------------------------------------------------------------------------
    def set_view(self, code: str, key: Optional[str], page: str, query: str, now: Optional[float] = None) -> None:
        """The lecturer's current view (a page and its Student link's query string): where Join takes students."""
        code, now = class_code(code), time.time() if now is None else now
        page = check(PAGE, page, "page")
        if not isinstance(query, str) or len(query) > VIEW_QUERY_CHARS or not query.isprintable():
            raise Rejected("malformed view")
        with writing(self.engine) as conn:
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
    def set_lesson(self, code: str, key: Optional[str], lesson: str, now: Optional[float] = None) -> None:
        """The class follows `lesson` (its JSON) from its first step, whose voting opens (the lecturer's)."""
        code, now = class_code(code), time.time() if now is None else now
        qs = lesson_questions(lesson)
        with writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            if not conn.execute(sa.update(lessons).where(lessons.c.code == code)
                                .values(lesson=lesson, step=0, at=now)).rowcount:
                conn.execute(sa.insert(lessons).values(code=code, lesson=lesson, step=0, at=now))
            if window_of(conn, code, qs[0]) == "waiting":
                put_window(conn, code, qs[0], "open", now)

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
            qs = lesson_questions(row.lesson)
            step = min(max(0, int(row.step)), len(qs) - 1)
            return LessonState(row.lesson, step, qs, window_of(conn, code, qs[step]), float(row.at))

    def move_step(self, code: str, key: Optional[str], to: int, now: Optional[float] = None) -> int:
        """The lecturer moves the room to step `to` (0-based): voting on the step it leaves closes (if it was
        open), and voting on the new step's question opens unless it was closed or revealed before; returns `to`."""
        code, now = class_code(code), time.time() if now is None else now
        with writing(self.engine) as conn:
            self._lecturer(conn, code, key, now)
            row = conn.execute(sa.select(lessons.c.lesson, lessons.c.step).where(lessons.c.code == code)).first()
            if row is None:
                raise Rejected(f"class {code} follows no lesson")
            qs = lesson_questions(row.lesson)
            if not isinstance(to, int) or not 0 <= to < len(qs):
                raise Rejected(f"the lesson has steps 1 to {len(qs)}")
            was = qs[min(max(0, int(row.step)), len(qs) - 1)]
            if was != qs[to] and window_of(conn, code, was) == "open":
                put_window(conn, code, was, "closed", now)
            if window_of(conn, code, qs[to]) == "waiting":
                put_window(conn, code, qs[to], "open", now)
            conn.execute(sa.update(lessons).where(lessons.c.code == code).values(step=to, at=now))
        return to

    def set_outcome(self, code: str, key: Optional[str], question: str, outcome: str,
                    now: Optional[float] = None) -> None:
        """What the lecturer's run said about a question (lessons.outcome's JSON), kept for the lesson's report."""
        code, question = class_code(code), check(QUESTION, question, "question")
        now = time.time() if now is None else now
        if not isinstance(outcome, str) or len(outcome) > OUTCOME_CHARS:
            raise Rejected("malformed outcome")
        with writing(self.engine) as conn:
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
