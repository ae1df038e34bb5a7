"""The lecturer's figure for the phones: once a lesson step's answer is revealed, the first figure the lecturer's page
draws after the question (its view's main figure, or the study's map) is kept with the class (lab/classroom/hall.py),
so the light student view (app/hall_route.py) shows what the projector shows without running anything itself."""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any, Optional

import streamlit as st

from app.hall_route import database
from lab.classroom import hall

EXPECT = "_layerlab_hall_expect"  # (code, credential, question, when): the next figure drawn is the step's
SENT = "_layerlab_hall_sent"  # {(code, question): digest of the figure kept}: a rerun keeps nothing twice
FRESH_SECONDS = 60.0
log = logging.getLogger("layerlab.workshop")


def expect(code: str, credential: Optional[str], question: str) -> None:
    """The lecturer's page revealed `question` of class `code`: keep the next figure it draws."""
    st.session_state[EXPECT] = (code, credential, question, time.monotonic())


def offer(fig: Any) -> None:
    """A figure the page draws: kept for the class when the page expects one (else nothing)."""
    try:
        want = st.session_state.pop(EXPECT, None)
    except Exception:  # noqa: BLE001 - no page session (a script, a test)
        return
    if want is None or time.monotonic() - want[3] > FRESH_SECONDS:
        return
    code, credential, question, _ = want
    text = fig.to_json()
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    sent = st.session_state.setdefault(SENT, {})
    if sent.get((code, question)) == digest:
        return
    try:
        hall.set_figure(database(), code, credential, question, text)
    except Exception:  # noqa: BLE001 - the phones show the answer and tally without it; the log says why
        log.exception("could not keep the figure of %s for class %s's phones", question, code)
        return
    sent[(code, question)] = digest
