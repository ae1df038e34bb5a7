"""Notices: things a user should be told that are not errors (e.g. a corrupt cache entry was rebuilt).

`notify` always issues a Python warning; inside `collecting()` it also records the message, so a page can
show it next to the result. A context variable (not the global warnings filter) keeps concurrent jobs apart.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Optional

# Plumbing: cannot change a number, so editing it keeps every stored result (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

_sink: ContextVar[Optional[list[str]]] = ContextVar("layerlab_notices", default=None)


def notify(message: str) -> None:
    """Tell the user something worth knowing (also a UserWarning for the CLI and logs)."""
    warnings.warn(message, stacklevel=2)
    sink = _sink.get()
    if sink is not None:
        sink.append(message)


@contextmanager
def collecting() -> Iterator[list[str]]:
    """Collect the notices issued in this context (thread or task) into the yielded list."""
    bucket: list[str] = []
    token = _sink.set(bucket)
    try:
        yield bucket
    finally:
        _sink.reset(token)
