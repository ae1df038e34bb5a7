"""`python -m lab layerdrop ...` and `python -m lab table layerdrop`."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from lab.cli.common import command, table_pool, text_progress
from lab.cli.reinit import claims_text
from lab.experiments import layerdrop


def summary(r: dict[str, Any]) -> str:
    c = r["config"]
    rec = f", after KD {r['recovered_acc']:.4f}" if "recovered_acc" in r else ""
    if r.get("scratch_acc") is not None:
        rec += (f"; depth {c['keep']} from scratch {r['scratch_acc']:.4f}, distilled from the p=0 model "
                f"{r['distilled_acc']:.4f}")
    mean = f" (mean of {r['draws']} draws)" if r["draws"] > 1 else ""
    return (f"{c['model']}, trained with p={c['p']}: full {r['base_acc']:.4f}; kept {c['keep']} of {r['n_blocks']} "
            f"({c['strategy']}) {r['cut_acc']:.4f}{mean}{rec}; kept blocks {r['kept']}; "
            f"p* = 1 - r/N = {r['p_star']:.3f}; chance {r['chance']:.3f}\nAgainst the paper:\n"
            + claims_text(r["claims"]))


def _table(args: argparse.Namespace) -> int:
    seeds = list(range(args.seeds))
    t = layerdrop.table(args.model, seeds, progress=text_progress, pool=table_pool(args))
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
    for name, label in (("scratch", "scratch"), ("distilled", "distil")):
        cells = []
        for r in t["keeps"]:
            vals = t["baselines"][name].get(r)
            cells.append((f"{statistics.mean(vals):.4f} [{' '.join(f'{v:.3f}' for v in vals)}]" if vals
                          else "-").rjust(22))
        print(f"{label:<5} " + " ".join(cells))
    print("scratch: a model of depth r trained from scratch with the p=0 recipe; distil: the p=0 model's every other "
          "blocks distilled (KD) into depth r")
    tr, ev = t["seconds"]["train"], t["seconds"]["eval"]
    print(f"training {statistics.mean(tr):.1f} s per model (min {min(tr):.1f}, max {max(tr):.1f}); pruning "
          f"evaluation (6 strategies x every depth) {statistics.mean(ev):.1f} s per model; times from the run that "
          f"built each cache entry")
    print("Against the paper (on the means over seeds):\n" + claims_text(t["claims"]))
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    command(sub, "layerdrop", "train with LayerDrop rate p, prune to r blocks, optionally recover",
            layerdrop.LayerDropConfig, lambda cfg, _: layerdrop.run(cfg, progress=text_progress), summary)
    t = tables.add_parser("layerdrop", help="p x blocks kept table under every-other pruning")
    t.add_argument("--model", choices=layerdrop.MODELS, default="residual")
    t.add_argument("--seeds", type=int, default=2)
    t.set_defaults(func=_table)
