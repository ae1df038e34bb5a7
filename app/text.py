"""The lab's page structure, shared by every experiment page.

The idea · How it works · The code (read from the running source, never pasted) · What the simulations show
(this run's numbers) · When it breaks · Try this · Going further · Papers.
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Any, Callable, Optional, Sequence

import streamlit as st

from lab.catalog import recipe_evidence
from lab.runtime.plain import to_plain


def section(title: str) -> None:
    st.subheader(title, divider="gray")


def show_code(functions: Sequence[Callable], intro: str = "") -> None:
    """The real source of the functions this page runs, read with inspect at run time."""
    if intro:
        st.markdown(intro)
    for fn in functions:
        where, source = _source(fn)
        with st.expander(f"`{where}`", expanded=False):
            st.code(source, language="python", wrap_lines=True)  # no line cut at the edge


@functools.lru_cache(maxsize=512)
def _source(fn: Callable) -> tuple[str, str]:
    """(qualified name, source) of a function: read once per function object (inspect tokenizes the whole file on
    every call; a module reloaded after an edit brings new function objects, so the source stays current)."""
    return f"{inspect.getmodule(fn).__name__}.{fn.__qualname__}", inspect.getsource(fn)


def as_json(data: Any) -> Callable[[], str]:
    """A download button's data, made only when it is clicked: writing every number of a page as JSON costs a
    cached view 0.1-0.2 s of server CPU on every rerun."""
    return lambda: json.dumps(to_plain(data), indent=1)


def training_length(page: str, ran: int, task: Optional[str]) -> None:
    """How it works: the training length this run ran and the evidence that chose it, where it was studied."""
    words = recipe_evidence.evidence_words(page, ran, task)
    if words:
        st.markdown(f"**Training length.** {words}")


def papers(items: Sequence[tuple[str, str]]) -> None:
    """A list of (citation, link) pairs."""
    st.markdown("\n".join(f"- [{title}]({url})" for title, url in items))


def pts_between(a: float, b: float) -> str:
    """The difference a - b of two accuracies in percentage points, never '-0.0' (lab.claims.pts formats one
    difference as it is)."""
    d = round(100 * (a - b), 1)
    return f"{d + 0.0:+.1f} pts"
