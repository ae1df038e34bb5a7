"""Lessons in class: the lecturer paces the room through a lesson's steps, and every phone follows (the lessons
themselves are data: lab/classroom/lessons.py).

- **Start a lesson** (Home, `home_panel`): a shipped lesson, or one built here (steps picked in order) or imported
  from its file, starts a class (the server's code and key: app/lecturer_auth.py's `start_class`) that follows it
  (lab/classroom/workshop_db.py: `set_lesson`, the lesson's JSON stored with the class). Home then shows the class
  code, a QR code of the join link (`?join=CODE` on Home, also shown as a link) and the first step.
- **The room follows** (`follow`, called by every experiment page: app/classroom.py's Page, before its controls
  exist): a page whose link names a class that follows a lesson shows the room's step: the step's page
  (st.switch_page), its setting (the controls set at once, as a preset sets them) and its question. A fragment reads
  the class's step every FOLLOW_SECONDS (one database read per server per FRESH_SECONDS, shared by its pages) and
  reruns the page when the step or its voting window moved, so a phone follows the lecturer with no action.
  The lecturer's browser (it holds the key) gets Previous step / Next step (`workshop_db.move_step`, which checks
  the key: a student cannot move the room); a student gets a banner with the step, a link to leave the lesson (then
  the page is theirs to browse, and a Rejoin button takes them back to the room's step) and their own worksheet.
- **The report** (`report_files`): per step the question, the class's distribution, the verdict with its error and
  how many predicted it (lab/classroom/lessons.py: `report_rows`), as a self-contained HTML page and a CSV, made
  from counts and claims only, so nothing of the key is in them.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import streamlit as st

from app import class_db, class_join, class_links, controls, lecturer_auth, query, voters, worksheet
from app.class_links import CLASS, PRESENT, STUDENT, WORKSHOP
from app.workshop import Workshop
from lab.catalog import descriptors
from lab.classroom import lessons
from lab.classroom import workshop_db as wdb

FOLLOW_SECONDS = 1.0  # how often a following page looks at the room's step: it moves within about twice this
FRESH_SECONDS = 0.4  # a server reads a class's step at most this often, for all of its pages that follow it
JOIN = "join"  # Home's link parameter: `?join=CODE` joins the class (the QR code on the lecturer's screen)
APPLIED_KEY = "_layerlab_lesson_applied"  # {code: (the step whose setting this session applied, whether it took)}
LEFT_KEY = "_layerlab_lesson_left"  # {code: lesson title} of the lessons this session left (offered to rejoin)
MINE_KEY = "_layerlab_lessons"  # {key: Lesson} built or imported in this session
IMPORTED_KEY = "_layerlab_lesson_imported"  # the uploaded file last read, so it is read once
FOLDED = "layerlab_lesson_folded"  # the container of a lecturer's presets and controls while they are folded
_NOTICE = "_layerlab_lesson_notice"  # a refused move, said once beside the bar
_BUILD_NOTICE = "_layerlab_lesson_build_notice"  # the outcome of Save this lesson or an import, said once on Home
# The class code in large type on Home's lesson card (the experiment pages have it from app/classroom.py).
_CSS = """<style>[class*="st-key-layerlab_class_code"] p {font-size: 3rem; font-weight: 700; letter-spacing: 0.12em;
  line-height: 1.1; font-family: "Source Code Pro", monospace; margin: 0;}</style>"""
PAGES = Path(__file__).resolve().parents[1] / "pages"
LINK = re.compile(r"https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9/_.~-]*)?\?(join|class)=[A-Z0-9-]+")

log_ = logging.getLogger("layerlab.workshop")
md = query.plain


@dataclass(frozen=True)
class Room:
    """Where a class's lesson is: the lesson, the room's step (0-based) and the voting window of its question."""

    code: str
    lesson: lessons.Lesson
    step: int
    window: str

    @property
    def current(self) -> lessons.Step:
        return self.lesson.steps[self.step]

    @property
    def seen(self) -> tuple[int, str]:
        """What a following page reruns for when it changes."""
        return (self.step, self.window)


_read: dict[str, tuple[float, Optional[Room]]] = {}
_read_lock = threading.Lock()


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> lessons.Lesson:
    return lessons.from_json(text)


def room(code: str, fresh: bool = False) -> Optional[Room]:
    """The lesson class `code` follows and its step, or None (no lesson, the class is not open, the database is
    down: the page is then an ordinary class's). Read from the database at most every FRESH_SECONDS per server."""
    now = time.monotonic()
    if not fresh:
        with _read_lock:
            hit = _read.get(code)
        if hit is not None and now - hit[0] < FRESH_SECONDS:
            return hit[1]
    try:
        state = class_db.database().lesson(code)
        found = None if state is None else Room(code, _parsed(state.lesson), state.step, state.window)
    except lessons.LessonError:  # stored by an older lab whose pages or questions this one no longer has
        log_.warning("class %s follows a lesson this lab cannot show", code)
        found = None
    except Exception:  # noqa: BLE001 - a database that cannot be reached must not break the page
        log_.exception("could not read the lesson of class %s", code)
        return None
    with _read_lock:
        if len(_read) > 512:
            _read.clear()
        _read[code] = (now, found)
    return found


def _forget(code: str) -> None:
    with _read_lock:
        _read.pop(code, None)


def step_params(step: lessons.Step, code: str, lecturer: bool) -> dict[str, str]:
    """The link of a step: its controls off their defaults (as the page writes them) and the class, as the
    lecturer's presentation view (`present=1`, never a key) or a student's view."""
    d = descriptors()[step.page]
    values = step.settings
    out = {c.name: controls.link_text(c, values[c.name]) for c in d.controls if values[c.name] != c.default}
    out.update({PRESENT: "1", CLASS: code} if lecturer else {STUDENT: "1", WORKSHOP: "1", CLASS: code})
    return out


def student_target(code: str) -> Optional[tuple[str, dict[str, str]]]:
    """(page, link) of the step the room of class `code` is on, for a student joining it; None without a lesson."""
    r = room(code, fresh=True)
    if r is None:
        return None
    st.session_state.get(LEFT_KEY, {}).pop(code, None)
    return r.current.page, step_params(r.current, code, lecturer=False)


# -- following the room ------------------------------------------------------------------------------------------
def follow(page: str, w: Workshop) -> Optional[Room]:
    """On an experiment page (app/classroom.py, before its controls exist): when the link's class follows a lesson,
    show the room's step (switch to its page, apply its setting once per step), the lesson's bar and the poll that
    follows the room. Returns the room, or None (no class or no lesson)."""
    if w.code is None:
        _rejoin_offer()
        return None
    if not w.found:  # a code that names no open class (or one looked up too often wrongly) follows nothing
        return None
    r = room(w.code)
    if r is None:
        return None
    step = r.current
    if page != step.page:
        st.switch_page(PAGES / f"{step.page}.py", query_params=step_params(step, w.code, w.lecturer))
    # Once per step (within a step the lecturer may try other settings), and again until a run that applied it got
    # as far as drawing the controls (`applied`): a run cut short by the next rerun (a click, the poll) loses the
    # values it set, since the next run starts from the browser's widget values.
    done = st.session_state.setdefault(APPLIED_KEY, {}).get(w.code)
    if done != (r.step, True):
        st.session_state[APPLIED_KEY][w.code] = (r.step, False)
        controls.apply(step.settings)
    w.lesson_aim, w.lesson_question = step.aim, step.question
    _bar(r, w)
    _poll(w.code, r.seen)
    return r


def applied(r: Room) -> None:
    """Called by the page once its controls are drawn (app/classroom.py's toolbar): the step's setting took."""
    done = st.session_state.get(APPLIED_KEY, {})
    if done.get(r.code) == (r.step, False):
        done[r.code] = (r.step, True)


@st.fragment(run_every=FOLLOW_SECONDS)
def _poll(code: str, seen: tuple[int, str]) -> None:
    """Reruns the page when the room's step or its voting window moved (only this fragment runs each second)."""
    r = room(code)
    if (r.seen if r is not None else None) != seen:
        st.rerun(scope="app")


def _bar(r: Room, w: Workshop) -> None:
    n, total = r.step + 1, len(r.lesson.steps)
    with st.container(key="layerlab_lesson_bar", horizontal=not w.lecturer, vertical_alignment="center",
                      gap="small"):
        if w.lecturer:  # one row on the projector: the step's aim is under its question (app/workshop.py)
            said, back, on, tune, report = st.columns([4.6, 2, 2, 1.8, 1.7], vertical_alignment="center")
            said.markdown(f":material/school: **{md(r.lesson.title)}** · step {n} of {total}")
            back.button("Previous step", icon=":material/arrow_back:", key="lesson_prev", disabled=r.step == 0,
                        on_click=_move, args=(r.code, w.key, r.step - 1), help="The room goes back one step.",
                        width="stretch")
            on.button("Next step", icon=":material/arrow_forward:", key="lesson_next", type="primary",
                      disabled=n == total, on_click=_move, args=(r.code, w.key, r.step + 1), width="stretch",
                      help="Every student's page moves to the next step, and voting opens on its question.")
            with report.popover("Report", icon=":material/summarize:", width="stretch"):
                report_buttons(r, w.key)
            tune.toggle("Controls", key="lesson_controls_on",
                        help="Show this page's presets and controls (the step set them).")
        else:
            st.markdown(f":material/school: Class **{md(r.code)}** · {md(r.lesson.title)} · step {n} of {total}",
                        width="stretch")
            st.download_button("My worksheet", data=_worksheet_of(r, voters.voter(r.code)), on_click="ignore",
                               file_name=f"layerlab-{r.code}-worksheet.html", mime="text/html", type="tertiary",
                               icon=":material/download:", key="lesson_worksheet",
                               help="Your predictions beside what each run showed (an offline HTML file).")
            st.button("Leave the lesson", type="tertiary", icon=":material/logout:", key="lesson_leave",
                      on_click=_leave, args=(r.code, r.lesson.title),
                      help="Browse the lab freely; your page no longer follows the room (you can rejoin).")
    if w.lecturer and not st.session_state.get("lesson_controls_on"):
        # The step sets the page, so its presets and controls are folded (app/classroom.py puts them here): the
        # question and the room's tally get the projector's first screen. Hidden, not left out, nor in a popover
        # whose widgets the browser drops while it is closed: their values would then lag the steps' settings.
        st.html(f"<style>.st-key-{FOLDED} {{display: none;}}</style>")
        w.lesson_controls = st.container(key=FOLDED)
    notice = st.session_state.pop(_NOTICE, None)
    if notice:
        st.warning(notice, icon=":material/error:")


def _move(code: str, key: Optional[str], to: int) -> None:
    """Previous / Next step: the database moves the room only for the class's key."""
    try:
        class_db.database().move_step(code, key, to)
    except wdb.Rejected as why:
        log_.warning("lesson step of class %s refused: %s", code, why)
        st.session_state[_NOTICE] = f"The room did not move: {md(why)}."
    except Exception:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not move the lesson of class %s", code)
        st.session_state[_NOTICE] = ("The room did not move: the class database is unavailable (the server's log "
                                     "has the details).")
    _forget(code)


def _leave(code: str, title: str) -> None:
    """A student leaves the lesson: the page drops the class from its link (it stops following) and keeps its
    setting, with the controls back."""
    st.session_state.setdefault(LEFT_KEY, {})[code] = title
    for k in (CLASS, STUDENT, WORKSHOP, PRESENT):
        if k in st.query_params:
            del st.query_params[k]


def _rejoin(code: str) -> None:
    st.session_state.get(LEFT_KEY, {}).pop(code, None)
    st.session_state.get(APPLIED_KEY, {}).pop(code, None)  # the room's step is applied afresh
    _forget(code)  # read where the room is now, not where it was a moment ago
    st.query_params.update({CLASS: code, STUDENT: "1", WORKSHOP: "1"})


def _rejoin_offer() -> None:
    """After leaving a lesson: one line offering to rejoin it (while its class is open)."""
    left = st.session_state.get(LEFT_KEY) or {}
    for code, title in list(left.items())[-1:]:
        if room(code) is None:
            left.pop(code, None)
            continue
        with st.container(horizontal=True, vertical_alignment="center", key="layerlab_lesson_left"):
            st.caption(f":material/school: You left the lesson {md(title)} of class {md(code)}: this page is yours "
                       f"to browse.")
            st.button("Rejoin the lesson", type="tertiary", icon=":material/login:", key="lesson_rejoin",
                      on_click=_rejoin, args=(code,), help="Back to the step the room is on.")


# -- the report and the worksheet ------------------------------------------------------------------------------
def _outcomes(code: str, key: Optional[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for q, text in class_db.database().outcomes(code, key).items():
        try:
            got = json.loads(text)
        except ValueError:
            continue
        if isinstance(got, dict):
            out[q] = got
    return out


def report_files(code: str, key: Optional[str], lesson: lessons.Lesson) -> tuple[str, str]:
    """The lesson's report of class `code` as (HTML, CSV): the lecturer's (its key reads the tallies)."""
    rows = lessons.report_rows(lesson, class_db.database().tallies(code, key), _outcomes(code, key))
    return lessons.report_html(lesson, code, rows), lessons.report_csv(rows)


def report_buttons(r: Room, key: Optional[str]) -> None:
    """The report's two downloads, made with the page (the tallies as this run read them; the page reruns as the
    room moves). Not made on click: Streamlit gives a deferred download a new id at every rerun and drops the old
    one, so a click while the lecturer's page reran could find its file gone (a cancelled download, seen in CI);
    a made file keeps its id (a hash of its content) from one rerun to the next."""
    st.caption(f"Per step: the question, the class's predictions, the verdict with its error and how many "
               f"predicted it. Download it before you close class {md(r.code)}.")
    html, csv = report_files(r.code, key, r.lesson)
    st.download_button("Report (HTML)", data=html, on_click="ignore",
                       file_name=f"layerlab-{r.code}-report.html", mime="text/html", icon=":material/download:",
                       key=f"lesson_report_html_{r.code}")
    st.download_button("Report (CSV)", data=csv, on_click="ignore",
                       file_name=f"layerlab-{r.code}-report.csv", mime="text/csv", icon=":material/download:",
                       key=f"lesson_report_csv_{r.code}")


def worksheet_rows(code: str, lesson: lessons.Lesson, voter: Optional[str]) -> list[dict[str, Any]]:
    """One row per step of a student's worksheet: their counted prediction beside what the run showed (once the
    answer was revealed to the room)."""
    db = class_db.database()
    said = _outcomes(code, None)
    rows = []
    for n, s in enumerate(lesson.steps, start=1):
        q = s.asked
        mine = db.mine(code, q.key, voter) if voter is not None else None  # None: this browser never joined
        mine = mine if mine is not None and 0 <= mine < len(q.options) else None
        out = said.get(q.key)
        correct = out.get("correct") if out else None
        correct = correct if isinstance(correct, int) and 0 <= correct < len(q.options) else None
        rows.append({"step": n, "setting": lessons.step_title(s), "question": q.prompt, "aim": s.aim,
                     "mine": q.texts[mine] if mine is not None else None, "revealed": out is not None,
                     "answer": q.texts[correct] if correct is not None else "",
                     "verdict": lessons.verdict_of(out) if out else "",
                     "detail": out.get("detail", "") if out else "", "error": out.get("error", "") if out else "",
                     "matched": None if mine is None or correct is None else mine == correct})
    return rows


def _worksheet_of(r: Room, voter: Optional[str]) -> Any:
    return lambda: worksheet.lesson_worksheet_html(r.lesson.title, r.code, worksheet_rows(r.code, r.lesson, voter))


# -- Home ------------------------------------------------------------------------------------------------------
def join_from_link() -> None:
    """Home's `?join=CODE` (the QR code on the lecturer's screen): join that class, as the Join box does."""
    values = controls.link_values(JOIN)
    if not values:
        return
    del st.query_params[JOIN]
    class_join.join_class(values[0] if len(values) == 1 else "", student_target)


def available() -> dict[str, lessons.Lesson]:
    """The lessons a lecturer can start here: the shipped ones, then this session's built or imported ones."""
    return {**lessons.shipped(), **st.session_state.get(MINE_KEY, {})}


def _start(key: str) -> None:
    """Start a lesson: a new class (the server's code and key) that follows the lesson from its first step."""
    lesson = available().get(key)
    if lesson is None:
        return
    code = lecturer_auth.start_class(here=False)
    if code is None:
        return
    try:
        class_key = st.session_state[lecturer_auth.LECTURER_KEY][code]
        class_db.database().set_lesson(code, class_key, lessons.to_json(lesson))
    except Exception as exc:  # noqa: BLE001 - said on the page, details in the log
        log_.exception("could not set the lesson of class %s", code)
        why = md(exc) if isinstance(exc, wdb.Rejected) else "the class database is unavailable"
        st.session_state[class_db.NOTICE_KEY] = ("error", f"Class {md(code)} started, but without its lesson: {why}.")
        return
    log_.info("class %s follows lesson %s", code, lesson.key)
    st.session_state.setdefault(class_join.LESSON_CODES, []).append(code)


def _save_built() -> None:
    title = (st.session_state.get("lesson_build_title") or "").strip()
    picked = st.session_state.get("lesson_build_steps") or []
    menu = lessons.menu()
    try:
        lesson = lessons.built(title or "My lesson", [menu[i] for i in picked])
    except lessons.LessonError as why:
        st.session_state[_BUILD_NOTICE] = ("error", f"Not saved: {md(why)}")
        return
    _keep(lesson, "Saved")




def _keep(lesson: Any, done: str) -> None:
    """Add a built or imported lesson to this session's lessons, select it and say so."""
    st.session_state.setdefault(MINE_KEY, {})[lesson.key] = lesson
    st.session_state["lesson_pick"] = lesson.key
    st.session_state[_BUILD_NOTICE] = ("success", f"{done} {md(lesson.title)} ({len(lesson.steps)} steps): it is "
                                                  f"selected above.")


def _import(upload: Any) -> None:
    """A lesson file: read once, validated, and added to this session's lessons; every problem is said."""
    marker = (upload.file_id, upload.size)
    if st.session_state.get(IMPORTED_KEY) == marker:
        return
    st.session_state[IMPORTED_KEY] = marker
    try:
        lesson = lessons.from_json(upload.getvalue()[:lessons.MAX_BYTES + 1])
    except lessons.LessonError as why:
        st.session_state[_BUILD_NOTICE] = ("error", f"That file was not imported: {md(why)}")
        return
    _keep(lesson, "Imported")


def home_panel() -> None:
    """Home's "Start a lesson": choose a lesson (its steps listed), start it, export it; build or import one; and
    the card of every lesson this session started (its code, the join link's QR code, the current step)."""
    st.html(_CSS)
    for code in list(st.session_state.get(class_join.LESSON_CODES, [])):
        _card(code)
    st.markdown("**:material/school: Start a lesson** (for the lecturer)")
    st.caption("A lesson is a sequence of live experiments: each step a page, its setting and a question. You move "
               "the room from step to step; every student's page follows within a second or two, voting opens with "
               "each step, and the lesson ends with a report of what the class predicted against what happened.")
    upload = st.session_state.get("lesson_import")
    if upload is not None:
        _import(upload)
    options = available()
    if st.session_state.get("lesson_pick") not in options:
        st.session_state.pop("lesson_pick", None)
    pick = st.selectbox("Lesson", list(options), key="lesson_pick",
                        format_func=lambda k: f"{options[k].title} ({len(options[k].steps)} steps, "
                                              f"~{options[k].minutes} min)")
    lesson = options[pick]
    st.markdown("\n".join(f"{n}. **{md(lessons.step_title(s))}**: {md(s.aim)}"
                          for n, s in enumerate(lesson.steps, start=1)))
    with st.container(horizontal=True):
        st.button("Start a lesson", type="primary", icon=":material/play_arrow:", key="lesson_start",
                  on_click=_start, args=(pick,), help="A new class follows this lesson from its first step: you "
                  "get its code, a QR code for the room, and its lecturer key.")
        st.download_button("Export this lesson", data=lessons.to_json(lesson), file_name=f"{lesson.key}.lesson.json",
                           mime="application/json", on_click="ignore", icon=":material/download:",
                           key="lesson_export", help="The lesson as a small JSON file, to import here another day.")
    said = st.session_state.pop(_BUILD_NOTICE, None)
    if said:
        (st.success if said[0] == "success" else st.error)(said[1])
    with st.expander("Build or import a lesson", icon=":material/edit_note:"):
        menu = lessons.menu()
        st.text_input("Title", max_chars=lessons.TITLE_CHARS, key="lesson_build_title", placeholder="My lesson")
        st.multiselect("Steps, in the order you pick them", range(len(menu)), key="lesson_build_steps",
                       format_func=lambda i: f"{lessons.step_title(menu[i])}: {lessons.question_words(menu[i])}",
                       max_selections=lessons.MAX_STEPS)
        st.button("Save this lesson", key="lesson_build_save", on_click=_save_built, icon=":material/save:")
        st.file_uploader("Import a lesson file (.json)", type=["json"], key="lesson_import",
                         help=f"A file exported by Export this lesson (at most {lessons.MAX_BYTES // 1000} kB).")


def _card(code: str) -> None:
    """A lesson this session started: the code in large type, the join link (QR code and link), the key's copy
    box and the room's step, with the link that presents it."""
    r = room(code, fresh=True)
    key = lecturer_auth.lecturer_key(code) if r is not None else None
    if r is None or key is None:  # closed, expired, or no longer this browser's
        st.session_state[class_join.LESSON_CODES].remove(code)
        return
    link = class_links.join_link(code)
    with st.container(border=True, key=f"layerlab_lesson_card_{code}"):
        left, right = st.columns([3, 1])
        with left:
            st.markdown(f":material/school: **{md(r.lesson.title)}** · class code")
            with st.container(key=f"layerlab_class_code_{code}"):
                st.markdown(md(code))
            if LINK.fullmatch(link):
                st.markdown(f"Join link: [{md(link)}]({link})")
            else:
                st.markdown(f"Join: the code on the lab's Home ({md(link)})")
            lecturer_auth.key_panel(code)
            step = r.current
            st.markdown(f"**Step {r.step + 1} of {len(r.lesson.steps)}:** {md(lessons.step_title(step))}: "
                        f"{md(step.aim)}")
            with st.container(horizontal=True):
                st.page_link(PAGES / f"{step.page}.py", label=f"Present step {r.step + 1}",
                             icon=":material/co_present:", query_params=step_params(step, code, lecturer=True))
                with st.popover("Report", icon=":material/summarize:"):
                    report_buttons(r, key)
        with right:
            if LINK.fullmatch(link):
                st.image(class_links.qr_png(link), width=class_links.QR_PIXELS, caption="Scan to join")
