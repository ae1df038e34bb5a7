"""`python -m lab warm [--pages ...] [--seeds ...] [--workers N] [--defaults-only] [--dry-run]`."""

from __future__ import annotations

import argparse
import json

from lab.classroom import warm
from lab.cli.common import text_progress


def _run(args: argparse.Namespace) -> int:
    pages = args.pages or list(warm.PAGES)
    seeds = args.seeds
    items = warm.plan(pages, seeds, defaults_only=args.defaults_only)
    todo = warm.missing(items)
    skipped = [p for p in pages if not warm.describes(p)]
    print(f"{len(items)} results for {len(pages) - len(skipped)} page(s); {len(items) - len(todo)} stored already, "
          f"{len(todo)} to compute (rough estimate {sum(i.need.seconds for i in todo) / 60:.0f} CPU-minutes)"
          + (f"; no presets listed for {', '.join(skipped)}" if skipped else ""))
    if args.dry_run:
        for i in todo:
            print(f"  {i.page:<10} {i.setting[:40]:<40} {i.need.label} (~{i.need.seconds:.0f} s)")
        return 0
    summary = warm.warm(items, workers=args.workers, progress=text_progress)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"built {len(summary['built'])}, failed {len(summary['failed'])}, already stored "
              f"{summary['already_stored']}, in {summary['seconds']:.0f} s")
        for b in sorted(summary["built"], key=lambda b: -b["seconds"]):  # where the time went, dearest first
            models = "; ".join(f"{m['model']} ({m['seconds']:.0f} s)" for m in b["trained"]) or "no model trained"
            print(f"  {b['seconds']:7.1f} s  {b['page']}: {b['setting']}: {b['result']}  [trained: {models}]")
        for f in summary["failed"]:
            print(f"  FAILED {f['page']}: {f['setting']}: {f['result']}: {f['error']}")
    return 1 if summary["failed"] else 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:  # noqa: ARG001
    p = sub.add_parser("warm", help="compute every page's default view and presets before class (idempotent)")
    p.add_argument("--pages", nargs="+", choices=list(warm.PAGES), help="pages to warm (default: all)")
    p.add_argument("--seeds", nargs="+", type=int, help="also warm every preset at these seeds")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2: one per core here)")
    p.add_argument("--defaults-only", action="store_true", help="only each page's default view")
    p.add_argument("--dry-run", action="store_true", help="list what would be computed, compute nothing")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=_run)
