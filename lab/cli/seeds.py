"""`python -m lab seeds PAGE [--seeds 0 1 2] [--workers N] [--json]`: a page's default-view claims at several seeds,
pooled (each claim's estimates averaged over the seeds, the seeds' spread as the error): what the page's "run N
more seeds" shows, from the command line. At least MIN_SEEDS distinct seeds (fewer cannot estimate the spread
between seeds); only tests that match at every seed are pooled (lab/claims.pool: a claim whose tests differ says it
cannot be pooled, and why), and every claim of the answer says what it generalises over (`over`, `seeds`)."""

from __future__ import annotations

import argparse

from lab.catalog import descriptors, presets
from lab.claims import MIN_SEEDS, claim_line
from lab.classroom import seeds as lab_seeds
from lab.cli.common import JSON_HELP, add_workers, print_json, table_pool
from lab.runtime.progress import text_progress


def _run(args: argparse.Namespace) -> int:
    d = descriptors()[args.page]
    if d.claims is None:
        raise ValueError(f"{args.page} has no claims to pool over seeds")
    seeds = sorted(set(args.seeds))
    if any(not 0 <= s <= 99 for s in seeds) or len(seeds) < MIN_SEEDS:
        raise ValueError(f"give at least {MIN_SEEDS} distinct seeds between 0 and 99 (a claim about a recipe is "
                         f"judged over at least {MIN_SEEDS} trained networks), not {' '.join(map(str, seeds))}")
    # The engine's pool computes stored results only (entry points): each seed's plan goes through it (workers side
    # by side), then each seed's claims are read here from what is stored (claims are computed when read).
    views = [{**d.defaults, "seed": s} for s in seeds]
    needs = [(n.fn, n.cfg) for v in views for n in presets.always(d.plan(v))]
    table_pool(args)(needs, text_progress)
    per_seed = [d.claims(v) for v in views]
    out = lab_seeds.pooled(per_seed, seeds)
    if args.json:
        print_json("seeds", {"page": d.name, "seeds": seeds, "workers": args.workers}, out)
        return 0
    for c in out["claims"]:
        each = out["per_seed_words"].get(lab_seeds.ident(c), {})
        print(claim_line(c, prefix=""))
        print("    Per seed: " + ", ".join(f"{s}: {v}" for s, v in each.items()))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("seeds", help="a page's default-view claims at several seeds, pooled")
    p.add_argument("page", choices=[n for n, d in descriptors().items() if d.claims is not None] or list(descriptors()),
                   help="the page")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2],
                   help=f"seeds to pool, at least {MIN_SEEDS} (default 0 1 2)")
    add_workers(p)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=_run)
