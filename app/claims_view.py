"""The one renderer of claims ("Against the paper" on every page): the verdict comes from the claim, never the page.
A claim is a `lab.claims.Claim` (or its plain dict), computed when its result is read.

Each claim is drawn as one markdown block whose first line is `<icon> **<verdict>** · <statement>`, so an AppTest
can read the rendered verdicts back (`rendered_verdicts`) and compare them with the result's claims.
"""

from __future__ import annotations

import html
import re
from typing import Any, Mapping, Sequence

import streamlit as st

from app import jobs
from lab.claims import VERDICTS
from lab.classroom import seeds as lab_seeds

ICONS = {True: ":material/check_circle:", False: ":material/cancel:", None: ":material/help:"}
COLOURS = {True: "blue", False: "orange", None: "gray"}  # no red/green pair: readable without colour vision
_LINE = re.compile(r"\[\*\*(holds|does not hold|cannot tell)\*\*\] · ([^\n]+?)  $", re.M)


def _md(text: str) -> str:
    """Plain text for markdown: escape what Streamlit would interpret ($ for LaTeX, *, _, `, HTML)."""
    text = html.escape(str(text), quote=False)
    return re.sub(r"([\\`*_$\[\]])", r"\\\1", text)


def block(c: Mapping[str, Any]) -> str:
    """The markdown of one claim: verdict and statement, subject, then the numbers and the rule."""
    verdict = VERDICTS[c["holds"]]
    subject = f"**{_md(c['subject'])}**: " if c.get("subject") else ""
    head = f"{ICONS[c['holds']]} :{COLOURS[c['holds']]}[**{verdict}**] · {_md(c['claim'])}"
    return (f"{head}  \n{subject}{_md(c['detail'])}  \n"
            f":gray[Rule: {_md(c['rule'])} · Error: {_md(error_words(c))} · Source: {_md(c['source'])}]"
            + (f"  \n:gray[To decide: {_md(settle_words(c['settle']))}]" if c.get("settle") else ""))


def error_words(c: Mapping[str, Any]) -> str:
    """How the deciding error was obtained, from the claim's tests (e.g. 'paired over 4,000 inputs, 212 discordant
    (McNemar), 0.3 pts')."""
    tests = c.get("tests") or []
    if not tests:
        m = c["measured"]
        return f"{m.get('se_kind', 'unknown')}, {100 * float(m.get('se', float('nan'))):.2f} pts"
    return "; ".join(f"{t['how'] or t['se_kind']} ({t['se_kind']}, se "
                     + (f"{100 * t['se']:.2f} pts)" if t.get("unit", "pts") == "pts" else f"{t['se']:.3f} {t['unit']})")
                     for t in tests)


def settle_words(s: dict[str, Any]) -> str:
    """What would decide an undecided claim at the effect seen."""
    parts = []
    if s.get("seeds"):
        parts.append(f"about {s['seeds']} seeds in all (this verdict rests on {s.get('seeds_now', 1)})")
    if s.get("inputs"):
        parts.append(f"about {s['inputs']:,} held-out inputs")
    if not parts:
        return "no number of seeds or inputs within reach: the effect seen is at the rule's threshold"
    return " or ".join(parts) + ", if the effect is what this run saw"


def show(claims: Sequence[Mapping[str, Any]], intro: str = "", page: Any = None) -> None:
    """Draw claims, one bordered block each, in the order given. With the page (app/classroom.Page), a view whose
    claims cannot tell offers the seeds that would settle them (`more_seeds`)."""
    if intro:
        st.markdown(intro)
    if not claims:
        st.info("This setting tests none of the papers' claims.")
        return
    for c in claims:
        with st.container(border=True):
            st.markdown(block(c))
    if page is not None:
        more_seeds(claims, page)


SEEDS_KEY = "_layerlab_more_seeds"  # session_state: {(page, settings): seeds asked for}


def more_seeds(claims: Sequence[Mapping[str, Any]], page: Any) -> None:
    """"Cannot tell" to a decision: offer the seeds that would settle this view's undecided claims, run them on the
    engine (one job per seed, stored like any result), and show each claim's verdict over the seeds."""
    from lab.catalog import descriptors

    d = descriptors().get(page.name)
    if d is None or d.claims is None or getattr(page, "student", False):
        return
    settings = page.settings()
    seed = int(settings.get("seed", 0))
    ident = (page.name, tuple(sorted((k, repr(v)) for k, v in settings.items())))
    asked = st.session_state.setdefault(SEEDS_KEY, {}).get(ident)
    offer = lab_seeds.extra_seeds(claims, seed)
    if asked is None and offer is None:
        return
    with st.container(border=True, key=f"layerlab_seeds_{page.name}"):
        if asked is None:
            undecided = sum(1 for c in claims if c["holds"] is None)
            st.markdown(f"**{undecided} claim{'s' if undecided > 1 else ''} cannot tell at this seed.** At the "
                        f"effects this run saw, about {len(offer)} seeds in all would decide "
                        f"{'them' if undecided > 1 else 'it'}: each seed trains this view again from its own random "
                        "draws, and the verdict is then judged on the mean over seeds with their spread as the error.")
            n = st.number_input("Seeds in all", 2, lab_seeds.MAX_SETTLE_SEEDS, len(offer), key=f"seeds_n_{page.name}",
                                help="The current seed and the next ones. Each seed costs about as much as this view "
                                "did when it was first computed; stored seeds cost nothing.")
            if st.button(f"Run {n - 1} more seed{'s' if n > 2 else ''}", key=f"seeds_go_{page.name}", type="primary"):
                st.session_state[SEEDS_KEY][ident] = lab_seeds.seeds_around(seed, int(n))
                st.rerun()
            return
        # Extra seeds are extra work: a lecturer presenting gets them at the presets' priority, anyone else as a
        # custom setting (bounded per visitor by admission control, app/jobs.py).
        _pooled_view(page.name, settings, asked, standard=bool(getattr(page, "present", False)))


def _pooled_view(name: str, settings: dict[str, Any], seeds: Sequence[int], standard: bool) -> None:
    pending = jobs.Pending()
    per_seed = [pending.get(f"Claims at seed {s}", lab_seeds.claims_at, lab_seeds.SeedClaims.of(name, settings, s),
                            standard=standard) for s in seeds]
    done = [r for r in per_seed if r is not None]
    st.markdown(f"**Over seeds {', '.join(map(str, seeds))}** ({len(done)} of {len(seeds)} computed)")
    if len(done) < len(seeds):
        pending.show()
        return
    out = lab_seeds.pooled(per_seed, seeds)
    for c in out["claims"]:
        each = out["per_seed"].get(f"{c['key']}|{c.get('subject', '')}", {})
        with st.container(border=True):
            st.markdown(block(c) + "  \n:gray[Each seed alone: "
                        + _md(", ".join(f"{s}: {VERDICTS[v]}" for s, v in each.items())) + "]")


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


def expected_verdicts(claims: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The pairs `rendered_verdicts` must read back for these claims."""
    return [(VERDICTS[c["holds"]], _md(c["claim"])) for c in claims]
