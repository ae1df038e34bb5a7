"""The `layerlab` command (installed by `pip install .`; see layerlab/__init__.py): `layerlab app` serves the lab in the
browser as `make app` does, and every other subcommand is the lab's command line (`python -m lab ...`)."""

from __future__ import annotations

import sys
from typing import Sequence

APP_HELP = "  app                 serve the lab in the browser (http://localhost:8501); Streamlit's options follow"


def main(argv: Sequence[str]) -> int:
    """Run `layerlab ARGV`; returns the exit status."""
    args = list(argv)
    if args and args[0] == "app":
        from app.serve import main as serve

        serve(args[1:])
        return 0
    if args == ["--version"]:  # answered before the CLI imports every experiment (and torch): 0.1 s, not 3 s
        from lab.runtime.version import version_line

        sys.stdout.write(version_line() + "\n")
        return 0
    from lab.cli import main as cli

    if not args or args[0] in ("-h", "--help"):  # beside the usage the CLI prints: stderr for a usage error
        (sys.stderr if not args else sys.stdout).write("layerlab app [Streamlit options]\n" + APP_HELP + "\n\n")
    return int(cli(args, prog="layerlab") or 0)
