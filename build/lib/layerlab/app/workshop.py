"""Workshop mode: predict, then reveal; the class's tally for the lecturer (the worksheet is app/worksheet.py, the
Reproduce expander app/reproduce_view.py).

Link flags (read through app/query.py like every link value):
- `workshop=1`: a view that has a question (lab/classroom/questions.py) keeps its results behind it until the student
  picks an option and presses Reveal; the reveal says what happened, with the numbers (the claim's detail), and whether
  the prediction matched the run's claim.
- `class=CODE`: predictions are recorded for that class (lab/classroom/workshop_db.py). With `present=1` the same link
  is the lecturer's view: a code that is not open is opened, with a new random key put into the link (`key=...`,
  shown this once: the lecturer's link); the live tally, Reveal to the room, Reset and Close need that key. A code
  that is open already needs its key; without it the view is a student's. `student=1` never makes a lecturer.
- A student's vote is one per browser: a signed voter id kept in a cookie (the Streamlit session when the browser
  keeps none), and bounded per voter and per network address (workshop_db.py).

Everything a student or a link sends is validated before it is stored or drawn; text drawn from data is escaped.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from typing import Any, Optional, Sequence

import plotly.graph_objects as go
import streamlit as st

from app import query
from app.clients import client_address
from app.controls import link_values
from app.worksheet import current_link, log
from lab.catalog.presets import Preset
from lab.claims import VERDICTS
from lab.classroom import questions as lab_questions
from lab.classroom import workshop_db as wdb
from lab.runtime.plain import to_plain

WORKSHOP, CLASS, KEY = "workshop", "class", "key"
SESSION_KEY = "_layerlab_ws_session"
VOTER_KEY = "_layerlab_ws_voter"  # this session's voter id (from the browser's cookie, or the session's own)
LECTURER_KEY = "_layerlab_ws_lecturer"  # {code: key} of the classes this session opened or presented
COOKIE = "layerlab_voter"
CLOSE_NOTICE = "_layerlab_ws_closed"
STATE_KEY = "_layerlab_ws_state"  # {(page, question key): {"chosen": int | None, "revealed": bool}}
POLL_SECONDS = 2.0


log_ = logging.getLogger("layerlab.workshop")
md = query.plain  # plain text for markdown (HTML escaped, markdown's active characters neutralised)


@st.cache_resource(show_spinner=False)
def _database(url: str) -> wdb.Workshop:
    return wdb.Workshop(url)


def database() -> wdb.Workshop:
    """The server's predictions database (one per URL; LAYERLAB_DB or a SQLite file in the store's folder)."""
    return _database(wdb.default_url())


def session_token() -> str:
    """An opaque id of this browser session (never shown)."""
    return st.session_state.setdefault(SESSION_KEY, secrets.token_urlsafe(16))


def voter() -> str:
    """This student's voter id: the one in the browser's signed cookie, so a reload is the same voter; otherwise
    the session's own, which `keep_voter` then asks the browser to keep."""
    known = st.session_state.get(VOTER_KEY)
    if known:
        return known
    try:
        signed = st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001 - no browser (bare mode, AppTest): the session is the voter
        signed = None
    found = None
    if signed:
        try:
            found = database().voter_of(signed)
        except Exception:  # noqa: BLE001 - a database that cannot be reached must not break the page
            log_.exception("could not check a voter cookie")
    st.session_state[VOTER_KEY] = found or session_token()
    return st.session_state[VOTER_KEY]


def keep_voter() -> None:
    """Ask the browser to keep this voter id (a cookie of the lab's own address, for the class's days), unless it
    sent that very id. st.html runs the script in the page itself."""
    vid = voter()
    try:
        sent = st.context.cookies.get(COOKIE)
        signed = database().sign_voter(vid)
    except Exception:  # noqa: BLE001 - no browser or no database: the session stays the voter
        return
    if sent == signed or not re.fullmatch(r"[A-Za-z0-9_.-]+", signed):
        return
    age = wdb.CLASS_DAYS * 86400
    st.html(f"<script>document.cookie = '{COOKIE}={signed}; path=/; max-age={age}; SameSite=Strict';</script>",
            unsafe_allow_javascript=True)


def client() -> str:
    """An opaque id of the student's network address (app/clients.py; a keyed hash: the address itself is never
    stored)."""
    try:
        address = client_address()
        secret = database().secret()
    except Exception:  # noqa: BLE001 - bare mode, or no database (then no vote is stored anyway)
        return "unknown"
    return hmac.new(secret, address.encode(), hashlib.sha256).hexdigest()[:24]


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


def _class_code() -> Optional[str]:
    values = link_values(CLASS)
    if not values:
        return None
    try:
        return wdb.class_code(query.single(values))
    except (query.Rejected, wdb.Rejected) as why:
        st.warning(f"The link's class `class={query.shown('&'.join(values))}` was ignored: {md(why)}. Predictions "
                   f"are not recorded for a class.")
        del st.query_params[CLASS]
        return None


def _link_key() -> Optional[str]:
    values = link_values(KEY)
    if not values:
        return None
    if len(values) == 1 and wdb.TOKEN.fullmatch(values[0]):
        return values[0]
    st.warning("The link's lecturer key is malformed and was ignored.")  # a secret: never echoed
    del st.query_params[KEY]
    return None


class Workshop:
    """The workshop tools of one page (created by app/classroom.py's Page). `present`: the link asks for the
    lecturer's view (`present=1`, never `student=1`); it is granted with the class's key only."""

    def __init__(self, page: str, presets: Sequence[Preset], defaults: dict[str, Any], present: bool) -> None:
        self.page, self.presets, self.defaults, self.present = page, tuple(presets), dict(defaults), present
        self.questions = lab_questions.of(page)
        self.on = link_flag(WORKSHOP)
        self.code = _class_code()
        self.key: Optional[str] = None
        self.lecturer = present and self.code is not None and self._open()

    def _open(self) -> bool:
        """Open the class for its lecturer (or present it with its key); False, with a message, when refused."""
        assert self.code is not None
        known = st.session_state.setdefault(LECTURER_KEY, {})
        key = _link_key() or known.get(self.code)
        try:
            opened = database().open_class(self.code, key)
        except wdb.NotLecturer as why:
            st.warning(f"This link cannot present the class: {md(why)}. This is the student view (the lecturer's "
                       f"own link carries the class's key).", icon=":material/lock:")
            return False
        except wdb.Rejected as why:
            st.warning(f"The class cannot be opened: {md(why)}.")
            return False
        except Exception:  # noqa: BLE001 - shown, not raised
            log_.exception("could not open class %s", self.code)
            st.error("The class database is unavailable: predictions cannot be counted, and the class cannot be "
                     "opened. The server's log has the details.")
            return False
        if opened.key is not None:  # a new term: the key goes into this page's link, shown this once
            key = opened.key
            st.query_params[KEY] = key
            st.success(f"Class **{md(self.code)}** is open (term {opened.term}). This page's address now carries "
                       "the class's key: it is your lecturer link, shown only this once, so bookmark it. Without "
                       "it nobody, you included, can show the tally, reset or close the class. Students get the "
                       "Student link (no key).", icon=":material/key:")
        known[self.code] = self.key = key
        return True

    @property
    def active(self) -> bool:
        return self.on or self.code is not None  # a class's link always asks the question

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

    def _earlier(self, q: lab_questions.Question, state: dict[str, Any]) -> None:
        """Once per session: this voter's stored prediction (a reload, the same browser) becomes the choice."""
        if not self.code or state.get("looked"):
            return
        state["looked"] = True
        try:
            mine = database().mine(self.code, q.key, voter())
        except Exception:  # noqa: BLE001 - only a convenience: the vote itself reports a database failure
            log_.exception("could not read a stored prediction")
            return
        if mine is not None and 0 <= mine < len(q.options):
            state["chosen"], state["earlier"] = mine, True
            st.session_state.setdefault(f"ws_pick_{q.key}", mine)

    def _student(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any]) -> None:
        if self.code:
            keep_voter()
        if not state["revealed"]:
            self._earlier(q, state)
            chosen = st.radio("Your prediction", range(len(q.options)), index=state["chosen"],
                              format_func=lambda i: q.texts[i], key=f"ws_pick_{q.key}")
            st.button("Reveal", type="primary", disabled=chosen is None, key=f"ws_reveal_{q.key}",
                      icon=":material/visibility:", on_click=self._reveal, args=(q, ans),
                      help="Commit to your prediction and see the result." + (
                          f" Your prediction is counted in class {self.code}." if self.code else ""))
            if self.code:
                self._counting()
                st.caption(f"Class {md(self.code)}: your prediction is counted when you press Reveal (anonymous; "
                           f"one per browser: pressing again later replaces it)."
                           + (" This browser predicted before: that prediction is selected." if state.get("earlier")
                              else ""))
            return
        if state.get("error"):
            st.warning(state["error"], icon=":material/error:")
        _verdict_box(q, ans, state["chosen"])
        if self.code and not state.get("error"):
            st.caption(f"Counted in class {md(self.code)}; the lecturer shows the class's tally.")

    def _counting(self) -> None:
        """Before Reveal: say now when the prediction cannot be counted (the class is not open, the database is
        down), so nobody is surprised after it."""
        try:
            if database().is_open(self.code):
                return
            st.warning(f"Class {md(self.code)} is not open, so your prediction will not be counted: check the code, "
                       f"or wait for the lecturer to open it. Reveal still shows you the result.",
                       icon=":material/error:")
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not check class %s", self.code)
            st.warning("The class database is unavailable: your prediction cannot be counted right now. Reveal "
                       "still shows you the result.", icon=":material/error:")

    def _reveal(self, q: lab_questions.Question, ans: lab_questions.Answer) -> None:
        """The Reveal button's callback: record the prediction (with a class), then reveal, recorded or not (a
        prediction that cannot be counted still shows the result, and says why it was not counted)."""
        state = self._state(q)
        chosen = st.session_state.get(f"ws_pick_{q.key}")
        if chosen is None:
            return
        state["chosen"], state["error"] = chosen, None
        if self.code:
            try:
                database().vote(self.code, q.key, q.texts, voter(), q.texts[chosen], client=client())
            except wdb.Rejected as why:
                log_.info("prediction not counted in class %s: %s", self.code, why)
                state["error"] = f"Your prediction was not counted: {md(why)}. Here is the result anyway."
            except Exception:  # noqa: BLE001 - a database that cannot be reached must not break the page
                log_.exception("could not store a prediction in class %s", self.code)
                state["error"] = ("Your prediction could not be counted: the class database is unavailable (the "
                                  "server's log has the details). Here is the result anyway.")
        state["revealed"] = True
        log({"kind": "prediction", "page": self.page, "question": q.prompt, "chosen": q.texts[chosen],
             "matched": ans.matches(chosen), "detail": (ans.claim or {}).get("detail", ""),
             "verdict": VERDICTS.get((ans.claim or {}).get("holds"), "") if ans.claim else "", "link": current_link()})

    def _lecturer(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any]) -> None:
        if state["revealed"]:  # on the projector the answer goes first: it must fit 1280x720 with the tally
            _verdict_box(q, ans, None)
        left, right = st.columns([3, 1])
        with left:
            _live_tally(self.code, self.key, q, ans if state["revealed"] else None)
        with right:
            if not state["revealed"]:
                st.button("Reveal to the room", type="primary", icon=":material/visibility:",
                          key=f"ws_room_reveal_{q.key}", on_click=_set, args=(state, "revealed", True))
            else:
                st.button("Hide the results", icon=":material/visibility_off:", key=f"ws_room_hide_{q.key}",
                          on_click=_set, args=(state, "revealed", False))
            st.button("Reset this question", icon=":material/restart_alt:", key=f"ws_room_reset_{q.key}",
                      on_click=self._reset, args=(q,), help=f"Forget class {self.code}'s predictions on it.")
            st.button("Close the class", icon=":material/lock:", key="ws_room_close", on_click=self._close,
                      help="End this term: no more predictions; the code can be opened again with an empty tally.")
            if state.get("reset_error"):
                st.warning(state["reset_error"], icon=":material/error:")
            st.caption(f"Class **{md(self.code)}** · students' link: the Student link, or this page with "
                       f"`workshop=1&class={self.code}`")

    def _reset(self, q: lab_questions.Question) -> None:
        state = self._state(q)
        state["reset_error"] = None
        try:
            database().reset(self.code, q.key, self.key)
        except wdb.Rejected as why:
            log_.warning("reset refused in class %s: %s", self.code, why)
            state["reset_error"] = f"Reset was refused: {md(why)}."
            return
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not reset question %s of class %s", q.key, self.code)
            state["reset_error"] = ("Reset failed: the class database is unavailable (the server's log has the "
                                    "details). The predictions are still there.")
            return
        state["revealed"] = False

    def _close(self) -> None:
        try:
            database().close_class(self.code, self.key)
        except Exception as exc:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not close class %s", self.code)
            why = md(exc) if isinstance(exc, wdb.Rejected) else "the class database is unavailable"
            st.session_state[CLOSE_NOTICE] = f"The class could not be closed: {why}."
            return
        st.session_state.get(LECTURER_KEY, {}).pop(self.code, None)
        st.session_state[CLOSE_NOTICE] = (f"Class {md(self.code)} is closed. Its predictions are deleted "
                                          f"{wdb.CLASS_DAYS} days after it was opened.")
        for k in (KEY, CLASS, "present"):  # not reopened by the next run
            if k in st.query_params:
                del st.query_params[k]


def close_notice() -> None:
    """The outcome of the lecturer's Close (said once, on the next run)."""
    text = st.session_state.pop(CLOSE_NOTICE, None)
    if text:
        st.info(text, icon=":material/lock:")


def claims_in(obj: Any) -> list[dict[str, Any]]:
    """The claims a result carries: a result's `claims`, or those of every result in a list or tuple of them (typed
    results are read as their plain data)."""
    obj = to_plain(obj)
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


def _tally_chart(code: str, key: Optional[str], q: lab_questions.Question, ans: Optional[lab_questions.Answer],
                 chart_key: str) -> None:
    try:
        tally = database().tally(code, q.key, len(q.options), key)
    except wdb.Rejected as why:
        st.warning(f"The tally is not shown: {md(why)}.")
        return
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not read the tally of class %s", code)
        st.warning("The class's predictions are unavailable: the class database cannot be reached (the server's "
                   "log has the details).")
        return
    noun = "prediction" if tally.total == 1 else "predictions"
    st.markdown(f"**Class {md(code)}: {tally.total} {noun}**")
    st.plotly_chart(_tally_figure(q, tally, ans), theme=None, key=chart_key, config={"staticPlot": True})
    if tally.total:
        st.caption("Predictions per option: " + "; ".join(
            f"{md(t)}: {n}" for t, n in zip(q.texts, tally.counts, strict=True)))


@st.fragment(run_every=POLL_SECONDS)
def _live_tally(code: str, key: Optional[str], q: lab_questions.Question,
                ans: Optional[lab_questions.Answer]) -> None:
    """The lecturer's tally, redrawn every POLL_SECONDS (only this fragment reruns, not the page)."""
    _tally_chart(code, key, q, ans, chart_key=f"ws_tally_{q.key}")
