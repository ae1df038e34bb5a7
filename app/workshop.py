"""Workshop mode: predict, then reveal; the class's code, its lecturer and the voting window (the worksheet is
app/worksheet.py, the Reproduce expander app/reproduce_view.py).

Link flags (read through app/query.py like every link value):
- `workshop=1`: a view that has a question (lab/classroom/questions.py) keeps its results behind it until the student
  picks an option and presses Reveal; the reveal says what happened, with the numbers (the claim's detail), and whether
  the prediction matched the run's claim.
- `class=CODE`: predictions are recorded for that class (lab/classroom/workshop_db.py). Codes are handed out by the
  server: "Start a class" (Home, or a page's toolbar) makes the code and its lecturer key. With `present=1` the link
  asks for the lecturer's view, granted only to a browser that holds the key: the session that started the class,
  one whose lecturer typed the key into the password box, or a browser with the class's lecturer pass. The key is
  never in a link (a link is on the projector, in photos, histories and logs), never in a download nor a log line,
  never in a cookie; a `key=` in a link is dropped unread. `student=1` never makes a lecturer. The key lives in the
  session's server memory; for a reload or a new tab, the page posts a single-use ticket to the server's lecturer
  route, which sets the lecturer's pass (an HMAC, never the key, 12 hours) as an HttpOnly, SameSite=Strict cookie
  (app/lecturer_route.py, lab/classroom/lecturer_pass.py); a page script never writes it.
- A student's vote is one per browser, and a voter costs a join: the server issues a voter identity when a student
  joins the class (the code typed on Home, `?join=CODE` from the QR code, or a page opened with the class's Student
  link), bounded per network address (workshop_db.join's token bucket); the browser keeps it in a cookie signed with
  the class's key, so a reload is the same voter. A session that never joined votes nothing. Votes are bounded per
  voter and per address, counted only while the lecturer has voting open on the question, and final
  (workshop_db.py): the student sees the result right after voting, so nobody changes a vote after seeing the
  answer, reload or not.
- Wrong class codes (a join, a class link) and wrong lecturer keys (typed, or a pass in a cookie) count per address
  (workshop_db.find, check_key): past the bound, the address's tries wait a minute. A closed class and a code that
  names none read alike.

Everything a student or a link sends is validated before it is stored or drawn; text drawn from data is escaped.

This module holds `Workshop`, a page's workshop tools (the gate: a view's question before its results); the rest is one
piece a module: the student's side (app/workshop_student.py) and the lecturer's (app/workshop_lecturer.py) of a
question, what the reveal says (app/question_verdict.py), the room's tally (app/tally_view.py), joining and starting a
class from Home (app/class_join.py), the link flags and a class's links (app/class_links.py), voters
(app/voters.py), the lecturer's key and pass (app/lecturer_auth.py), cookies (app/cookies.py), and the class database
with its once-said notice (app/class_db.py).
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Optional, Sequence

import streamlit as st

from app import query
from app.class_db import NOTICE_KEY, client, database, notice
from app.class_join import found
from app.class_links import WORKSHOP, class_code, drop_link_key, link_flag
from app.lecturer_auth import keep_lecturer, key_panel, lecturer_key, remember
from app.question_verdict import claims_in
from app.workshop_lecturer import LecturerSide
from app.workshop_student import StudentSide
from lab.catalog.presets import Preset
from lab.classroom import class_checks
from lab.classroom import questions as lab_questions
from lab.classroom import where as where_questions
from lab.classroom import workshop_db as wdb

VIEW_KEY = "_layerlab_ws_view"  # {code: (page, query)}: the class's current view as this session last stored it
STATE_KEY = "_layerlab_ws_state"  # {(page, question key, lecturer): {"chosen": int | None, "revealed": bool, ...}}

log_ = logging.getLogger("layerlab.workshop")  # every class tool logs under the workshop's name
md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


class Workshop(StudentSide, LecturerSide):
    """The workshop tools of one page (created by app/classroom.py's Page). `present`: the link asks for the
    lecturer's view (`present=1`, never `student=1`); it is granted to a browser that holds the class's key."""

    def __init__(self, page: str, presets: Sequence[Preset], defaults: dict[str, Any], present: bool) -> None:
        self.page, self.presets, self.defaults, self.present = page, tuple(presets), dict(defaults), present
        self.questions = lab_questions.of(page)
        self.on = link_flag(WORKSHOP)
        drop_link_key()
        notice()
        self.code = class_code()
        self.key: Optional[str] = None
        # Whether the link's class is open, as a join finds it (bounded per address); a lesson is followed only then.
        self.found = found(self.code) if self.code is not None else False
        self.lecturer = present and self.code is not None and self._present()
        # Set by app/lesson.py when the class follows a lesson and this page shows its step: the step's aim (the
        # reveal shows it), and the room's reveal then shows every student the answer.
        self.lesson_aim: Optional[str] = None
        self.lesson_question: Optional[str] = None  # the room's step's question key (app/lesson.py sets both)
        self.lesson_controls: Any = None  # in a lesson, where its lecturer's presets and controls are folded away

    def _present(self) -> bool:
        """Whether this browser presents the class (it holds the key); otherwise, with a message, the student view:
        a code nobody started is never opened here (codes are handed out by Start a class)."""
        assert self.code is not None
        try:
            key = lecturer_key(self.code)
            open_ = key is not None or self.found
        except Exception:  # noqa: BLE001 - shown, not raised
            log_.exception("could not look up class %s", self.code)
            st.error("The class database is unavailable: predictions cannot be counted, and the class cannot be "
                     "presented. The server's log has the details.")
            return False
        if key is not None:
            remember(self.code, key)
            keep_lecturer(self.code, key)
            key_panel(self.code)
            self.key = key
            return True
        if not open_:
            st.warning(f"No class {md(self.code)} is open: a class starts with **Start a class** (on the lab's Home "
                       f"or a page's toolbar), which hands out a new code and its key. This is the student view.",
                       icon=":material/block:")
            return False
        self._key_box()
        return False

    def _key_box(self) -> None:
        """A lecturer on a device that does not hold the class's key types it here (a password field: not shown on
        the projector, never in the address)."""
        with st.container(border=True, key="layerlab_key_box"):
            st.markdown(f":material/lock: This is the student view of class **{md(self.code)}**. Its lecturer "
                        f"presents it by entering the class's key (shown once when the class was started).")
            with st.form("ws_key_form", border=False, clear_on_submit=True):
                st.text_input("Lecturer key", type="password", key="ws_key_entry", autocomplete="off",
                              max_chars=64)
                st.form_submit_button("Present this class", icon=":material/key:", on_click=self._enter_key)

    def _enter_key(self) -> None:
        assert self.code is not None
        typed = (st.session_state.get("ws_key_entry") or "").strip()
        try:  # a wrong key counts against the address: past the bound its tries wait a minute
            ok = bool(class_checks.TOKEN.fullmatch(typed)) and database().check_key(self.code, typed, client())
        except wdb.Flood as why:
            st.session_state[NOTICE_KEY] = ("warning", f"The key was not checked: {md(why)}.")
            return
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not check a lecturer key for class %s", self.code)
            st.session_state[NOTICE_KEY] = ("error", "The key could not be checked: the class database is "
                                                     "unavailable. Try again in a moment.")
            return
        if not ok:  # the typed text is never echoed nor logged
            log_.info("a wrong lecturer key was entered for class %s", self.code)
            st.session_state[NOTICE_KEY] = ("warning", f"That is not the key of class {md(self.code)} (or the "
                                                       f"class is closed).")
            return
        remember(self.code, typed)
        st.session_state[NOTICE_KEY] = ("success", f"This browser now presents class {md(self.code)}.")

    def put_up(self, link: str) -> None:
        """The lecturer's current view (this page, and its Student link) becomes the class's: where Join takes a
        student. Stored only when it changed."""
        if not self.lecturer or self.code is None:
            return
        now = (self.page, link.lstrip("?"))
        known = st.session_state.setdefault(VIEW_KEY, {})
        if known.get(self.code) == now:
            return
        try:
            database().set_view(self.code, self.key, *now)
        except Exception:  # noqa: BLE001 - Join says "no page yet"; the details are for the log
            log_.exception("could not store the current view of class %s", self.code)
            return
        known[self.code] = now

    @property
    def active(self) -> bool:
        return self.on or self.code is not None  # a class's link always asks the question

    def question(self, settings: dict[str, Any]) -> Optional[lab_questions.Question]:
        return lab_questions.question_for(self.questions, self.presets, self.defaults, settings)

    def _state(self, q: lab_questions.Question) -> dict[str, Any]:
        states = st.session_state.setdefault(STATE_KEY, {})
        return states.setdefault((self.page, q.key, self.lecturer), {"chosen": None, "revealed": False})

    # -- the gate ------------------------------------------------------------------------------------------------
    def gate(self, result: Any, settings: dict[str, Any]) -> None:
        """Before a view's results: ask its question and stop the page until Reveal (no-op outside workshop mode).
        A lesson step that asks where a study's effect appears asks it beside the study's map instead (`ask`)."""
        if not self.active or (self.lesson_question or "").startswith(where_questions.PREFIX):
            return
        q = self.question(settings)
        if q is None:
            self._no_question()
            if self.lecturer:
                self._class_card()
            return
        self._ask(q, lab_questions.answer(q, claims_in(result)))

    def asks(self, q: lab_questions.Question) -> bool:
        """Whether the room's lesson step asks `q` here (a where-question is asked only at its step)."""
        return self.active and self.lesson_question == q.key

    def ask(self, q: lab_questions.Question, claims: list[Mapping[str, Any]]) -> None:
        """Ask `q` (a where-question, beside its study's map: app/study_view.py) with the claims that answer it, and
        stop the page until Reveal."""
        self._ask(q, lab_questions.answer(q, claims))

    def _ask(self, q: lab_questions.Question, ans: lab_questions.Answer) -> None:
        state = self._state(q)
        with st.container(border=True, key="layerlab_question"):
            if self.lecturer:
                window = self._window_now(q, state)
                if state["revealed"]:  # the answer and the room's tally side by side take the whole width
                    st.markdown(f"**:material/quiz: Predict first** · {md(q.prompt)}")
                    self._aim()
                    self._lecturer(q, ans, state, window)
                else:  # the class's code and QR code beside the question, in the projector's first screen
                    left, right = st.columns([3, 1])
                    with left:
                        st.markdown(f"**:material/quiz: Predict first** · {md(q.prompt)}")
                        self._aim()
                        self._lecturer(q, ans, state, window)
                    with right:
                        self._class_card()
            else:
                st.markdown(f"**:material/quiz: Predict first** · {md(q.prompt)}")
                self._aim()
                self._student(q, ans, state)
        if not state["revealed"]:
            st.stop()

    def _no_question(self) -> None:
        if not self.questions:
            return
        names = {p.key: p.label for p in self.presets}
        st.info("Workshop mode: this setting has no question. These do: "
                + ", ".join(f"**{md(names.get(q.preset, 'the default view'))}**" for q in self.questions)
                + " (the presets under Try this).")

    def _aim(self) -> None:
        """A lesson's step: its one-line aim under the question (before and after the reveal)."""
        if self.lesson_aim:
            st.caption(f":material/flag: **Aim:** {md(self.lesson_aim)}")
