"""Which page sessions may run, and when they work: who asks (the session and its client address), the open pages
one address keeps, and the turns its pages take to run their script or wait for their jobs (app/turns.py).

Why: every page session runs its script, and polls for the jobs it waits on, in the web server's one process; a
classroom behind a NAT shares an address, a flood of tabs from one address must not slow every student's page.
"""

from __future__ import annotations

import threading
from typing import Optional

import streamlit as st

from app.clients import client_address
from app.turns import Turns
from lab.runtime import settings
from lab.runtime.engine.admission import LOCAL, Owner


def owner() -> Optional[Owner]:
    """Who asks: this page session and its client address (app/clients.py; admission control bounds each); None
    outside a page."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
    except Exception:  # noqa: BLE001 - bare mode
        return None
    if ctx is None:
        return None
    return Owner(ctx.session_id, client_address())


def alive(session_id: str) -> bool:
    """Whether the page session `session_id` is still open (a session that ended frees its place and its turn)."""
    try:
        from streamlit.runtime import Runtime

        answer = Runtime.instance().is_active_session(session_id)
    except Exception:  # noqa: BLE001 - no runtime: nobody is known to have left
        return True
    return answer if isinstance(answer, bool) else True  # AppTest's runtime is a stand-in that knows nobody


# Open pages (sessions) per client address: a classroom behind a NAT, not a flood. LAYERLAB_PAGES_PER_CLIENT
# raises it where a whole lecture hall reaches the lab through one address. Both bounds are made at the first page,
# not at import: a mistyped value is then the start-up check's one line (app/shell.py), not an import traceback.
_pages: Optional[Turns] = None  # a place is held until its session ends (never released by a run)
_bounds_lock = threading.Lock()


def _bound(which: str) -> Turns:
    """`_pages` or `_turns`, made from its setting on first use."""
    global _pages, _turns
    with _bounds_lock:
        if _pages is None:
            _pages = Turns(settings.get("LAYERLAB_PAGES_PER_CLIENT"))
        if _turns is None:
            _turns = Turns(settings.get("LAYERLAB_WORKING_PER_CLIENT"))
        return _pages if which == "pages" else _turns


def pages_per_client() -> int:
    """How many pages one address may have open (LAYERLAB_PAGES_PER_CLIENT)."""
    return _bound("pages").limit


def admit_page() -> bool:
    """Whether this page session may run: one address keeps at most pages_per_client() sessions (every run of a page
    takes the web server's CPU, so 200 tabs or scripted sessions from one address would slow every student's page).
    Sessions that have ended free their place. Connections without an address share one place-holder (UNKNOWN);
    only a session without a connection (LOCAL: bare mode, AppTest) is not bounded."""
    who = owner()
    if who is None or who.client == LOCAL:
        return True
    return _bound("pages").try_take(who.client, who.session, alive)


# Pages of one address that work (run their script or wait for jobs) at once (app/turns.py); the rest wait their
# turn without using the server's CPU. LAYERLAB_WORKING_PER_CLIENT raises it where a hall shares one address.
_turns: Optional[Turns] = None
WAITING = "_layerlab_waits_for_jobs"  # session_state: this run left jobs to wait for (it keeps its turn)


def take_turn() -> bool:
    """Hold one of this address's turns before the page works, waiting (with a notice) while the address's other
    pages hold them all; False if the session ended meanwhile. Not bounded without a connection (LOCAL)."""
    st.session_state[WAITING] = False
    who = owner()
    turns = _bound("turns")
    if who is None or who.client == LOCAL or turns.try_take(who.client, who.session, alive):
        return True
    note = st.empty()
    busy = "1 page of the lab from your network is" if turns.limit == 1 else \
        f"{turns.limit} pages of the lab from your network are"
    note.info(f"{busy} computing; this one starts as soon as {'it' if turns.limit == 1 else 'one of them'} is done. "
              f"Close the pages you no longer need.", icon=":material/hourglass_top:")
    got = turns.wait(who.client, who.session, alive)
    note.empty()
    return got


def end_turn() -> None:
    """At the end of a page's run: give the turn back unless the page left jobs to wait for (its polling works)."""
    who = owner()
    if who is not None and who.client != LOCAL and not st.session_state.get(WAITING, False):
        _bound("turns").release(who.client, who.session)
