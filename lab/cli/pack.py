"""`python -m lab pack export FILE` / `python -m lab pack import FILE [--unsigned-ok]`: carry stored models and
results between machines of one course (lab/classroom/pack.py checks an archive completely, its signature first,
before anything lands in the store)."""

from __future__ import annotations

import argparse

from lab.classroom.pack import export, import_pack
from lab.runtime.sealed import WHY
from lab.runtime.store import default_store


def _export(args: argparse.Namespace) -> int:
    store = default_store()
    n = export(store, args.file, include_quick=args.quick)
    print(f"packed {n} entr{'y' if n == 1 else 'ies'} from {store.root} into {args.file}, signed with this course's "
          "key")
    return 0


def _import(args: argparse.Namespace) -> int:
    store = default_store()
    report = import_pack(store, args.file, unsigned_ok=args.unsigned_ok)
    for message in report.skipped:
        print(f"skipped {message}")
    if report.foreign:
        print(f"imported from {WHY[report.foreign]}: every page that shows these results says they came from "
              "elsewhere")
    print(f"added {len(report.added)}, already stored {len(report.present)}, skipped {len(report.skipped)} "
          f"(store: {store.root})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pack", help="export stored entries to an archive, or import one")
    actions = p.add_subparsers(dest="action", required=True, parser_class=type(p))
    e = actions.add_parser("export", help="write every stored entry to FILE (.tar.gz, .tgz or .zip)")
    e.add_argument("file", metavar="FILE")
    e.add_argument("--quick", action="store_true", help="include quick-mode (one-epoch, test-only) entries")
    e.set_defaults(func=_export)
    i = actions.add_parser("import", help="check FILE completely, then add its entries to the store")
    i.add_argument("file", metavar="FILE")
    i.add_argument("--unsigned-ok", action="store_true",
                   help="import a pack this course did not sign (unsigned, another course's, or altered); its "
                        "results are marked on every page as from elsewhere")
    i.set_defaults(func=_import)
