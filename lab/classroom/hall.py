"""The room as a phone sees it (the light student view, app/hall_route.py): one read of the class database gives
the lesson's current step, its question and voting window and, once the answer is revealed to the room, the answer,
the room's tally and whether the lecturer's figure of it is kept. Nothing here runs an experiment: the answer is the
outcome the lecturer's page stored (lessons.outcome), the figure the one it drew (`set_figure`).

Everything in `room` is what every student of the class may see (a revealed answer and tally are what the projector
showed); a student's own vote is read apart (`mine`).
"""

from __future__ import annotations

import functools
import json
import time
from typing import Any, Optional

import sqlalchemy as sa

from lab.classroom import class_checks, class_engine, class_tables, class_votes, lessons
from lab.classroom import workshop_db as wdb

MAX_FIGURE_CHARS = 600_000  # a page's figure as Plotly JSON: a few traces of a few hundred points


@functools.lru_cache(maxsize=64)
def _lesson(text: str) -> lessons.Lesson:
    return lessons.from_json(text)


def _outcome(text: Optional[str]) -> Optional[dict[str, Any]]:
    try:
        out = json.loads(text) if text else None
    except ValueError:
        return None
    return out if isinstance(out, dict) else None


def room(db: wdb.Workshop, code: str, now: Optional[float] = None) -> dict[str, Any]:
    """The class's public state: `open` False for a class that is not open; `lesson` None when it follows none;
    otherwise the step (1-based of `steps`), the question (its key, prompt and option texts), the step's aim, the
    voting window and, revealed, `answer` (the lecturer's run: verdict words, detail, the option it confirms or
    None), `tally` (counts in option order) and `figure` (when the lecturer's figure was kept, or None)."""
    code, now = class_checks.class_code(code), time.time() if now is None else now
    with db.engine.connect() as conn:
        if not db._live(db._class(conn, code), now):
            return {"code": code, "open": False}
        row = conn.execute(sa.select(class_tables.lessons.c.lesson, class_tables.lessons.c.step)
                           .where(class_tables.lessons.c.code == code)).first()
        if row is None:
            return {"code": code, "open": True, "lesson": None}
        lesson = _lesson(row.lesson)
        index = min(max(0, int(row.step)), len(lesson.steps) - 1)
        step = lesson.steps[index]
        q = step.asked
        window = class_votes.window_of(conn, code, q.key)
        out: dict[str, Any] = {
            "code": code, "open": True, "lesson": lesson.title, "step": index + 1, "steps": len(lesson.steps),
            "aim": step.aim, "question": q.key, "prompt": q.prompt, "options": list(q.texts), "window": window,
            "revealed": window == "revealed", "answer": None, "tally": None, "figure": None}
        if window != "revealed":
            return out
        said = _outcome(conn.execute(sa.select(class_tables.outcomes.c.outcome).where(
            class_tables.outcomes.c.code == code, class_tables.outcomes.c.question == q.key)).scalar())
        if said is not None:
            correct = said.get("correct")
            out["answer"] = {"verdict": lessons.verdict_of(said), "detail": str(said.get("detail") or ""),
                             "correct": correct if isinstance(correct, int) and 0 <= correct < len(q.options)
                             else None}
        out["tally"] = list(class_votes.tally_of(conn, code, q.key, len(q.options)).counts)
        at = conn.execute(sa.select(class_tables.figures.c.at).where(class_tables.figures.c.code == code,
                                                            class_tables.figures.c.question == q.key)).scalar()
        out["figure"] = float(at) if at is not None else None
        return out


def mine(db: wdb.Workshop, code: str, question: str, voter: Optional[str]) -> Optional[int]:
    """`voter`'s prediction on `question` (an option index), or None (none yet, or no voter)."""
    return db.mine(code, question, voter) if voter is not None else None


def set_figure(db: wdb.Workshop, code: str, key: Optional[str], question: str, figure: str,
               now: Optional[float] = None) -> None:
    """Keep the figure the lecturer's page drew for `question` (Plotly JSON) for the phones (the lecturer's only)."""
    code, question = class_checks.class_code(code), class_checks.check(class_checks.QUESTION, question, "question")
    now = time.time() if now is None else now
    if not isinstance(figure, str) or not figure.startswith("{") or len(figure) > MAX_FIGURE_CHARS:
        raise wdb.Rejected("malformed figure")
    with class_engine.writing(db.engine) as conn:
        db._lecturer(conn, code, key, now)
        where = (class_tables.figures.c.code == code, class_tables.figures.c.question == question)
        if not conn.execute(sa.update(class_tables.figures).where(*where).values(figure=figure, at=now)).rowcount:
            conn.execute(sa.insert(class_tables.figures).values(code=code, question=question, figure=figure, at=now))


def figure(db: wdb.Workshop, code: str, question: str, now: Optional[float] = None) -> Optional[str]:
    """The kept figure of `question` once its answer was revealed to the room (the figure shows the answer), else
    None."""
    code, question = class_checks.class_code(code), class_checks.check(class_checks.QUESTION, question, "question")
    now = time.time() if now is None else now
    with db.engine.connect() as conn:
        if not db._live(db._class(conn, code), now) or class_votes.window_of(conn, code, question) != "revealed":
            return None
        return conn.execute(sa.select(class_tables.figures.c.figure).where(class_tables.figures.c.code == code,
                                                                  class_tables.figures.c.question == question)).scalar()
