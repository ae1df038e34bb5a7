"""What the reveal says: the claims of a result, what happened (the claim's detail and verdict, or a where-question's
map), the answer the run gives, whether a prediction matched it, and how the room did.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import streamlit as st

from app import query
from lab import claims as lab_claims
from lab.claims import verdict_words
from lab.classroom import class_votes, reproduce
from lab.classroom import questions as lab_questions
from lab.runtime.plain import to_plain

md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


def claims_in(obj: Any) -> list[Mapping[str, Any]]:
    """The claims of a result, computed now (a result never stores them: lab/claims.py `of`), or the `claims` of
    plain data that carries them (a page's own list); those of every result in a list or tuple of them."""
    if isinstance(obj, (list, tuple)):
        return [c for item in obj for c in claims_in(item)]
    if lab_claims.reader(obj) is not None:
        return list(lab_claims.of(obj))
    obj = to_plain(obj)
    if isinstance(obj, dict):
        found = obj.get("claims")
        return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []
    return []


def said(q: lab_questions.Question, claim: Mapping[str, Any]) -> str:
    """A claim's verdict in words; a where-question's answer is its study's sentence."""
    return str(claim.get("verdict") or "") if q.study else verdict_words(claim)


def _prediction_line(q: lab_questions.Question, ans: lab_questions.Answer, chosen: int) -> str:
    m = ans.matches(chosen)
    said = md(q.texts[chosen])
    return (f":material/check: **Your prediction matched:** {said}" if m else
            f":material/close: **Your prediction did not match:** you said {said}" if m is False else
            f"**Your prediction:** {said} ({'the map' if q.study else 'this run'} cannot tell)")


def _where_box(q: lab_questions.Question, ans: lab_questions.Answer, chosen: Optional[int]) -> None:
    """A where-question's answer: what the study's map shows, the option it confirms, the prediction."""
    if ans.claim is None:
        st.info("The map of this study is not computed yet, so it confirms no option: the lecturer computes its "
                "cells below (the button, or " + " ".join(reproduce.program()) + " study " + md(q.study) + ").",
                icon=":material/grid_on:")
        return
    lines = [f"**What the map shows:** {md(ans.claim.get('detail', ''))}"]
    lines.append(f"**The answer the map gives:** {md(q.texts[ans.correct])}" if ans.correct is not None else
                 "**No option is confirmed:** the map does not show one place where the effect begins (a value "
                 "cannot tell, or the effect fades along the grid).")
    if chosen is not None:
        lines.append(_prediction_line(q, ans, chosen))
    st.markdown("  \n".join(lines), help=f"How: {md(ans.claim.get('rule', ''))}")


def verdict_box(q: lab_questions.Question, ans: lab_questions.Answer, chosen: Optional[int],
                 compact: bool = False) -> None:
    """What happened (the claim's detail and verdict) and whether the prediction matched. `compact` (the projector,
    beside the room's tally): the claim's rule behind the help mark instead of in the text."""
    if q.study:
        _where_box(q, ans, chosen)
        return
    if ans.claim is None:
        st.info("This run has no verdict for this question yet: its claim is not in the result (still being "
                "computed, see the progress bars, or not tested by this setting). Look at the numbers below.")
        return
    c = ans.claim
    rule = "" if compact else f" Rule: {md(c.get('rule', ''))}."
    said = verdict_words({"holds": c.get("holds"), "why": c.get("why")})
    lines = [f"**What happened:** {md(c.get('detail', ''))}",
             f"**The claim** ({md(c.get('claim', ''))}): **{md(said)}** in this "
             f"run.{rule}"]
    if ans.correct is not None:
        lines.append(f"**The answer this run gives:** {md(q.texts[ans.correct])}")
    else:
        lines.append("**No option is confirmed:** this run cannot decide the question (inside its noise).")
    if chosen is not None:
        lines.append(_prediction_line(q, ans, chosen))
    st.markdown("  \n".join(lines), help=f"Rule: {md(c.get('rule', ''))}" if compact else None)


def room_words(tally: class_votes.Tally, ans: lab_questions.Answer) -> str:
    """How the room did: "N of M predicted what happened" (bold), or that the run confirms no option."""
    if ans.correct is None:
        return f"this run confirms no option, so none of the {tally.total} predictions can be checked"
    return f"**{tally.counts[ans.correct]} of {tally.total} predicted what happened**"
