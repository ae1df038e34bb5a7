"""A student's voter identity in a class: issued by the server when the browser joins the class (bounded per
address: workshop_db.join), kept by the browser in a cookie signed with the class's key, so that a reload is the same
voter; a session that never joined votes nothing.
"""

from __future__ import annotations

import logging
import re
import secrets
from typing import Optional

import streamlit as st

from app import cookies
from app.class_db import client, database
from lab.classroom import class_keys

SESSION_KEY = "_layerlab_ws_session"
VOTER_KEY = "_layerlab_ws_voter"  # {code: voter id} the server issued this browser when it joined the class
COOKIE = "layerlab_voter_"  # + the class's code: the identity issued at the join, signed with the class's key

log_ = logging.getLogger("layerlab.workshop")  # every class tool logs under the workshop's name


def session_token() -> str:
    """An opaque id of this browser session (never shown)."""
    return st.session_state.setdefault(SESSION_KEY, secrets.token_urlsafe(16))


def voter(code: Optional[str]) -> Optional[str]:
    """This browser's voter identity in class `code`: the one the server issued when this session joined it, or the
    one its cookie carries (signed with the class's key by a join, so a reload is the same voter); None before a
    join (no identity of one's own choosing ever votes)."""
    if code is None:
        return None
    known = st.session_state.setdefault(VOTER_KEY, {})
    if code in known:
        return known[code]
    signed = cookies.read(COOKIE + code)  # None without a browser (bare mode, AppTest): the session's join is all
    if signed:
        try:
            found = database().voter_of(signed, code)
            if found is not None and database().is_joined(code, found):
                known[code] = found
                return found
        except Exception:  # noqa: BLE001 - a database that cannot be reached must not break the page
            log_.exception("could not check a voter cookie")
    return None


def join(code: str) -> str:
    """Join class `code` (the code typed on Home, `?join=`, the QR code, the Student link): the server issues this
    browser a voter identity unless it holds one (workshop_db.join, bounded per address), which `keep_voter` asks
    the browser to keep. wdb.Rejected when none was issued (Flood: too many joins from this address just now)."""
    vid = voter(code)
    if vid is None:
        vid = database().join(code, client=client())
        st.session_state.setdefault(VOTER_KEY, {})[code] = vid
    return vid


def keep_voter(code: str) -> None:
    """Ask the browser to keep its voter identity in class `code`, signed with the class's key (a cookie of the lab's
    own address, for the class's days; Secure over https: `cookie_script`), unless it sent that very one. st.html
    runs the script in the page itself."""
    vid = voter(code)
    if vid is None:
        return
    try:
        sent = st.context.cookies.get(COOKIE + code)
        signed = database().sign_voter(vid, code)
    except Exception:  # noqa: BLE001 - no browser or no database: the session keeps the identity
        return
    if sent == signed or not re.fullmatch(r"[A-Za-z0-9_.-]+", signed):
        return
    st.html(cookies.cookie_script(COOKIE + code, signed, class_keys.CLASS_DAYS * 86400), unsafe_allow_javascript=True)
