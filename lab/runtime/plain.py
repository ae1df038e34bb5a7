"""Plain data at the store's and the CLI's boundary: typed results (dataclasses) to JSON-ready values and back.

An entry point declares its result type (`@entry("kind", result=SomeResult)`); what is stored is `to_plain` of the
result, and what a caller gets is `from_plain(SomeResult, stored)`, so a result read from the store and one just
built are the same object type. Field names are the stored keys: a typed result stores exactly what the dict it
replaces stored, and existing entries stay valid.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import torch

# Plumbing: changes no number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True


def to_plain(o: Any) -> Any:
    """Results to JSON-ready data: dataclasses to dicts (or their own `to_plain()`, as a claim's, whose unset optional
    fields are no keys), tuples to lists, numpy/torch scalars to Python."""
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        own = getattr(o, "to_plain", None)
        if callable(own):
            return own()
        return {f.name: to_plain(getattr(o, f.name)) for f in dataclasses.fields(o)}
    if isinstance(o, dict):
        return {str(k): to_plain(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [to_plain(v) for v in o]
    if isinstance(o, torch.Tensor):
        return o.tolist()
    if hasattr(o, "tolist"):  # numpy arrays and scalars
        return o.tolist()
    return o


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def from_plain(tp: Any, data: Any) -> Any:
    """The typed value of plain `data` under the type hint `tp` (a dataclass, list[...], tuple[...], dict[...],
    Optional[...], or a plain type). ValueError names the first field that does not fit."""
    if tp is Any or data is None:
        return data
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return from_plain(inner[0], data) if len(inner) == 1 else data
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(data, dict):
            raise ValueError(f"{tp.__name__}: expected an object, got {type(data).__name__}")
        hints = _hints(tp)
        names = {f.name for f in dataclasses.fields(tp) if f.init}
        missing = [n for n in names if n not in data and _required(tp, n)]
        if missing:
            raise ValueError(f"{tp.__name__}: the stored result has no field {missing[0]!r}")
        try:
            return tp(**{n: from_plain(hints[n], data[n]) for n in names if n in data})
        except (TypeError, ValueError) as e:
            raise ValueError(f"{tp.__name__}: {e}") from None
    if origin in (list, typing.Sequence, tuple) or tp in (list, tuple):
        if not isinstance(data, (list, tuple)):
            raise ValueError(f"expected a list, got {type(data).__name__}")
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            return tuple(from_plain(a, v) for a, v in zip(args, data, strict=True))
        item = args[0] if args else Any
        out = [from_plain(item, v) for v in data]
        return tuple(out) if origin is tuple or tp is tuple else out
    if origin is dict or tp is dict:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object, got {type(data).__name__}")
        key_t, val_t = args if args else (Any, Any)
        conv = int if key_t is int else (lambda k: k)
        return {conv(k): from_plain(val_t, v) for k, v in data.items()}
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    return data


def _required(cls: type, name: str) -> bool:
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
