"""The Reproduce expander of every page: the view's command, the library call, a notebook, and the worksheet."""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

import streamlit as st

from app.worksheet import LOG_KEY, current_link, worksheet_html
from lab.classroom import reproduce as lab_reproduce


def reproduce(page: str, title: str, fn: Callable[..., Any], cfg: Any,
              figure: Optional[Callable[..., Any]] = None) -> None:
    """The Reproduce expander: the view's command, the library call, a notebook, and the session's worksheet."""
    with st.expander("Reproduce this view (command, Python, notebook, worksheet)", icon=":material/terminal:"):
        try:
            cmd = reproduce_command(cfg)
        except ValueError as exc:
            cmd = None
            st.caption(f"No command line for this setting: {exc}.")
        if cmd:
            where = "Run it" if lab_reproduce.installed() else "Run from the lab's folder"
            st.markdown(f"{where}; it prints this view's numbers (add `--json` for all of them):")
            st.code(cmd, language="bash", wrap_lines=True)
        st.markdown("The same in Python:")
        st.code(lab_reproduce.snippet(fn, cfg), language="python", wrap_lines=True)
        slug = re.sub(r"[^a-z0-9]+", "-", f"layerlab-{page}-{cfg.__class__.__name__}".lower()).strip("-")
        link, entries = current_link(), list(st.session_state.get(LOG_KEY, []))  # read now: the data is made later
        left, right = st.columns(2)
        left.download_button("Notebook (.ipynb)", lambda: lab_reproduce.notebook_text(fn, cfg, figure, title, link),
                             file_name=f"{slug}.ipynb", mime="application/x-ipynb+json", on_click="ignore",
                             icon=":material/download:", key=f"ws_nb_{page}",
                             help="Recomputes this view's result and redraws its main figure.")
        right.download_button("Worksheet (.html)", lambda: worksheet_html(entries),
                              file_name="layerlab-worksheet.html", mime="text/html", on_click="ignore",
                              icon=":material/description:", key=f"ws_sheet_{page}",
                              help="What you ran in this session: links, predictions, reveals and main figures, "
                                   "in one file that opens offline.")


def reproduce_command(cfg: Any) -> Optional[str]:
    return lab_reproduce.command(cfg)
