"""The lesson a class follows, in the database (lab/classroom/workshop_db.py), on SQLite and a real PostgreSQL: only
the class's key sets the lesson and moves the room (a student, a wrong key, a closed class cannot); anyone reads the
room's step; voting opens with a step and closes when the room leaves it; the report's tallies are the lecturer's;
the runs' outcomes reach students only once revealed; retention deletes lessons with their class."""

import pytest
import sqlalchemy as sa

from lab.classroom import class_keys, class_tables, lessons
from lab.classroom import workshop_db as wdb

from .test_workshop_db import (
    db,  # noqa: F401 - SQLite and PostgreSQL, each with class TEST-1 and its key
    pg_url,  # noqa: F401 - the module's PostgreSQL server, reused
)

LESSON = lessons.get("layers-equal")
TEXT = lessons.to_json(LESSON)
Q = [s.question for s in LESSON.steps]
OPTS = lessons.get("layers-equal").steps[0].asked.texts
NOW = 1100.0


@pytest.fixture
def room(db):  # noqa: F811 - the fixture imported above
    for q in ("delete.plain1", "delete.res4"):  # the fixture opened voting on these: a fresh class for a lesson
        db.reset("TEST-1", q, db.key, now=NOW)
    db.set_lesson("TEST-1", db.key, TEXT, now=NOW)
    return db


def test_a_class_follows_its_lesson_from_the_first_step_with_voting_open(room):
    state = room.lesson("TEST-1", now=NOW)
    assert state.step == 0 and state.questions == tuple(Q) and state.question == Q[0]
    assert state.window == "open" and room.window("TEST-1", Q[1]) == "waiting"
    assert lessons.from_json(state.lesson) == LESSON  # the lesson is saved with the class
    assert room.lesson("NOPE-1", now=NOW) is None  # no such class: nothing to follow


def test_only_the_key_sets_a_lesson_or_moves_the_room(room):
    for key in (None, "", "wrong-key-000000000000"):  # a student's page has no key; a guess is not it
        with pytest.raises(wdb.NotLecturer):
            room.move_step("TEST-1", key, 1, now=NOW + 1)
        with pytest.raises(wdb.NotLecturer):
            room.set_lesson("TEST-1", key, TEXT, now=NOW + 1)
        with pytest.raises(wdb.NotLecturer):
            room.set_outcome("TEST-1", key, Q[0], "{}", now=NOW + 1)
        with pytest.raises(wdb.NotLecturer):
            room.tallies("TEST-1", key, now=NOW + 1)
    assert room.lesson("TEST-1", now=NOW + 1).step == 0  # nothing moved


def _joined(room: wdb.Workshop, voter: str) -> str:
    """`voter` as a student who joined TEST-1 (only joined voters vote)."""
    return room.join("TEST-1", now=NOW + 1, voter=voter)


def test_next_step_closes_the_step_left_and_opens_the_next_and_a_revealed_step_stays_revealed(room):
    room.vote("TEST-1", Q[0], OPTS, _joined(room, "voter-aaaaaaaa"), OPTS[0], now=NOW + 1)
    assert room.move_step("TEST-1", room.key, 1, now=NOW + 2) == 1
    state = room.lesson("TEST-1", now=NOW + 3)
    assert state.step == 1 and state.window == "open" and room.window("TEST-1", Q[0]) == "closed"
    with pytest.raises(wdb.NotVoting):  # a straggler on the step the room left is not counted
        room.vote("TEST-1", Q[0], OPTS, _joined(room, "voter-bbbbbbbb"), OPTS[1], now=NOW + 3)
    room.set_window("TEST-1", Q[1], "revealed", room.key, now=NOW + 4)
    room.move_step("TEST-1", room.key, 0, now=NOW + 5)  # Previous step
    assert room.window("TEST-1", Q[1]) == "revealed" and room.window("TEST-1", Q[0]) == "closed"  # not reopened
    room.move_step("TEST-1", room.key, 1, now=NOW + 6)
    assert room.lesson("TEST-1", now=NOW + 7).window == "revealed"  # going back never reopens a revealed question
    for to in (-1, len(Q), "1"):
        with pytest.raises(wdb.Rejected, match="steps 1 to 6"):
            room.move_step("TEST-1", room.key, to, now=NOW + 8)
    assert room.tallies("TEST-1", room.key, now=NOW + 9) == {Q[0]: {0: 1}}


def test_a_closed_class_follows_no_lesson_and_moves_no_more(room):
    room.close_class("TEST-1", room.key, now=NOW + 1)
    assert room.lesson("TEST-1", now=NOW + 2) is None
    with pytest.raises(wdb.NotLecturer):
        room.move_step("TEST-1", room.key, 1, now=NOW + 2)


def test_a_malformed_lesson_is_refused_before_anything_is_stored(db):  # noqa: F811
    for text in ("", "{", '{"steps": []}', '{"steps": [{"question": "DROP TABLE"}]}', "x" * 40_000,
                 '{"steps": [{"question": "a.b"}, {"question": "a.b"}]}'):
        with pytest.raises(wdb.Rejected):
            db.set_lesson("TEST-1", db.key, text, now=NOW)
    assert db.lesson("TEST-1", now=NOW) is None


def test_outcomes_reach_students_only_once_revealed_and_the_lecturer_sees_all(room):
    room.set_outcome("TEST-1", room.key, Q[0], '{"holds": true, "correct": 0}', now=NOW + 1)
    room.set_outcome("TEST-1", room.key, Q[1], '{"holds": false, "correct": 1}', now=NOW + 1)
    assert set(room.outcomes("TEST-1", room.key, now=NOW + 2)) == {Q[0], Q[1]}
    assert room.outcomes("TEST-1", now=NOW + 2) == {}  # a student's worksheet: no answer before the room's
    room.set_window("TEST-1", Q[0], "revealed", room.key, now=NOW + 3)
    assert room.outcomes("TEST-1", now=NOW + 4) == {Q[0]: '{"holds": true, "correct": 0}'}
    with pytest.raises(wdb.Rejected):
        room.set_outcome("TEST-1", room.key, Q[0], "x" * 5000, now=NOW + 5)


def test_the_revealed_tally_is_anyones_only_after_the_reveal(room):
    room.vote("TEST-1", Q[0], OPTS, _joined(room, "voter-aaaaaaaa"), OPTS[0], now=NOW + 1)
    room.vote("TEST-1", Q[0], OPTS, _joined(room, "voter-bbbbbbbb"), OPTS[2], now=NOW + 1)
    assert room.revealed_tally("TEST-1", Q[0], 3, now=NOW + 2) is None
    room.set_window("TEST-1", Q[0], "revealed", room.key, now=NOW + 3)
    assert room.revealed_tally("TEST-1", Q[0], 3, now=NOW + 4).counts == (1, 0, 1)


def test_retention_deletes_a_lesson_with_its_class(room):
    room.set_outcome("TEST-1", room.key, Q[0], "{}", now=NOW + 1)
    assert room.purge(now=NOW + class_keys.CLASS_DAYS * 86400) == 1
    with room.engine.connect() as conn:
        for table in (class_tables.lessons, class_tables.outcomes):
            assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 0
