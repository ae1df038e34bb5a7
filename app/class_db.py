"""The server's class database as the pages reach it (lab/classroom/workshop_db.py: one per URL, LAYERLAB_DB or a
SQLite file in the store's folder), this network address's opaque id in a class, and the outcome of a class action
(what the database answered a start, a key, a join), said once at the top of the next run.
"""

from __future__ import annotations

import logging
from typing import Optional

import streamlit as st

from app.clients import client_address
from lab.classroom import class_engine
from lab.classroom import workshop_db as wdb

NOTICE_KEY = "_layerlab_ws_notice"  # a lecturer action's outcome, said once on the next run: (kind, text)

log_ = logging.getLogger("layerlab.workshop")  # every class tool logs under the workshop's name


@st.cache_resource(show_spinner=False)
def _database(url: str) -> wdb.Workshop:
    return wdb.Workshop(url)


def database() -> wdb.Workshop:
    """The server's predictions database (one per URL; LAYERLAB_DB or a SQLite file in the store's folder)."""
    return _database(class_engine.default_url())


def client(code: Optional[str] = None) -> str:
    """An opaque id of the student's network address (app/clients.py) in class `code`: its /24 or /48, keyed with
    the class's key (workshop_db.client_id); the address itself is never stored."""
    try:
        return database().client_id(client_address(), code)
    except Exception:  # noqa: BLE001 - bare mode, or no database (then no vote is stored anyway)
        return "unknown"


def notice() -> None:
    """The outcome of a lecturer's action (Start a class, a key typed in), said once on the next run."""
    said = st.session_state.pop(NOTICE_KEY, None)
    if said:
        kind, text = said
        {"warning": st.warning, "error": st.error, "success": st.success}.get(kind, st.info)(text)
