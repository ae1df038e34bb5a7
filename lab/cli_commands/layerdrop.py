"""`python -m lab layerdrop ...` and `python -m lab table layerdrop`."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from .. import prune
from ..cli import emit, text_progress
from ..experiments import layerdrop


def _run(args: argparse.Namespace) -> int:
    cfg = layerdrop.LayerDropConfig(model=args.model, p=args.p, keep=args.keep, strategy=args.strategy,
                                    seed=args.seed, recovery=args.recovery, steps=args.steps)
    r = layerdrop.run(cfg, progress=text_progress)

    def summary(r: dict[str, Any]) -> str:
        rec = f", after KD {r['recovered_acc']:.4f}" if "recovered_acc" in r else ""
        mean = f" (mean of {r['draws']} draws)" if r["draws"] > 1 else ""
        return (f"{cfg.model}, trained with p={cfg.p}: full {r['full_acc']:.4f}; kept {cfg.keep} of {r['n_blocks']} "
                f"({cfg.strategy}) {r['pruned_acc']:.4f}{mean}{rec}; kept blocks {r['kept']}; "
                f"p* = 1 - r/N = {r['p_star']:.3f}; chance {r['chance']:.3f}")

    emit(r, args.json, summary)
    return 0


def _table(args: argparse.Namespace) -> int:
    seeds = list(range(args.seeds))
    t = layerdrop.table(args.model, seeds, progress=text_progress)
    n = t["n_blocks"]
    print(f"LayerDrop, {args.model} model with {n} blocks: held-out accuracy after every-other pruning "
          f"(no fine-tuning), mean of {len(seeds)} seed(s) [per-seed values]")
    print(f"{'p':<5} " + " ".join(f"{'kept ' + str(r):>22}" for r in t["keeps"]))
    for p, per_seed in t["rows"].items():
        cells = []
        for j in range(len(t["keeps"])):
            vals = [row[j] for row in per_seed]
            cells.append(f"{statistics.mean(vals):.4f} [{' '.join(f'{v:.3f}' for v in vals)}]".rjust(22))
        print(f"{p:<5} " + " ".join(cells))
    tr, ev = t["seconds"]["train"], t["seconds"]["eval"]
    print(f"training {statistics.mean(tr):.1f} s per model (min {min(tr):.1f}, max {max(tr):.1f}); pruning "
          f"evaluation (6 strategies x every depth) {statistics.mean(ev):.1f} s per model; times from the run that "
          f"built each cache entry")
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    p = sub.add_parser("layerdrop", help="train with LayerDrop rate p, prune to r blocks, optionally recover")
    p.add_argument("--model", choices=layerdrop.MODELS, default="residual")
    p.add_argument("--p", type=float, default=0.5, help=f"LayerDrop training rate, 0..{layerdrop.P_MAX}")
    p.add_argument("--keep", type=int, default=4, help="blocks kept after pruning (1..8 for the default models)")
    p.add_argument("--strategy", choices=prune.STRATEGIES, default="every-other")
    p.add_argument("--recovery", choices=("none", "kd"), default="none", help="distil the pruned model afterwards")
    p.add_argument("--steps", type=int, default=500, help="recovery steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)
    t = tables.add_parser("layerdrop", help="p x blocks kept table under every-other pruning")
    t.add_argument("--model", choices=layerdrop.MODELS, default="residual")
    t.add_argument("--seeds", type=int, default=2)
    t.set_defaults(func=_table)
