"""Stored results read in the page's script thread, starting nothing: one shared object per store entry, kept in
memory for every session (`stored`; app/jobs.py asks `lookup` before it submits a job).

Why in this thread: a result already in the store is read at once, never queued behind other students' training.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Optional

import streamlit as st

from app import figcache, query
from lab.runtime import quick
from lab.runtime.notices import collecting
from lab.runtime.store import NotCached, active_store, cached_only, config_json, read_hooks, shared_reads

MISSING = object()  # what `lookup` answers for a result that is not stored
# Stored results already read, one shared object per store entry (by the entry's full path, so two stores or quick
# mode never mix): an entry never changes once written (its name hashes what it depends on), so a rerun or another
# session gets the same object without reading and parsing the file again, and app/figcache.py keys the figures
# drawn from it by that name. Shared: pages must not change a result (they build new dicts from it).
MAX_RESULTS = figcache.MAX_REGISTERED
_results: OrderedDict[str, Any] = OrderedDict()
_results_lock = threading.Lock()
# Every entry read in the script thread (a function that reads several, like rearrange.all_models, included) keys
# the figures drawn from it by its file (lab/runtime/store.py: shared_reads).
read_hooks.append(figcache.register)


def entry_key(fn: Callable[..., Any], cfg: Any) -> Optional[str]:
    """The store entry that holds `fn(cfg)` (its path), or None for a function that is not a cached entry point."""
    kind = getattr(fn, "kind", None)
    if kind is None:
        return None
    store = active_store()
    return str(store.path(store.key(kind, cfg), ".json"))


def _composed_key(fn: Callable[..., Any], cfg: Any) -> Optional[str]:
    """The memo key of a function that is not an entry point but only puts stored entries together (a page's
    comparison of several stored profiles, with their claims). `lookup` computes it from the store alone
    (`cached_only`), and a stored entry never changes under a running server, so the answer holds for the server's
    life; computing it again cost a cached view 20-40 ms (issue 21)."""
    try:
        about = config_json(cfg)
    except (TypeError, ValueError):  # not a config the store could key: computed each time, as before
        return None
    return f"composed:{fn.__module__}.{fn.__qualname__}:{active_store().root}:{quick.quick()}:{about}"


def _remember(key: Optional[str], result: Any) -> Any:
    if key is None or result is None:
        return result
    with _results_lock:
        _results[key] = result
        _results.move_to_end(key)
        while len(_results) > MAX_RESULTS:
            _results.popitem(last=False)
    figcache.register(key, result)
    return result


def stored(label: str, fn: Callable[..., Any], cfg: Any) -> Optional[Any]:
    """fn(cfg) read from the store now, starting nothing; None where it is not stored (or its config is invalid,
    which the page is told)."""
    result = lookup(label, fn, cfg)
    return None if result is MISSING else result


def lookup(label: str, fn: Callable[..., Any], cfg: Any) -> Any:
    """The stored result, read in this thread (never queued behind other students' training); MISSING if it is
    not stored; None (with a message) if the config is invalid."""
    try:
        key = entry_key(fn, cfg) or _composed_key(fn, cfg)
        with _results_lock:
            if key in _results:
                _results.move_to_end(key)
                return _results[key]
        with collecting() as notices, cached_only(), shared_reads():
            result = fn(cfg, progress=lambda f, m: None)
        for n in notices:
            st.warning(n, icon="⚠️")
        return result if notices else _remember(key, result)  # a rebuilt entry is read afresh next time
    except NotCached:
        return MISSING
    except ValueError as exc:
        st.error(f"{label} could not run: {query.plain(exc)}")
        return None

