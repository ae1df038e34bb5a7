"""The installed lab's front door: `import layerlab` makes `lab`, `app` and `pages` importable, and `layerlab ...`
(the console script) runs the lab's command line, or the web app with `layerlab app`. The Python API
(docs/API.md) is here too: `layerlab.load(page_or_model, **settings)` returns a page's trained model with its hook
points and surgeries (lab/api/), imported on first use so that `import layerlab` stays light.

Why a folder of its own: the wheel installs the checkout's top-level folders (lab/, app/, pages/) inside this
package (setup.py), not beside it, so installing Layer Lab never overwrites another distribution's `lab` or `app`.
On import, that folder goes first on `sys.path` (and on PYTHONPATH, for the Dask workers and servers the lab starts
as child processes). In a checkout the folders stand beside this one, and the checkout's root is used instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

HERE = Path(__file__).resolve().parent


def home() -> Path:
    """The folder that holds `lab/`, `app/` and `pages/`: this package's own (installed) or the checkout's root."""
    return HERE if (HERE / "lab").is_dir() else HERE.parent


def _on_path() -> None:
    root = str(home())
    if root not in sys.path:
        sys.path.insert(0, root)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])


_on_path()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `layerlab` command: `layerlab app [Streamlit options]` serves the lab; anything else is `python -m lab`."""
    from app.command import main as run

    return run(list(sys.argv[1:] if argv is None else argv))


API = ("load", "Loaded", "page_settings")  # lab/api's names, re-exported here on first use (torch loads then)


def __getattr__(name: str) -> Any:
    if name in API:
        import lab.api

        return getattr(lab.api, name)
    raise AttributeError(f"module 'layerlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
