"""Command line: `python -m lab <experiment> ... [--json]` and `python -m lab table <experiment>`.

Every experiment's subcommand and table are generated from its descriptor (lab/catalog/NAME.py): the
subcommand's flags from the experiment's config dataclass, the table's from its declared axes. `warm` and `pack`
are the lab's own commands. Errors in the arguments end the program with exit status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional, Sequence

from lab.catalog import descriptors
from lab.catalog.descriptor import Descriptor
from lab.cli import pack, seeds, warm
from lab.cli.common import OneLineParser, add_workers, command, table_pool
from lab.runtime.progress import text_progress


def _answer(d: Descriptor) -> Any:
    if d.cli_answer is not None:
        return d.cli_answer
    return lambda cfg, _: d.run(cfg, progress=text_progress)


def _table_command(d: Descriptor) -> Any:
    def go(args: argparse.Namespace) -> int:
        d.table.main(args, table_pool(args))
        return 0

    return go


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="python -m lab", description="Layer Lab experiments from the command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    table_parser = sub.add_parser("table", help="print a summary table of an experiment")
    tables = table_parser.add_subparsers(dest="table", required=True, parser_class=OneLineParser)
    for d in descriptors().values():
        command(sub, d.name, d.cli_help, d.config, _answer(d), d.cli_summary, d.cli_extra)
        if d.table is not None:
            t = tables.add_parser(d.name, help=d.table.help)
            for axis in d.table.axes:
                axis.add_to(t)
            add_workers(t)  # every table computes its runs through the same engine
            t.set_defaults(func=_table_command(d))
    warm.register(sub)
    pack.register(sub)
    seeds.register(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    from lab.runtime.cores import computing
    from lab.runtime.threads import configure_threads

    configure_threads()
    args = build_parser().parse_args(argv)
    try:
        # a command that computes here holds a core like an engine job, so servers' lanes do not borrow it
        # (warm and tables compute on worker processes, which hold their own)
        with computing(wait_s=0.0):
            return int(args.func(args) or 0)
    except ValueError as exc:  # configs validate themselves: a bad value is one clear line, not a traceback
        sys.stderr.write(f"python -m lab: error: {exc}\n")
        return 2
