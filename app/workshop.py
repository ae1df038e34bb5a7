"""Workshop mode: predict, then reveal; the class's code, its lecturer and the voting window (the worksheet is
app/worksheet.py, the Reproduce expander app/reproduce_view.py).

Link flags (read through app/query.py like every link value):
- `workshop=1`: a view that has a question (lab/classroom/questions.py) keeps its results behind it until the student
  picks an option and presses Reveal; the reveal says what happened, with the numbers (the claim's detail), and whether
  the prediction matched the run's claim.
- `class=CODE`: predictions are recorded for that class (lab/classroom/workshop_db.py). Codes are handed out by the
  server: "Start a class" (Home, or a page's toolbar) makes the code and its lecturer key. With `present=1` the link
  asks for the lecturer's view, granted only to a browser that holds the key: the session that started the class,
  one whose lecturer typed the key into the password box, or a browser with the class's lecturer pass. The key is
  never in a link (a link is on the projector, in photos, histories and logs), never in a download nor a log line,
  never in a cookie; a `key=` in a link is dropped unread. `student=1` never makes a lecturer. The key lives in the
  session's server memory; for a reload or a new tab, the page posts a single-use ticket to the server's lecturer
  route, which sets the lecturer's pass (an HMAC, never the key, 12 hours) as an HttpOnly, SameSite=Strict cookie
  (app/lecturer_route.py, lab/classroom/lecturer_pass.py); a page script never writes it.
- A student's vote is one per browser, and a voter costs a join: the server issues a voter identity when a student
  joins the class (the code typed on Home, `?join=CODE` from the QR code, or a page opened with the class's Student
  link), bounded per network address (workshop_db.join's token bucket); the browser keeps it in a cookie signed with
  the class's key, so a reload is the same voter. A session that never joined votes nothing. Votes are bounded per
  voter and per address, counted only while the lecturer has voting open on the question, and final
  (workshop_db.py): the student sees the result right after voting, so nobody changes a vote after seeing the
  answer, reload or not.
- Wrong class codes (a join, a class link) and wrong lecturer keys (typed, or a pass in a cookie) count per address
  (workshop_db.find, check_key): past the bound, the address's tries wait a minute. A closed class and a code that
  names none read alike.

Everything a student or a link sends is validated before it is stored or drawn; text drawn from data is escaped.
"""

from __future__ import annotations

import io
import logging
import re
import secrets
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence
from urllib.parse import parse_qsl, urlencode, urljoin

import plotly.graph_objects as go
import streamlit as st

from app import charts, hall_publish, hall_route, lecturer_route, query, theme
from app.clients import client_address
from app.controls import link_values
from app.worksheet import current_link, log
from lab import claims as lab_claims
from lab.catalog import descriptors
from lab.catalog.presets import Preset
from lab.claims import verdict_words
from lab.classroom import lecturer_pass, reproduce
from lab.classroom import questions as lab_questions
from lab.classroom import where as where_questions
from lab.classroom import workshop_db as wdb
from lab.runtime.plain import to_plain

WORKSHOP, CLASS, KEY, PRESENT, STUDENT = "workshop", "class", "key", "present", "student"
SESSION_KEY = "_layerlab_ws_session"
VOTER_KEY = "_layerlab_ws_voter"  # {code: voter id} the server issued this browser when it joined the class
WRONG_COOKIE_KEY = "_layerlab_ws_wrong_cookie"  # {code: the lecturer cookie found wrong}: counted once, not each run
FOUND_KEY = "_layerlab_ws_found"  # {code: open?} as this session's look-up found it (workshop_db.find): once each
LECTURER_KEY = "_layerlab_ws_lecturer"  # {code: key} of the classes this session presents
STARTED_KEY = "_layerlab_ws_started"  # {code: key} of classes this session started, whose key is shown until put away
VIEW_KEY = "_layerlab_ws_view"  # {code: (page, query)}: the class's current view as this session last stored it
NOTICE_KEY = "_layerlab_ws_notice"  # a lecturer action's outcome, said once on the next run: (kind, text)
FORGET_COOKIES = "_layerlab_ws_forget"  # lecturer cookies to delete on the next run (a closed class's)
TICKET_KEY = "_layerlab_ws_ticket"  # {code: (ticket, until) or None}: the pass ticket this session posts, once
COOKIE = "layerlab_voter_"  # + the class's code: the identity issued at the join, signed with the class's key
LECTURER_COOKIE = lecturer_route.COOKIE  # + the class's code: the lecturer's pass, set by the server (HttpOnly)
CLOSE_NOTICE = "_layerlab_ws_closed"
LESSON_CODES = "_layerlab_lesson_codes"  # codes of the lessons this session started (Home shows each as a card)
STATE_KEY = "_layerlab_ws_state"  # {(page, question key, lecturer): {"chosen": int | None, "revealed": bool, ...}}
POLL_SECONDS = 2.0
QR_PIXELS = 190  # the Student link's QR code on the projector: a phone reads it from the back of a room
ROOT = Path(__file__).resolve().parents[1]


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


def voter(code: Optional[str]) -> Optional[str]:
    """This browser's voter identity in class `code`: the one the server issued when this session joined it, or the
    one its cookie carries (signed with the class's key by a join, so a reload is the same voter); None before a
    join (no identity of one's own choosing ever votes)."""
    if code is None:
        return None
    known = st.session_state.setdefault(VOTER_KEY, {})
    if code in known:
        return known[code]
    signed = _cookie(COOKIE + code)  # None without a browser (bare mode, AppTest): the session's join is all
    if signed:
        try:
            found = database().voter_of(signed, code)
            if found is not None and database().is_joined(code, found):
                known[code] = found
                return found
        except Exception:  # noqa: BLE001 - a database that cannot be reached must not break the page
            log_.exception("could not check a voter cookie")
    return None


def join(code: str) -> str:
    """Join class `code` (the code typed on Home, `?join=`, the QR code, the Student link): the server issues this
    browser a voter identity unless it holds one (workshop_db.join, bounded per address), which `keep_voter` asks
    the browser to keep. wdb.Rejected when none was issued (Flood: too many joins from this address just now)."""
    vid = voter(code)
    if vid is None:
        vid = database().join(code, client=client())
        st.session_state.setdefault(VOTER_KEY, {})[code] = vid
    return vid


def keep_voter(code: str) -> None:
    """Ask the browser to keep its voter identity in class `code`, signed with the class's key (a cookie of the lab's
    own address, for the class's days; Secure over https: `cookie_script`), unless it sent that very one. st.html
    runs the script in the page itself."""
    vid = voter(code)
    if vid is None:
        return
    try:
        sent = st.context.cookies.get(COOKIE + code)
        signed = database().sign_voter(vid, code)
    except Exception:  # noqa: BLE001 - no browser or no database: the session keeps the identity
        return
    if sent == signed or not re.fullmatch(r"[A-Za-z0-9_.-]+", signed):
        return
    st.html(cookie_script(COOKIE + code, signed, wdb.CLASS_DAYS * 86400), unsafe_allow_javascript=True)


def client(code: Optional[str] = None) -> str:
    """An opaque id of the student's network address (app/clients.py) in class `code`: its /24 or /48, keyed with
    the class's key (workshop_db.client_id); the address itself is never stored."""
    try:
        return database().client_id(client_address(), code)
    except Exception:  # noqa: BLE001 - bare mode, or no database (then no vote is stored anyway)
        return "unknown"


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


def _drop_link_key() -> None:
    """A lecturer key never travels in a link: one that arrives in it is removed unread (the link may have been on
    a projector, in a photo or in a proxy's log), and the lecturer is told where a key goes instead."""
    if KEY not in st.query_params:
        return
    del st.query_params[KEY]
    st.warning("A lecturer key in a link is never used, and was removed from this page's address: a link is seen "
               "by others. To present a class, enter its key in the key box of its presentation view.",
               icon=":material/key_off:")


def _cookie(name: str) -> Optional[str]:
    try:
        value = st.context.cookies.get(name)
    except Exception:  # noqa: BLE001 - no browser (bare mode, AppTest)
        return None
    return value if isinstance(value, str) else None


def cookie_script(name: str, value: str, age: int) -> str:
    """A script that sets (or with age 0 deletes) a cookie of the lab's own address: SameSite=Strict, and Secure when
    the page came over https. Only names and values of safe characters are ever written into it."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name) or not re.fullmatch(r"[A-Za-z0-9_.-]*", value):
        raise ValueError("a cookie of unexpected characters")
    try:
        secure = (st.context.url or "").startswith("https:")
    except Exception:  # noqa: BLE001 - bare mode
        secure = False
    flags = f"path=/; max-age={int(age)}; SameSite=Strict" + ("; Secure" if secure else "")
    return f"<script>document.cookie = '{name}={value}; {flags}';</script>"


def _lecturer_cookie(code: str) -> str:
    return LECTURER_COOKIE + code


def _remember(code: str, key: str) -> None:
    """This session presents `code` (the key in its server-side state); `keep_lecturer` on the next run asks the
    server to give the browser a pass."""
    st.session_state.setdefault(LECTURER_KEY, {})[code] = key


def post_script(path: str, fields: Mapping[str, str]) -> str:
    """A script that posts `fields` (a form body, never in an address) to the lab's route `path`, relative to the
    page, from the page itself, so the answer's cookie is the server's (HttpOnly) and the session goes on. Only
    safe characters are ever written into it."""
    if not re.fullmatch(r"[A-Za-z0-9_/-]+", path) or not all(
            re.fullmatch(r"[A-Za-z0-9_]+", k) and re.fullmatch(r"[A-Za-z0-9_-]*", v) for k, v in fields.items()):
        raise ValueError("a post of unexpected characters")
    body = urlencode(dict(fields))
    return (f'<script>fetch(new URL("{path}", document.baseURI), {{method: "POST", credentials: "same-origin", '
            f'headers: {{"Content-Type": "application/x-www-form-urlencoded"}}, body: "{body}"}});</script>')


def keep_lecturer(code: str, credential: str) -> None:
    """Have the server give this browser the lecturer's pass of class `code`, so that a reload or a new tab presents
    the class too: a single-use ticket (workshop_db.lecturer_ticket, never the key) that the page posts to the
    server's lecturer route, whose answer sets the pass as an HttpOnly cookie. Once per session, posted on each run
    while the ticket lives (a second post of it is refused). Not when the browser sent the pass this session runs
    on, nor where the server has no such route (plain `streamlit run`, AppTest): the key then stays in the session."""
    if not lecturer_route.served():
        return
    held = st.session_state.setdefault(TICKET_KEY, {})
    if code not in held:
        held[code] = None
        if _cookie(_lecturer_cookie(code)) == credential:  # the browser's own pass, checked by `lecturer_key`
            return
        try:
            held[code] = (database().lecturer_ticket(code, credential), time.time() + lecturer_pass.TICKET_SECONDS)
        except Exception:  # noqa: BLE001 - the key stays in this session; a reload asks for it
            log_.exception("could not issue a lecturer ticket for class %s", code)
            return
    entry = held[code]
    if entry is not None and time.time() < entry[1]:
        st.html(post_script(lecturer_route.PATH, {"ticket": entry[0]}), unsafe_allow_javascript=True)


def lecturer_key(code: str) -> Optional[str]:
    """What this browser presents class `code` with: this session's key, or the lecturer's pass its cookie carries,
    when the database says it is the open class's; None otherwise. A cookie's value that is not a pass (a key kept
    by an older version of the lab) is never used."""
    known = st.session_state.get(LECTURER_KEY, {}).get(code)
    if isinstance(known, str) and database().is_lecturer(code, known):
        return known
    sent = _cookie(_lecturer_cookie(code))
    wrong = st.session_state.setdefault(WRONG_COOKIE_KEY, {})
    if sent is None or sent == known or wrong.get(code) == sent or not lecturer_pass.is_pass(sent):
        return None
    try:  # a pass someone sent: a wrong one counts against the address like a typed key (once)
        ok = database().check_key(code, sent, client())
    except wdb.Flood:
        log_.info("a lecturer pass of class %s was not checked: too many wrong keys from its address", code)
        return None
    if not ok:
        wrong[code] = sent
    return sent if ok else None


def start_class(here: bool = True) -> Optional[str]:
    """The "Start a class" button's callback: a new code and key from the server; with `here`, this page becomes the
    class's presentation view (`present=1&class=CODE`, no key in the address). Returns the code (None when no class
    was started: said on the next run)."""
    try:
        opened = database().start_class(client=client())
    except wdb.Rejected as why:
        st.session_state[NOTICE_KEY] = ("warning", f"No class was started: {md(why)}.")
        return None
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not start a class")
        st.session_state[NOTICE_KEY] = ("error", "No class was started: the class database is unavailable (the "
                                                 "server's log has the details).")
        return None
    log_.info("class %s started", opened.code)
    assert opened.key is not None
    _remember(opened.code, opened.key)
    st.session_state.setdefault(STARTED_KEY, {})[opened.code] = opened.key
    if here:
        st.query_params[CLASS] = opened.code
        st.query_params[PRESENT] = "1"
        for k in (STUDENT, WORKSHOP):
            if k in st.query_params:
                del st.query_params[k]
    return opened.code


def _put_away(code: str) -> None:
    st.session_state.get(STARTED_KEY, {}).pop(code, None)


def notice() -> None:
    """The outcome of a lecturer's action (Start a class, a key typed in), said once on the next run."""
    said = st.session_state.pop(NOTICE_KEY, None)
    if said:
        kind, text = said
        {"warning": st.warning, "error": st.error, "success": st.success}.get(kind, st.info)(text)


def key_panel(code: str) -> None:
    """The key of a class this session started, in a copy box, folded so that it is not on the projector unless
    opened; shown until the lecturer puts it away."""
    key = st.session_state.get(STARTED_KEY, {}).get(code)
    if not key:
        return
    with st.expander(f"Class {code} is open. Your lecturer key: open this away from the projector, and keep it",
                     icon=":material/key:"):
        st.markdown(f"This browser presents class **{md(code)}** from now on. To present it from another device, "
                    f"open the class's presentation view there and enter this key. It is shown only here, and "
                    f"stored nowhere (the server keeps a hash; this browser keeps a pass for "
                    f"{lecturer_pass.PASS_HOURS} hours, not the key): without it nobody, you included, can show "
                    f"the tally or end the class elsewhere.")
        with st.container(key="layerlab_key_copy"):
            st.code(key, language=None)
        st.button("I have kept it: hide the key", key=f"ws_key_kept_{code}", on_click=_put_away, args=(code,),
                  icon=":material/visibility_off:")


def qr_png(text: str) -> bytes:
    """A QR code of `text` as a PNG (segno; medium error correction, for a projector photographed at an angle)."""
    import segno

    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="png", scale=8, border=3)
    return out.getvalue()


def absolute(link: str) -> str:
    """A page-relative link (`?a=1`) as the address a phone can open: against the page's own URL."""
    try:
        base = st.context.url or ""
    except Exception:  # noqa: BLE001 - bare mode
        base = ""
    return urljoin(base, link) if base else link


# A class's current lesson step as (page, link), or None: app/lesson.py's student_target.
LessonStep = Callable[[str], Optional[tuple[str, dict[str, str]]]]


def join_panel(lesson_step: Optional[LessonStep] = None) -> None:
    """Home's "Join a class" (the code from the lecturer's screen takes a student to the view the lecturer
    presents, or to `lesson_step(code)` when the class follows a lesson: app/lesson.py) and "Start a class" (for
    the lecturer)."""
    notice()
    join, start = st.columns(2, gap="large")
    with join:
        st.markdown("**:material/groups: Join a class**")
        with st.form("ws_join", border=False):
            typed = st.text_input("Class code", max_chars=24, key="ws_join_code", placeholder="e.g. K7M4QX",
                                  help="The code on your lecturer's screen (letters and digits; case does not "
                                       "matter).")
            go_ = st.form_submit_button("Join", type="primary", icon=":material/login:")
        if go_:
            join_class(typed, lesson_step)
        if lecturer_route.served():
            st.caption(f"On a phone in a lecture hall: the [light class page]({hall_route.PATH}) (the QR code on "
                       "your lecturer's screen opens it) follows a lesson's steps with the vote and the answer only.")
    with start:
        st.markdown("**:material/co_present: Start a class** (for the lecturer)")
        st.caption("Hands out a new class code and its lecturer key. Then present any page with it: students join "
                   "with the code (or the QR code on your screen) and predict; you open and close voting on each "
                   "question and reveal the answer to the room.")
        st.button("Start a class", key="ws_start_home", on_click=start_class, args=(False,),
                  icon=":material/add_circle:")
        for code in list(st.session_state.get(STARTED_KEY, {})):
            if code in st.session_state.get(LESSON_CODES, ()):  # a lesson's class has its own card (app/lesson.py)
                continue
            st.markdown(f"Class code: **{md(code)}**")
            key_panel(code)
            st.caption(f"Present a page with class {md(code)}:")
            with st.container(horizontal=True):
                for d in descriptors().values():
                    st.page_link(ROOT / "pages" / f"{d.name}.py", label=d.title, icon=d.icon,
                                 query_params={PRESENT: "1", CLASS: code})


def join_class(typed: Optional[str], lesson_step: Optional[LessonStep] = None) -> None:
    """Take a student to the class `typed` names: to its lesson's current step, `lesson_step(code)`, when it follows
    a lesson (from then on the page follows the room: app/lesson.py), else to the view its lecturer presents."""
    text = re.sub(r"\s+", "", typed or "").upper()
    try:
        code = wdb.class_code(text)
        open_ = database().find(code, client())  # a wrong code counts against the address (bounded)
        view = database().view(code) if open_ else False
    except wdb.Flood as why:
        st.warning(f"No class was looked up: {md(why)}.")
        return
    except wdb.Rejected as why:
        st.warning(f"That is not a class code: {md(why)}.")
        return
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not look up a class to join")
        st.error("The class database is unavailable: try again in a moment.")
        return
    if view is False:
        st.warning(f"No class {md(code)} is open: check the code on your lecturer's screen.")
        return
    st.session_state.setdefault(FOUND_KEY, {})[code] = True
    _join_said(code)
    step = lesson_step(code) if lesson_step is not None else None
    if step is not None:
        st.switch_page(ROOT / "pages" / f"{step[0]}.py", query_params=step[1])
    if view is None:
        st.info(f"Class {md(code)} is open, but its lecturer has not put a page up yet: try again in a moment.")
        return
    page, link = view
    pages = {p.stem for p in (ROOT / "pages").glob("*.py")}
    if page not in pages:
        st.warning(f"Class {md(code)} shows a page this lab does not have: ask your lecturer for the Student link.")
        return
    params = {k: v for k, v in parse_qsl(link) if k not in (PRESENT, KEY)}
    params.update({CLASS: code, STUDENT: "1", WORKSHOP: "1"})  # whatever was stored, this is a student's view
    st.switch_page(ROOT / "pages" / f"{page}.py", query_params=params)


def _join_said(code: str) -> Optional[str]:
    """`join`, with a refusal said once at the top of the next run (the student still sees the class's pages)."""
    try:
        return join(code)
    except wdb.Rejected as why:
        st.session_state[NOTICE_KEY] = ("warning", f"You are in class {md(code)}, but your predictions cannot be "
                                                   f"counted yet: {md(why)}. Reveal tries again.")
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not join class %s", code)
    return None


def found(code: str) -> Optional[bool]:
    """Whether the class `code` a link names is open, looked up once per session and code (workshop_db.find: a wrong
    code counts against the address, once); False, said on the page, when the address tried too many wrong codes;
    None when the database cannot be reached (the page's own checks then say so)."""
    known = st.session_state.setdefault(FOUND_KEY, {})
    if code in known:
        return known[code]
    try:
        ok = database().find(code, client())
    except wdb.Flood as why:
        st.warning(f"Class {md(code)} was not looked up: {md(why)}.", icon=":material/block:")
        return False
    except Exception:  # noqa: BLE001 - said by the page's own checks, which read the database again
        log_.exception("could not look up class %s", code)
        return None
    known[code] = ok
    return ok


class Workshop:
    """The workshop tools of one page (created by app/classroom.py's Page). `present`: the link asks for the
    lecturer's view (`present=1`, never `student=1`); it is granted to a browser that holds the class's key."""

    def __init__(self, page: str, presets: Sequence[Preset], defaults: dict[str, Any], present: bool) -> None:
        self.page, self.presets, self.defaults, self.present = page, tuple(presets), dict(defaults), present
        self.questions = lab_questions.of(page)
        self.on = link_flag(WORKSHOP)
        _drop_link_key()
        notice()
        self.code = _class_code()
        self.key: Optional[str] = None
        # Whether the link's class is open, as a join finds it (bounded per address); a lesson is followed only then.
        self.found = found(self.code) if self.code is not None else False
        self.lecturer = present and self.code is not None and self._present()
        # Set by app/lesson.py when the class follows a lesson and this page shows its step: the step's aim (the
        # reveal shows it), and the room's reveal then shows every student the answer.
        self.lesson_aim: Optional[str] = None
        self.lesson_question: Optional[str] = None  # the room's step's question key (app/lesson.py sets both)
        self.lesson_controls: Any = None  # in a lesson, where its lecturer's presets and controls are folded away

    def _present(self) -> bool:
        """Whether this browser presents the class (it holds the key); otherwise, with a message, the student view:
        a code nobody started is never opened here (codes are handed out by Start a class)."""
        assert self.code is not None
        try:
            key = lecturer_key(self.code)
            open_ = key is not None or self.found
        except Exception:  # noqa: BLE001 - shown, not raised
            log_.exception("could not look up class %s", self.code)
            st.error("The class database is unavailable: predictions cannot be counted, and the class cannot be "
                     "presented. The server's log has the details.")
            return False
        if key is not None:
            _remember(self.code, key)
            keep_lecturer(self.code, key)
            key_panel(self.code)
            self.key = key
            return True
        if not open_:
            st.warning(f"No class {md(self.code)} is open: a class starts with **Start a class** (on the lab's Home "
                       f"or a page's toolbar), which hands out a new code and its key. This is the student view.",
                       icon=":material/block:")
            return False
        self._key_box()
        return False

    def _key_box(self) -> None:
        """A lecturer on a device that does not hold the class's key types it here (a password field: not shown on
        the projector, never in the address)."""
        with st.container(border=True, key="layerlab_key_box"):
            st.markdown(f":material/lock: This is the student view of class **{md(self.code)}**. Its lecturer "
                        f"presents it by entering the class's key (shown once when the class was started).")
            with st.form("ws_key_form", border=False, clear_on_submit=True):
                st.text_input("Lecturer key", type="password", key="ws_key_entry", autocomplete="off",
                              max_chars=64)
                st.form_submit_button("Present this class", icon=":material/key:", on_click=self._enter_key)

    def _enter_key(self) -> None:
        assert self.code is not None
        typed = (st.session_state.get("ws_key_entry") or "").strip()
        try:  # a wrong key counts against the address: past the bound its tries wait a minute
            ok = bool(wdb.TOKEN.fullmatch(typed)) and database().check_key(self.code, typed, client())
        except wdb.Flood as why:
            st.session_state[NOTICE_KEY] = ("warning", f"The key was not checked: {md(why)}.")
            return
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not check a lecturer key for class %s", self.code)
            st.session_state[NOTICE_KEY] = ("error", "The key could not be checked: the class database is "
                                                     "unavailable. Try again in a moment.")
            return
        if not ok:  # the typed text is never echoed nor logged
            log_.info("a wrong lecturer key was entered for class %s", self.code)
            st.session_state[NOTICE_KEY] = ("warning", f"That is not the key of class {md(self.code)} (or the "
                                                       f"class is closed).")
            return
        _remember(self.code, typed)
        st.session_state[NOTICE_KEY] = ("success", f"This browser now presents class {md(self.code)}.")

    def put_up(self, link: str) -> None:
        """The lecturer's current view (this page, and its Student link) becomes the class's: where Join takes a
        student. Stored only when it changed."""
        if not self.lecturer or self.code is None:
            return
        now = (self.page, link.lstrip("?"))
        known = st.session_state.setdefault(VIEW_KEY, {})
        if known.get(self.code) == now:
            return
        try:
            database().set_view(self.code, self.key, *now)
        except Exception:  # noqa: BLE001 - Join says "no page yet"; the details are for the log
            log_.exception("could not store the current view of class %s", self.code)
            return
        known[self.code] = now

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
        """Before a view's results: ask its question and stop the page until Reveal (no-op outside workshop mode).
        A lesson step that asks where a study's effect appears asks it beside the study's map instead (`ask`)."""
        if not self.active or (self.lesson_question or "").startswith(where_questions.PREFIX):
            return
        q = self.question(settings)
        if q is None:
            self._no_question()
            if self.lecturer:
                self._class_card()
            return
        self._ask(q, lab_questions.answer(q, claims_in(result)))

    def asks(self, q: lab_questions.Question) -> bool:
        """Whether the room's lesson step asks `q` here (a where-question is asked only at its step)."""
        return self.active and self.lesson_question == q.key

    def ask(self, q: lab_questions.Question, claims: list[Mapping[str, Any]]) -> None:
        """Ask `q` (a where-question, beside its study's map: app/study_view.py) with the claims that answer it, and
        stop the page until Reveal."""
        self._ask(q, lab_questions.answer(q, claims))

    def _ask(self, q: lab_questions.Question, ans: lab_questions.Answer) -> None:
        state = self._state(q)
        with st.container(border=True, key="layerlab_question"):
            if self.lecturer:
                window = self._window_now(q, state)
                if state["revealed"]:  # the answer and the room's tally side by side take the whole width
                    st.markdown(f"**:material/quiz: Predict first** · {md(q.prompt)}")
                    self._aim()
                    self._lecturer(q, ans, state, window)
                else:  # the class's code and QR code beside the question, in the projector's first screen
                    left, right = st.columns([3, 1])
                    with left:
                        st.markdown(f"**:material/quiz: Predict first** · {md(q.prompt)}")
                        self._aim()
                        self._lecturer(q, ans, state, window)
                    with right:
                        self._class_card()
            else:
                st.markdown(f"**:material/quiz: Predict first** · {md(q.prompt)}")
                self._aim()
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
        """Once per session: a prediction this voter made before (a reload, the same browser) is final, so the
        verdict is shown at once and no second prediction is offered."""
        if not self.code or state.get("looked"):
            return
        state["looked"] = True
        try:
            vid = voter(self.code)
            mine = database().mine(self.code, q.key, vid) if vid is not None else None
        except Exception:  # noqa: BLE001 - only a convenience: the vote itself reports a database failure
            log_.exception("could not read a stored prediction")
            return
        if mine is not None and 0 <= mine < len(q.options):
            state["chosen"], state["earlier"], state["revealed"] = mine, True, True

    def _student(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any]) -> None:
        room = None
        if self.code and self.found:
            self._join(state)
            keep_voter(self.code)
            self._earlier(q, state)
            room = self._room(q)
            if room is not None and self.lesson_aim is not None and not state["revealed"]:
                state["revealed"], state["room"] = True, True  # in a lesson the room's reveal is everyone's
        if not state["revealed"]:
            if state.get("hold"):
                st.warning(state["hold"], icon=":material/hourglass_top:")
            chosen = st.radio("Your prediction", range(len(q.options)), index=state["chosen"],
                              format_func=lambda i: q.texts[i], key=f"ws_pick_{q.key}")
            st.button("Reveal", type="primary", disabled=chosen is None, key=f"ws_reveal_{q.key}",
                      icon=":material/visibility:", on_click=self._reveal, args=(q, ans),
                      help="Commit to your prediction and see the result." + (
                          f" Your prediction is counted in class {self.code}." if self.code else ""))
            if self.code:
                if state.get("join_error") and not state.get("hold"):
                    st.warning(state["join_error"], icon=":material/hourglass_top:")
                elif not state.get("hold"):
                    self._counting(q)
                st.caption(f"Class {md(self.code)}: your prediction is counted when you press Reveal, while your "
                           f"lecturer has voting open (anonymous; one per browser, and final: Reveal shows you the "
                           f"result).")
            return
        if state.get("error"):
            st.warning(state["error"], icon=":material/error:")
        _verdict_box(q, ans, state["chosen"], compact=self.lesson_aim is not None)  # a lesson's phone: short
        if room is not None and room.total:
            st.markdown(":material/groups: The room: " + room_words(room, ans))
        if state.get("room") and state["chosen"] is None:
            st.caption("Your lecturer revealed the answer before you predicted this one.")
        elif self.code and state.get("earlier"):
            st.caption(f"This browser's prediction in class {md(self.code)} was counted earlier, and it stands.")
        elif self.code and not state.get("error"):
            st.caption(f"Counted in class {md(self.code)}; the lecturer shows the class's tally.")

    def _join(self, state: dict[str, Any]) -> None:
        """A page opened with the class's link (its Student link, its QR code) joins the class: the server issues
        this browser a voter identity, unless it holds one; a refusal is said before Reveal, which tries again."""
        if voter(self.code) is not None:
            state["join_error"] = None
            return
        try:
            join(self.code)
            state["join_error"] = None
        except wdb.Rejected as why:
            state["join_error"] = f"Your prediction cannot be counted yet: {md(why)}. Reveal tries again."
        except Exception:  # noqa: BLE001 - the vote says so again; the details are for the log
            log_.exception("could not join class %s", self.code)

    def _room(self, q: lab_questions.Question) -> Optional[wdb.Tally]:
        """The class's tally once the answer was revealed to the room (what the projector showed), else None."""
        try:
            return database().revealed_tally(self.code, q.key, len(q.options))
        except Exception:  # noqa: BLE001 - only an addition to the student's own verdict
            log_.exception("could not read the revealed tally of class %s", self.code)
            return None

    def _counting(self, q: lab_questions.Question) -> None:
        """Before Reveal: say now when the prediction cannot be counted (the class is not open, voting is not open,
        the database is down), so nobody is surprised after it."""
        try:
            if self.found is False or not database().is_open(self.code):
                st.warning(f"Class {md(self.code)} is not open, so your prediction will not be counted: check the "
                           f"code with your lecturer. Reveal still shows you the result.", icon=":material/error:")
                return
            window = database().window(self.code, q.key)
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not check class %s", self.code)
            st.warning("The class database is unavailable: your prediction cannot be counted right now. Reveal "
                       "still shows you the result.", icon=":material/error:")
            return
        if window == "waiting":
            st.info("Voting on this question has not opened yet: your lecturer opens it. Pick your prediction, "
                    "then press Reveal once voting is open.", icon=":material/hourglass_top:")
        elif window in ("closed", "revealed"):
            st.warning(f"{wdb.VOTING_CLOSED[window].capitalize()}, so your prediction will not be counted. Reveal "
                       f"still shows you the result.", icon=":material/error:")

    def _reveal(self, q: lab_questions.Question, ans: lab_questions.Answer) -> None:
        """The Reveal button's callback: record the prediction (with a class), then reveal, recorded or not (a
        prediction that cannot be counted still shows the result, and says why it was not counted); before the
        lecturer opens voting it waits instead, so nobody sees the answer before they could vote."""
        state = self._state(q)
        chosen = st.session_state.get(f"ws_pick_{q.key}")
        if chosen is None:
            return
        state["chosen"], state["error"], state["hold"] = chosen, None, None
        if self.code:
            try:
                if self.found is False:
                    raise wdb.Rejected(f"no class {self.code} is open: check the code with your lecturer")
                vid = join(self.code)  # the identity the join issued (tried again here when it was refused)
                state["join_error"] = None
                database().vote(self.code, q.key, q.texts, vid, q.texts[chosen], client=client())
            except wdb.NotVoting as why:
                if why.state == "waiting":
                    state["hold"] = f"Not yet: {md(why)}."
                    return
                log_.info("prediction not counted in class %s: %s", self.code, why)
                state["error"] = f"Your prediction was not counted: {md(why)}. Here is the result anyway."
            except wdb.Counted as why:
                stored = self._stored(q)
                if stored is not None:
                    state["chosen"] = stored
                state["error"] = f"This prediction was not counted: {md(why)}. Here is the result."
            except wdb.Rejected as why:
                log_.info("prediction not counted in class %s: %s", self.code, why)
                state["error"] = f"Your prediction was not counted: {md(why)}. Here is the result anyway."
            except Exception:  # noqa: BLE001 - a database that cannot be reached must not break the page
                log_.exception("could not store a prediction in class %s", self.code)
                state["error"] = ("Your prediction could not be counted: the class database is unavailable (the "
                                  "server's log has the details). Here is the result anyway.")
        chosen = state["chosen"]
        state["revealed"] = True
        log({"kind": "prediction", "page": self.page, "question": q.prompt, "chosen": q.texts[chosen],
             "matched": ans.matches(chosen), "detail": (ans.claim or {}).get("detail", ""),
             "verdict": _said(q, ans.claim) if ans.claim else "", "link": current_link()})

    def _stored(self, q: lab_questions.Question) -> Optional[int]:
        try:
            vid = voter(self.code)
            mine = database().mine(self.code, q.key, vid) if vid is not None else None
        except Exception:  # noqa: BLE001 - only what the verdict box names
            log_.exception("could not read a stored prediction")
            return None
        return mine if mine is not None and 0 <= mine < len(q.options) else None

    # -- the lecturer ----------------------------------------------------------------------------------------
    def _class_card(self) -> None:
        """The class's code in large type and a QR code of the Student link: how the room joins."""
        # A lesson's room joins by Home's join link, which lands on whatever step the room is on (app/lesson.py).
        link = absolute(student_link()) if self.lesson_aim is None else join_link(self.code)
        with st.container(key="layerlab_class_card"):
            st.caption("Class code")
            with st.container(key="layerlab_class_code"):  # large type (app/classroom.py's style)
                st.markdown(md(self.code))
            if link.startswith(("http://", "https://")):
                st.image(qr_png(link), width=QR_PIXELS, caption="Scan to join, or enter the code on the lab's Home")

    def _window_now(self, q: lab_questions.Question, state: dict[str, Any]) -> Optional[str]:
        """The question's voting window, and whether the room sees its answer (revealed, unless the lecturer hid it
        again on this screen): `state["revealed"]`."""
        try:
            window = database().window(self.code, q.key)
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not read the voting window of class %s", self.code)
            window = None
        state["revealed"] = window == "revealed" and not state.get("hidden")
        return window

    def _lecturer(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any],
                  window: Optional[str]) -> None:
        self._keep_outcome(q, ans, state)
        if state["revealed"] and self.lesson_aim is not None and self.code is not None:
            hall_publish.expect(self.code, self.key, q.key)
        if state["revealed"]:  # on the projector the answer goes first, beside the room's tally: it fits 1280x720
            said, room = st.columns(2, gap="medium")
            with said:
                _verdict_box(q, ans, None, compact=True)
            with room:
                _live_tally(self.code, self.key, q, ans)
        else:
            _live_tally(self.code, self.key, q, None)
        with st.container(horizontal=True):
            self._window_buttons(q, window, state)
            st.button("Reset this question", icon=":material/restart_alt:", key=f"ws_room_reset_{q.key}",
                      on_click=self._reset, args=(q,), help=f"Forget class {self.code}'s predictions on it and hide "
                      f"the results: the question waits for voting to be opened again.")
            st.button("Close the class", icon=":material/lock:", key="ws_room_close", on_click=self._close,
                      help="End the class: no more predictions. Its code is never handed out again.")
        if state.get("reset_error"):
            st.warning(state["reset_error"], icon=":material/error:")

    def _aim(self) -> None:
        """A lesson's step: its one-line aim under the question (before and after the reveal)."""
        if self.lesson_aim:
            st.caption(f":material/flag: **Aim:** {md(self.lesson_aim)}")

    def _keep_outcome(self, q: lab_questions.Question, ans: lab_questions.Answer, state: dict[str, Any]) -> None:
        """In a lesson, what this run says about the question is kept with the class, once per session and question:
        the lesson's report reads it (students see it only once the answer is revealed to the room)."""
        if self.lesson_aim is None or ans.claim is None or state.get("kept") or self.code is None:
            return
        import json

        from lab.classroom import lessons

        said = lessons.outcome(q, [ans.claim])
        try:
            database().set_outcome(self.code, self.key, q.key, json.dumps(said))
        except Exception:  # noqa: BLE001 - the report says "not run in class" for it; the details are for the log
            log_.exception("could not keep the outcome of %s in class %s", q.key, self.code)
            return
        state["kept"] = True

    def _window_buttons(self, q: lab_questions.Question, window: Optional[str], state: dict[str, Any]) -> None:
        if window in ("waiting", "closed"):
            st.button("Open voting" if window == "waiting" else "Open voting again", type="primary",
                      icon=":material/how_to_vote:", key=f"ws_room_open_{q.key}", on_click=self._window,
                      args=(q, "open"), help="Students' predictions are counted from now until you close voting "
                                             "or reveal the answer.")
        elif window == "open":
            st.button("Close voting", icon=":material/block:", key=f"ws_room_stop_{q.key}", on_click=self._window,
                      args=(q, "closed"), help="No more predictions are counted (you can open voting again).")
        if window in ("waiting", "open", "closed"):
            st.button("Reveal to the room", type="primary" if window != "waiting" else "secondary",
                      icon=":material/visibility:", key=f"ws_room_reveal_{q.key}", on_click=self._window,
                      args=(q, "revealed"), help="Show the answer on this screen. This closes voting on the "
                                                 "question for good (Reset asks it afresh).")
        elif window == "revealed":
            hidden = bool(state.get("hidden"))
            st.button("Show the results" if hidden else "Hide the results",
                      icon=":material/visibility:" if hidden else ":material/visibility_off:",
                      key=f"ws_room_hide_{q.key}", on_click=_set, args=(state, "hidden", not hidden))

    def _window(self, q: lab_questions.Question, to: str) -> None:
        state = self._state(q)
        state["reset_error"] = None
        try:
            database().set_window(self.code, q.key, to, self.key)
        except wdb.Rejected as why:
            log_.warning("voting window of class %s refused: %s", self.code, why)
            _refused(state, f"That was refused: {md(why)}.", why)
            return
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not change the voting window of class %s", self.code)
            state["reset_error"] = ("The voting window could not be changed: the class database is unavailable (the "
                                    "server's log has the details).")
            return
        state["hidden"] = False

    def _reset(self, q: lab_questions.Question) -> None:
        state = self._state(q)
        state["reset_error"] = None
        try:
            database().reset(self.code, q.key, self.key)
        except wdb.Rejected as why:
            log_.warning("reset refused in class %s: %s", self.code, why)
            _refused(state, f"Reset was refused: {md(why)}.", why)
            return
        except Exception:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not reset question %s of class %s", q.key, self.code)
            state["reset_error"] = ("Reset failed: the class database is unavailable (the server's log has the "
                                    "details). The predictions are still there.")
            return
        state["revealed"], state["hidden"] = False, False

    def _close(self) -> None:
        try:
            database().close_class(self.code, self.key)
        except Exception as exc:  # noqa: BLE001 - said on the page, details in the log
            log_.exception("could not close class %s", self.code)
            why = md(exc) if isinstance(exc, wdb.Rejected) else "the class database is unavailable"
            st.session_state[CLOSE_NOTICE] = f"The class could not be closed: {why}."
            return
        st.session_state.get(LECTURER_KEY, {}).pop(self.code, None)
        st.session_state.get(STARTED_KEY, {}).pop(self.code, None)
        st.session_state.setdefault(FORGET_COOKIES, []).append(self.code)
        st.session_state[CLOSE_NOTICE] = (f"Class {md(self.code)} is closed. Its predictions are kept until they "
                                          f"are deleted, {wdb.CLASS_DAYS} days after the class started.")
        for k in (CLASS, PRESENT):  # not presented by the next run
            if k in st.query_params:
                del st.query_params[k]


def _refused(state: dict[str, Any], text: str, why: wdb.Rejected) -> None:
    """A refused lecturer action is said beside its buttons; when the refusal is that this browser no longer
    presents the class (it was closed or expired meanwhile), the next run is a student's view, so it is said at the
    top of the page instead."""
    if isinstance(why, wdb.NotLecturer):
        st.session_state[NOTICE_KEY] = ("warning", text)
    else:
        state["reset_error"] = text


def close_notice() -> None:
    """The outcome of the lecturer's Close (said once, on the next run), and the closed class's pass cookie deleted
    by the server's route (a page script cannot delete an HttpOnly cookie)."""
    for gone in st.session_state.pop(FORGET_COOKIES, []):
        st.session_state.get(TICKET_KEY, {}).pop(gone, None)
        if lecturer_route.served():
            st.html(post_script(lecturer_route.PATH + "/forget", {"code": gone}), unsafe_allow_javascript=True)
    text = st.session_state.pop(CLOSE_NOTICE, None)
    if text:
        st.info(text, icon=":material/lock:")


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


def _set(state: dict[str, Any], key: str, value: Any) -> None:
    state[key] = value


def _said(q: lab_questions.Question, claim: Mapping[str, Any]) -> str:
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


def _verdict_box(q: lab_questions.Question, ans: lab_questions.Answer, chosen: Optional[int],
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


def room_words(tally: wdb.Tally, ans: lab_questions.Answer) -> str:
    """How the room did: "N of M predicted what happened" (bold), or that the run confirms no option."""
    if ans.correct is None:
        return f"this run confirms no option, so none of the {tally.total} predictions can be checked"
    return f"**{tally.counts[ans.correct]} of {tally.total} predicted what happened**"


def student_link() -> str:
    """This view's link for students: every setting, `student=1`, and with a class `workshop=1` so they predict;
    never `present` (the lecturer's view), nor a `key` (none is ever put in a link; one that arrives is dropped)."""
    params = {k: st.query_params.get_all(k) for k in st.query_params if k not in (PRESENT, KEY, STUDENT)}
    params[STUDENT] = ["1"]
    if CLASS in params:
        params[WORKSHOP] = ["1"]
    return "?" + urlencode(params, doseq=True)


def join_link(code: str) -> str:
    """The absolute address a class's QR code and join link name: where the server serves it, the light student
    view (app/hall_route.py: the step's question, the vote and the revealed answer, pushed, for a hall of phones);
    otherwise Home's join link (`?join=CODE`), which takes a phone to the lesson's current step (app/lesson.py)."""
    try:
        base = st.context.url or ""
    except Exception:  # noqa: BLE001 - bare mode
        base = ""
    if lecturer_route.served():
        rel = f"./{hall_route.PATH}?" + urlencode({"class": code})
    else:
        rel = "./?" + urlencode({"join": code})
    return urljoin(base, rel) if base else rel.removeprefix("./")


def _tally_figure(q: lab_questions.Question, tally: wdb.Tally, ans: Optional[lab_questions.Answer],
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
def _live_tally(code: str, key: Optional[str], q: lab_questions.Question,
                ans: Optional[lab_questions.Answer]) -> None:
    """The lecturer's live count (and, once voting is closed, the tally), redrawn every POLL_SECONDS (only this
    fragment reruns, not the page)."""
    _tally_chart(code, key, q, ans, chart_key=f"ws_tally_{q.key}")
