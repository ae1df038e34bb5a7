"""Figures built once: a figure is a pure function of stored results, its arguments and the palette.

Why: building a Plotly figure validates every property it sets (a `template` alone is a deep copy and a few
thousand validations), which makes a cached page view cost 0.2-0.5 s of server CPU, every rerun, for every student.
Here each figure builder of app/figures_*.py is decorated with `@figure`: its first call builds the
figure, every later call with equal arguments and the same palette (from any session) returns the same object.

How the arguments are keyed cheaply: app/stored_results.py serves each stored result as one shared object per store
entry and registers it here under its store key (`register`), with the lists and dicts inside it. A registered object
stands for its key in the argument's token; a large container met before stands for the digest of its content,
computed once; anything else (numbers, strings, a dict a page put together from several results) is walked and
stands for itself. So a rerun pays a walk of small containers, not a hash of the numbers.

The returned figure is shared: it must not be changed. Its mutating methods raise; a page that wants to change one
builds a copy (`go.Figure(fig.to_dict())`). `to_dict()` returns the dict made when it was built (Streamlit calls it
on every `st.plotly_chart`: a deep copy each time otherwise), and that dict carries its JSON, which
`plotly.io.to_json` (wrapped here) hands back instead of encoding it again.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, TypeVar

import plotly.graph_objects as go
import plotly.io as pio

from app import theme

F = TypeVar("F", bound=Callable[..., Any])
MAX_FIGURES = 512  # per server: a figure dict is a few to a few hundred kB
MAX_REGISTERED = 256  # results registered at once (app/stored_results.py keeps as many)

_lock = threading.Lock()
_figures: OrderedDict[Hashable, go.Figure] = OrderedDict()
_registry: dict[int, tuple[str, Any]] = {}  # id(obj) -> (token, obj): holding obj keeps its id from being reused
_owners: OrderedDict[str, list[int]] = OrderedDict()  # store key -> ids registered under it
# Large containers met before (a job's result a page reads straight from the engine, say), by identity, with the
# object held so that its id cannot be reused: their digest is computed once. Results are never changed in place
# (app/stored_results.py), which is what makes an identity stand for the content.
SEEN_MIN = 64
MAX_SEEN = 4096
_seen: OrderedDict[int, tuple[Any, Hashable]] = OrderedDict()
stats = {"hits": 0, "builds": 0}

_MUTATORS = ("add_trace", "add_traces", "add_scatter", "add_bar", "add_heatmap", "add_histogram", "add_hline",
             "add_vline", "add_hrect", "add_vrect", "add_shape", "add_annotation", "add_layout_image",
             "update", "update_layout", "update_traces", "update_xaxes", "update_yaxes", "update_annotations",
             "update_shapes", "for_each_trace", "plotly_update", "plotly_relayout", "plotly_restyle")


class Spec(dict):
    """A cached figure's dict, carrying its JSON: `st.plotly_chart` encodes `fig.to_dict()` with
    `plotly.io.to_json(..., validate=False)` on every call (10-20 ms for a scatter of a thousand points)."""

    json: str = ""


class SharedFigure(go.Figure):
    """A built figure served from the cache: reads as usual, refuses to change (see the module docstring)."""

    def to_dict(self) -> dict[str, Any]:  # type: ignore[override]
        return self._layerlab_dict


_to_json = pio.to_json


def _cached_to_json(fig: Any, *args: Any, **kwargs: Any) -> str:
    """plotly.io.to_json, answered from a Spec's JSON when called as Streamlit calls it (app/figcache.py)."""
    if isinstance(fig, Spec) and fig.json and not args and kwargs == {"validate": False}:
        return fig.json
    return _to_json(fig, *args, **kwargs)


pio.to_json = _cached_to_json  # only a Spec is answered from memory; every other call goes to plotly as before


def _refuse(name: str) -> Callable[..., Any]:
    def refuse(self: SharedFigure, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{name}: this figure is cached and shared by every session; change a copy "
                        "(go.Figure(fig.to_dict())) instead")

    return refuse


for _name in _MUTATORS:
    setattr(SharedFigure, _name, _refuse(_name))


def register(key: str, result: Any, depth: int = 2) -> None:
    """Let `result` (a stored result served as one shared object) and its containers down to `depth` stand for
    `key` in figure keys; the oldest registrations go beyond MAX_REGISTERED."""
    ids: list[int] = []

    def walk(obj: Any, token: str, level: int) -> None:
        if not isinstance(obj, (dict, list)) and not _is_record(obj):
            return
        _registry[id(obj)] = (token, obj)
        ids.append(id(obj))
        if level >= depth:
            return
        items = obj.items() if isinstance(obj, dict) else _fields(obj) if _is_record(obj) else enumerate(obj)
        for k, v in items:
            walk(v, f"{token}/{k}", level + 1)

    with _lock:
        if key in _owners:
            _owners.move_to_end(key)
            return
        walk(result, key, 0)
        _owners[key] = ids
        while len(_owners) > MAX_REGISTERED:
            _, old = _owners.popitem(last=False)
            for i in old:
                _registry.pop(i, None)


def token(obj: Any) -> Hashable:
    """A hashable stand-in for an argument: equal tokens mean equal figures (see the module docstring)."""
    hit = _registry.get(id(obj))
    if hit is not None and hit[1] is obj:
        return ("@", hit[0])
    if _is_record(obj) or isinstance(obj, (dict, list, tuple)) and len(obj) >= SEEN_MIN:
        seen = _seen.get(id(obj))
        if seen is not None and seen[0] is obj:
            return seen[1]
        # A digest, not the walked token itself: a tuple does not keep its hash, so a figure key holding a
        # thousand-number tuple would be hashed anew on every lookup.
        digest = ("#", hashlib.blake2b(repr(_walk(obj)).encode(), digest_size=16).hexdigest())
        with _lock:
            _seen[id(obj)] = (obj, digest)
            while len(_seen) > MAX_SEEN:
                _seen.popitem(last=False)
        return digest
    return _walk(obj)


def _is_record(obj: Any) -> bool:
    """A typed result or one of its parts (a dataclass instance): walked by its fields like a dict."""
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


def _fields(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


def _walk(obj: Any) -> Hashable:
    if _is_record(obj):
        return ("c", type(obj).__qualname__, tuple((k, token(v)) for k, v in _fields(obj)))
    if isinstance(obj, dict):
        return ("d", tuple((k, token(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        return ("l" if isinstance(obj, list) else "t", tuple(token(v) for v in obj))
    if isinstance(obj, float):
        return ("f", obj) if obj == obj else ("f", "nan")  # NaN != NaN would never hit
    if isinstance(obj, bool):
        return ("b", obj)  # True == 1 as a dict key
    if isinstance(obj, (str, int)) or obj is None:
        return obj
    if isinstance(obj, (set, frozenset)):
        return ("s", tuple(sorted(map(repr, obj))))
    return ("r", type(obj).__qualname__, repr(obj))


def palette() -> Hashable:
    """The palette's constants (app/theme.py): a figure depends on them as much as on its data."""
    return tuple((k, repr(v)) for k, v in vars(theme).items() if k.isupper())


_PALETTE = palette()


def figure(fn: F) -> F:
    """Decorate a figure builder: one build per (builder, arguments, palette), shared by every rerun and session."""

    @functools.wraps(fn)
    def cached(*args: Any, **kwargs: Any) -> Any:
        key = (fn.__module__, fn.__qualname__, id(fn.__code__), token(args), token(kwargs), _PALETTE)
        with _lock:
            fig = _figures.get(key)
            if fig is not None:
                _figures.move_to_end(key)
                stats["hits"] += 1
                return fig
        fig = fn(*args, **kwargs)
        if not isinstance(fig, go.Figure):  # None (nothing to draw yet) and anything else pass through
            return fig
        freeze(fig)
        with _lock:
            stats["builds"] += 1
            _figures[key] = fig
            while len(_figures) > MAX_FIGURES:
                _figures.popitem(last=False)
        return fig

    cached.uncached = fn  # type: ignore[attr-defined]
    return cached  # type: ignore[return-value]


def freeze(fig: go.Figure) -> go.Figure:
    """Make `fig` a SharedFigure in place: its dict and JSON are made once, and it refuses further changes."""
    if isinstance(fig, SharedFigure):
        return fig
    spec = Spec(go.Figure.to_dict(fig))
    spec.json = _to_json(spec, validate=False)
    fig._layerlab_dict = spec
    fig.__class__ = SharedFigure
    return fig


def clear() -> None:
    """Forget every figure and registration, and zero the counts (tests)."""
    with _lock:
        stats.update(hits=0, builds=0)
        _figures.clear()
        _registry.clear()
        _seen.clear()
        _owners.clear()
