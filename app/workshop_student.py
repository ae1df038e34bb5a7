"""The student's side of a page's question (mixed into app/workshop.py's Workshop): joining the class the link names,
the prediction and Reveal, the vote recorded (with a class, while its lecturer has voting open; final), and the
verdict with how the room did once the answer was revealed to it.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

import streamlit as st

from app import query
from app.class_db import client, database
from app.question_verdict import room_words, said, verdict_box
from app.voters import join, keep_voter, voter
from app.worksheet import current_link, log
from lab.classroom import class_votes
from lab.classroom import questions as lab_questions
from lab.classroom import workshop_db as wdb

log_ = logging.getLogger("layerlab.workshop")  # every class tool logs under the workshop's name
md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


class StudentSide:
    """What a student sees of a question and does with it. The Workshop it is mixed into sets these:"""

    page: str
    code: Optional[str]
    found: Optional[bool]
    lesson_aim: Optional[str]
    _state: Callable[[lab_questions.Question], dict[str, Any]]

    def _earlier(self, q: lab_questions.Question, state: dict[str, Any]) -> None:
        """Once per session: a prediction this voter made before (a reload, the same browser) is final, so the
        verdict is shown at once and no second prediction is offered."""
        if not self.code or state.get("looked"):
            return
        state["looked"] = True
        try:
            vid = voter(self.code)
            mine = database().mine(self.code, q.key, vid) if vid is not None else None
        except Exception:  # noqa: BLE001 - only a convenience: the vote itself reports a database failure
            log_.exception("could not read a stored prediction")
            return
        if mine is not None and 0 <= mine < len(q.options):
            state["chosen"], state["earlier"], state["revealed"] = mine, True, True

    def _student(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any]) -> None:
        room = None
        if self.code and self.found:
            self._join(state)
            keep_voter(self.code)
            self._earlier(q, state)
            room = self._room(q)
            if room is not None and self.lesson_aim is not None and not state["revealed"]:
                state["revealed"], state["room"] = True, True  # in a lesson the room's reveal is everyone's
        if not state["revealed"]:
            if state.get("hold"):
                st.warning(state["hold"], icon=":material/hourglass_top:")
            chosen = st.radio("Your prediction", range(len(q.options)), index=state["chosen"],
                              format_func=lambda i: q.texts[i], key=f"ws_pick_{q.key}")
            st.button("Reveal", type="primary", disabled=chosen is None, key=f"ws_reveal_{q.key}",
                      icon=":material/visibility:", on_click=self._reveal, args=(q, ans),
                      help="Commit to your prediction and see the result." + (
                          f" Your prediction is counted in class {self.code}." if self.code else ""))
            if self.code:
                if state.get("join_error") and not state.get("hold"):
                    st.warning(state["join_error"], icon=":material/hourglass_top:")
                elif not state.get("hold"):
                    self._counting(q)
                st.caption(f"Class {md(self.code)}: your prediction is counted when you press Reveal, while your "
                           f"lecturer has voting open (anonymous; one per browser, and final: Reveal shows you the "
                           f"result).")
            return
        if state.get("error"):
            st.warning(state["error"], icon=":material/error:")
        verdict_box(q, ans, state["chosen"], compact=self.lesson_aim is not None)  # a lesson's phone: short
        if room is not None and room.total:
            st.markdown(":material/groups: The room: " + room_words(room, ans))
        if state.get("room") and state["chosen"] is None:
            st.caption("Your lecturer revealed the answer before you predicted this one.")
        elif self.code and state.get("earlier"):
            st.caption(f"This browser's prediction in class {md(self.code)} was counted earlier, and it stands.")
        elif self.code and not state.get("error"):
            st.caption(f"Counted in class {md(self.code)}; the lecturer shows the class's tally.")

    def _join(self, state: dict[str, Any]) -> None:
        """A page opened with the class's link (its Student link, its QR code) joins the class: the server issues
        this browser a voter identity, unless it holds one; a refusal is said before Reveal, which tries again."""
        if voter(self.code) is not None:
            state["join_error"] = None
            return
        try:
            join(self.code)
            state["join_error"] = None
        except wdb.Rejected as why:
            state["join_error"] = f"Your prediction cannot be counted yet: {md(why)}. Reveal tries again."
        except Exception:  # noqa: BLE001 - the vote says so again; the details are for the log
            log_.exception("could not join class %s", self.code)

    def _room(self, q: lab_questions.Question) -> Optional[class_votes.Tally]:
        """The class's tally once the answer was revealed to the room (what the projector showed), else None."""
        try:
            return database().revealed_tally(self.code, q.key, len(q.options))
        except Exception:  # noqa: BLE001 - only an addition to the student's own verdict
            log_.exception("could not read the revealed tally of class %s", self.code)
            return None

    def _counting(self, q: lab_questions.Question) -> None:
        """Before Reveal: say now when the prediction cannot be counted (the class is not open, voting is not open,
        the database is down), so nobody is surprised after it."""
        try:
            if self.found is False or not database().is_open(self.code):
                st.warning(f"Class {md(self.code)} is not open, so your prediction will not be counted: check the "
                           f"code with your lecturer. Reveal still shows you the result.", icon=":material/error:")
                return
            window = database().window(self.code, q.key)
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not check class %s", self.code)
            st.warning("The class database is unavailable: your prediction cannot be counted right now. Reveal "
                       "still shows you the result.", icon=":material/error:")
            return
        if window == "waiting":
            st.info("Voting on this question has not opened yet: your lecturer opens it. Pick your prediction, "
                    "then press Reveal once voting is open.", icon=":material/hourglass_top:")
        elif window in ("closed", "revealed"):
            st.warning(f"{class_votes.VOTING_CLOSED[window].capitalize()}, so your prediction will not be counted. "
                       f"Reveal still shows you the result.", icon=":material/error:")

    def _reveal(self, q: lab_questions.Question, ans: lab_questions.Answer) -> None:
        """The Reveal button's callback: record the prediction (with a class), then reveal, recorded or not (a
        prediction that cannot be counted still shows the result, and says why it was not counted); before the
        lecturer opens voting it waits instead, so nobody sees the answer before they could vote."""
        state = self._state(q)
        chosen = st.session_state.get(f"ws_pick_{q.key}")
        if chosen is None:
            return
        state["chosen"], state["error"], state["hold"] = chosen, None, None
        if self.code:
            try:
                if self.found is False:
                    raise wdb.Rejected(f"no class {self.code} is open: check the code with your lecturer")
                vid = join(self.code)  # the identity the join issued (tried again here when it was refused)
                state["join_error"] = None
                database().vote(self.code, q.key, q.texts, vid, q.texts[chosen], client=client())
            except wdb.NotVoting as why:
                if why.state == "waiting":
                    state["hold"] = f"Not yet: {md(why)}."
                    return
                log_.info("prediction not counted in class %s: %s", self.code, why)
                state["error"] = f"Your prediction was not counted: {md(why)}. Here is the result anyway."
            except wdb.Counted as why:
                stored = self._stored(q)
                if stored is not None:
                    state["chosen"] = stored
                state["error"] = f"This prediction was not counted: {md(why)}. Here is the result."
            except wdb.Rejected as why:
                log_.info("prediction not counted in class %s: %s", self.code, why)
                state["error"] = f"Your prediction was not counted: {md(why)}. Here is the result anyway."
            except Exception:  # noqa: BLE001 - a database that cannot be reached must not break the page
                log_.exception("could not store a prediction in class %s", self.code)
                state["error"] = ("Your prediction could not be counted: the class database is unavailable (the "
                                  "server's log has the details). Here is the result anyway.")
        chosen = state["chosen"]
        state["revealed"] = True
        log({"kind": "prediction", "page": self.page, "question": q.prompt, "chosen": q.texts[chosen],
             "matched": ans.matches(chosen), "detail": (ans.claim or {}).get("detail", ""),
             "verdict": said(q, ans.claim) if ans.claim else "", "link": current_link()})

    def _stored(self, q: lab_questions.Question) -> Optional[int]:
        try:
            vid = voter(self.code)
            mine = database().mine(self.code, q.key, vid) if vid is not None else None
        except Exception:  # noqa: BLE001 - only what the verdict box names
            log_.exception("could not read a stored prediction")
            return None
        return mine if mine is not None and 0 <= mine < len(q.options) else None
