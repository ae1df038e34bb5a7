"""AppTest: workshop mode on the Delete page: results hidden until a prediction and Reveal, predictions recorded
per class and voter, the lecturer's key (tally, Reset, Close), a student view that never becomes the lecturer's,
predictions that cannot be counted (said, logged, and the result still shown), bad class codes and hostile links
(the page without workshop mode, with its Reproduce expander: tests/test_app_delete.py)."""

import logging
import re

from streamlit.testing.v1 import AppTest

from app.workshop import KEY, VOTER_KEY
from lab.classroom import questions, workshop_db

from .apptest_util import assert_clean, open_with_link

Q = next(x for x in questions.of("delete") if x.preset == "")  # the default view's question


def _open(link: dict[str, str], page: str = "delete") -> AppTest:
    return open_with_link(page, link)


def _text(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def _db() -> workshop_db.Workshop:
    return workshop_db.Workshop()


def _fresh(code: str) -> str:
    """Open `code` afresh (closing an earlier term of it); its lecturer key."""
    db = _db()
    opened = db.open_class(code, None) if not db.is_open(code) else None
    if opened is None:  # left open by an earlier run of the suite against the same store: a new term
        with db.engine.begin() as conn:
            conn.execute(workshop_db.sa.update(workshop_db.classes).where(workshop_db.classes.c.code == code)
                         .values(closed=1.0))
        opened = db.open_class(code, None)
    return opened.key


def _buttons(at: AppTest) -> set[str]:
    return {b.key for b in at.button if b.key}


def test_results_stay_hidden_until_a_prediction_and_reveal_and_the_vote_is_counted():
    key = _fresh("APPTEST-1")
    at = _open({"workshop": "1", "class": "apptest-1"})
    assert not at.metric, [m.label for m in at.metric]  # no result before the prediction
    assert Q.prompt.split(":")[0][:30] in _text(at)
    assert at.button(key=f"ws_reveal_{Q.key}").disabled
    assert f"ws_room_reset_{Q.key}" not in _buttons(at)
    at.radio(key=f"ws_pick_{Q.key}").set_value(0).run()
    at.button(key=f"ws_reveal_{Q.key}").click().run()
    assert_clean(at)
    assert "Original (held-out)" in [m.label for m in at.metric]
    assert _db().tally("APPTEST-1", Q.key, len(Q.options), key).total == 1
    assert _db().mine("APPTEST-1", Q.key, at.session_state[VOTER_KEY]) == 0
    assert not at.warning, [w.value for w in at.warning]


def test_a_student_whose_class_is_not_open_sees_the_result_and_is_told_why_it_was_not_counted():
    at = _open({"workshop": "1", "class": "NEVER-OPENED"})
    before = " ".join(w.value for w in at.warning)
    assert "Class NEVER-OPENED is not open" in before and "will not be counted" in before, before  # said up front
    at.radio(key=f"ws_pick_{Q.key}").set_value(1).run()
    at.button(key=f"ws_reveal_{Q.key}").click().run()
    assert_clean(at)
    assert "Original (held-out)" in [m.label for m in at.metric]  # the run, not a dead end
    warnings = " ".join(w.value for w in at.warning)
    assert "not counted" in warnings and "no class NEVER-OPENED is open" in warnings, warnings
    assert not _db().is_open("NEVER-OPENED")


def test_a_prediction_the_database_cannot_store_is_said_on_the_page_and_logged(monkeypatch, caplog):
    monkeypatch.setenv("LAYERLAB_DB", "postgresql+psycopg://nobody@127.0.0.1:9/none?connect_timeout=2")
    caplog.set_level(logging.INFO, logger="layerlab.workshop")
    at = _open({"workshop": "1", "class": "DOWN-1"})
    assert any("database is unavailable" in w.value for w in at.warning)  # before Reveal too
    at.radio(key=f"ws_pick_{Q.key}").set_value(0).run()
    at.button(key=f"ws_reveal_{Q.key}").click().run()
    assert_clean(at)
    assert "Original (held-out)" in [m.label for m in at.metric]
    warnings = " ".join(w.value for w in at.warning)
    assert "could not be counted" in warnings and "database is unavailable" in warnings, warnings
    assert "psycopg" not in warnings and "127.0.0.1" not in warnings  # the details are for the log
    assert any("could not store a prediction in class DOWN-1" in r.getMessage() for r in caplog.records)


def test_a_malformed_class_code_is_reported_and_dropped():
    at = _open({"workshop": "1", "class": "<script>x"})
    warnings = [w.value for w in at.warning]
    assert any("class" in w and "3 to 24 letters" in w for w in warnings), warnings
    # quoted inside a code span (backticks escaped by app/query.shown), which markdown draws as text, never HTML
    assert "`class=<script>x`" in " ".join(warnings)
    assert "class" not in at.query_params


def test_the_lecturer_opens_a_class_gets_a_key_once_and_tallies_reveals_resets_and_closes(caplog):
    code = "LECT-2"
    if _db().is_open(code):
        _fresh(code)  # a new term, whose key this test does not know: then opening below must be refused
        at = _open({"present": "1", "class": code})
        assert KEY not in at.query_params and f"ws_room_reset_{Q.key}" not in _buttons(at)
        with _db().engine.begin() as conn:
            conn.execute(workshop_db.sa.update(workshop_db.classes).where(workshop_db.classes.c.code == code)
                         .values(closed=1.0))
    at = _open({"present": "1", "class": code})
    key = at.query_params[KEY][0] if isinstance(at.query_params[KEY], list) else at.query_params[KEY]
    assert _db().is_lecturer(code, key)  # the presentation view opened the class; its link now has the key
    assert any("lecturer link" in s.value for s in at.success)
    assert f"Class {code}: 0 predictions" in _text(at)
    _db().vote(code, Q.key, Q.texts, "voter-xxxxxxxx", Q.texts[1])
    at.run()
    assert f"Class {code}: 1 prediction" in _text(at)
    assert not at.metric
    at.button(key=f"ws_room_reveal_{Q.key}").click().run()
    assert_clean(at)
    assert "Original (held-out)" in [m.label for m in at.metric]
    at.button(key=f"ws_room_reset_{Q.key}").click().run()
    assert_clean(at)
    assert _db().tally(code, Q.key, len(Q.options), key).total == 0
    assert not at.metric  # hidden again for the next round
    at.button(key="ws_room_close").click().run()
    assert not _db().is_open(code)
    assert any("is closed" in i.value for i in at.info)
    assert "class" not in at.query_params and KEY not in at.query_params


def test_without_the_key_present_and_student_links_get_the_student_view_and_no_tally_or_reset():
    key = _fresh("LECT-3")
    _db().vote("LECT-3", Q.key, Q.texts, "voter-yyyyyyyy", Q.texts[0])
    for link in ({"present": "1", "class": "LECT-3"},  # anyone who guesses the code
                 {"present": "1", "class": "LECT-3", "key": "wrong-key-0000000000"},
                 {"student": "1", "present": "1", "class": "LECT-3", "key": key},  # student=1 never grants it
                 {"student": "1", "workshop": "1", "class": "LECT-3"}):  # the Student link itself
        at = _open(link)
        buttons = _buttons(at)
        assert f"ws_room_reset_{Q.key}" not in buttons and "ws_room_close" not in buttons, link
        assert f"ws_room_reveal_{Q.key}" not in buttons, link
        assert "Class LECT-3: 1 prediction" not in _text(at), link
        assert at.radio(key=f"ws_pick_{Q.key}") is not None, link  # the student's prediction radio
        assert not at.metric, link
    assert _db().tally("LECT-3", Q.key, len(Q.options), key).total == 1  # still open, nothing reset
    assert _db().is_lecturer("LECT-3", key)  # the old key still works: nobody took the class over


def test_the_student_link_carries_no_present_and_no_key():
    from app.classroom import student_link

    at = _open({"present": "1", "class": "LECT-4"})
    del at  # the class is open now; the link is computed from a page's own query parameters below
    import streamlit as st  # noqa: F401 - student_link reads st.query_params: exercised through a fake

    class Params(dict):
        def get_all(self, k):
            return self[k]

    import app.classroom as classroom

    real = classroom.st.query_params
    try:
        classroom.st.query_params = Params(present=["1"], key=["secret-secret"], k=["2"], **{"class": ["LECT-4"]})
        link = student_link()
    finally:
        classroom.st.query_params = real
    assert "present" not in link and "secret" not in link and "key=" not in link
    assert "student=1" in link and "workshop=1" in link and "class=LECT-4" in link and "k=2" in link


def test_a_reset_the_database_refuses_is_said_on_the_page():
    at = _open({"present": "1", "class": "LECT-5"})
    if KEY not in at.query_params:  # open from an earlier run of the suite: start a term this test holds
        _fresh("LECT-5")
        with _db().engine.begin() as conn:
            conn.execute(workshop_db.sa.update(workshop_db.classes).where(workshop_db.classes.c.code == "LECT-5")
                         .values(closed=1.0))
        at = _open({"present": "1", "class": "LECT-5"})
    with _db().engine.begin() as conn:  # the term ends under the lecturer's open page (expired, or closed elsewhere)
        conn.execute(workshop_db.sa.update(workshop_db.classes).where(workshop_db.classes.c.code == "LECT-5")
                     .values(closed=1.0))
    at.button(key=f"ws_room_reset_{Q.key}").click().run()
    assert not at.exception
    assert any("Reset was refused" in w.value for w in at.warning), [w.value for w in at.warning]


def _outside_code_spans(text: str) -> str:
    return re.sub(r"`[^`]*`", "", text)


def test_a_hostile_pin_is_quoted_never_drawn_as_a_link_or_image():
    for value in ("[Log in here](http://evil.example/login)", "![x](http://evil.example/p.png)", "**bold** <b>x</b>"):
        at = _open({"pin": value})
        warnings = [w.value for w in at.warning if "pin" in w.value]
        assert warnings, [w.value for w in at.warning]
        for w in warnings:
            rest = _outside_code_spans(w)
            assert not re.search(r"(?<!\\)\]\(", rest), w  # no live link or image syntax outside a code span
            assert not re.search(r"(?<!\\)\*\*", rest) and "<b>" not in rest, w
