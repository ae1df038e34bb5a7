"""The lab's server with its own routes: `streamlit run app/layerlab_asgi.py` (app/serve.py, `make app`) finds the
`st.App` below and serves app/main.py with the lab's routes beside Streamlit's (Streamlit 1.67 runs an `st.App` found
in the file it is given on uvicorn, in this process).

The routes: app/lecturer_route.py, which sets the lecturer's pass as an HttpOnly cookie (a page script cannot), and
app/hall_route.py, the light student view a class's phones follow (pushed, no page session each).
"""

import sys
from pathlib import Path

import streamlit as st
from streamlit import config

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # streamlit puts app/ on the path, not the repo root where lab/ lives
    sys.path.insert(0, str(ROOT))

from app import hall_route, lecturer_route  # noqa: E402 - after the path is set

BASE = config.get_option("server.baseUrlPath") or ""
app = st.App(ROOT / "app" / "main.py", routes=[*lecturer_route.routes(BASE), *hall_route.routes(BASE)])
