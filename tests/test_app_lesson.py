"""AppTest: a lesson the room follows (app/lesson.py). Home's Start a lesson gives the code, the join link and the
first step; a student joins by code (or by the join link, late) and lands on the room's step; the lecturer's Next
step moves the student's page (its setting, then another page) with no action of theirs, while a student has no
such button and the database refuses a move without the key; the reveal shows the room's score and the step's aim
to the lecturer and to the student; the report and the student's worksheet hold every step and no key; a student who
leaves browses freely and rejoins; a lesson built or imported on Home is started as it was built."""

import html
import json
import logging

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from app import lesson as app_lesson
from app.lecturer_auth import LECTURER_KEY
from lab.classroom import lessons
from lab.classroom import workshop_db as wdb

from .apptest_util import MAIN, ROOT, assert_clean

LESSON = lessons.get("layers-equal")
Q = [s.asked for s in LESSON.steps]


@pytest.fixture(autouse=True)
def _starts_unbounded(monkeypatch):
    """AppTest's sessions share one (unknown) address: the tests start more classes than a room would."""
    monkeypatch.setenv("LAYERLAB_CLASSES_PER_HOUR", "100000")
    monkeypatch.setenv("LAYERLAB_QUICK", "1")


@pytest.fixture
def downloads(monkeypatch):
    """Every download a page offers, as a callable that gives its content: a deferred one (the student's worksheet)
    made when "clicked", one made with the page (the lecturer's report) as it was made."""
    made = []
    real, real_add = MediaFileManager.add_deferred, MediaFileManager.add

    def keep(self, data_callable, *args, **kwargs):
        made.append(data_callable)
        return real(self, data_callable, *args, **kwargs)

    def keep_made(self, data, *args, **kwargs):
        if kwargs.get("is_for_static_download"):
            made.append(lambda: data)
        return real_add(self, data, *args, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    monkeypatch.setattr(MediaFileManager, "add", keep_made)
    return made


def _db() -> wdb.Workshop:
    return wdb.Workshop()


def _home(link: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=600)
    for k, v in (link or {}).items():
        at.query_params[k] = v
    at.run()
    assert_clean(at)
    return at


def _text(at: AppTest) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def _param(at: AppTest, key: str) -> str | None:
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v


def _start(pick: str = "layers-equal") -> tuple[AppTest, str, str]:
    """A lecturer starts a lesson on Home: the session, the class's code and its key (the copy box's)."""
    home = _home()
    home.selectbox(key="lesson_pick").set_value(pick).run()
    home.button(key="lesson_start").click().run()
    assert_clean(home)
    code = next(iter(home.session_state[LECTURER_KEY]))
    return home, code, home.session_state[LECTURER_KEY][code]


def _present(at: AppTest, code: str) -> AppTest:
    """The lecturer opens the step the card offers ("Present step N": its page with its link)."""
    r = app_lesson.room(code, fresh=True)
    for k, v in app_lesson.step_params(r.current, code, lecturer=True).items():
        at.query_params[k] = v
    at.switch_page(str(ROOT / "pages" / f"{r.current.page}.py"))
    at.run()
    assert_clean(at)
    return at


def _join(code: str) -> AppTest:
    """A student types the code into Home's Join box."""
    at = _home()
    at.text_input(key="ws_join_code").set_value(code.lower())
    next(b for b in at.button if b.label == "Join").click().run()
    assert_clean(at)
    return at


def _asks(at: AppTest) -> str | None:
    """The key of the question the page asks (its prediction radio), or None."""
    keys = [r.key[len("ws_pick_"):] for r in at.radio if r.key and r.key.startswith("ws_pick_")]
    return keys[0] if keys else None


def test_home_starts_a_lesson_with_its_code_join_link_key_and_first_step():
    home, code, key = _start()
    state = _db().lesson(code)
    assert state.step == 0 and lessons.from_json(state.lesson) == LESSON  # the lesson is saved with the class
    assert state.window == "open"  # voting opens with the step
    assert any(m.value == code for m in home.markdown)  # the code in large type
    assert f"?join={code}" in _text(home)  # the join link (absolute on a real server: tests/test_browser_lesson.py)
    assert [c.value for c in home.code] == [key]  # shown once, in the copy box
    assert f"**Step 1 of {len(LESSON.steps)}:**" in _text(home) and LESSON.steps[0].aim in _text(home)
    assert not home.query_params  # Home stays Home: no code, and never a key, in its address


def test_a_student_joins_by_code_follows_the_lecturers_steps_and_cannot_move_the_room():
    lecturer, code, key = _start()
    _present(lecturer, code)
    assert _asks(lecturer) is None and f"Class {code}: 0 predictions" in _text(lecturer)  # the lecturer's view
    assert "Voting is open" in _text(lecturer)
    student = _join(code)
    assert _asks(student) == Q[0].key  # the room's step, its question
    assert _param(student, "student") == "1" and _param(student, "class") == code and _param(student, "k") == "1"
    assert {"lesson_next", "lesson_prev"} & {b.key for b in student.button} == set()  # no way to move the room
    with pytest.raises(wdb.NotLecturer):  # and the database refuses a move without the key
        _db().move_step(code, None, 1)
    assert _db().lesson(code).step == 0

    lecturer.button(key="lesson_next").click().run()  # step 2: the same page, another setting
    assert_clean(lecturer)
    assert _db().lesson(code).step == 1 and _param(lecturer, "k") == "4" and _param(lecturer, "present") == "1"
    student.run()  # what the student's poll does once it sees the step move (a rerun; no action of theirs)
    assert_clean(student)
    assert _asks(student) == Q[1].key and _param(student, "k") == "4" and _param(student, "student") == "1"
    assert _db().window(code, Q[0].key) == "closed" and _db().window(code, Q[1].key) == "open"

    lecturer.button(key="lesson_next").click().run()  # step 3: another page
    assert_clean(lecturer)
    student.run()
    assert_clean(student)
    assert [t.value for t in student.title][0].endswith("Re-initialise a layer")
    assert _asks(student) == Q[2].key and _param(student, "class") == code
    lecturer.button(key="lesson_prev").click().run()  # Previous step: back to the first page
    student.run()
    assert_clean(student)
    assert _asks(student) == Q[1].key and _param(student, "k") == "4" and _db().lesson(code).step == 1
    late = _home({"join": code})  # the QR code's join link, after the room moved on: the current step
    assert_clean(late)
    assert _asks(late) == Q[1].key and _param(late, "student") == "1"


def test_the_reveal_shows_the_room_and_the_aim_and_the_report_and_worksheet_hold_every_step_and_no_key(downloads,
                                                                                                        caplog):
    caplog.set_level(logging.DEBUG)
    lecturer, code, key = _start()
    _present(lecturer, code)
    student, idle = _join(code), _join(code)  # the second one never predicts
    student.radio(key=f"ws_pick_{Q[0].key}").set_value(0).run()
    student.button(key=f"ws_reveal_{Q[0].key}").click().run()
    assert_clean(student)
    lecturer.button(key=f"ws_room_reveal_{Q[0].key}").click().run()
    assert_clean(lecturer)
    said = _text(lecturer)
    assert "of 1 predicted what happened" in said and "in this run" in said  # the room's score, the verdict
    assert LESSON.steps[0].aim in said and "What happened:" in said
    assert lecturer.get("plotly_chart")  # the class's tally beside them
    student.run()  # the poll saw the window move
    assert "The room:" in _text(student) and "predicted what happened" in _text(student)
    assert not idle.metric
    idle.run()  # in a lesson the room's reveal is everyone's: the results, and that they did not predict
    assert "Original (held-out)" in [m.label for m in idle.metric] and "The room:" in _text(idle)
    assert "revealed the answer before you predicted" in _text(idle)

    downloads.clear()
    lecturer.run()
    student.run()
    made = [c() for c in downloads]
    texts = [d.decode() if isinstance(d, bytes) else str(d) for d in made]
    report = next(t for t in texts if "Layer Lab lesson report" in t)
    table = next(t for t in texts if t.startswith("step,page,setting"))
    sheet = next(t for t in texts if "Layer Lab worksheet: " in t)
    assert report.count("<section>") == len(LESSON.steps) and "predicted what happened" in report
    rows = table.strip().splitlines()
    assert len(rows) == 1 + len(LESSON.steps) and rows[1].startswith("1,Delete layers")
    assert f"{Q[0].texts[0]}: 1" in rows[1]  # the class's distribution
    assert f"You predicted <b>{html.escape(Q[0].texts[0])}</b>" in sheet  # the student's own prediction...
    assert "matched</span>" in sheet or "did not match</span>" in sheet  # ...beside what the run showed
    assert sheet.count("<section>") == len(LESSON.steps)
    for text in [*texts, caplog.text, repr(dict(lecturer.query_params)), repr(dict(student.query_params))]:
        assert key not in text


def test_a_student_who_leaves_browses_freely_and_rejoins_the_rooms_step():
    lecturer, code, key = _start()
    student = _join(code)
    assert _asks(student) == Q[0].key
    student.button(key="lesson_leave").click().run()
    assert_clean(student)
    assert _param(student, "class") is None and _param(student, "student") is None
    assert _asks(student) is None and student.sidebar.slider  # the page is theirs: its controls are back
    _db().move_step(code, key, 1)  # the room moves on without them
    student.run()
    assert _asks(student) is None and _param(student, "k") == "1"  # they stay where they were
    assert any("You left the lesson" in c.value for c in student.caption)
    student.button(key="lesson_rejoin").click().run()
    assert_clean(student)
    assert _asks(student) == Q[1].key and _param(student, "class") == code


def test_a_lesson_built_on_home_is_saved_with_the_class_as_built():
    home = _home()
    menu = lessons.menu()
    picks = [next(i for i, s in enumerate(menu) if s.question == q) for q in ("delete.res4", "delete.plain1")]
    home.text_input(key="lesson_build_title").set_value("Two deletions")
    home.multiselect(key="lesson_build_steps").set_value(picks).run()
    home.button(key="lesson_build_save").click().run()
    assert_clean(home)
    assert home.selectbox(key="lesson_pick").value == "two-deletions"
    assert any("Saved Two deletions (2 steps)" in s.value for s in home.success)
    home.button(key="lesson_start").click().run()
    code = next(iter(home.session_state[LECTURER_KEY]))
    stored = lessons.from_json(_db().lesson(code).lesson)
    assert [s.question for s in stored.steps] == ["delete.res4", "delete.plain1"] and stored.title == "Two deletions"
    home.multiselect(key="lesson_build_steps").set_value([]).run()
    home.button(key="lesson_build_save").click().run()
    assert any("Not saved" in e.value and "1-30 steps" in e.value for e in home.error)


def _import_app() -> None:
    import streamlit as st

    from app import lesson

    class Upload:  # what st.file_uploader hands back
        file_id, size = st.session_state["file_id"], len(st.session_state["bytes"])

        def getvalue(self) -> bytes:
            return st.session_state["bytes"]

    lesson._import(Upload())
    kind, text = st.session_state.pop(lesson._BUILD_NOTICE, ("", ""))
    st.markdown(f"{kind}: {text}")
    st.markdown("mine: " + ",".join(st.session_state.get(lesson.MINE_KEY, {})))


@pytest.mark.parametrize("hostile, words", [(b"[" * 20_000, "more than 8 deep"),
                                             (b'{"layerlab_lesson": 1, "minutes": ' + b"9" * 5_000 + b"}",
                                              "a number of 5,000 characters")])
def test_a_lesson_file_nested_too_deep_or_with_a_huge_number_gets_the_checks_message(hostile, words):
    """Issue 60: a file nested 20,000 deep (RecursionError) or holding a 5,000-digit number (int's ValueError)
    escaped the lesson checks, and Home showed "This app has encountered an error"."""
    at = AppTest.from_function(_import_app)
    at.session_state["file_id"], at.session_state["bytes"] = "deep", hostile
    at.run()
    assert not at.exception
    assert "error: That file was not imported" in at.markdown[0].value and words in at.markdown[0].value


def test_a_lesson_file_is_imported_once_validated_and_its_problems_said():
    at = AppTest.from_function(_import_app)
    at.session_state["file_id"], at.session_state["bytes"] = "a", b'{"layerlab_lesson": 1, "key": 3}'
    at.run()
    assert "error: That file was not imported" in at.markdown[0].value and "key must be str" in at.markdown[0].value
    good = json.loads(lessons.to_json(lessons.get("order-matters")))
    good.update(key="imported", title="Imported")
    at.session_state["file_id"], at.session_state["bytes"] = "b", json.dumps(good).encode()
    at.run()
    assert at.markdown[0].value.startswith("success: Imported Imported (6 steps)")
    assert at.markdown[1].value == "mine: imported"
    at.run()  # the same file again: read once, no second notice
    assert at.markdown[0].value.strip() == ":"


def test_a_where_step_asks_the_room_beside_the_map_and_the_map_answers(monkeypatch):
    """A lesson step that asks where a study's effect begins: the page does not ask its view's question, the study
    section asks before its map (none drawn until Reveal), and once the cells are stored the map names the answer."""
    from lab.study import compute, shipped
    from lab.study.spec import Study

    tiny = Study(page="delete", claim="delete.plain-one-deletion-to-chance", subject="plain MLP", knob="blocks",
                 values=(2, 3), seeds=(5, 6, 7), base=(("width", 16),), margin=0.05, name="delete-plain-depth",
                 title="Tiny study of depth", question="From how many blocks on?")
    monkeypatch.setattr(shipped, "STUDIES", (tiny,))
    lesson = lessons.Lesson("where-one", "Where one", 6, (
        lessons.Step("delete", "", "where.delete-plain-depth", "Predict where it begins."),))
    monkeypatch.setattr(lessons, "LESSONS", (*lessons.LESSONS, lesson))
    compute.read(tiny)  # its cells, computed here (as the engine would): the map is there to be hidden
    lecturer, code, key = _start("where-one")
    _present(lecturer, code)
    student = _join(code)
    assert _asks(student) == "where.delete-plain-depth"  # the study's question, not the view's
    assert "From how many blocks on?" in _text(student)
    assert not [c for c in student.get("plotly_chart") if "one seed" in c.proto.spec]  # no map before Reveal
    student.radio(key="ws_pick_where.delete-plain-depth").set_value(0).run()
    student.button(key="ws_reveal_where.delete-plain-depth").click().run()
    assert_clean(student)
    said = _text(student)
    assert "What the map shows:" in said and "Over 3 seeds" in said
    assert "The answer the map gives:" in said or "No option is confirmed" in said
    assert "Your prediction" in said
    assert [c for c in student.get("plotly_chart") if "one seed" in c.proto.spec]  # the map, after Reveal
    assert _db().tally(code, "where.delete-plain-depth", 3, key).total == 1  # the prediction counted
