"""`python -m lab iot ...` and `python -m lab table iot`."""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from lab.cli.common import command, table_pool, text_progress
from lab.cli.shuffle import claim_lines
from lab.experiments import iot
from lab.runtime.store import to_plain


def _shares(v: list[float]) -> str:
    return "/".join(f"{s:.2f}" for s in v)


def summary(r: dict[str, Any]) -> str:
    c = r["config"]
    return (f"IOT, {c['model']} {c['space']}, M={c['m']}: sequential {r['sequential_acc']:.4f}; best fixed order "
            f"{r['best_fixed_acc']:.4f}; IOT weights in their best order {r['shared_best_acc']:.4f}; ensemble "
            f"{r['ensemble_acc']:.4f}; IOT {r['iot_acc']:.4f}; oracle {r['oracle_acc']:.4f} (orders trained "
            f"alone: {r['fixed_oracle_acc']:.4f}); choices {_shares(r['choice_share'])}; agreement with the "
            f"per-input best order {r['oracle_agreement']:.2f}; chance {r['chance']:.3f}; IOT training "
            f"{r['train_seconds']:.1f} s ({r['cost']['train_block_run_ratio']:.0f}x the block runs of sequential)\n"
            + claim_lines(r["claims"]))


def _sweep(args: argparse.Namespace) -> int:
    """`table iot --ms 1 2 4 8`: every method against M, per model and seed, with the claims over the sweep."""
    models = ["mlp"] if args.model == "all" else [args.model]
    out = []
    for mo in models:
        for s in range(args.seeds):
            cfg = iot.IOTConfig(model=mo, space=args.space, m=max(args.ms), seed=s)
            out.append(iot.sweep(cfg, args.ms, text_progress, table_pool(args)))
    if args.json:
        print(json.dumps(to_plain(out)))
        return 0
    for sw in out:
        c = sw["config"]
        print(f"IOT against M: {c['model']} {c['space']}, seed {c['seed']}, held-out accuracy on {sw['n_test']} inputs")
        keys = ("sequential_acc", "best_fixed_acc", "shared_best_acc", "ensemble_acc", "iot_acc", "oracle_acc")
        print(f"{'M':>3}" + "".join(f"{k[:-4]:>14}" for k in keys))
        for r in sw["rows"]:
            print(f"{r['m']:>3}" + "".join(f"{r[k]:>14.4f}" for k in keys))
        print(claim_lines(sw["claims"]))
    return 0


def _table(args: argparse.Namespace) -> int:
    if args.ms:
        return _sweep(args)
    seeds = list(range(args.seeds))
    models = list(iot.MODELS) if args.model == "all" else [args.model]
    t = iot.table(models, seeds, args.m, progress=text_progress, pool=table_pool(args))
    print(f"IOT with M = {t['m']} candidate orders: held-out accuracy, mean of {len(seeds)} seed(s) [per seed]")
    width = 24
    print(f"{'model':<16}" + "".join(f"{k:>{width}}" for k in iot.METHODS) + f"{'agreement':>{width}}")
    for row in t["rows"]:
        cells = []
        for k in (*iot.METHODS, "agreement"):
            vals = row["values"][k]
            cells.append(f"{statistics.mean(vals):.4f} [{' '.join(f'{v:.3f}' for v in vals)}]".rjust(width))
        print(f"{row['model'] + ' ' + row['space']:<16}" + "".join(cells))
    for row in t["rows"]:
        s = row["values"]["train_seconds"]
        print(f"{row['model']} {row['space']}: IOT training {statistics.mean(s):.1f} s wall per run (from the run "
              f"that built each cache entry); chance {t['chance'][row['model']]:.3f}")
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    command(sub, "iot", "let every input choose its own layer order (IOT) and compare with the baselines",
            iot.IOTConfig, lambda cfg, _: iot.run(cfg, progress=text_progress), summary)
    t = tables.add_parser("iot", help="model x method table of IOT and its baselines")
    t.add_argument("--model", choices=(*iot.MODELS, "all"), default="all")
    t.add_argument("--seeds", type=int, default=2)
    t.add_argument("--m", type=int, default=4)
    t.add_argument("--ms", type=int, nargs="+", default=None,
                   help="sweep M over these values instead (e.g. --ms 1 2 4 8): accuracy of every method against M, "
                        "for --model (default mlp) and --space")
    t.add_argument("--space", choices=iot.SPACES, default="blocks", help="order space of the sweep (--ms)")
    t.add_argument("--json", action="store_true", help="print the sweep as one JSON list (--ms)")
    t.set_defaults(func=_table)
