"""Who presents a class: starting one (the server's new code and its lecturer key), the key kept in this session's
server memory and shown once in its panel, the lecturer's pass the server sets for a reload or a new tab (a
single-use ticket posted to app/lecturer_route.py, never the key), a pass a browser sends checked (a wrong one counts
against its address), and a closed class's pass forgotten.
"""

from __future__ import annotations

import logging
import time
from typing import Optional

import streamlit as st

from app import cookies, lecturer_route, query
from app.class_db import NOTICE_KEY, client, database
from app.class_links import CLASS, PRESENT, STUDENT, WORKSHOP
from lab.classroom import lecturer_pass
from lab.classroom import workshop_db as wdb

WRONG_COOKIE_KEY = "_layerlab_ws_wrong_cookie"  # {code: the lecturer cookie found wrong}: counted once, not each run
LECTURER_KEY = "_layerlab_ws_lecturer"  # {code: key} of the classes this session presents
STARTED_KEY = "_layerlab_ws_started"  # {code: key} of classes this session started, whose key is shown until put away
FORGET_COOKIES = "_layerlab_ws_forget"  # lecturer cookies to delete on the next run (a closed class's)
TICKET_KEY = "_layerlab_ws_ticket"  # {code: (ticket, until) or None}: the pass ticket this session posts, once
LECTURER_COOKIE = lecturer_route.COOKIE  # + the class's code: the lecturer's pass, set by the server (HttpOnly)
CLOSE_NOTICE = "_layerlab_ws_closed"

log_ = logging.getLogger("layerlab.workshop")  # every class tool logs under the workshop's name
md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


def _lecturer_cookie(code: str) -> str:
    return LECTURER_COOKIE + code


def remember(code: str, key: str) -> None:
    """This session presents `code` (the key in its server-side state); `keep_lecturer` on the next run asks the
    server to give the browser a pass."""
    st.session_state.setdefault(LECTURER_KEY, {})[code] = key


def keep_lecturer(code: str, credential: str) -> None:
    """Have the server give this browser the lecturer's pass of class `code`, so that a reload or a new tab presents
    the class too: a single-use ticket (workshop_db.lecturer_ticket, never the key) that the page posts to the
    server's lecturer route, whose answer sets the pass as an HttpOnly cookie. Once per session, posted on each run
    while the ticket lives (a second post of it is refused). Not when the browser sent the pass this session runs
    on, nor where the server has no such route (plain `streamlit run`, AppTest): the key then stays in the session."""
    if not lecturer_route.served():
        return
    held = st.session_state.setdefault(TICKET_KEY, {})
    if code not in held:
        held[code] = None
        if cookies.read(_lecturer_cookie(code)) == credential:  # the browser's own pass, checked by `lecturer_key`
            return
        try:
            held[code] = (database().lecturer_ticket(code, credential), time.time() + lecturer_pass.TICKET_SECONDS)
        except Exception:  # noqa: BLE001 - the key stays in this session; a reload asks for it
            log_.exception("could not issue a lecturer ticket for class %s", code)
            return
    entry = held[code]
    if entry is not None and time.time() < entry[1]:
        st.html(cookies.post_script(lecturer_route.PATH, {"ticket": entry[0]}), unsafe_allow_javascript=True)


def lecturer_key(code: str) -> Optional[str]:
    """What this browser presents class `code` with: this session's key, or the lecturer's pass its cookie carries,
    when the database says it is the open class's; None otherwise. A cookie's value that is not a pass (a key kept
    by an older version of the lab) is never used."""
    known = st.session_state.get(LECTURER_KEY, {}).get(code)
    if isinstance(known, str) and database().is_lecturer(code, known):
        return known
    sent = cookies.read(_lecturer_cookie(code))
    wrong = st.session_state.setdefault(WRONG_COOKIE_KEY, {})
    if sent is None or sent == known or wrong.get(code) == sent or not lecturer_pass.is_pass(sent):
        return None
    try:  # a pass someone sent: a wrong one counts against the address like a typed key (once)
        ok = database().check_key(code, sent, client())
    except wdb.Flood:
        log_.info("a lecturer pass of class %s was not checked: too many wrong keys from its address", code)
        return None
    if not ok:
        wrong[code] = sent
    return sent if ok else None


def start_class(here: bool = True) -> Optional[str]:
    """The "Start a class" button's callback: a new code and key from the server; with `here`, this page becomes the
    class's presentation view (`present=1&class=CODE`, no key in the address). Returns the code (None when no class
    was started: said on the next run)."""
    try:
        opened = database().start_class(client=client())
    except wdb.Rejected as why:
        st.session_state[NOTICE_KEY] = ("warning", f"No class was started: {md(why)}.")
        return None
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not start a class")
        st.session_state[NOTICE_KEY] = ("error", "No class was started: the class database is unavailable (the "
                                                 "server's log has the details).")
        return None
    log_.info("class %s started", opened.code)
    assert opened.key is not None
    remember(opened.code, opened.key)
    st.session_state.setdefault(STARTED_KEY, {})[opened.code] = opened.key
    if here:
        st.query_params[CLASS] = opened.code
        st.query_params[PRESENT] = "1"
        for k in (STUDENT, WORKSHOP):
            if k in st.query_params:
                del st.query_params[k]
    return opened.code


def _put_away(code: str) -> None:
    st.session_state.get(STARTED_KEY, {}).pop(code, None)


def key_panel(code: str) -> None:
    """The key of a class this session started, in a copy box, folded so that it is not on the projector unless
    opened; shown until the lecturer puts it away."""
    key = st.session_state.get(STARTED_KEY, {}).get(code)
    if not key:
        return
    with st.expander(f"Class {code} is open. Your lecturer key: open this away from the projector, and keep it",
                     icon=":material/key:"):
        st.markdown(f"This browser presents class **{md(code)}** from now on. To present it from another device, "
                    f"open the class's presentation view there and enter this key. It is shown only here, and "
                    f"stored nowhere (the server keeps a hash; this browser keeps a pass for "
                    f"{lecturer_pass.PASS_HOURS} hours, not the key): without it nobody, you included, can show "
                    f"the tally or end the class elsewhere.")
        with st.container(key="layerlab_key_copy"):
            st.code(key, language=None)
        st.button("I have kept it: hide the key", key=f"ws_key_kept_{code}", on_click=_put_away, args=(code,),
                  icon=":material/visibility_off:")


def close_notice() -> None:
    """The outcome of the lecturer's Close (said once, on the next run), and the closed class's pass cookie deleted
    by the server's route (a page script cannot delete an HttpOnly cookie)."""
    for gone in st.session_state.pop(FORGET_COOKIES, []):
        st.session_state.get(TICKET_KEY, {}).pop(gone, None)
        if lecturer_route.served():
            st.html(cookies.post_script(lecturer_route.PATH + "/forget", {"code": gone}), unsafe_allow_javascript=True)
    text = st.session_state.pop(CLOSE_NOTICE, None)
    if text:
        st.info(text, icon=":material/lock:")
