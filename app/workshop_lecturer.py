"""The lecturer's side of a page's question (mixed into app/workshop.py's Workshop): the class card (its code and
QR code), the voting window (open, close, reveal to the room, hide), the verdict beside the room's live tally, Reset,
Close the class, and a lesson step's outcome kept with the class for its report.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

import streamlit as st

from app import hall_publish, query
from app.class_db import NOTICE_KEY, database
from app.class_links import CLASS, PRESENT, QR_PIXELS, absolute, join_link, qr_png, student_link
from app.lecturer_auth import CLOSE_NOTICE, FORGET_COOKIES, LECTURER_KEY, STARTED_KEY
from app.question_verdict import verdict_box
from app.tally_view import live_tally
from lab.classroom import class_keys
from lab.classroom import questions as lab_questions
from lab.classroom import workshop_db as wdb

log_ = logging.getLogger("layerlab.workshop")  # every class tool logs under the workshop's name
md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


class LecturerSide:
    """What the lecturer presenting a class sees of a question and does with it. The Workshop it is mixed into sets
    these:"""

    code: Optional[str]
    key: Optional[str]
    lesson_aim: Optional[str]
    _state: Callable[[lab_questions.Question], dict[str, Any]]

    def _class_card(self) -> None:
        """The class's code in large type and a QR code of the Student link: how the room joins."""
        # A lesson's room joins by Home's join link, which lands on whatever step the room is on (app/lesson.py).
        link = absolute(student_link()) if self.lesson_aim is None else join_link(self.code)
        with st.container(key="layerlab_class_card"):
            st.caption("Class code")
            with st.container(key="layerlab_class_code"):  # large type (app/classroom.py's style)
                st.markdown(md(self.code))
            if link.startswith(("http://", "https://")):
                st.image(qr_png(link), width=QR_PIXELS, caption="Scan to join, or enter the code on the lab's Home")

    def _window_now(self, q: lab_questions.Question, state: dict[str, Any]) -> Optional[str]:
        """The question's voting window, and whether the room sees its answer (revealed, unless the lecturer hid it
        again on this screen): `state["revealed"]`."""
        try:
            window = database().window(self.code, q.key)
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not read the voting window of class %s", self.code)
            window = None
        state["revealed"] = window == "revealed" and not state.get("hidden")
        return window

    def _lecturer(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any],
                  window: Optional[str]) -> None:
        self._keep_outcome(q, ans, state)
        if state["revealed"] and self.lesson_aim is not None and self.code is not None:
            hall_publish.expect(self.code, self.key, q.key)
        if state["revealed"]:  # on the projector the answer goes first, beside the room's tally: it fits 1280x720
            said, room = st.columns(2, gap="medium")
            with said:
                verdict_box(q, ans, None, compact=True)
            with room:
                live_tally(self.code, self.key, q, ans)
        else:
            live_tally(self.code, self.key, q, None)
        with st.container(horizontal=True):
            self._window_buttons(q, window, state)
            st.button("Reset this question", icon=":material/restart_alt:", key=f"ws_room_reset_{q.key}",
                      on_click=self._reset, args=(q,), help=f"Forget class {self.code}'s predictions on it and hide "
                      f"the results: the question waits for voting to be opened again.")
            st.button("Close the class", icon=":material/lock:", key="ws_room_close", on_click=self._close,
                      help="End the class: no more predictions. Its code is never handed out again.")
        if state.get("reset_error"):
            st.warning(state["reset_error"], icon=":material/error:")

    def _keep_outcome(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any]) -> None:
        """In a lesson, what this run says about the question is kept with the class, once per session and question:
        the lesson's report reads it (students see it only once the answer is revealed to the room)."""
        if self.lesson_aim is None or ans.claim is None or state.get("kept") or self.code is None:
            return
        import json

        from lab.classroom import lessons

        said = lessons.outcome(q, [ans.claim])
        try:
            database().set_outcome(self.code, self.key, q.key, json.dumps(said))
        except Exception:  # noqa: BLE001 - the report says "not run in class" for it; the details are for the log
            log_.exception("could not keep the outcome of %s in class %s", q.key, self.code)
            return
        state["kept"] = True

    def _window_buttons(self, q: lab_questions.Question, window: Optional[str], state: dict[str, Any]) -> None:
        if window in ("waiting", "closed"):
            st.button("Open voting" if window == "waiting" else "Open voting again", type="primary",
                      icon=":material/how_to_vote:", key=f"ws_room_open_{q.key}", on_click=self._window,
                      args=(q, "open"), help="Students' predictions are counted from now until you close voting "
                                             "or reveal the answer.")
        elif window == "open":
            st.button("Close voting", icon=":material/block:", key=f"ws_room_stop_{q.key}", on_click=self._window,
                      args=(q, "closed"), help="No more predictions are counted (you can open voting again).")
        if window in ("waiting", "open", "closed"):
            st.button("Reveal to the room", type="primary" if window != "waiting" else "secondary",
                      icon=":material/visibility:", key=f"ws_room_reveal_{q.key}", on_click=self._window,
                      args=(q, "revealed"), help="Show the answer on this screen. This closes voting on the "
                                                 "question for good (Reset asks it afresh).")
        elif window == "revealed":
            hidden = bool(state.get("hidden"))
            st.button("Show the results" if hidden else "Hide the results",
                      icon=":material/visibility:" if hidden else ":material/visibility_off:",
                      key=f"ws_room_hide_{q.key}", on_click=_set, args=(state, "hidden", not hidden))

    def _window(self, q: lab_questions.Question, to: str) -> None:
        state = self._state(q)
        state["reset_error"] = None
        try:
            database().set_window(self.code, q.key, to, self.key)
        except wdb.Rejected as why:
            log_.warning("voting window of class %s refused: %s", self.code, why)
            _refused(state, f"That was refused: {md(why)}.", why)
            return
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not change the voting window of class %s", self.code)
            state["reset_error"] = ("The voting window could not be changed: the class database is unavailable (the "
                                    "server's log has the details).")
            return
        state["hidden"] = False

    def _reset(self, q: lab_questions.Question) -> None:
        state = self._state(q)
        state["reset_error"] = None
        try:
            database().reset(self.code, q.key, self.key)
        except wdb.Rejected as why:
            log_.warning("reset refused in class %s: %s", self.code, why)
            _refused(state, f"Reset was refused: {md(why)}.", why)
            return
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not reset question %s of class %s", q.key, self.code)
            state["reset_error"] = ("Reset failed: the class database is unavailable (the server's log has the "
                                    "details). The predictions are still there.")
            return
        state["revealed"], state["hidden"] = False, False

    def _close(self) -> None:
        try:
            database().close_class(self.code, self.key)
        except Exception as exc:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not close class %s", self.code)
            why = md(exc) if isinstance(exc, wdb.Rejected) else "the class database is unavailable"
            st.session_state[CLOSE_NOTICE] = f"The class could not be closed: {why}."
            return
        st.session_state.get(LECTURER_KEY, {}).pop(self.code, None)
        st.session_state.get(STARTED_KEY, {}).pop(self.code, None)
        st.session_state.setdefault(FORGET_COOKIES, []).append(self.code)
        st.session_state[CLOSE_NOTICE] = (f"Class {md(self.code)} is closed. Its predictions are kept until they "
                                          f"are deleted, {class_keys.CLASS_DAYS} days after the class started.")
        for k in (CLASS, PRESENT):  # not presented by the next run
            if k in st.query_params:
                del st.query_params[k]


def _refused(state: dict[str, Any], text: str, why: wdb.Rejected) -> None:
    """A refused lecturer action is said beside its buttons; when the refusal is that this browser no longer
    presents the class (it was closed or expired meanwhile), the next run is a student's view, so it is said at the
    top of the page instead."""
    if isinstance(why, wdb.NotLecturer):
        st.session_state[NOTICE_KEY] = ("warning", text)
    else:
        state["reset_error"] = text


def _set(state: dict[str, Any], key: str, value: Any) -> None:
    state[key] = value
