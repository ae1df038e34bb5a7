"""Widgets whose values live in the page URL, so a copied link reproduces the view exactly.

Each widget is bound to a query parameter named by its key (Streamlit drops a parameter whose value equals
the default, keeping links short). Every value a link carries goes through one parser (app/query.py) before the
widget exists, and a value it rejects never reaches Streamlit's binding:

- The binding does not read `st.query_params`: on a page's first run it seeds the widget from a snapshot of the
  URL taken when the run started, and it parses that text with int()/float() (a 400-digit or 1e400 seed crashed
  number_input with an OverflowError; "３" passed as 3). Deleting the parameter is therefore not enough. A control
  whose link value is rejected is created *unbound* for that run: it then never looks at the URL, and Streamlit
  itself removes a parameter that an earlier run had bound. We delete it from the link too, and rerun at once so
  that the widget is bound again before the student can touch it (an unbound widget does not write the URL).
- The notice saying what was ignored is kept in session_state and shown on every run until the control's value
  changes. It used to be drawn only on the run that saw the bad parameter; once the parameter had left the URL,
  any later rerun (a slider touched during a long training, a fragment finishing) wiped it.

Presets ("Try this" buttons) set widget keys through session_state. Streamlit logs "created with a default value
but also had its value set via the Session State API" when a widget is then created with `value=`/`index=`, so
a control a preset has just set is created without its default, and unbound: without the default, Streamlit
would sync the link against the wrong default (the first option or the minimum) and drop a value equal to it.
We write its link value ourselves and rerun, so the frontend gets the bound widget with its real default.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import streamlit as st
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app import query

NOTICES = "_layerlab_link_notices"  # {(page, key): {"text": str, "value": the control's value when rejected}}
PENDING = "_layerlab_preset_pending"  # keys a preset has set whose widgets have not been created since
_UNSEEN = object()  # a notice's value before its control has been created


def _link_values(key: str) -> list[str]:
    try:
        return st.query_params.get_all(key)
    except Exception:  # noqa: BLE001 - no URL (bare mode): nothing to check
        return []


def _page() -> str:
    """The running page: a notice belongs to one page's control (`seed` exists on four pages)."""
    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


def _drop_from_link(key: str) -> None:
    try:
        del st.query_params[key]
    except (KeyError, StreamlitAPIException):
        pass  # bound by an earlier run: creating the widget unbound makes Streamlit remove it


def _check_link(key: str, default: Any, parse: Callable[[list[str]], Any]) -> bool:
    """True when the link carries a value for `key` that `parse` rejects; records its notice and drops it."""
    values = _link_values(key)
    if not values:
        return False
    try:
        parse(values)
        return False
    except query.Rejected as why:
        raw = query.shown(f"&{key}=".join(values))
        keeps = "The control keeps its current value" if key in st.session_state else f"Using the default, {default}"
        st.session_state.setdefault(NOTICES, {})[(_page(), key)] = {
            "text": f"The link's value `{key}={raw}` was ignored: {why}. {keeps}.", "value": _UNSEEN}
        _drop_from_link(key)
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


def _control(key: str, default: Any, parse: Callable[[list[str]], Any],
             create: Callable[[str | None, bool], Any]) -> Any:
    """Check the link, then create the widget via `create(bind, with_default)`, bypassing the URL binding when a
    rejected link value or a preset must not meet it (see the module docstring)."""
    rejected = _check_link(key, default, parse)
    pending = st.session_state.get(PENDING, set())
    preset = key in pending
    pending.discard(key)
    slot = st.empty()  # the notice goes above its control, but its fate depends on the control's value
    value = create(None if rejected or preset else "query-params", not preset)
    if preset and value != default:
        st.query_params[key] = query.url_string(value)  # allowed: the widget is unbound in this run
    _show_notice(slot, key, value)
    if (rejected and key not in st.query_params) or (preset and not pending):
        st.rerun()  # rebind before the student touches the control; the guard keeps this from looping
    return value


def select(label: str, key: str, options: Sequence[Any], default: Any, help: str,
           format_func: Callable[[Any], str] = str, **kw: Any) -> Any:
    """A select box bound to the URL parameter `key` (shown labels are what the link carries)."""
    labels = [format_func(o) for o in options]  # a bound select box writes the option's label into the link

    def create(bind: str | None, with_default: bool) -> Any:
        index = {"index": list(options).index(default)} if with_default else {}
        return st.selectbox(label, options, key=key, help=help, format_func=format_func, bind=bind, **index, **kw)

    return _control(key, default, lambda v: query.parse_choice(v, labels), create)


def select_slider(label: str, key: str, options: Sequence[Any], default: Any, help: str, **kw: Any) -> Any:
    """A select slider over `options` bound to the URL parameter `key`."""

    def create(bind: str | None, with_default: bool) -> Any:
        value = {"value": default} if with_default else {}
        return st.select_slider(label, options, key=key, help=help, bind=bind, **value, **kw)

    return _control(key, default, lambda v: query.parse_choice(v, options), create)


def slider(label: str, key: str, lo: int, hi: int, default: int, help: str, **kw: Any) -> int:
    """An integer slider bound to the URL parameter `key`."""

    def create(bind: str | None, with_default: bool) -> Any:
        value = {"value": default} if with_default else {}
        return st.slider(label, lo, hi, key=key, help=help, bind=bind, **value, **kw)

    return int(_control(key, default, lambda v: query.parse_int(v, lo, hi), create))


def number(label: str, key: str, lo: int, hi: int, default: int, help: str, **kw: Any) -> int:
    """An integer input bound to the URL parameter `key`."""

    def create(bind: str | None, with_default: bool) -> Any:
        return st.number_input(label, lo, hi, default if with_default else "min", step=1, key=key, help=help,
                               bind=bind, **kw)

    return int(_control(key, default, lambda v: query.parse_int(v, lo, hi), create))


def preset(label: str, values: dict[str, Any], help: str, key: str) -> None:
    """A "Try this" button that sets several controls at once (see the module docstring for how they take it)."""

    def apply() -> None:
        for k, v in values.items():
            st.session_state[k] = v
        st.session_state[PENDING] = set(values)

    st.button(label, help=help, on_click=apply, key=key)


def make_config(factory: Callable[..., Any], **values: Any) -> Any:
    """Build an experiment config from widget values; a value the config rejects stops the page with its reason."""
    try:
        return factory(**values)
    except (TypeError, ValueError) as exc:
        st.error(f"These settings cannot run: {exc}. Change the controls in the sidebar.")
        st.stop()
