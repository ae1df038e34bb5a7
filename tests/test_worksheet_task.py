"""The worksheet records each view's task, the page's default task included (issue 31: a worksheet read later must
say what data every view ran on, and a default is otherwise left out of a view's description)."""

from app import task_control
from app.worksheet import LOG_KEY

from .apptest_util import open_with_link, settle


def _views(at) -> list[str]:
    return [e["describe"] for e in at.session_state[LOG_KEY] if e["kind"] == "view"]


def test_a_default_task_and_a_chosen_one_are_both_in_the_worksheet():
    at = settle(open_with_link("delete", {}))
    assert _views(at)[-1] == f"the defaults · Task: {task_control.label_of('synthetic')}"
    at.selectbox(key="task").set_value("wine").run()
    settle(at)
    last = _views(at)[-1]
    assert last.count("Task:") == 1 and f"Task: {task_control.label_of('wine')}" in last, last
