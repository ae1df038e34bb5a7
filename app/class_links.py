"""A class's links: the link flags a page reads (`workshop`, `class`, `present`, `student`; a `key` is dropped
unread), the Student link of a view, the join link and its QR code (read through app/query.py like every link
value).
"""

from __future__ import annotations

import io
from typing import Optional
from urllib.parse import urlencode, urljoin

import streamlit as st

from app import hall_route, lecturer_route, query
from app.controls import link_values
from lab.classroom import class_checks
from lab.classroom import workshop_db as wdb

WORKSHOP, CLASS, KEY, PRESENT, STUDENT = "workshop", "class", "key", "present", "student"
QR_PIXELS = 190  # the Student link's QR code on the projector: a phone reads it from the back of a room
md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


def link_flag(key: str) -> bool:
    """A link flag: `key=1` on, absent off; anything else is reported and dropped."""
    values = link_values(key)
    if not values:
        return False
    try:
        return query.parse_choice(values, ("1",)) == "1"
    except query.Rejected as why:
        st.warning(f"The link's value `{key}={query.shown('&'.join(values))}` was ignored: {md(why)}.")
        del st.query_params[key]
        return False


def class_code() -> Optional[str]:
    values = link_values(CLASS)
    if not values:
        return None
    try:
        return class_checks.class_code(query.single(values))
    except (query.Rejected, wdb.Rejected) as why:
        st.warning(f"The link's class `class={query.shown('&'.join(values))}` was ignored: {md(why)}. Predictions "
                   f"are not recorded for a class.")
        del st.query_params[CLASS]
        return None


def drop_link_key() -> None:
    """A lecturer key never travels in a link: one that arrives in it is removed unread (the link may have been on
    a projector, in a photo or in a proxy's log), and the lecturer is told where a key goes instead."""
    if KEY not in st.query_params:
        return
    del st.query_params[KEY]
    st.warning("A lecturer key in a link is never used, and was removed from this page's address: a link is seen "
               "by others. To present a class, enter its key in the key box of its presentation view.",
               icon=":material/key_off:")


def qr_png(text: str) -> bytes:
    """A QR code of `text` as a PNG (segno; medium error correction, for a projector photographed at an angle)."""
    import segno

    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="png", scale=8, border=3)
    return out.getvalue()


def absolute(link: str) -> str:
    """A page-relative link (`?a=1`) as the address a phone can open: against the page's own URL."""
    try:
        base = st.context.url or ""
    except Exception:  # noqa: BLE001 - bare mode
        base = ""
    return urljoin(base, link) if base else link


def student_link() -> str:
    """This view's link for students: every setting, `student=1`, and with a class `workshop=1` so they predict;
    never `present` (the lecturer's view), nor a `key` (none is ever put in a link; one that arrives is dropped)."""
    params = {k: st.query_params.get_all(k) for k in st.query_params if k not in (PRESENT, KEY, STUDENT)}
    params[STUDENT] = ["1"]
    if CLASS in params:
        params[WORKSHOP] = ["1"]
    return "?" + urlencode(params, doseq=True)


def join_link(code: str) -> str:
    """The absolute address a class's QR code and join link name: where the server serves it, the light student
    view (app/hall_route.py: the step's question, the vote and the revealed answer, pushed, for a hall of phones);
    otherwise Home's join link (`?join=CODE`), which takes a phone to the lesson's current step (app/lesson.py)."""
    try:
        base = st.context.url or ""
    except Exception:  # noqa: BLE001 - bare mode
        base = ""
    if lecturer_route.served():
        rel = f"./{hall_route.PATH}?" + urlencode({"class": code})
    else:
        rel = "./?" + urlencode({"join": code})
    return urljoin(base, rel) if base else rel.removeprefix("./")
