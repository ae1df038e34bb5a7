"""Widgets whose values live in the page URL, so a copied link reproduces the view exactly.

Each widget is bound to a query parameter named by its key (Streamlit drops a parameter whose value equals
the default, keeping links short). Streamlit silently ignores a value it cannot use; we first check the raw
URL ourselves so the student is told which value was ignored and why, instead of wondering.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import streamlit as st

from lab import experiment


def _url_value(key: str) -> str | None:
    try:
        return st.query_params.get(key)
    except Exception:  # noqa: BLE001 - no URL (e.g. in AppTest): nothing to check
        return None


def _ignored(key: str, raw: str, expected: str) -> None:
    st.warning(f"The link's value `{key}={raw[:40]}` was ignored: {expected}. Using the default instead.")


def _check_int(key: str, lo: int, hi: int) -> None:
    """Tell the student when the link's value for an integer control is not a whole number in [lo, hi]."""
    raw = _url_value(key)
    if raw is None:
        return
    try:
        ok = lo <= int(raw) <= hi
    except ValueError:
        ok = False
    if not ok:
        _ignored(key, raw, f"expected a whole number from {lo} to {hi}")


def select(label: str, key: str, options: Sequence[Any], default: Any, help: str,
           format_func: Callable[[Any], str] = str, **kw: Any) -> Any:
    """A select box bound to the URL parameter `key`."""
    raw = _url_value(key)
    shown = [format_func(o) for o in options]  # a bound select box writes the option's label into the link
    if raw is not None and raw not in shown:
        _ignored(key, raw, "expected one of " + ", ".join(shown))
    return st.selectbox(label, options, index=list(options).index(default), key=key, help=help,
                        format_func=format_func, bind="query-params", **kw)


def slider(label: str, key: str, lo: int, hi: int, default: int, help: str, **kw: Any) -> int:
    """An integer slider bound to the URL parameter `key`."""
    _check_int(key, lo, hi)
    return int(st.slider(label, lo, hi, default, key=key, help=help, bind="query-params", **kw))


def number(label: str, key: str, lo: int, hi: int, default: int, help: str, **kw: Any) -> int:
    """An integer input bound to the URL parameter `key`."""
    _check_int(key, lo, hi)
    return int(st.number_input(label, lo, hi, default, step=1, key=key, help=help, bind="query-params", **kw))


def preset(label: str, values: dict[str, Any], help: str, key: str) -> None:
    """A "Try this" button that sets several controls at once (they then update the URL themselves)."""

    def apply() -> None:
        for k, v in values.items():
            st.session_state[k] = v

    st.button(label, help=help, on_click=apply, key=key)


def make_config(factory: Callable[..., Any], **values: Any) -> Any:
    """Build an experiment config from widget values; a value the config rejects stops the page with its reason."""
    try:
        return factory(**values)
    except (TypeError, ValueError) as exc:
        st.error(f"These settings cannot run: {exc}. Change the controls in the sidebar.")
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
        return select(label, key, tuple(options if options is not None else m["choices"]), value, help=help)
    lo = int(m["lo"]) if lo is None else lo
    hi = int(m["hi"]) if hi is None else hi
    if widget == "slider":
        return slider(label, key, lo, hi, value, help=help)
    if widget == "number":
        return number(label, key, lo, hi, value, help=help)
    raise ValueError(f"unknown widget {widget!r}")
