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

Every widget is made from one control of the page (lab/catalog/descriptor.py: `Control`, the one class of a control):
its label, help, default, choices or range and option labels are the `param` declaration's, written once; a page may
only narrow them (a menu of options, tighter bounds, labels of options the view names). The controls made in a run
are registered as those same `Control`s, and a link value of one is parsed by the rules its values follow.

Presets ("Try this" buttons) set widget keys through session_state. Streamlit logs "created with a default value
but also had its value set via the Session State API" when a widget is created with `value=`/`index=` while its
key holds a value set in this run, so such a control is created without its default. Without it Streamlit syncs
the link against the wrong default (the minimum or the first option) and would drop a value equal to that, which
the link sync above repairs.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Mapping, Optional, Sequence

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state import get_session_state

from app import query
from lab.catalog.descriptor import Control

NOTICES = "_layerlab_link_notices"  # {(page, key): {"text": str, "value": the control's value when rejected}}
WRITTEN = "_layerlab_link_written"  # {(page, key): the link text this session last wrote for a manually bound control}
APPLIED = "_layerlab_preset_applied"  # the label of the preset applied by the last click (read once by the page)
_UNSEEN = object()  # a notice's value before its control has been created
_NEVER = object()  # no link text written yet


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


def link_parser(ctrl: Control) -> Callable[[list[str]], Any]:
    """How a link value of the control is read (app/query.py): options of a multi-select separated by commas, one
    of its choices, or a whole number in its range."""
    if isinstance(ctrl.default, tuple):
        order = list(ctrl.choices or ())

        def parse(values: list[str]) -> tuple[Any, ...]:
            raw = query.single(values)
            picked = [] if raw == "none" else raw.split(",")
            bad = [x for x in picked if x not in order]
            if bad or len(set(picked)) != len(picked):
                raise query.Rejected("expected none, or options from " + ", ".join(map(str, order))
                                     + " separated by commas, each once")
            return tuple(sorted(picked, key=order.index))

        return parse
    if ctrl.choices is not None:
        options = tuple(ctrl.choices)
        return lambda v: query.parse_choice(v, options)
    lo, hi = ctrl.bounds
    return lambda v: query.parse_int(v, int(lo), int(hi))


def link_text(ctrl: Control, value: Any) -> str:
    """The link's text of a value of the control (a multi-select: its options in order, comma-separated)."""
    if isinstance(ctrl.default, tuple):
        order = list(ctrl.choices or ())
        return ",".join(sorted(value, key=order.index)) or "none"
    return query.url_string(value)


def _control(ctrl: Control, create: Callable[[str | None, bool], Any], manual: bool = False) -> Any:
    """Check the link, then create the widget via `create(bind, with_default)` (see the module docstring).

    manual: the control is never bound by Streamlit; its link value is applied here (a select box with human
    labels: Streamlit's binding would write the label into the link, and the link must carry the short value).
    """
    key, default, parse = ctrl.name, ctrl.default, link_parser(ctrl)
    to_url = lambda v: link_text(ctrl, v)  # noqa: E731
    registry()[key] = ctrl
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


def select(ctrl: Control, **kw: Any) -> Any:
    """A select box over the control's choices. It shows their labels (human words) while the link carries the
    option's short value (`arch=plain`, not `arch=plain+MLP`): such a box is bound by this module, not Streamlit,
    whose binding writes the shown label into the link."""
    options, default = list(ctrl.choices or ()), ctrl.default

    def create(bind: str | None, with_default: bool) -> Any:
        index = {"index": options.index(default)} if with_default else {}
        return st.selectbox(ctrl.label, options, key=ctrl.name, help=ctrl.help, format_func=ctrl.show, bind=bind,
                            **index, **kw)

    # Every select is bound here (manual): one rule for all of them, labelled or not.
    return _control(ctrl, create, manual=True)


def multiselect(ctrl: Control, **kw: Any) -> tuple[Any, ...]:
    """A multi-select of the control's choices, written comma-separated in their order (`layers=blocks.1,blocks.2`);
    an empty choice is `none`. Bound here (manual), like `select`."""
    order = list(ctrl.choices or ())

    def create(bind: str | None, with_default: bool) -> Any:
        value = {"default": list(ctrl.default)} if with_default else {}
        picked = st.multiselect(ctrl.label, order, key=ctrl.name, help=ctrl.help, format_func=ctrl.show, **value,
                                **kw)
        return tuple(sorted(picked, key=order.index))  # a tuple in the options' order: comparable with the default

    return _control(ctrl, create, manual=True)


def select_slider(ctrl: Control, **kw: Any) -> Any:
    """A select slider over the control's choices, bound to the URL."""

    def create(bind: str | None, with_default: bool) -> Any:
        value = {"value": ctrl.default} if with_default else {}
        return st.select_slider(ctrl.label, list(ctrl.choices or ()), key=ctrl.name, help=ctrl.help, bind=bind,
                                format_func=ctrl.show, **value, **kw)

    return _control(ctrl, create)


def slider(ctrl: Control, **kw: Any) -> int:
    """An integer slider over the control's range, bound to the URL."""
    lo, hi = ctrl.bounds

    def create(bind: str | None, with_default: bool) -> Any:
        value = {"value": ctrl.default} if with_default else {}
        return st.slider(ctrl.label, int(lo), int(hi), key=ctrl.name, help=ctrl.help, bind=bind, **value, **kw)

    return int(_control(ctrl, create))


def number(ctrl: Control, **kw: Any) -> int:
    """An integer input over the control's range, bound to the URL."""
    lo, hi = ctrl.bounds

    def create(bind: str | None, with_default: bool) -> Any:
        return st.number_input(ctrl.label, int(lo), int(hi), ctrl.default if with_default else "min", step=1,
                               key=ctrl.name, help=ctrl.help, bind=bind, **kw)

    return int(_control(ctrl, create))


WIDGETS: dict[str, Callable[..., Any]] = {"select": select, "multiselect": multiselect, "select_slider": select_slider,
                                          "slider": slider, "number": number}


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


def param(owner: type, field: str, widget: str = "select", *, options: Optional[Sequence[Any]] = None,
          lo: Optional[int] = None, hi: Optional[int] = None, labels: Optional[Mapping[Any, str]] = None,
          key: Optional[str] = None, **kw: Any) -> Any:
    """A URL-bound widget for one `param` field of a config or a page's own controls (the control `key`, default the
    field's name): its label, help, default, choices or range come from the declaration (lab.experiment.param), so
    they are written once; a page may only narrow it (a menu of `options`, bounds `lo`/`hi`, labels of options the
    view names). `kw` goes to the widget (e.g. `disabled`).

    widget: "select" or "multiselect" (the choices or `options`), "select_slider" (`options`), "slider" or "number"
    (whole numbers within [lo, hi]).
    """
    if widget not in WIDGETS:
        raise ValueError(f"unknown widget {widget!r}; choose from {', '.join(WIDGETS)}")
    ctrl = Control(key or field, owner, field).narrowed(options, lo, hi, labels)
    return WIDGETS[widget](ctrl, **kw)
