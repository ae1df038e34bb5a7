"""`python -m lab surgeries [--json]`: every surgery of the registry (lab/ops/registry.py) with its label, what it
acts on and the parameters it takes, the same list the pages' menus and the matrix read."""

from __future__ import annotations

import argparse

from lab.cli.common import JSON_HELP, print_json
from lab.ops import registry


def _run(args: argparse.Namespace) -> int:
    rows = registry.table()
    if args.json:
        print_json("surgeries", {}, {"rows": rows})
        return 0
    cols = list(rows[0])
    width = {c: max(len(c), *(len(r[c]) for r in rows)) for c in cols}
    print("  ".join(c.ljust(width[c]) for c in cols).rstrip())
    for r in rows:
        print("  ".join(r[c].ljust(width[c]) for c in cols).rstrip())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("surgeries", help="list every surgery: its label, what it acts on, its parameters")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=_run)
