"""Layer Lab's library: data, models, training, routes, search, store and experiments.

Nothing in here imports streamlit: the pages, the CLI and the tests all call the same functions.
"""

from typing import Any

__all__ = ["__version__"]
# Plumbing: every lab module's code version includes this package's __init__ (lab/runtime/codeversion.py), and the
# lab's version cannot change a number, so a release must not throw away every stored result.
CODE_VERSION_NEUTRAL = True


def __getattr__(name: str) -> Any:
    # One source of truth: pyproject.toml's version (lab/runtime/version.py), read on first use, never a copy here.
    if name == "__version__":
        from lab.runtime.version import version

        return version()
    raise AttributeError(f"module 'lab' has no attribute {name!r}")
