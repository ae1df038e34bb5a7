"""Command line: `python -m lab <experiment> ... [--json]` and `python -m lab table <experiment> [--json]`.

Every experiment's subcommand and table are generated from its descriptor (lab/experiments/NAME/descriptor.py): the
subcommand's flags from the experiment's config dataclass, the table's from its declared axes. `warm`, `seeds` and
`pack` are the lab's own commands. Every `--json` prints one envelope (lab/cli/common.py: envelope,
docs/cli-output.schema.json). Errors in the arguments end the program with exit status 2 and one line on stderr; no
command at all prints the whole usage (status 2); `--version` prints the lab's version and commit.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import sys
from typing import Any, Optional, Sequence

from lab.catalog import descriptors
from lab.catalog.descriptor import Descriptor, TableRows
from lab.cli import export, pack, seeds, study, surgeries, warm
from lab.cli.common import JSON_HELP, PROG, OneLineParser, VersionAction, add_workers, command, print_json, table_pool
from lab.runtime.atomic import WriteFailed
from lab.runtime.progress import text_progress


def _answer(d: Descriptor) -> Any:
    if d.cli_answer is not None:
        return d.cli_answer
    return lambda cfg, _: d.run(cfg, progress=text_progress)


_NOT_TABLE_ARGS = ("func", "command", "table", "json")


def _table_command(d: Descriptor) -> Any:
    def go(args: argparse.Namespace) -> int:
        if not args.json:
            d.table.main(args, table_pool(args))
            return 0
        # A table prints as it goes; with --json stdout holds one JSON object: its rows and claims (`TableRows`)
        # with the text it printed, or the table's own JSON where it prints one (IOT's sweep, `--ms`).
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            out = d.table.main(args, table_pool(args))
        text = printed.getvalue()
        result = {"rows": out.rows, "claims": out.claims, "text": text} if isinstance(out, TableRows) \
            else json.loads(text)
        config = {k: v for k, v in vars(args).items() if k not in _NOT_TABLE_ARGS}
        print_json(f"table {d.name}", config, result)
        return 0

    return go


def build_parser(prog: str = PROG) -> OneLineParser:
    """The whole command line: a subcommand per experiment, a table per descriptor that has one, the lab's own."""
    parser = OneLineParser(prog=prog, description="Layer Lab experiments from the command line.")
    parser.add_argument("--version", action=VersionAction, help="print the lab's version and commit, and exit")
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
            if not any(axis.name == "json" for axis in d.table.axes):  # IOT declares its own (the sweep's JSON)
                t.add_argument("--json", action="store_true", help=JSON_HELP)
            t.set_defaults(func=_table_command(d))
    warm.register(sub)
    pack.register(sub)
    seeds.register(sub)
    study.register(sub)
    surgeries.register(sub)
    export.register(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None, prog: str = PROG) -> int:
    """Run one command (`argv`, default sys.argv[1:]); its exit status. `prog` names the program in usage and errors
    (the installed `layerlab` command passes its own name)."""
    from lab.runtime import logs, settings
    from lab.runtime.cores import computing
    from lab.runtime.threads import configure_threads

    bad = settings.errors()
    if bad:  # a mistyped LAYERLAB_ setting: one line each, before anything reads one
        sys.stderr.write("".join(f"{line}\n" for line in bad))
        return 2
    logs.configure()
    configure_threads()
    parser = build_parser(prog)
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # no command at all: the whole usage, not argparse's one line about a missing argument
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        # a command that computes here holds a core like an engine job, so servers' lanes do not borrow it
        # (warm and tables compute on worker processes, which hold their own)
        with computing(wait_s=0.0):
            return int(args.func(args) or 0)
    except ValueError as exc:  # configs validate themselves: a bad value is one clear line, not a traceback
        sys.stderr.write(f"{prog}: error: {exc}\n")
        return 2
    except WriteFailed as exc:  # the store's disk is full or will not be written: one line that says which
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        todo = "free some space on that disk" if full else "check that its folder can be written"
        sys.stderr.write(f"{prog}: error: {exc}; {todo}, or point LAYERLAB_CACHE at a folder elsewhere\n")
        return 1
