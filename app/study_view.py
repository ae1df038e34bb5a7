"""A page's "Where it appears" section: each shipped study of the page (lab/study/shipped.py) as a map.

The section reads only what is stored (file checks, then the cells' claims read from the store: no training on the
page's thread). A study whose cells are all stored draws its map, its sentence, its data and its cost; one with
cells missing says how many, and offers to compute them on the lab's engine (every missing cell one engine job, so
a cluster spreads them; the lecturer's only while a class is on). A read answer is kept per study and store state,
so a page's rerun does not read the cells again.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import streamlit as st

from app import charts, page_admission, query, server_engine
from app import figures_study as figs
from lab.classroom import reproduce
from lab.classroom import where as where_questions
from lab.runtime.engine.admission import Busy
from lab.study import compute, shipped
from lab.study.spec import Study
from lab.study.words import effect_words

_answers: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()


def _answer(study: Study) -> dict[str, Any]:
    key = study.ident()
    with _lock:
        got = _answers.get(key)
    if got is None:
        got = compute.read(study)
        with _lock:
            _answers[key] = got
    return got


def _cost_words(a: dict[str, Any]) -> str:
    c = a["cost"]
    words = f"{c['cells']} cells, {c['calls']} stored results; recorded builds {c['cpu_seconds'] / 60:.1f} CPU-minutes"
    return words + (f" ({c['untimed']} untimed)" if c["untimed"] else "")


def _table(a: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for c in a["cells"]:
        lo, hi = c["interval"]
        rows.append({a["knob"]: str(c["value"]), "pooled effect": effect_words(c["effect"], c["unit"]),
                     "interval": f"{effect_words(lo, c['unit'])} to {effect_words(hi, c['unit'])}",
                     "seeds' signs": c["signs"], "its own verdict": c["verdict"], "over the grid": c["family"]})
    return rows


def _missing(study: Study, cells: list[compute.CellPlan], allowed: bool) -> None:
    done = sum(c.done for c in cells)
    st.info(f"Of this study's cells, {compute.cost_words(cells, 2)}. The map draws when every cell is.",
            icon=":material/grid_on:")
    if not allowed:
        st.caption("In a class only the lecturer computes a study (with the class's key).")
        return
    if st.button(f"Compute the {len(cells) - done} missing cells", key=f"study_{study.name}",
                 help="Each missing cell's results as one engine job (a cluster spreads them); this page fills in "
                      "as they land."):
        started = 0
        for c in cells:
            if c.done:
                continue
            for n in c.calls:
                try:
                    server_engine.runner().submit(f"{study.name}: {study.knob} = {c.value}, seed {c.seed}: {n.label}",
                                         n.fn, n.cfg, owner=page_admission.owner(), standard=False)
                    started += 1
                except Busy as why:  # a bound reached: say so, keep what started
                    st.warning(f"Not all cells started: {query.plain(why)}.", icon=":material/hourglass_disabled:")
                    break
        st.success(f"{started} jobs started on the engine; reload the page to see the map fill in.")


def _ask(workshop: Any, study: Study, answer: Optional[dict[str, Any]]) -> None:
    """A lesson step that asks where this study's effect begins: its question before the map (the page stops
    there until Reveal), answered by the map when every cell is stored."""
    q = where_questions.question(study)
    if workshop is None or not workshop.asks(q):
        return
    workshop.ask(q, [where_questions.claim(study, answer)] if answer is not None else [])


def show(page_name: str, lecturer: bool = True, in_class: bool = False, workshop: Any = None) -> None:
    """The section, under its heading, for every shipped study of the page (nothing for a page without one);
    `workshop` (app/workshop.Workshop): a lesson's where-question is asked before its study's map."""
    studies = shipped.of_page(page_name)
    if not studies:
        return
    st.subheader("Where it appears", help="A study: the page's claim along one setting at five training seeds "
                 "(each seed redraws the weights, the batch order and the data), every cell an ordinary stored "
                 "result. 'Appears from' is corrected over the grid (Holm); 'does not appear' needs the effect "
                 "shown below the study's margin. The command line: " + " ".join(reproduce.program()) + " study NAME.")
    for study in studies:
        st.markdown(f"**{study.title}**")
        cells = compute.plan(study)
        if not all(c.done for c in cells):
            _ask(workshop, study, None)
            _missing(study, cells, lecturer or not in_class)
            continue
        try:
            a = _answer(study)
        except ValueError as why:  # a cell whose claim is not made at that setting
            st.warning(f"This study cannot be read: {query.plain(why)}.")
            continue
        _ask(workshop, study, a)
        st.markdown(query.plain(a["sentence"]))
        charts.show(figs.figure(a), key=f"study_map_{study.name}", what=figs.WHAT)
        st.caption(f"{_cost_words(a)} · {' '.join(reproduce.program())} study {study.name}")
        with st.expander("The map as a table", icon=":material/table:"):
            st.dataframe(_table(a), hide_index=True, key=f"study_table_{study.name}")
