"""Classroom tools every experiment page shares: presets you can see land, pin and compare, presentation mode.

A page adopts them in a few lines (docs/ARCHITECTURE.md, "Classroom tools"):

    page = classroom.Page.of(described.DESCRIPTOR)  # lab/experiments/NAME/descriptor.py: presets, controls, plan
    with page.controls():                      # the sidebar; inline above the figure when presenting
        arch = controls.param(...)             # every control (app/controls.py)
    page.toolbar()                             # Try-this presets (ready / trains ~1 min), Reset, Pin, Present
    view = page.view()                         # this setting's plan, run through the job runner (app/jobs.py)
    with page.results():                       # the region a preset scrolls into view
        r = page.show_run(view, metrics_of, figure_of)  # the "run" call, the pinned setting's beside it

`show_run` is the block most pages share; a page whose cards read several calls makes it of its parts:

        r = view.run("run")
        pinned = page.pinned_view()            # the pinned setting's plan, or None
        p = pinned.run("run") if pinned else None
        page.show([metrics of r], [metrics of p], figure_of, r, p)

Link flags: `present=1` (sidebar hidden, larger type, the main figure first and full width, the demo's controls
inline above it), `student=1` (no controls at all: the view the link describes), `pin=k.1_arch.plain` (the pinned
setting; app/query.py). All of them are read through app/query.py like every other link value.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

import plotly.graph_objects as go
import streamlit as st

from app import charts, controls, jobs, lesson, query, reproduce_view, training_view, worksheet
from app.class_links import link_flag, student_link  # the toolbar's Student link (the class card's too)
from app.lecturer_auth import close_notice, start_class
from app.stored_results import stored
from app.workshop import Workshop
from lab.catalog import presets as lab_presets
from lab.classroom import seeds as lab_seeds
from lab.runtime.quick import quick
from lab.runtime.store import active_store

PIN = "pin"
PRESENT = "present"
STUDENT = "student"
PIN_NOTICE = "_layerlab_pin_notice"
_SCROLLS = "_layerlab_scroll_requests"  # how many times this session asked to scroll (_scroll_to)
PRESENT_HEIGHT = 400  # the main figure in presentation mode: with the controls above it, it fits 1280x720

_HIDDEN = "layerlab_hidden"  # the container of controls that exist (their values, their links) but are not shown

# On a phone the presets are a compact grid of two per row without their readiness lines (the help says it), so
# the question and the results come after one screen, not after five stacked buttons; the metric cards are two per
# row too (stacked one per row they took a screen before the first figure).
_CSS_ALWAYS = f"""
<style>
.st-key-{_HIDDEN} {{display: none;}}
.st-key-layerlab_class_code p {{font-size: 3rem; font-weight: 700; letter-spacing: 0.12em; line-height: 1.1;
  font-family: "Source Code Pro", monospace; margin: 0;}}
@media (max-width: 640px) {{
  .st-key-layerlab_toolbar [data-testid="stHorizontalBlock"] {{flex-flow: row wrap !important; gap: 0.4rem;}}
  .st-key-layerlab_toolbar [data-testid="stColumn"] {{flex: 1 1 45% !important; min-width: 45% !important;
    width: 45% !important;}}
  .st-key-layerlab_toolbar [data-testid="stCaptionContainer"] {{display: none;}}
  .st-key-layerlab_toolbar button p {{font-size: 0.85rem;}}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stMetric"]) {{
    flex-flow: row wrap !important; gap: 0.4rem 0.8rem;}}
  [data-testid="stColumn"]:has([data-testid="stMetric"]) {{flex: 1 1 45% !important; min-width: 45% !important;
    width: 45% !important;}}
  [data-testid="stMetricValue"] {{font-size: 1.6rem;}}
}}
</style>
"""
# Presentation: no sidebar, no header bar, less padding, larger type (Streamlit sizes in rem: the root size scales
# all of it), a smaller page title so that the figure, not the heading, gets the screen.
_CSS_PRESENT = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
header[data-testid="stHeader"] {display: none !important;}
html {font-size: 19px;}
[data-testid="stMainBlockContainer"] {padding-top: 0.6rem !important; padding-bottom: 1rem; max-width: 100%;}
[data-testid="stMainBlockContainer"] h1 {font-size: 1.35rem; padding: 0 0 0.2rem 0;}
[data-testid="stElementContainer"]:has(h1) + [data-testid="stElementContainer"]:has([data-testid="stCaptionContainer"])
{display: none;}
.st-key-layerlab_inline [data-testid="stWidgetLabel"] p {font-size: 0.85rem;}
</style>
"""


@dataclass
class Metric:
    """One number card: what st.metric draws."""

    label: str
    value: str
    delta: Optional[str] = None
    help: Optional[str] = None
    delta_color: str = "normal"


def delta(a: float, b: float, suffix: str = "") -> dict[str, Any]:
    """The difference a - b of two accuracies as a metric delta: neutral (grey) when it rounds to zero, since a
    green "+0.0 pts" reads as a gain."""
    d = round(100 * (a - b), 1) + 0.0
    return {"delta": f"{d:+.1f} pts{suffix}" if d else f"±0.0 pts{suffix}", "delta_color": "normal" if d else "off"}


def _set_flag(key: str, on: bool) -> None:
    if on:
        st.query_params[key] = "1"
    elif key in st.query_params:
        del st.query_params[key]


def _set_pin(text: Optional[str]) -> None:
    st.session_state.pop(PIN_NOTICE, None)
    _set_flag(PIN, False)
    if text is not None:
        st.query_params[PIN] = text


class Page:
    """The classroom tools of one experiment page; see the module docstring for the order of calls."""

    def __init__(self, name: str, presets: Sequence[lab_presets.Preset], defaults: dict[str, Any],
                 plan: Callable[[dict[str, Any]], list[lab_presets.Need]], demo: Sequence[str] = (),
                 descriptor: Any = None) -> None:
        self.presets, self.defaults, self.plan, self.demo = tuple(presets), dict(defaults), plan, tuple(demo)
        self.descriptor = descriptor  # lab/catalog/descriptor.py: what Reproduce recomputes
        # The page's name (its descriptor's, and its file in pages/, e.g. "delete"): its workshop questions
        # (lab/classroom/questions.py) and its downloads' names.
        self.name = name
        self.student = link_flag(STUDENT)
        presenting = link_flag(PRESENT)
        self.present = presenting or self.student  # the look: no sidebar, larger type
        close_notice()
        # Only `present=1` asks for the lecturer's view (granted with the class's key); `student=1` never does.
        self.workshop = Workshop(self.name, self.presets, self.defaults, presenting and not self.student)
        st.html(_CSS_ALWAYS + (_CSS_PRESENT if self.present else ""))
        # A class that follows a lesson: the page shows the room's step, or switches to its page (app/lesson.py).
        self.lesson = lesson.follow(self.name, self.workshop)
        # In a lesson the step sets the page, so its lecturer's presets and controls fold away (the bar's Controls
        # switch shows them).
        fold = self.workshop.lesson_controls if self.lesson is not None else None
        with fold if fold is not None else contextlib.nullcontext():
            self._toolbar = st.container(key="layerlab_toolbar")
            self._inline = st.container(horizontal=True, key="layerlab_inline") if self.present else None
        self._hidden = st.container(key=_HIDDEN)
        self._pinned: Optional[dict[str, Any]] = None
        self._about: list[Any] = []  # results whose claims answer the workshop question (besides show's `r`)
        self._pin_read = False
        controls.start_run(self._place)

    @classmethod
    def of(cls, descriptor: Any) -> "Page":
        """The page of an experiment's descriptor (lab/experiments/NAME/descriptor.py): its presets, controls, plan
        and demo."""
        return cls(descriptor.name, descriptor.presets, descriptor.defaults, descriptor.plan, descriptor.demo,
                   descriptor)

    # -- where controls go ---------------------------------------------------------------------------------
    def _place(self, key: str) -> Any:
        if self.student:
            return self._hidden
        if self.present:
            return self._inline if key in self.demo else self._hidden
        return st.sidebar

    @contextlib.contextmanager
    def controls(self) -> Iterator[None]:
        """The block in which the page creates its controls (anything else it draws there goes along)."""
        if self.present:
            with self._hidden if self.student else self._inline:
                yield
        else:
            with st.sidebar:
                st.header("Controls")
                yield

    def settings(self) -> dict[str, Any]:
        """The current value of every control of the page (after `controls()`); a multi-select's as the tuple its
        declaration's default is (Streamlit keeps a list), so a setting compares equal to a preset's."""
        values = {k: st.session_state.get(k, c.default) for k, c in controls.registry().items()}
        return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}

    def describe(self, settings: dict[str, Any], against: Optional[dict[str, Any]] = None) -> str:
        """The controls where `settings` differs from `against` (default: from the defaults), in words."""
        against = self.defaults if against is None else against
        reg = controls.registry()
        parts = [f"{c.label}: {c.show(settings[k])}" for k, c in reg.items()
                 if k in settings and settings[k] != against.get(k, c.default)]
        return " · ".join(parts) if parts else "the defaults"

    # -- the toolbar ---------------------------------------------------------------------------------------
    def _readiness(self, settings: dict[str, Any]) -> str:
        return _readiness(self.plan, settings)

    def toolbar(self) -> None:
        """Try-this presets (each saying whether it is ready or how long it trains), Reset, Pin, Presentation."""
        if self.lesson is not None:  # the controls exist now: a lesson step's setting, if applied, took (app/lesson.py)
            lesson.applied(self.lesson)
        now = self.settings()
        standard = [self.defaults, *(p.settings for p in self.presets)]
        pin = self.pinned()
        # Admission control (app/jobs.py): the jobs of a default view or a preset go first and are never refused;
        # any other setting runs below them, within per-visitor bounds.
        st.session_state[jobs.STANDARD] = now in standard and (pin is None or pin in standard)
        if self.student:
            return
        with self._toolbar:
            if self.present:
                row = st.container(horizontal=True, key="layerlab_presets")
                with row:
                    for p in self.presets:
                        ready = self._readiness(p.settings)
                        controls.preset(p.label, p.settings, f"{p.help} ({ready})", key=f"try_{p.key}",
                                        type="primary" if p.settings == now else "secondary")
                    self._pin_button(now, row)
                    st.link_button("Student link", student_link(), icon=":material/link:",
                                   help="This view for students: no controls, no lecturer key.")
                    self._start_button()
                    st.toggle("Presentation", value=True, on_change=_set_flag, args=(PRESENT, False),
                              key="layerlab_present_on", help="Leave presentation mode.")
                self.workshop.put_up(student_link())  # where "Join a class" takes the room now
                return
            st.markdown("**Try this** · each button sets every control; results appear below.")
            cols = st.columns(len(self.presets) + 1)
            for col, p in zip(cols, self.presets, strict=False):  # the last column is Reset
                ready = self._readiness(p.settings)
                with col:
                    controls.preset(p.label, p.settings, p.help, key=f"try_{p.key}", width="stretch", wrap=True,
                                    type="primary" if p.settings == now else "secondary")
                    st.caption(_ready_icon(ready) + ready)
            with cols[-1]:
                controls.preset("Reset", dict(self.defaults), "Every control back to its default.",
                                key="try_reset", width="stretch", wrap=True, icon=":material/restart_alt:")
                st.caption(_ready_icon(r := self._readiness(self.defaults)) + r)
            row = st.container(horizontal=True)
            with row:
                self._pin_button(now, row)
                st.toggle("Presentation mode", value=False, on_change=_set_flag, args=(PRESENT, True),
                          key="layerlab_present_off", help="Hide the sidebar, enlarge the type and put the main "
                          "figure first, with the demo's controls above it. Also a link: present=1.")
                st.link_button("Student link", student_link(), icon=":material/link:",
                               help="This view without any controls: hand it out, and everyone sees exactly this "
                                    "setting (and the pinned one, if any). With a class, students predict in it.")
                self._start_button()

    def _start_button(self) -> None:
        """Start a class (for the lecturer): the server hands out a code and its key, and this page becomes the
        class's presentation view. Not offered on a page that already has a class."""
        if self.workshop.code is None:
            st.button("Start a class", icon=":material/co_present:", key="layerlab_start_class",
                      on_click=start_class, help="A new class code for your students and its lecturer key; this "
                      "page becomes the class's presentation view, with the code and a QR code to join.")

    def try_this(self) -> None:
        """The "Try this" section: every preset with its question; a click sets every control and scrolls up to
        the results."""
        if self.student:
            st.markdown("\n".join(f"- **{p.label}**: {p.help}" for p in self.presets))
            return
        for p in self.presets:
            left, right = st.columns([1, 3], vertical_alignment="center")
            with left:
                controls.preset(p.label, p.settings, p.help, key=f"tryb_{p.key}", width="stretch")
            right.markdown(f"{p.help} *({self._readiness(p.settings)})*")

    def _pin_button(self, now: dict[str, Any], row: Any) -> None:
        reg = controls.registry()
        try:
            text = query.pin_text({k: controls.link_text(c, now[k]) for k, c in reg.items() if now[k] != c.default})
        except ValueError:  # a value a pin cannot carry (an uploaded CSV whose label column has "_" in its name)
            text = None
        with row:
            if text is None and self.pinned() is None:
                st.button("Pin this result", icon=":material/push_pin:", disabled=True, key="layerlab_pin",
                          help="This setting cannot be pinned: a value in it (e.g. a CSV label column with '_' in "
                               "its name) cannot be written into a pin. Rename the column, or compare by links.")
            elif self.pinned() is None:
                st.button("Pin this result", icon=":material/push_pin:", on_click=_set_pin, args=(text,),
                          key="layerlab_pin", help="Keep this setting on screen: change the controls and the "
                          "metrics and the main figure show the pinned and the current run side by side.")
            else:
                st.button("Unpin", icon=":material/close:", on_click=_set_pin, args=(None,), key="layerlab_unpin",
                          help=f"Pinned: {self.describe(self._pinned)}. Click to compare no more.")

    # -- pin -----------------------------------------------------------------------------------------------
    def pinned(self) -> Optional[dict[str, Any]]:
        """The pinned setting (every control's value) from the link's `pin=`, or None."""
        if self._pin_read:
            return self._pinned
        self._pin_read = True
        try:
            values = st.query_params.get_all(PIN)
        except Exception:  # noqa: BLE001 - no URL (bare mode)
            values = []
        if values:
            reg = controls.registry()
            try:
                given = query.parse_pin(values, {k: controls.link_parser(c) for k, c in reg.items()})
                self._pinned = {k: given.get(k, c.default) for k, c in reg.items()}
            except query.Rejected as why:
                st.session_state[PIN_NOTICE] = (f"The link's pinned setting `pin={query.shown(values[0])}` was "
                                                f"ignored: {query.plain(why)}.")
                del st.query_params[PIN]
        if st.session_state.get(PIN_NOTICE):
            st.warning(st.session_state[PIN_NOTICE])
        return self._pinned

    def view(self) -> jobs.View:
        """This setting's plan (the descriptor's `plan(settings)`) to run through the job runner; a setting that
        cannot run stops the page with its reason."""
        settings = self.settings()
        try:
            view = jobs.View(self.plan(settings))
        except (TypeError, ValueError) as exc:
            st.error(f"These settings cannot run: {query.plain(exc)}. Change the controls in the sidebar.")
            st.stop()
            raise AssertionError("unreachable") from exc  # st.stop() raises
        view.head_start(self._seed_needs(settings))
        return view

    def _seed_needs(self, settings: dict[str, Any]) -> list[Any]:
        """What the view's recipe claims at its other default seeds rest on and is not stored (app/claims_view.py
        pools them without a click): started with the page's own calls so that both workers have work from the
        start. Only for a default view or a preset (a custom setting's seeds stay one job each, within the
        visitor's bound) and never for a student's view (it pools no seeds)."""
        if self.student or not st.session_state.get(jobs.STANDARD, True):
            return []
        own = int(settings.get("seed", 0))
        out = []
        for s in lab_seeds.default_seeds(self.name, settings):
            if s != own and stored("", lab_seeds.claims_at, lab_seeds.SeedClaims.of(self.name, settings, s)) \
                    is None:
                out += [dataclasses.replace(n, label=f"Seed {s}: {n.label}")
                        for n in lab_seeds.seed_needs(self.name, settings, s)]
        return out

    def pinned_view(self, beside: Optional[jobs.View] = None) -> Optional[jobs.View]:
        """The pinned setting's plan to run through the job runner (its labels say so; its calls polled with
        `beside`'s), or None: nothing pinned, or a pinned setting that cannot run (with a notice)."""
        pin = self.pinned()
        if pin is None:
            return None
        try:
            return jobs.View(self.plan(pin), prefix="The pinned setting: ",
                             pending=beside.pending if beside is not None else None)
        except (TypeError, ValueError) as exc:
            st.warning(f"The pinned setting cannot run: {query.plain(exc)}. Unpin it, or pin another.")
            return None

    # -- results -------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def results(self) -> Iterator[None]:
        """The results region: a preset scrolls it into view (its progress bar, its metrics, its main figure)."""
        with st.container(key="layerlab_results"):
            label = controls.applied()
            if label:
                st.toast(f"Applied: {label}", icon=":material/check:")
                _scroll_to("layerlab_results")
            yield

    def show(self, now: Sequence[Metric], pinned: Optional[Sequence[Metric]],
             figure: Callable[[Any, str | None, int], Optional[go.Figure]], r: Any, pr: Any = None,
             key: str = "main") -> None:
        """The metrics and the main figure of this run, next to the pinned run's when there is one; the figure
        first and full width when presenting. `figure(result, title, height)` draws one run."""
        self.workshop.gate([r, *self._about], self.settings())  # workshop mode: the question first, until Reveal
        pin = self._pinned if pinned is not None and pr is not None else None
        height = PRESENT_HEIGHT if self.present else 440
        drawn: dict[str, Any] = {}

        def metrics() -> None:
            if pin is None:
                _metric_row(now)
                return
            st.markdown(f"**:material/push_pin: Pinned** · {self.describe(pin)}")
            _metric_row(pinned)
            st.markdown(f"**Now** · {self.describe(self.settings())}")
            _metric_row(now)

        def draw(where: Any, result: Any, suffix: str) -> None:
            fig = figure(result, None, height)
            drawn.setdefault(suffix, fig)
            if fig is None:  # its numbers are still being computed: no empty axes
                where.caption("This figure appears as soon as its numbers are computed (see the progress bars).")
            else:
                charts.show(fig, f"fig_{key}{suffix}", where)  # with its caption and data table

        def figures() -> None:
            if pin is None:
                draw(st, r, "")
                return
            left, right = st.columns(2)
            left.markdown(f"**:material/push_pin: Pinned** · {self.describe(pin)}")
            draw(left, pr, "_pinned")
            right.markdown(f"**Now** · {self.describe(self.settings())}")
            draw(right, r, "")

        if self.present:
            figures()
            metrics()
        else:
            metrics()
            figures()
        worksheet.log_view(self.name, self.name.capitalize() or "A page", self.recorded(self.settings()),
                           drawn.get(""))

    def show_run(self, view: jobs.View, metrics_of: Callable[[Any, dict[str, Any]], Sequence[Metric]],
                 figure: Callable[[Any, str | None, int], Optional[go.Figure]], *, call: str = "run",
                 key: str = "main", wait: bool = True, heading: str = "") -> Any:
        """The results block of a page whose number cards and main figure read one call of its plan: this
        setting's `call` of `view` and the pinned setting's beside it, their cards (`metrics_of(result, settings)`,
        the pinned run's with the pinned settings) and the main `figure`, through `show`. Until this setting's
        result is in, the page stops here; with `wait=False` it draws nothing of it and goes on. `heading`
        (markdown) stands above the cards. Returns this setting's result (None while it is computed)."""
        r = view.run(call)
        if r is None and wait:
            st.stop()
        pin, pinned = self.pinned(), self.pinned_view()
        pr = pinned.run(call) if pinned else None
        if r is not None:
            if heading:
                st.markdown(heading)
            self.show(metrics_of(r, self.settings()), metrics_of(pr, pin) if pr else None, figure, r, pr, key=key)
        return r

    def recorded(self, settings: dict[str, Any]) -> str:
        """What the worksheet records of a view: the controls off their defaults, and always the task (a page's
        default task is omitted from `describe`, but a worksheet read later must say what data each view ran on)."""
        words = self.describe(settings)
        ctrl = controls.registry().get("task")
        if ctrl is None or "task" not in settings or settings["task"] != self.defaults.get("task", ctrl.default):
            return words
        return f"{words} · {ctrl.label}: {ctrl.show(settings['task'])}"

    def about(self, *results: Any) -> None:
        """Results (besides the one given to `show`) whose claims answer this view's workshop question."""
        self._about.extend(results)

    def reproduce(self, figure: Optional[Callable[..., Any]] = None) -> None:
        """The Reproduce expander of this view: the descriptor's one lab call that recomputes it
        (`Descriptor.reproduce`), and `figure(result)`, the main figure. Before it, how the view's trained models
        learned (their stored training curves, app/training_view.py)."""
        try:
            training_view.learned(self.plan(self.settings()))
        except (TypeError, ValueError):  # a setting that cannot run has no models (the page says why elsewhere)
            pass
        call = self.descriptor.reproduce(self.settings())
        reproduce_view.reproduce(self.name or "page", self.name.capitalize(), call.fn, call.cfg, figure)


# "ready" stays true (a stored entry is never removed under a running server); anything else is asked again after
# READY_TTL seconds, so a button's caption catches up with a training that landed. Keyed by the store, so tests with
# stores of their own do not share answers. Every rerun asked it of every preset, twice: 7 checks of 2-6 files.
READY_TTL = 5.0
_ready: dict[tuple[Any, ...], tuple[str, float]] = {}


def _readiness(plan: Callable[[dict[str, Any]], list[lab_presets.Need]], settings: dict[str, Any]) -> str:
    try:
        key = (plan, tuple(sorted((k, repr(v)) for k, v in settings.items())), str(active_store().root), quick())
    except TypeError:
        key = None
    hit = _ready.get(key) if key else None
    now = time.monotonic()
    if hit is not None and (hit[0] == "ready" or now - hit[1] < READY_TTL):
        return hit[0]
    try:
        text = lab_presets.describe_cost(lab_presets.cost(plan(settings)))
    except ValueError:
        text = ""
    if key is not None:
        _ready[key] = (text, now)
    return text


def _ready_icon(ready: str) -> str:
    return ":material/check_circle: " if ready == "ready" else ":material/schedule: " if ready else ""


def _metric_row(items: Sequence[Metric]) -> None:
    for col, m in zip(st.columns(len(items)), items, strict=True):
        col.metric(m.label, m.value, m.delta, help=m.help, delta_color=m.delta_color)


def _scroll_to(key: str) -> None:
    """Scroll the page so that the keyed container's top is in view, just below Streamlit's fixed header (after a
    preset was clicked far below it).

    Streamlit has no scroll API. st.html runs a script in the page itself when allowed to (Streamlit's supported way
    to run one); `key` is one of the page's own constants.
    The browser runs an st.html script again only when its text changes: the same element drawn by two runs in a row
    (two presets clicked one after the other) would not scroll the second time, so each request numbers itself."""
    if not re.fullmatch(r"[a-z_]+", key):
        raise ValueError(f"not a container key: {key!r}")
    request = st.session_state[_SCROLLS] = st.session_state.get(_SCROLLS, 0) + 1
    st.html(f"""<script>
      (() => {{  /* scroll request {request} of this session */
        const go = (n) => {{
          const el = document.querySelector('.st-key-{key}');
          if (el) {{
            // The header is fixed over the top of the page: aligned with the top, the results (their metric
            // labels) would lie under it, and a fractional layout leaves their top a fraction of a pixel above.
            const header = document.querySelector('[data-testid="stHeader"]');
            el.style.scrollMarginTop = `${{(header ? header.getBoundingClientRect().height : 0) + 8}}px`;
            el.scrollIntoView({{block: 'start', behavior: 'instant'}});
          }} else if (n > 0) {{ setTimeout(() => go(n - 1), 100); }}
        }};
        go(30);
        // Again once the rerun's content has been laid out (on a loaded server it lands late and moves the page).
        setTimeout(() => go(0), 600);
        setTimeout(() => go(0), 1500);
      }})();
    </script>""", unsafe_allow_javascript=True)
