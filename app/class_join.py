"""Joining a class: Home's "Join a class" and "Start a class" boxes, the code a student types taking them to the view
the lecturer presents (or to the lesson's current step), and whether the class a link names is open (looked up once
per session: a wrong code counts against the address).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import parse_qsl

import streamlit as st

from app import hall_route, lecturer_route, query
from app.class_db import NOTICE_KEY, client, database, notice
from app.class_links import CLASS, KEY, PRESENT, STUDENT, WORKSHOP
from app.lecturer_auth import STARTED_KEY, key_panel, start_class
from app.voters import join
from lab.catalog import descriptors
from lab.classroom import class_checks
from lab.classroom import workshop_db as wdb

FOUND_KEY = "_layerlab_ws_found"  # {code: open?} as this session's look-up found it (workshop_db.find): once each
LESSON_CODES = "_layerlab_lesson_codes"  # codes of the lessons this session started (Home shows each as a card)
ROOT = Path(__file__).resolve().parents[1]

log_ = logging.getLogger("layerlab.workshop")  # every class tool logs under the workshop's name
md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


# A class's current lesson step as (page, link), or None: app/lesson.py's student_target.
LessonStep = Callable[[str], Optional[tuple[str, dict[str, str]]]]


def join_panel(lesson_step: Optional[LessonStep] = None) -> None:
    """Home's "Join a class" (the code from the lecturer's screen takes a student to the view the lecturer
    presents, or to `lesson_step(code)` when the class follows a lesson: app/lesson.py) and "Start a class" (for
    the lecturer)."""
    notice()
    join, start = st.columns(2, gap="large")
    with join:
        st.markdown("**:material/groups: Join a class**")
        with st.form("ws_join", border=False):
            typed = st.text_input("Class code", max_chars=24, key="ws_join_code", placeholder="e.g. K7M4QX",
                                  help="The code on your lecturer's screen (letters and digits; case does not "
                                       "matter).")
            go_ = st.form_submit_button("Join", type="primary", icon=":material/login:")
        if go_:
            join_class(typed, lesson_step)
        if lecturer_route.served():
            st.caption(f"On a phone in a lecture hall: the [light class page]({hall_route.PATH}) (the QR code on "
                       "your lecturer's screen opens it) follows a lesson's steps with the vote and the answer only.")
    with start:
        st.markdown("**:material/co_present: Start a class** (for the lecturer)")
        st.caption("Hands out a new class code and its lecturer key. Then present any page with it: students join "
                   "with the code (or the QR code on your screen) and predict; you open and close voting on each "
                   "question and reveal the answer to the room.")
        st.button("Start a class", key="ws_start_home", on_click=start_class, args=(False,),
                  icon=":material/add_circle:")
        for code in list(st.session_state.get(STARTED_KEY, {})):
            if code in st.session_state.get(LESSON_CODES, ()):  # a lesson's class has its own card (app/lesson.py)
                continue
            st.markdown(f"Class code: **{md(code)}**")
            key_panel(code)
            st.caption(f"Present a page with class {md(code)}:")
            with st.container(horizontal=True):
                for d in descriptors().values():
                    st.page_link(ROOT / "pages" / f"{d.name}.py", label=d.title, icon=d.icon,
                                 query_params={PRESENT: "1", CLASS: code})


def join_class(typed: Optional[str], lesson_step: Optional[LessonStep] = None) -> None:
    """Take a student to the class `typed` names: to its lesson's current step, `lesson_step(code)`, when it follows
    a lesson (from then on the page follows the room: app/lesson.py), else to the view its lecturer presents."""
    text = re.sub(r"\s+", "", typed or "").upper()
    try:
        code = class_checks.class_code(text)
        open_ = database().find(code, client())  # a wrong code counts against the address (bounded)
        view = database().view(code) if open_ else False
    except wdb.Flood as why:
        st.warning(f"No class was looked up: {md(why)}.")
        return
    except wdb.Rejected as why:
        st.warning(f"That is not a class code: {md(why)}.")
        return
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not look up a class to join")
        st.error("The class database is unavailable: try again in a moment.")
        return
    if view is False:
        st.warning(f"No class {md(code)} is open: check the code on your lecturer's screen.")
        return
    st.session_state.setdefault(FOUND_KEY, {})[code] = True
    _join_said(code)
    step = lesson_step(code) if lesson_step is not None else None
    if step is not None:
        st.switch_page(ROOT / "pages" / f"{step[0]}.py", query_params=step[1])
    if view is None:
        st.info(f"Class {md(code)} is open, but its lecturer has not put a page up yet: try again in a moment.")
        return
    page, link = view
    pages = {p.stem for p in (ROOT / "pages").glob("*.py")}
    if page not in pages:
        st.warning(f"Class {md(code)} shows a page this lab does not have: ask your lecturer for the Student link.")
        return
    params = {k: v for k, v in parse_qsl(link) if k not in (PRESENT, KEY)}
    params.update({CLASS: code, STUDENT: "1", WORKSHOP: "1"})  # whatever was stored, this is a student's view
    st.switch_page(ROOT / "pages" / f"{page}.py", query_params=params)


def _join_said(code: str) -> Optional[str]:
    """`join`, with a refusal said once at the top of the next run (the student still sees the class's pages)."""
    try:
        return join(code)
    except wdb.Rejected as why:
        st.session_state[NOTICE_KEY] = ("warning", f"You are in class {md(code)}, but your predictions cannot be "
                                                   f"counted yet: {md(why)}. Reveal tries again.")
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not join class %s", code)
    return None


def found(code: str) -> Optional[bool]:
    """Whether the class `code` a link names is open, looked up once per session and code (workshop_db.find: a wrong
    code counts against the address, once); False, said on the page, when the address tried too many wrong codes;
    None when the database cannot be reached (the page's own checks then say so)."""
    known = st.session_state.setdefault(FOUND_KEY, {})
    if code in known:
        return known[code]
    try:
        ok = database().find(code, client())
    except wdb.Flood as why:
        st.warning(f"Class {md(code)} was not looked up: {md(why)}.", icon=":material/block:")
        return False
    except Exception:  # noqa: BLE001 - said by the page's own checks, which read the database again
        log_.exception("could not look up class %s", code)
        return None
    known[code] = ok
    return ok
