"""`python -m lab study PAGE --knob FIELD --values V1 V2 ... [--claim NAME] [--subject MODEL] [--seeds ...]
[--task ...] [--margin M] [--workers N] [--dry-run] [--json]`, and `python -m lab study NAME` for a shipped study.

A study is one claim of a page along one knob at k training seeds per value (lab/study). --dry-run lists the cells
and what they would cost, computing nothing; otherwise the missing cells are computed on the engine (a study that was
stopped resumes: finished cells are stored results) and the map is printed: per value the pooled effect with its
interval, the seeds' signs and the verdict, then where the claim appears (Holm over the grid)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

from lab.catalog import descriptors
from lab.cli.common import JSON_HELP, add_workers, print_json
from lab.runtime.progress import text_progress
from lab.study import checks, compute, shipped, spec
from lab.study.words import effect_words


def study_of(args: argparse.Namespace) -> spec.Study:
    """The study the arguments name: a shipped one by its name (flags may change its seeds), or one made from a
    page and a knob."""
    named = shipped.by_name().get(args.page)
    if named is not None:
        if args.knob or args.values:
            raise ValueError(f"{args.page} is a shipped study (its knob and grid are fixed): give a page instead "
                             "to choose your own")
        base = dict(named.base, **({"task": args.task} if args.task else {}))
        made = checks.make(named.page, named.knob, list(named.values), named.claim, args.seeds or list(named.seeds),
                         base, named.subject, named.margin if args.margin is None else args.margin, named.tied)
        return dataclasses.replace(made, name=named.name, title=named.title, question=named.question)
    if args.page not in descriptors():
        raise ValueError(f"no page or shipped study {args.page!r}: choose a page ({', '.join(descriptors())}) or a "
                         f"study ({', '.join(shipped.by_name())})")
    if not args.knob or not args.values:
        raise ValueError("a study of a page needs --knob FIELD and --values V1 V2 ... (or name a shipped study: "
                         f"{', '.join(shipped.by_name())})")
    base = {"task": args.task} if args.task else None
    return checks.make(args.page, args.knob, args.values, args.claim, args.seeds, base, args.subject or "",
                     args.margin)


def _print_plan(study: spec.Study, cells: list[compute.CellPlan], workers: int) -> None:
    print(f"{study.page}: {study.claim}{' [' + study.subject + ']' if study.subject else ''} along {study.knob} = "
          f"{' '.join(map(str, study.values))}, seeds {' '.join(map(str, study.seeds))}")
    for c in cells:
        cost = "stored" if c.done else ("never timed here" if c.seconds is None else f"about {c.seconds:.0f} CPU-s")
        print(f"  {study.knob} = {c.value!s:<8} seed {c.seed:<3} {len(c.calls)} lab call(s): {cost}")
    print(compute.cost_words(cells, workers) + " (a call several cells share is counted once)")


def _print_map(a: dict[str, Any]) -> None:
    print(f"{a['statement']} ({a['page']}{', ' + a['subject'] if a['subject'] else ''}), along {a['knob']}, "
          f"{len(a['seeds'])} seeds:")
    print(f"  {'value':<8} {'pooled effect +- interval':<32} {'seeds':<8} its own verdict; over the grid (Holm)")
    for c in a["cells"]:
        lo, hi = c["interval"]
        eff = f"{effect_words(c['effect'], c['unit'])} [{effect_words(lo, c['unit'])}, {effect_words(hi, c['unit'])}]"
        extra = f", {c['seeds_to_decide']} seeds would decide" if c["seeds_to_decide"] else ""
        print(f"  {c['value']!s:<8} {eff:<32} {c['signs']:<8} {c['verdict']}; {c['family']}{extra}")
    print(a["sentence"])
    print(f"How: {a['how']}.")


def _run(args: argparse.Namespace) -> int:
    if not 0 <= args.workers <= 64:
        raise ValueError(f"--workers {args.workers} is out of range: choose 0 (this process) to 64")
    study = study_of(args)
    cells = compute.plan(study)
    out = sys.stderr if args.json else sys.stdout
    config = {"page": study.page, "claim": study.claim, "subject": study.subject, "knob": study.knob,
              "values": list(study.values), "seeds": list(study.seeds), "base": dict(study.base),
              "margin": study.margin, "workers": args.workers, "dry_run": args.dry_run}
    if args.dry_run:
        if args.json:
            print_json("study", config, {"cells": [
                {"value": c.value, "seed": c.seed, "calls": [n.label for n in c.calls], "stored": c.done,
                 "estimate_s": c.seconds} for c in cells], "cost": compute.cost_words(cells, args.workers)})
        else:
            _print_plan(study, cells, args.workers)
        return 0
    print(compute.cost_words(cells, args.workers), file=out)
    t0 = time.perf_counter()
    if args.workers and not all(c.done for c in cells):
        got = compute.compute(study, args.workers, text_progress)
        for label, err in got["failed"]:
            print(f"failed: {label}: {err} (run the study again to retry it; the other cells are kept)", file=out)
        if got["failed"]:
            return 1
    answer = compute.read(study, text_progress)
    answer["wall_seconds"] = time.perf_counter() - t0
    if args.json:
        print_json("study", config, answer)
    else:
        _print_map(answer)
        print(f"Computed in {answer['wall_seconds']:.0f} s wall; the cells' recorded builds "
              f"{answer['cost']['cpu_seconds'] / 60:.1f} CPU-minutes"
              + (f" ({answer['cost']['untimed']} calls untimed)" if answer["cost"]["untimed"] else "") + ".")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("study", help="one claim of a page along a knob at several seeds: where the effect appears")
    p.add_argument("page", help=f"a page ({', '.join(descriptors())}) or a shipped study "
                                f"({', '.join(shipped.by_name())})")
    p.add_argument("--knob", help="the field to vary: a control of the page or a field of its config")
    p.add_argument("--values", nargs="+", help="the grid, fixed before anything runs (at least two values)")
    p.add_argument("--claim", help="the claim's key (default: the page's shipped study's)")
    p.add_argument("--subject", help="the claim's model, where the page makes it for several (e.g. 'plain MLP')")
    p.add_argument("--seeds", nargs="+", type=int, help=f"training seeds per value, at least 3 (default "
                                                         f"{' '.join(map(str, spec.DEFAULT_SEEDS))})")
    p.add_argument("--task", help="the task of every cell (default: the page's)")
    p.add_argument("--margin", type=float, help="the effect below which the claim counts as absent (default: the "
                                                "shipped study's, else 0.02 = 2 pts)")
    add_workers(p)
    p.add_argument("--dry-run", action="store_true", help="list the cells and their cost; compute nothing")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=_run)
