"""A student's "Clear cache" (issue 60, item 5): Streamlit's `clear_cache` message, which any browser may send over the
websocket whatever the toolbar shows, emptied every st.cache_resource of the server (its engine, the class database,
the warmer) for all users. The server started as `make app` starts it, and every page run, put a handler in its place
that clears only the sender's own session state (app/clear_cache.py)."""

import types

import streamlit as st
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.runtime.app_session import AppSession

from app import clear_cache

from .apptest_util import open_page

made: list[int] = []


@st.cache_resource(show_spinner=False)
def _shared() -> int:
    """A server-wide object, as the lab's engine and class database are."""
    made.append(1)
    return len(made)


def _sent(session: types.SimpleNamespace) -> None:
    """A `clear_cache` message from a browser, dispatched as the server dispatches every message it receives."""
    msg = BackMsg()
    msg.clear_cache = True
    AppSession.handle_backmsg(session, msg)


def test_a_clear_cache_message_from_a_page_session_leaves_the_servers_shared_state():
    open_page("home")  # a page run of the lab installs the guard (app/shell.py), as the server's start does
    first = _shared()
    cleared = []
    session = types.SimpleNamespace(_session_state=types.SimpleNamespace(clear=lambda: cleared.append(1)))
    session._handle_clear_cache_request = types.MethodType(AppSession._handle_clear_cache_request, session)
    session.handle_backmsg_exception = lambda e: (_ for _ in ()).throw(e)
    _sent(session)
    assert cleared == [1]  # the sender's own session state: what its "Clear cache" may reach
    assert _shared() == first and made == [1]  # the shared object was not made again
    assert clear_cache.install()  # idempotent


def test_the_server_installs_the_guard_before_streamlit_starts(monkeypatch):
    from streamlit.web import cli

    from app import serve

    monkeypatch.setattr(AppSession, "_handle_clear_cache_request", lambda self: None)  # as a fresh process has it
    monkeypatch.setattr(cli, "main", lambda **kw: None)
    monkeypatch.setattr(serve, "start_retention", lambda: None)
    monkeypatch.setattr(serve.threading, "Thread", lambda **kw: types.SimpleNamespace(start=lambda: None))
    serve.main(["--server.port", "1"])
    assert AppSession._handle_clear_cache_request is clear_cache._session_only
