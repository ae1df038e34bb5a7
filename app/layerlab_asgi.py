"""The lab's server with its own routes: `streamlit run app/layerlab_asgi.py` (app/serve.py, `make app`) finds the
`st.App` below and serves app/main.py with the lab's routes beside Streamlit's (Streamlit 1.67 runs an `st.App` found
in the file it is given on uvicorn, in this process).

The routes: app/lecturer_route.py, which sets the lecturer's pass as an HttpOnly cookie (a page script cannot), and
app/hall_route.py, the light student view a class's phones follow (pushed, no page session each).
"""

import signal
import sys
import threading
from pathlib import Path

import streamlit as st
from streamlit import config

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # streamlit puts app/ on the path, not the repo root where lab/ lives
    sys.path.insert(0, str(ROOT))

from app import hall_hub, hall_route, lecturer_route  # noqa: E402 - after the path is set


def _stop_phones_first() -> None:
    """uvicorn (which runs an st.App) stops on SIGINT / SIGTERM by waiting for every open response to finish, and a
    phone's live connection (app/hall_hub.py) never does: so the signal first ends those, then stops the server."""
    import uvicorn

    if getattr(uvicorn.Server.handle_exit, "_layerlab", False):
        return
    original = uvicorn.Server.handle_exit

    def handle_exit(self: uvicorn.Server, sig: int, frame: object) -> None:
        hall_hub.close_all()
        original(self, sig, frame)

    handle_exit._layerlab = True  # type: ignore[attr-defined]
    uvicorn.Server.handle_exit = handle_exit  # type: ignore[method-assign]
    # uvicorn binds its handlers before it imports this file (it loads the app inside its signal capture): point
    # those at the new method too (signals are set from the main thread only, where uvicorn loads the app).
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            bound = signal.getsignal(sig)
            if getattr(bound, "__func__", None) is original:
                signal.signal(sig, bound.__self__.handle_exit)


_stop_phones_first()

BASE = config.get_option("server.baseUrlPath") or ""
app = st.App(ROOT / "app" / "main.py", routes=[*lecturer_route.routes(BASE), *hall_route.routes(BASE)])
