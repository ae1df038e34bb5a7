"""The one renderer of claims ("Against the paper" on every page): the verdict comes from the claim, never the page.

Each claim is drawn as one markdown block whose first line is `<icon> **<verdict>** · <statement>`, so an AppTest
can read the rendered verdicts back (`rendered_verdicts`) and compare them with the result's claims.
"""

from __future__ import annotations

import html
import re
from typing import Any, Sequence

import streamlit as st

from lab.claims import VERDICTS

ICONS = {True: ":material/check_circle:", False: ":material/cancel:", None: ":material/help:"}
COLOURS = {True: "blue", False: "orange", None: "gray"}  # no red/green pair: readable without colour vision
_LINE = re.compile(r"\[\*\*(holds|does not hold|cannot tell)\*\*\] · ([^\n]+?)  $", re.M)


def _md(text: str) -> str:
    """Plain text for markdown: escape what Streamlit would interpret ($ for LaTeX, *, _, `, HTML)."""
    text = html.escape(str(text), quote=False)
    return re.sub(r"([\\`*_$\[\]])", r"\\\1", text)


def block(c: dict[str, Any]) -> str:
    """The markdown of one claim: verdict and statement, subject, then the numbers and the rule."""
    verdict = VERDICTS[c["holds"]]
    subject = f"**{_md(c['subject'])}**: " if c.get("subject") else ""
    head = f"{ICONS[c['holds']]} :{COLOURS[c['holds']]}[**{verdict}**] · {_md(c['claim'])}"
    return (f"{head}  \n{subject}{_md(c['detail'])}  \n"
            f":gray[Rule: {_md(c['rule'])} · Source: {_md(c['source'])}]")


def show(claims: Sequence[dict[str, Any]], intro: str = "") -> None:
    """Draw claims, one bordered block each, in the order given."""
    if intro:
        st.markdown(intro)
    if not claims:
        st.info("This setting tests none of the papers' claims.")
        return
    for c in claims:
        with st.container(border=True):
            st.markdown(block(c))


def pending() -> None:
    """What the section says while the numbers a claim needs are still computing."""
    st.info("The verdicts appear here when the numbers they rest on are computed (see the progress bars above).")


def rendered_verdicts(markdown_texts: Sequence[str]) -> list[tuple[str, str]]:
    """(verdict word, statement as rendered) pairs read back from markdown (for tests: the page equals its claims)."""
    out = []
    for t in markdown_texts:
        for m in _LINE.finditer(t):
            out.append((m.group(1), m.group(2)))
    return out


def expected_verdicts(claims: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The pairs `rendered_verdicts` must read back for these claims."""
    return [(VERDICTS[c["holds"]], _md(c["claim"])) for c in claims]
