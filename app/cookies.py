"""What a page reads from and has the browser keep: a cookie the browser sent, a script that sets one of the lab's own
address (SameSite=Strict, Secure over https), and a script that posts a form to one of the server's routes (whose
answer sets an HttpOnly cookie a page script never writes). Only names and values of safe characters are ever
written into a script.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional
from urllib.parse import urlencode

import streamlit as st


def read(name: str) -> Optional[str]:
    """The value of the cookie `name` the browser sent, or None (none sent, or no browser: bare mode, AppTest)."""
    try:
        value = st.context.cookies.get(name)
    except Exception:  # noqa: BLE001 - no browser (bare mode, AppTest)
        return None
    return value if isinstance(value, str) else None


def cookie_script(name: str, value: str, age: int) -> str:
    """A script that sets (or with age 0 deletes) a cookie of the lab's own address: SameSite=Strict, and Secure when
    the page came over https. Only names and values of safe characters are ever written into it."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name) or not re.fullmatch(r"[A-Za-z0-9_.-]*", value):
        raise ValueError("a cookie of unexpected characters")
    try:
        secure = (st.context.url or "").startswith("https:")
    except Exception:  # noqa: BLE001 - bare mode
        secure = False
    flags = f"path=/; max-age={int(age)}; SameSite=Strict" + ("; Secure" if secure else "")
    return f"<script>document.cookie = '{name}={value}; {flags}';</script>"


def post_script(path: str, fields: Mapping[str, str]) -> str:
    """A script that posts `fields` (a form body, never in an address) to the lab's route `path`, relative to the
    page, from the page itself, so the answer's cookie is the server's (HttpOnly) and the session goes on. Only
    safe characters are ever written into it."""
    if not re.fullmatch(r"[A-Za-z0-9_/-]+", path) or not all(
            re.fullmatch(r"[A-Za-z0-9_]+", k) and re.fullmatch(r"[A-Za-z0-9_-]*", v) for k, v in fields.items()):
        raise ValueError("a post of unexpected characters")
    body = urlencode(dict(fields))
    return (f'<script>fetch(new URL("{path}", document.baseURI), {{method: "POST", credentials: "same-origin", '
            f'headers: {{"Content-Type": "application/x-www-form-urlencoded"}}, body: "{body}"}});</script>')
