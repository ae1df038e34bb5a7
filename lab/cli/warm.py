"""`python -m lab warm [--pages ...] [--lesson NAME] [--seeds ...] [--workers N] [--defaults-only] [--dry-run]
[--json]`.

With --json, stdout holds one envelope (lab/cli/common.py) whose result is the plan (--dry-run) or the summary of
the warm, and the count of what is to do goes to stderr instead."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from lab.classroom import warm
from lab.cli.common import JSON_HELP, print_json
from lab.runtime.progress import text_progress


def _lesson(name: str) -> Any:
    """A shipped lesson by its key, or a lesson file (lab/classroom/lessons.py), validated."""
    from lab.classroom import lessons

    if name in lessons.shipped() or not Path(name).is_file():
        return lessons.get(name)
    return lessons.from_json(Path(name).read_bytes())


def _studies(args: argparse.Namespace) -> int:
    """`warm --studies`: every shipped study's cells (lab/study/shipped.py) of the pages asked for, on the engine."""
    from lab.study import compute, shipped

    chosen = [s for s in shipped.STUDIES if not args.pages or s.page in args.pages]
    out = sys.stderr if args.json else sys.stdout
    plans = {s.name: compute.plan(s) for s in chosen}
    for s in chosen:
        print(f"{s.name}: {compute.cost_words(plans[s.name], args.workers)}", file=out)
    config = {"pages": args.pages or sorted({s.page for s in chosen}), "seeds": None, "workers": args.workers,
              "defaults_only": False, "dry_run": args.dry_run, "studies": [s.name for s in chosen]}
    if args.dry_run:
        if args.json:
            print_json("warm", config, {"planned": sum(len(p) for p in plans.values()),
                                        "already_stored": sum(c.done for p in plans.values() for c in p),
                                        "todo": [{"page": s.page, "setting": f"{s.name}: {s.knob} = {c.value}, seed "
                                                  f"{c.seed}", "result": n.label, "estimate_s": c.seconds}
                                                 for s in chosen for c in plans[s.name] if not c.done
                                                 for n in c.calls]})
        return 0
    failed = 0
    for s in chosen:
        if args.workers == 0:  # here, one cell after another (reading a study computes what is missing)
            t0 = time.perf_counter()
            compute.read(s, text_progress)
            print(f"{s.name}: computed here in {time.perf_counter() - t0:.0f} s", file=out)
            continue
        got = compute.compute(s, args.workers, text_progress)
        failed += len(got["failed"])
        for label, err in got["failed"]:
            print(f"  FAILED {s.name}: {label}: {err}", file=out)
        print(f"{s.name}: {got['built']} built in {got['seconds']:.0f} s", file=out)
    return 1 if failed else 0


def _run(args: argparse.Namespace) -> int:
    if args.studies:
        return _studies(args)
    seeds = args.seeds
    if args.lesson:
        from lab.classroom.lessons import LessonError

        try:
            lesson = _lesson(args.lesson)
        except (LessonError, OSError) as why:
            print(f"warm: {why}", file=sys.stderr)
            return 2
        pages = list(dict.fromkeys(s.page for s in lesson.steps))
        items = warm.lesson_plan(lesson, seeds)
    else:
        pages = args.pages or warm.pages()
        items = warm.plan(pages, seeds, defaults_only=args.defaults_only)
    todo, est = warm.timed_order(items, args.workers)  # what warm will submit, in its order
    times = [est[i.key] for i in todo]  # measured on this store before, or None
    timed = [t for t in times if t is not None]
    print(f"{len(items)} results for {len(pages)} page(s); {len(items) - len(todo)} stored already, "
          f"{len(todo)} to compute ({len(timed)} timed here before: {sum(timed) / 60:.0f} CPU-minutes; "
          f"{len(todo) - len(timed)} never timed)", file=sys.stderr if args.json else sys.stdout)
    config = {"pages": pages, "seeds": seeds, "workers": args.workers, "defaults_only": args.defaults_only,
              "dry_run": args.dry_run, "lesson": args.lesson}
    if args.dry_run and args.json:
        plan = [{"page": i.page, "setting": i.setting, "result": i.need.label, "estimate_s": t}
                for i, t in zip(todo, times, strict=True)]
        print_json("warm", config, {"planned": len(items), "already_stored": len(items) - len(todo), "todo": plan})
        return 0
    if args.dry_run:
        for i, t in zip(todo, times, strict=True):
            print(f"  {i.page:<10} {i.setting[:40]:<40} {i.need.label} "
                  + (f"(~{t:.0f} s)" if t is not None else "(not timed yet)"))
        return 0
    summary = warm.warm(items, workers=args.workers, progress=text_progress)
    if args.json:
        print_json("warm", config, summary)
    else:
        print(f"built {len(summary['built'])}, failed {len(summary['failed'])}, already stored "
              f"{summary['already_stored']}, in {summary['seconds']:.0f} s")
        for b in sorted(summary["built"], key=lambda b: -b["seconds"]):  # where the time went, dearest first
            models = "; ".join(f"{m['model']} ({m['seconds']:.0f} s)" for m in b["trained"]) or "no model trained"
            print(f"  {b['seconds']:7.1f} s  {b['page']}: {b['setting']}: {b['result']}  [trained: {models}]")
        for f in summary["failed"]:
            print(f"  FAILED {f['page']}: {f['setting']}: {f['result']}: {f['error']}")
    return 1 if summary["failed"] else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("warm", help="compute every page's default view and presets before class (idempotent)")
    p.add_argument("--pages", nargs="+", choices=warm.pages(), help="pages to warm (default: all)")
    p.add_argument("--seeds", nargs="+", type=int, help="also warm every preset at these seeds")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2: one per core here)")
    p.add_argument("--defaults-only", action="store_true", help="only each page's default view")
    from lab.classroom import lessons

    p.add_argument("--lesson", metavar="NAME", help="only every step of a lesson: a shipped one's key ("
                   + ", ".join(lessons.shipped()) + ") or a lesson file exported from Home")
    p.add_argument("--studies", action="store_true", help="instead: every shipped study's cells (python -m lab study "
                   "NAME draws each map), of the pages given (default: all)")
    p.add_argument("--dry-run", action="store_true", help="list what would be computed, compute nothing")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=_run)
