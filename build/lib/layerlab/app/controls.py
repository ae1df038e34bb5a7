"""Widgets whose values live in the page URL, so a copied link reproduces the view exactly.

Each widget is bound to a query parameter named by its key (Streamlit drops a parameter whose value equals
the default, keeping links short). Every value a link carries goes through one parser (app/query.py) before the
widget exists, and a value it rejects never reaches Streamlit's binding:

- The binding does not read `st.query_params`: on a page's first run it seeds the widget from a snapshot of the
  URL taken when the run started, and parses that text with int()/float() (a 400-digit or 1e400 seed crashed
  number_input with an OverflowError; "３" passed as 3). Deleting the parameter is therefore not enough: a control
  whose link value is rejected is created *unbound* for that run, so it never looks at the URL.
- The notice saying what was ignored is kept in session_state and shown on every run until the control's value
  changes: drawn only on the run that saw the bad parameter, it would be wiped by any later rerun (a slider touched
  during a long training, a fragment finishing), since the parameter has left the URL by then.
- After every control, the link is made to state its value (absent when it is the default). Streamlit keeps the
  two in step itself in the common case; this closes the gaps (a run where the control was unbound, a preset).

Presets ("Try this" buttons) set widget keys through session_state. Streamlit logs "created with a default value
but also had its value set via the Session State API" when a widget is created with `value=`/`index=` while its
key holds a value set in this run, so such a control is created without its default. Without it Streamlit syncs
the link against the wrong default (the minimum or the first option) and would drop a value equal to that, which
the link sync above repairs.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state import get_session_state

from app import query
from lab import experiment

NOTICES = "_layerlab_link_notices"  # {(page, key): {"text": str, "value": the control's value when rejected}}
WRITTEN = "_layerlab_link_written"  # {(page, key): the link text this session last wrote for a manually bound control}
APPLIED = "_layerlab_preset_applied"  # the label of the preset applied by the last click (read once by the page)
_UNSEEN = object()  # a notice's value before its control has been created
_NEVER = object()  # no link text written yet


@dataclass
class Control:
    """What the page's classroom tools need to know of one control: its default, how a link value of it is parsed
    and written (the same rules as the control itself), and how to name it and its values for people."""

    key: str
    label: str
    default: Any
    parse: Callable[[list[str]], Any]
    to_url: Callable[[Any], str]
    show: Callable[[Any], str] = str


# The controls created in this run, in order, and where each is drawn. app/main.py resets both at the start of
# every run (a page registers its controls again each run); app/classroom.py sets where they go; without it,
# controls go where the page's `with` block puts them.


def registry() -> dict[str, Control]:
    """The controls created so far in this run (session-local: kept in session_state)."""
    return st.session_state.setdefault("_layerlab_controls", {})


def start_run(place: Callable[[str], Any] | None = None) -> None:
    """Forget the previous run's controls; `place(key)` gives the container each control is drawn in (called by
    app/main.py at the start of every run with no `place`, and by a classroom page with one)."""
    st.session_state["_layerlab_controls"] = {}
    st.session_state["_layerlab_place"] = place


def _placed(key: str) -> Any:
    place = st.session_state.get("_layerlab_place")
    return place(key) if place is not None else contextlib.nullcontext()


# -- the three places that use Streamlit below its public API (tests/test_query.py checks they still exist) ----
# Public st.query_params refuses to set or delete a parameter bound to a widget, and cannot say whether a key was
# set through session_state in this run; the methods below are the ones Streamlit's own binding uses for that.

def _set_link(key: str, text: str | None) -> None:
    """Make the link carry `key=text` (or no `key` when text is None), bound to a widget or not."""
    with get_session_state().query_params() as qp:
        if text is None:
            qp.remove_param(key)
        else:
            qp.set_corrected_value(key, text, "string_value")


def _set_this_run(key: str) -> bool:
    """Whether session_state[key] was written in this run (a preset's callback, a page's fallback)."""
    return get_session_state().is_new_state_value(key)


def _page() -> str:
    """The running page: a notice belongs to one page's control (`seed` exists on four pages)."""
    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


# ------------------------------------------------------------------------------------------------------------

def link_values(key: str) -> list[str]:
    """Every value the page's link carries for `key` (none in bare mode); the one reader of link values."""
    try:
        return st.query_params.get_all(key)
    except Exception:  # noqa: BLE001 - no URL (bare mode): nothing to check
        return []


def _check_link(key: str, default: Any, parse: Callable[[list[str]], Any]) -> bool:
    """True when the link carries a value for `key` that `parse` rejects; records its notice and drops it."""
    values = link_values(key)
    if not values:
        return False
    try:
        parse(values)
        return False
    except query.Rejected as why:
        raw = query.shown(f"&{key}=".join(values))
        keeps = "The control keeps its current value" if key in st.session_state else f"Using the default, {default}"
        st.session_state.setdefault(NOTICES, {})[(_page(), key)] = {
            "text": f"The link's value `{key}={raw}` was ignored: {query.plain(why)}. {keeps}.", "value": _UNSEEN}
        _set_link(key, None)
        return True


def _show_notice(slot: Any, key: str, value: Any) -> None:
    """Show the control's notice until its value changes (then the student has moved on from the bad link)."""
    notices = st.session_state.get(NOTICES, {})
    notice = notices.get((_page(), key))
    if notice is None:
        return
    if notice["value"] is _UNSEEN:
        notice["value"] = value
    elif notice["value"] != value:
        del notices[(_page(), key)]
        return
    slot.warning(notice["text"])


def _sync_link(key: str, value: Any, default: Any, to_url: Callable[[Any], str]) -> None:
    """Make the link state the control's value: no parameter for the default, else the value's link string."""
    want = None if value == default else to_url(value)
    have = link_values(key)
    if have != ([] if want is None else [want]):
        _set_link(key, want)


def _control(key: str, default: Any, parse: Callable[[list[str]], Any], to_url: Callable[[Any], str],
             create: Callable[[str | None, bool], Any], label: str = "", show: Callable[[Any], str] = str,
             manual: bool = False) -> Any:
    """Check the link, then create the widget via `create(bind, with_default)` (see the module docstring).

    manual: the control is never bound by Streamlit; its link value is applied here (a select box with human
    labels: Streamlit's binding would write the label into the link, and the link must carry the short value).
    """
    registry()[key] = Control(key, label or key, default, parse, to_url, show)
    with _placed(key):
        rejected = _check_link(key, default, parse)
        if manual and not rejected:
            _apply_link(key, default, parse, to_url)
        slot = st.empty()  # the notice goes above its control, but whether it shows depends on the control's value
        value = create(None if (rejected or manual) else "query-params", not _set_this_run(key))
        _show_notice(slot, key, value)
    _sync_link(key, value, default, to_url)
    if manual:
        st.session_state.setdefault(WRITTEN, {})[(_page(), key)] = _link_text(key)
    return value


def _link_text(key: str) -> str | None:
    values = link_values(key)
    return values[0] if len(values) == 1 else None


def _apply_link(key: str, default: Any, parse: Callable[[list[str]], Any], to_url: Callable[[Any], str]) -> None:
    """Give a manually bound control the link's value when the link says something this session did not write
    (a fresh visit, a pasted or hand-edited link, back/forward), and never when a preset set it in this run."""
    if _set_this_run(key):
        return
    written = st.session_state.get(WRITTEN, {}).get((_page(), key), _NEVER)
    text = _link_text(key)
    if text == written or (written is _NEVER and text is None):
        return  # the link says what this session last wrote (or nothing on a first visit): the widget decides
    st.session_state[key] = default if text is None else parse([text])


def select(label: str, key: str, options: Sequence[Any], default: Any, help: str,
           labels: dict[Any, str] | None = None, **kw: Any) -> Any:
    """A select box bound to the URL parameter `key`. It shows `labels` (human words) while the link carries the
    option's short value (`arch=plain`, not `arch=plain+MLP`): such a box is bound by this module, not Streamlit,
    whose binding writes the shown label into the link."""
    labels = dict(labels or {})
    shown = (lambda o: labels.get(o, str(o))) if labels else str

    def create(bind: str | None, with_default: bool) -> Any:
        index = {"index": list(options).index(default)} if with_default else {}
        return st.selectbox(label, options, key=key, help=help, format_func=shown, bind=bind, **index, **kw)

    # Every select is bound here (manual): one rule for all of them, labelled or not.
    return _control(key, default, lambda v: query.parse_choice(v, options), query.url_string, create, label, shown,
                    manual=True)


def multiselect(label: str, key: str, options: Sequence[str], default: tuple[str, ...], help: str,
                labels: dict[str, str] | None = None, **kw: Any) -> tuple[str, ...]:
    """A multi-select of strings bound to the URL parameter `key`, written comma-separated in the options' order
    (`layers=blocks.1,blocks.2`); an empty choice is `none`. Bound here (manual), like `select`."""
    labels = dict(labels or {})
    order = list(options)

    def parse(values: list[str]) -> tuple[str, ...]:
        raw = query.single(values)
        picked = [] if raw == "none" else raw.split(",")
        bad = [x for x in picked if x not in order]
        if bad or len(set(picked)) != len(picked):
            raise query.Rejected("expected none, or options from " + ", ".join(order) + " separated by commas, "
                                 "each once")
        return tuple(sorted(picked, key=order.index))

    def to_url(value: Any) -> str:
        return ",".join(sorted(value, key=order.index)) or "none"

    def create(bind: str | None, with_default: bool) -> Any:
        value = {"default": list(default)} if with_default else {}
        picked = st.multiselect(label, order, key=key, help=help, format_func=lambda o: labels.get(o, o), **value,
                                **kw)
        return tuple(sorted(picked, key=order.index))  # a tuple in the options' order: comparable with the default

    return _control(key, tuple(default), parse, to_url, create, label, to_url, manual=True)


def select_slider(label: str, key: str, options: Sequence[Any], default: Any, help: str, **kw: Any) -> Any:
    """A select slider over `options` bound to the URL parameter `key`."""

    def create(bind: str | None, with_default: bool) -> Any:
        value = {"value": default} if with_default else {}
        return st.select_slider(label, options, key=key, help=help, bind=bind, **value, **kw)

    return _control(key, default, lambda v: query.parse_choice(v, options), query.url_string, create, label)


def slider(label: str, key: str, lo: int, hi: int, default: int, help: str, **kw: Any) -> int:
    """An integer slider bound to the URL parameter `key`."""

    def create(bind: str | None, with_default: bool) -> Any:
        value = {"value": default} if with_default else {}
        return st.slider(label, lo, hi, key=key, help=help, bind=bind, **value, **kw)

    return int(_control(key, default, lambda v: query.parse_int(v, lo, hi), query.url_string, create, label))


def number(label: str, key: str, lo: int, hi: int, default: int, help: str, **kw: Any) -> int:
    """An integer input bound to the URL parameter `key`."""

    def create(bind: str | None, with_default: bool) -> Any:
        return st.number_input(label, lo, hi, default if with_default else "min", step=1, key=key, help=help,
                               bind=bind, **kw)

    return int(_control(key, default, lambda v: query.parse_int(v, lo, hi), query.url_string, create, label))


def apply(values: dict[str, Any], label: str = "") -> None:
    """Set several controls at once (in a button's callback, before the widgets exist: no Session State warning;
    the controls then update the link themselves). `label` names what was applied, for the page to announce."""
    for k, v in values.items():
        st.session_state[k] = v
    st.session_state[APPLIED] = label


def preset(label: str, values: dict[str, Any], help: str, key: str, **kw: Any) -> bool:
    """A button that sets `values` at once. A complete preset (lab.catalog.presets.Preset.settings) sets every control
    of the page; a partial one (the LayerDrop rule's "train with p*") only what it names."""
    return st.button(label, help=help, on_click=apply, args=(values, label), key=key, **kw)


def applied() -> str | None:
    """The label of the preset the last click applied (once: the next run returns None)."""
    return st.session_state.pop(APPLIED, None)


def make_config(factory: Callable[..., Any], **values: Any) -> Any:
    """Build an experiment config from widget values; a value the config rejects stops the page with its reason."""
    try:
        return factory(**values)
    except (TypeError, ValueError) as exc:
        st.error(f"These settings cannot run: {query.plain(exc)}. Change the controls in the sidebar.")
        st.stop()


def param(config: type, name: str, widget: str = "select", *, label: str | None = None, help: str | None = None,
          options: Sequence[Any] | None = None, lo: int | None = None, hi: int | None = None, key: str | None = None,
          default: Any = None) -> Any:
    """A URL-bound widget for one field of an experiment config: its default, choices, bounds, label and help come
    from the field (lab.experiment.param); a page may narrow the bounds or offer a menu of `options`.

    widget: "select" (choices or `options`), "slider" or "number" (integers within [lo, hi]).
    """
    m = experiment.meta(config, name)
    value = experiment.default(config, name) if default is None else default
    label = label or m.get("label") or name
    help = help or m.get("help") or ""
    key = key or name
    if widget == "select":
        return select(label, key, tuple(options if options is not None else m["choices"]), value, help=help,
                      labels=m.get("labels") or None)
    lo = int(m["lo"]) if lo is None else lo
    hi = int(m["hi"]) if hi is None else hi
    if widget == "slider":
        return slider(label, key, lo, hi, value, help=help)
    if widget == "number":
        return number(label, key, lo, hi, value, help=help)
    raise ValueError(f"unknown widget {widget!r}")
