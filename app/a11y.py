"""Pages every student can read: the lab's few rules over Streamlit's own look, drawn once per run on every page
(app/shell.py), light and dark alike.

- Captions (`st.caption`, the grey text under controls, presets and charts) are Streamlit's text colour at 60 %
  opacity: 3.9:1 on white, under WCAG 2.1's 4.5:1 for text, and a link inside one faded with it (3.0:1). Here their
  words take the text colour at CAPTION_ALPHA instead (5.2:1 on white, 5.1:1 on the light sidebar, 8.1:1 and 6.6:1
  dark), and a link in a caption keeps its own colour, unfaded.
- A visible focus ring: an outline in FOCUS_RING around whatever the keyboard reached (3:1 or more against either
  paper and either sidebar; a text field's around its box, a checkbox's or a toggle's around its label, since the
  input itself is drawn inside or under them).
  Streamlit marks a focused page link with the same grey fill as the current page's; a
  focused link now has the ring, and the fill means "current page" (or the pointer) only.
- No label cut: a metric's label, a button's words and a page link wrap onto a second line instead of ending in
  "...". (A select's chosen value is a text field and cannot wrap: those labels are kept short where they are made,
  app/task_control.py.)

Streamlit draws its own skip link ("Skip to main content", `stSkipToContent`) as the first Tab stop of every page; it
moves the focus to the page's content (`#stMain`), past the sidebar's links and controls.

The colours below are Streamlit's as this version draws them (light: .streamlit/config.toml pins the text and link
colours to them, tests/test_contrast.py checks the two agree; the sidebar's are Streamlit's own defaults).
"""

from __future__ import annotations

import streamlit as st

# Each theme's paper, sidebar, text and link colour (light / dark), as the browser shows them.
LIGHT = {"background": "#ffffff", "sidebar": "#f8f8f7", "text": "#2f2d2b", "link": "#244fb4"}
DARK = {"background": "#0e1117", "sidebar": "#2d2b27", "text": "#edebe8", "link": "#85b8f8"}
CAPTION_ALPHA = 0.7  # a caption's words: the text colour at this opacity (Streamlit's own: 0.6)
FOCUS_RING = "#1C83E1"  # Streamlit's blue: 3.6-4.8:1 on each paper and sidebar, and apart from the red primary
FOCUS_WIDTH_PX = 3

CSS = f"""
<style>
[data-testid="stCaptionContainer"] {{opacity: 1 !important;}}
[data-testid="stCaptionContainer"] p, [data-testid="stCaptionContainer"] li {{
  color: color-mix(in srgb, currentColor {round(100 * CAPTION_ALPHA)}%, transparent);}}
:focus-visible {{outline: {FOCUS_WIDTH_PX}px solid {FOCUS_RING} !important; outline-offset: 2px !important;}}
input:focus-visible, textarea:focus-visible {{outline: none !important;}}
div:has(> input:not([type="checkbox"], [type="radio"]):focus-visible), div:has(> textarea:focus-visible),
label:has(input[type="checkbox"]:focus-visible, input[type="radio"]:focus-visible) {{
  outline: {FOCUS_WIDTH_PX}px solid {FOCUS_RING}; outline-offset: 2px; border-radius: 0.25rem;}}
[data-testid="stSidebarNavLink"]:focus-visible:not([aria-current="page"]):not(:hover) {{
  background-color: transparent !important;}}
.stMarkdownEllipsis, .stMarkdownEllipsis p {{white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important;}}
</style>
"""


def inject() -> None:
    """The rules above, for this run's page (a style element only: it takes no room on the page)."""
    st.html(CSS)
