"""Command line: `python -m lab <experiment> ... [--json]` and `python -m lab table <experiment>`.

Each experiment module under lab/cli registers its own subcommand (its flags generated from the
experiment's config dataclass), so adding an experiment adds one name to COMMAND_MODULES. Errors in the
arguments end the program with exit status 2 and one line on stderr.
"""

from __future__ import annotations

import importlib
import sys
from typing import Optional, Sequence

from lab.cli.common import OneLineParser, add_workers

# Modules that define `register(subparsers, tables)`; each adds its experiment's subcommand and tables.
COMMAND_MODULES = ("lab.cli.delete", "lab.cli.layerdrop", "lab.cli.reinit",
                   "lab.cli.shuffle", "lab.cli.iot", "lab.cli.rearrange",
                   "lab.cli.warm", "lab.cli.pack",
                   "lab.cli.lens")


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="python -m lab", description="Layer Lab experiments from the command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    table_parser = sub.add_parser("table", help="print a summary table of an experiment")
    tables = table_parser.add_subparsers(dest="table", required=True, parser_class=OneLineParser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub, tables)
    for p in tables.choices.values():  # every table computes its runs through the same engine
        add_workers(p)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    from lab.runtime.threads import configure_threads

    configure_threads()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:  # configs validate themselves: a bad value is one clear line, not a traceback
        sys.stderr.write(f"python -m lab: error: {exc}\n")
        return 2
