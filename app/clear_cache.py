"""Student sessions cannot clear the server's shared state.

Streamlit's "Clear cache" (the app menu's item, or a `clear_cache` message any browser can send over the websocket,
whatever `client.toolbarMode` hides) empties every `st.cache_data` and `st.cache_resource` of the process, for all users
at once. The lab keeps server-wide objects there (the engine and its warmer, app/server_engine.py; the class database,
app/class_db.py; start-up work, app/shell.py), so any student could make the next page start a second engine and warm
every view again. Streamlit has no setting that switches the message off (1.67: `AppSession` handles it in
`_handle_clear_cache_request`), so `install` replaces that handler, once per process, with one that clears only the
sending session's own state, which is all a student's "Clear cache" should reach.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("layerlab.serve")
_lock = threading.Lock()


def _session_only(self) -> None:  # noqa: ANN001 - a streamlit AppSession
    """The handler `install` puts in place: this session's state only; the shared caches stay."""
    log.info("a page session asked to clear the server's caches: only its own state was cleared")
    self._session_state.clear()


def install() -> bool:
    """Put `_session_only` in place of Streamlit's clear_cache handler (idempotent); False, with a warning in the
    log, when this Streamlit has no such handler to replace (a newer version: check how it handles the message)."""
    from streamlit.runtime.app_session import AppSession

    with _lock:
        if getattr(AppSession, "_handle_clear_cache_request", None) is _session_only:
            return True
        if not hasattr(AppSession, "_handle_clear_cache_request"):
            log.warning("this Streamlit handles clear_cache elsewhere: a page session may clear the server's caches")
            return False
        AppSession._handle_clear_cache_request = _session_only  # type: ignore[method-assign]
        return True
