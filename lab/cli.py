"""Command line: `python -m lab <experiment> ... [--json]` and `python -m lab table <experiment>`.

Each experiment module under lab/cli_commands registers its own subcommand, so adding an experiment never
edits this file's logic. Errors in the arguments end the program with exit status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Callable, Optional, Sequence

# Modules that define `register(subparsers, tables)`; each adds its experiment's subcommand and tables.
COMMAND_MODULES = ("lab.cli_commands.delete", "lab.cli_commands.layerdrop", "lab.cli_commands.reinit",
                   "lab.cli_commands.shuffle")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument gives one line on stderr (no usage dump) and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def text_progress(fraction: float, message: str) -> None:
    """A progress line on stderr that redraws itself (stdout stays clean for --json)."""
    bar = "#" * int(fraction * 30)
    sys.stderr.write(f"\r[{bar:<30}] {fraction * 100:5.1f}% {message[:60]:<60}")
    if fraction >= 1.0:
        sys.stderr.write("\r" + " " * 100 + "\r")
    sys.stderr.flush()


def emit(result: Any, as_json: bool, summary: Callable[[Any], str]) -> None:
    """Print a result: one JSON object with --json, else a short human summary."""
    from .store import to_plain

    if as_json:
        print(json.dumps(to_plain(result)))
    else:
        print(summary(result))


def build_parser() -> tuple[OneLineParser, dict[str, Callable[[argparse.Namespace], Any]]]:
    parser = OneLineParser(prog="python -m lab", description="Layer Lab experiments from the command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    table_parser = sub.add_parser("table", help="print a summary table of an experiment")
    tables = table_parser.add_subparsers(dest="table", required=True, parser_class=OneLineParser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub, tables)
    return parser, {}


def main(argv: Optional[Sequence[str]] = None) -> int:
    from .runtime import configure_threads

    configure_threads()
    parser, _ = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:  # configs validate themselves: a bad value is one clear line, not a traceback
        sys.stderr.write(f"python -m lab: error: {exc}\n")
        return 2
