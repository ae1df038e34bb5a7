"""AppTest: workshop mode on the Delete page: results hidden until a prediction and Reveal, predictions recorded
per class, the lecturer's tally and Reset, bad class codes (the page without workshop mode, with its
Reproduce expander: tests/test_app_delete.py)."""


from streamlit.testing.v1 import AppTest

from lab.classroom import questions, workshop_db

from .apptest_util import assert_clean, open_with_link


def _open(link: dict[str, str], page: str = "delete") -> AppTest:
    return open_with_link(page, link)


def _text(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def _db() -> workshop_db.Workshop:
    return workshop_db.Workshop()


def test_results_stay_hidden_until_a_prediction_and_reveal_and_the_vote_is_counted():
    q = next(x for x in questions.of("delete") if x.preset == "")  # the default view's question
    assert q.preset == ""
    _db().open_class("APPTEST-1")
    before = _db().tally("APPTEST-1", q.key, len(q.options)).total
    at = _open({"workshop": "1", "class": "apptest-1"})
    assert not at.metric, [m.label for m in at.metric]  # no result before the prediction
    assert q.prompt.split(":")[0][:30] in _text(at)
    assert at.button(key=f"ws_reveal_{q.key}").disabled
    at.radio(key=f"ws_pick_{q.key}").set_value(0).run()
    at.button(key=f"ws_reveal_{q.key}").click().run()
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert "Original (held-out)" in labels
    assert _db().tally("APPTEST-1", q.key, len(q.options)).total == before + 1
    assert _db().mine("APPTEST-1", q.key, at.session_state[workshop_db_session()]) == 0


def workshop_db_session() -> str:
    from app.workshop import SESSION_KEY

    return SESSION_KEY


def test_an_unknown_class_is_refused_and_nothing_is_stored():
    q = next(x for x in questions.of("delete") if x.preset == "")
    at = _open({"workshop": "1", "class": "NEVER-OPENED"})
    at.radio(key=f"ws_pick_{q.key}").set_value(1).run()
    at.button(key=f"ws_reveal_{q.key}").click().run()
    assert_clean(at)
    assert not at.metric
    assert any("no class NEVER-OPENED is open" in w.value for w in at.warning), [w.value for w in at.warning]
    assert _db().tally("NEVER-OPENED", q.key, len(q.options)).total == 0


def test_a_malformed_class_code_is_reported_and_dropped():
    at = _open({"workshop": "1", "class": "<script>x"})
    warnings = [w.value for w in at.warning]
    assert any("class" in w and "3 to 24 letters" in w for w in warnings), warnings
    # quoted inside a code span (backticks escaped by app/query.shown), which markdown draws as text, never HTML
    assert "`class=<script>x`" in " ".join(warnings)
    assert "class" not in at.query_params


def test_the_lecturer_sees_the_tally_reveals_to_the_room_and_resets():
    q = next(x for x in questions.of("delete") if x.preset == "")
    at = _open({"present": "1", "class": "LECT-2"})
    assert _db().is_open("LECT-2")  # the presentation view opened the class
    assert "Class LECT-2: 0 predictions" in _text(at)
    _db().vote("LECT-2", q.key, q.texts, "session-xxxxxxxx", q.texts[1])
    at.run()
    assert "Class LECT-2: 1 prediction" in _text(at)
    assert not at.metric
    at.button(key=f"ws_room_reveal_{q.key}").click().run()
    assert_clean(at)
    assert "Original (held-out)" in [m.label for m in at.metric]
    at.button(key=f"ws_room_reset_{q.key}").click().run()
    assert_clean(at)
    assert _db().tally("LECT-2", q.key, len(q.options)).total == 0
    assert not at.metric  # hidden again for the next round
