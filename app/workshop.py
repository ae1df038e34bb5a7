"""Workshop mode: predict, then reveal; the class's tally for the lecturer; reproduce a view; the session worksheet.

Link flags (read through app/query.py like every link value):
- `workshop=1`: a view that has a question (lab/classroom/questions.py) keeps its results behind it until the student
  picks an option and presses Reveal; the reveal says what happened, with the numbers (the claim's detail), and whether
  the prediction matched the run's claim.
- `class=CODE`: predictions are recorded for that class (lab/classroom/workshop_db.py). With `present=1` the same link
  is the lecturer's view: it opens the class, shows the question with the live tally (a fragment that polls), a
  Reveal for the room and a Reset for the question.

Everything a student or a link sends is validated before it is stored or drawn; text drawn from data is escaped.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import secrets
from typing import Any, Callable, Optional, Sequence
from urllib.parse import urlencode

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

from app import query
from lab.catalog.presets import Preset
from lab.claims import VERDICTS
from lab.classroom import questions as lab_questions
from lab.classroom import reproduce as lab_reproduce
from lab.classroom import workshop_db as wdb

WORKSHOP, CLASS = "workshop", "class"
SESSION_KEY = "_layerlab_ws_session"
STATE_KEY = "_layerlab_ws_state"  # {(page, question key): {"chosen": int | None, "revealed": bool}}
LOG_KEY = "_layerlab_ws_log"  # the worksheet: what this session ran, predicted and saw
LOG_LIMIT = 30  # views kept for the worksheet (the oldest go first)
POLL_SECONDS = 2.0


def md(text: Any) -> str:
    """Plain text for markdown: HTML escaped and markdown's active characters neutralised."""
    text = html.escape(str(text), quote=False)
    return re.sub(r"([\\`*_$\[\]<>#|~])", r"\\\1", text)


@st.cache_resource(show_spinner=False)
def _database(url: str) -> wdb.Workshop:
    return wdb.Workshop(url)


def database() -> wdb.Workshop:
    """The server's predictions database (one per URL; LAYERLAB_DB or a SQLite file in the store's folder)."""
    return _database(wdb.default_url())


def session_token() -> str:
    """An opaque id of this browser session (never shown; one vote per session and question)."""
    return st.session_state.setdefault(SESSION_KEY, secrets.token_urlsafe(16))


def _link_values(key: str) -> list[str]:
    try:
        return st.query_params.get_all(key)
    except Exception:  # noqa: BLE001 - no URL (bare mode)
        return []


def link_flag(key: str) -> bool:
    """A link flag: `key=1` on, absent off; anything else is reported and dropped."""
    values = _link_values(key)
    if not values:
        return False
    try:
        return query.parse_choice(values, ("1",)) == "1"
    except query.Rejected as why:
        st.warning(f"The link's value `{key}={query.shown('&'.join(values))}` was ignored: {why}.")
        del st.query_params[key]
        return False


def _class_code() -> Optional[str]:
    values = _link_values(CLASS)
    if not values:
        return None
    try:
        return wdb.class_code(query.single(values))
    except (query.Rejected, wdb.Rejected) as why:
        st.warning(f"The link's class `class={query.shown('&'.join(values))}` was ignored: {why}. Predictions "
                   f"are not recorded for a class.")
        del st.query_params[CLASS]
        return None


def current_link() -> str:
    """This view's link (the app's URL and every query parameter)."""
    try:
        base = st.context.url or ""
        params = {k: st.query_params.get_all(k) for k in st.query_params}
    except Exception:  # noqa: BLE001 - bare mode
        return ""
    return base + ("?" + urlencode(params, doseq=True) if params else "")


class Workshop:
    """The workshop tools of one page (created by app/classroom.py's Page)."""

    def __init__(self, page: str, presets: Sequence[Preset], defaults: dict[str, Any], present: bool) -> None:
        self.page, self.presets, self.defaults, self.present = page, tuple(presets), dict(defaults), present
        self.questions = lab_questions.of(page)
        self.on = link_flag(WORKSHOP)
        self.code = _class_code()
        self.lecturer = present and self.code is not None

    @property
    def active(self) -> bool:
        return self.on or self.lecturer

    def question(self, settings: dict[str, Any]) -> Optional[lab_questions.Question]:
        return lab_questions.question_for(self.questions, self.presets, self.defaults, settings)

    def _state(self, q: lab_questions.Question) -> dict[str, Any]:
        states = st.session_state.setdefault(STATE_KEY, {})
        return states.setdefault((self.page, q.key, self.lecturer), {"chosen": None, "revealed": False})

    # -- the gate ------------------------------------------------------------------------------------------------
    def gate(self, result: Any, settings: dict[str, Any]) -> None:
        """Before a view's results: ask its question and stop the page until Reveal (no-op outside workshop mode)."""
        if not self.active:
            return
        q = self.question(settings)
        if q is None:
            self._no_question()
            return
        ans = lab_questions.answer(q, claims_in(result))
        state = self._state(q)
        with st.container(border=True, key="layerlab_question"):
            st.markdown(f"**:material/quiz: Predict first** · {md(q.prompt)}")
            if self.lecturer:
                self._lecturer(q, ans, state)
            else:
                self._student(q, ans, state)
        if not state["revealed"]:
            st.stop()

    def _no_question(self) -> None:
        if not self.questions:
            return
        names = {p.key: p.label for p in self.presets}
        st.info("Workshop mode: this setting has no question. These do: "
                + ", ".join(f"**{md(names.get(q.preset, 'the default view'))}**" for q in self.questions)
                + " (the presets under Try this).")

    def _student(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any]) -> None:
        if not state["revealed"]:
            chosen = st.radio("Your prediction", range(len(q.options)), index=state["chosen"],
                              format_func=lambda i: q.texts[i], key=f"ws_pick_{q.key}")
            st.button("Reveal", type="primary", disabled=chosen is None, key=f"ws_reveal_{q.key}",
                      icon=":material/visibility:", on_click=self._reveal, args=(q, ans),
                      help="Commit to your prediction and see the result." + (
                          f" Your prediction is counted in class {self.code}." if self.code else ""))
            if self.code:
                st.caption(f"Class {md(self.code)}: your prediction is counted when you press Reveal (anonymous; "
                           f"pressing again later replaces it).")
            if state.get("error"):
                st.warning(state["error"])
            return
        _verdict_box(q, ans, state["chosen"])
        if self.code:
            _tally_chart(self.code, q, ans, key=f"ws_tally_student_{q.key}")

    def _reveal(self, q: lab_questions.Question, ans: lab_questions.Answer) -> None:
        """The Reveal button's callback: record the prediction (with a class), then reveal."""
        state = self._state(q)
        chosen = st.session_state.get(f"ws_pick_{q.key}")
        if chosen is None:
            return
        state["chosen"], state["error"] = chosen, None
        if self.code:
            try:
                database().vote(self.code, q.key, q.texts, session_token(), q.texts[chosen])
            except wdb.Rejected as why:
                state["error"] = f"Your prediction was not recorded: {why}."
                return
            except Exception as exc:  # noqa: BLE001 - a database that cannot be reached must not break the page
                state["error"] = f"Your prediction could not be recorded (the class database is unavailable: " \
                                 f"{type(exc).__name__})."
        state["revealed"] = True
        log({"kind": "prediction", "page": self.page, "question": q.prompt, "chosen": q.texts[chosen],
             "matched": ans.matches(chosen), "detail": (ans.claim or {}).get("detail", ""),
             "verdict": VERDICTS.get((ans.claim or {}).get("holds"), "") if ans.claim else "", "link": current_link()})

    def _lecturer(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any]) -> None:
        try:
            database().open_class(self.code)
        except Exception as exc:  # noqa: BLE001 - shown, not raised
            st.error(f"The class database is unavailable ({type(exc).__name__}): predictions cannot be counted.")
            return
        if state["revealed"]:  # on the projector the answer goes first: it must fit 1280x720 with the tally
            _verdict_box(q, ans, None)
        left, right = st.columns([3, 1])
        with left:
            _live_tally(self.code, q, ans if state["revealed"] else None)
        with right:
            if not state["revealed"]:
                st.button("Reveal to the room", type="primary", icon=":material/visibility:",
                          key=f"ws_room_reveal_{q.key}", on_click=_set, args=(state, "revealed", True))
            else:
                st.button("Hide the results", icon=":material/visibility_off:", key=f"ws_room_hide_{q.key}",
                          on_click=_set, args=(state, "revealed", False))
            st.button("Reset this question", icon=":material/restart_alt:", key=f"ws_room_reset_{q.key}",
                      on_click=self._reset, args=(q,), help=f"Forget class {self.code}'s predictions on it.")
            st.caption(f"Class **{md(self.code)}** · students' link: this page with `workshop=1&class={self.code}`")

    def _reset(self, q: lab_questions.Question) -> None:
        try:
            database().reset(self.code, q.key)
        except Exception as exc:  # noqa: BLE001
            st.session_state["_layerlab_ws_reset_error"] = type(exc).__name__
        self._state(q)["revealed"] = False


def claims_in(obj: Any) -> list[dict[str, Any]]:
    """The claims a result carries: a result's `claims`, or those of every result in a list or tuple of them."""
    if isinstance(obj, dict):
        found = obj.get("claims")
        return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []
    if isinstance(obj, (list, tuple)):
        return [c for item in obj for c in claims_in(item)]
    return []


def _set(state: dict[str, Any], key: str, value: Any) -> None:
    state[key] = value


def _verdict_box(q: lab_questions.Question, ans: lab_questions.Answer, chosen: Optional[int]) -> None:
    """What happened (the claim's detail and verdict) and whether the prediction matched."""
    if ans.claim is None:
        st.info("This run has no verdict for this question yet: its claim is not in the result (still being "
                "computed, see the progress bars, or not tested by this setting). Look at the numbers below.")
        return
    c = ans.claim
    lines = [f"**What happened:** {md(c.get('detail', ''))}",
             f"**The claim** ({md(c.get('claim', ''))}): **{VERDICTS.get(c.get('holds'), 'cannot tell')}** in this "
             f"run. Rule: {md(c.get('rule', ''))}."]
    if ans.correct is not None:
        lines.append(f"**The answer this run gives:** {md(q.texts[ans.correct])}")
    else:
        lines.append("**No option is confirmed:** this run cannot decide the question (inside its noise).")
    if chosen is not None:
        m = ans.matches(chosen)
        said = md(q.texts[chosen])
        lines.append(f":material/check: **Your prediction matched:** {said}" if m else
                     f":material/close: **Your prediction did not match:** you said {said}" if m is False else
                     f"**Your prediction:** {said} (this run cannot tell)")
    st.markdown("  \n".join(lines))


def _tally_figure(q: lab_questions.Question, tally: wdb.Tally, ans: Optional[lab_questions.Answer]) -> go.Figure:
    from app import theme

    correct = ans.correct if ans is not None else None
    labels = [f"{chr(65 + i)}. {t}" for i, t in enumerate(q.texts)]
    text = [f"{n} ({100 * n / tally.total:.0f} %)" if tally.total else "0" for n in tally.counts]
    if correct is not None:  # the run's answer is marked in words and by pattern, not by colour alone
        text[correct] += "  ✓ this run"
    fig = go.Figure(go.Bar(
        y=labels[::-1], x=list(tally.counts)[::-1], orientation="h", text=text[::-1], textposition="outside",
        marker={"color": [theme.MARK] * len(labels),
                "pattern": {"shape": ["/" if i == correct else "" for i in range(len(labels))][::-1]}},
        hovertemplate="%{y}: %{x}<extra></extra>"))
    fig.update_xaxes(title="predictions", rangemode="tozero", range=[0, max(1, max(tally.counts)) * 1.35],
                     dtick=max(1, round(max(1, max(tally.counts)) / 5)))
    fig.update_yaxes(automargin=True)
    theme.layout(fig, None, height=70 + 42 * len(labels), showlegend=False)
    return fig.update_layout(margin={"t": 10, "b": 40, "r": 10})


def _tally_chart(code: str, q: lab_questions.Question, ans: Optional[lab_questions.Answer], key: str) -> None:
    try:
        tally = database().tally(code, q.key, len(q.options))
    except Exception as exc:  # noqa: BLE001
        st.caption(f"The class's predictions are unavailable ({type(exc).__name__}).")
        return
    noun = "prediction" if tally.total == 1 else "predictions"
    st.markdown(f"**Class {md(code)}: {tally.total} {noun}**")
    st.plotly_chart(_tally_figure(q, tally, ans), theme=None, key=key, config={"staticPlot": True})
    if tally.total:
        st.caption("Predictions per option: " + "; ".join(
            f"{md(t)}: {n}" for t, n in zip(q.texts, tally.counts, strict=True)))


@st.fragment(run_every=POLL_SECONDS)
def _live_tally(code: str, q: lab_questions.Question, ans: Optional[lab_questions.Answer]) -> None:
    """The lecturer's tally, redrawn every POLL_SECONDS (only this fragment reruns, not the page)."""
    _tally_chart(code, q, ans, key=f"ws_tally_{q.key}")


# -- the worksheet: what this session did, as one offline HTML file ---------------------------------------------
def log(entry: dict[str, Any]) -> None:
    """Add an entry to this session's worksheet (a view replaces an earlier entry of the same link)."""
    entries: list[dict[str, Any]] = st.session_state.setdefault(LOG_KEY, [])
    entry = {**entry, "at": dt.datetime.now(dt.UTC).strftime("%H:%M:%S UTC")}
    if entry["kind"] == "view":
        entries[:] = [e for e in entries if not (e["kind"] == "view" and e.get("link") == entry.get("link"))]
    entries.append(entry)
    views = [e for e in entries if e["kind"] == "view"]
    if len(views) > LOG_LIMIT:
        entries.remove(views[0])


def log_view(page: str, title: str, describe: str, fig: Optional[go.Figure]) -> None:
    log({"kind": "view", "page": page, "title": title, "describe": describe, "link": current_link(),
         "figure": fig.to_json() if fig is not None else None})


def worksheet_html(entries: Sequence[dict[str, Any]]) -> str:
    """An offline HTML page of the session's entries; Plotly's script is inlined once (no network needed)."""
    e = html.escape
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Layer Lab worksheet</title>",
             "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;"
             "line-height:1.5}section{border-top:1px solid #999;padding:0.5rem 0}.ok{font-weight:bold}"
             "code{word-break:break-all}</style></head><body>",
             "<h1>Layer Lab worksheet</h1>",
             f"<p>Saved {e(dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC'))}: the views you ran in "
             "this session, your predictions and what each run showed. Every figure works offline.</p>"]
    if not entries:
        parts.append("<p>Nothing yet: open a page of the lab and run a setting.</p>")
    plotly_js = True
    for item in entries:
        link = item.get("link") or ""
        href = f" (<a href='{e(link, quote=True)}'>open this view</a>)" if link.startswith(("http://", "https://")) \
            else ""
        if item["kind"] == "view":
            parts.append(f"<section><h2>{e(item.get('title', ''))}</h2><p>{e(item.get('at', ''))} · "
                         f"{e(item.get('describe', ''))}{href}</p>")
            if item.get("figure"):
                fig = pio.from_json(item["figure"])
                parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js,
                                         config={"displaylogo": False}))
                plotly_js = False
            parts.append("</section>")
        else:
            m = item.get("matched")
            verdict = "matched" if m else "did not match" if m is False else "could not be checked"
            parts.append(f"<section><h2>Prediction: {e(item.get('question', ''))}</h2><p>{e(item.get('at', ''))}"
                         f"{href}</p><p>You predicted <b>{e(item.get('chosen', ''))}</b>; it <span class='ok'>"
                         f"{e(verdict)}</span> the run.</p><p>What happened: {e(item.get('detail', ''))}"
                         f"{' (the claim: ' + e(item['verdict']) + ')' if item.get('verdict') else ''}</p></section>")
    parts.append("</body></html>")
    return "".join(parts)


# -- reproduce ------------------------------------------------------------------------------------------------------
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
            st.markdown("Run from the lab's folder; it prints this view's numbers (add `--json` for all of them):")
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


def numbers_json(result: Any) -> str:
    return json.dumps(lab_reproduce.numbers(result), sort_keys=True)
