"""The room's tally on the lecturer's screen: the count of predictions and the voting window's state, then (once
voting closed) the predictions per option as a chart, redrawn live while the question is asked.
"""

from __future__ import annotations

import logging
import textwrap
from typing import Optional

import plotly.graph_objects as go
import streamlit as st

from app import charts, query, theme
from app.class_db import database
from app.question_verdict import room_words
from lab.classroom import class_votes
from lab.classroom import questions as lab_questions
from lab.classroom import workshop_db as wdb

POLL_SECONDS = 2.0

log_ = logging.getLogger("layerlab.workshop")  # every class tool logs under the workshop's name
md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


def _tally_figure(q: lab_questions.Question, tally: class_votes.Tally, ans: Optional[lab_questions.Answer],
                  compact: bool = False) -> go.Figure:
    """The room's predictions per option; `compact` (beside the verdict on the projector): no axis title."""
    from app import theme

    correct = ans.correct if ans is not None else None
    # Wrapped, so that beside the verdict (half the projector's width) the labels leave the bars room.
    labels = ["<br>".join(textwrap.wrap(f"{chr(65 + i)}. {t}", 34)) for i, t in enumerate(q.texts)]
    text = [f"{n} ({100 * n / tally.total:.0f} %)" if tally.total else "0" for n in tally.counts]
    if correct is not None:  # the run's answer is marked in words and by pattern, not by colour alone
        text[correct] += "  ✓ this run"
    fig = go.Figure(go.Bar(
        y=labels[::-1], x=list(tally.counts)[::-1], orientation="h", text=text[::-1], textposition="outside",
        marker={"color": [theme.MARK] * len(labels),
                "pattern": {"shape": ["/" if i == correct else "" for i in range(len(labels))][::-1]}},
        cliponaxis=False,
        hovertemplate="%{y}: %{x}<extra></extra>"))
    # Room on the right for the count and the answer's mark ("1 (100 %)  ✓ this run") beside the longest bar.
    fig.update_xaxes(title=None if compact else "predictions", rangemode="tozero",
                     range=[0, max(1, max(tally.counts)) * 2.2], dtick=max(1, round(max(1, max(tally.counts)) / 5)))
    fig.update_yaxes(automargin=True)
    theme.layout(fig, None, height=(40 if compact else 70) + 42 * len(labels), showlegend=False)
    return fig.update_layout(margin={"t": 10, "b": 20 if compact else 40, "r": 10})


WINDOW_WORDS = {
    "waiting": ":material/hourglass_top: Voting is not open yet: press **Open voting** when the room has read "
               "the question.",
    "open": ":material/how_to_vote: **Voting is open.** The bars appear when voting closes, so the room's "
            "predictions do not sway each other.",
    "closed": ":material/block: Voting is closed: no more predictions are counted.",
    "revealed": ":material/visibility: The answer was revealed to the room: voting on this question is over.",
}


def _tally_chart(code: str, key: Optional[str], q: lab_questions.Question, ans: Optional[lab_questions.Answer],
                 chart_key: str) -> None:
    try:
        tally = database().tally(code, q.key, len(q.options), key)
        window = database().window(code, q.key)
    except wdb.Rejected as why:
        st.warning(f"The tally is not shown: {md(why)}.")
        return
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not read the tally of class %s", code)
        st.warning("The class's predictions are unavailable: the class database cannot be reached (the server's "
                   "log has the details).")
        return
    noun = "prediction" if tally.total == 1 else "predictions"
    head = f"**Class {md(code)}: {tally.total} {noun}** · " + WINDOW_WORDS.get(window, "")
    revealed = window == "revealed" and ans is not None
    if revealed and tally.total:  # after the reveal the room's score leads, beside the verdict
        st.markdown(":material/groups: " + room_words(tally, ans))
        st.caption(head)
    else:
        st.markdown(head)
    if window in ("closed", "revealed") and tally.total:
        fig = _tally_figure(q, tally, ans, compact=revealed)
        if charts.scheme() == "dark":  # the tally follows the page's theme like every other chart (app/theme.py)
            fig = go.Figure(theme.dark(fig.to_dict()))
        st.plotly_chart(fig, theme=None, key=chart_key, config={"staticPlot": True})
        st.caption("Predictions per option: " + "; ".join(
            f"{md(t)}: {n}" for t, n in zip(q.texts, tally.counts, strict=True)))


@st.fragment(run_every=POLL_SECONDS)
def live_tally(code: str, key: Optional[str], q: lab_questions.Question,
                ans: Optional[lab_questions.Answer]) -> None:
    """The lecturer's live count (and, once voting is closed, the tally), redrawn every POLL_SECONDS (only this
    fragment reruns, not the page)."""
    _tally_chart(code, key, q, ans, chart_key=f"ws_tally_{q.key}")
