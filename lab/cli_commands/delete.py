"""`python -m lab delete ...` and `python -m lab table delete`."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from .. import search
from ..cli import emit, text_progress
from ..experiments import delete
from ..recover import RECOVERIES


def _run(args: argparse.Namespace) -> int:
    cfg = delete.DeleteConfig(arch=args.arch, k=args.k, select=args.select, recovery=args.recovery,
                              steps=args.steps, seed=args.seed)
    r = delete.run(cfg, progress=text_progress)

    def summary(r: dict[str, Any]) -> str:
        return (f"{cfg.arch} MLP, delete {cfg.k} ({cfg.select}): teacher {r['teacher_acc']:.4f}, "
                f"cut {r['cut_acc']:.4f} (probe {r['probe_acc']:.4f}), after {cfg.recovery} {r['recovered_acc']:.4f}; "
                f"dropped blocks {r['dropped']}; chance {r['chance']:.3f}")

    emit(r, args.json, summary)
    return 0


def _table(args: argparse.Namespace) -> int:
    ks = (1, 2, 4, 6)
    seeds = list(range(args.seeds))
    print(f"Deleting blocks of an 8x128 MLP (greedy on the probe set); held-out accuracy, mean of {len(seeds)} "
          f"seed(s); KD = {args.steps} distillation steps")
    head = " ".join(f"{f'k={k} none':>10} {f'k={k} kd':>8}" for k in ks)
    print(f"{'arch':<9} {'teacher':>8} {head}")
    for arch in delete.ARCHS:
        cells, teacher = [], []
        for k in ks:
            none, kd = [], []
            for s in seeds:
                r = delete.run(delete.DeleteConfig(arch=arch, k=k, recovery="kd", steps=args.steps, seed=s),
                               progress=text_progress)
                none.append(r["cut_acc"])
                kd.append(r["recovered_acc"])
                teacher.append(r["teacher_acc"])
            cells.append(f"{statistics.mean(none):>10.4f} {statistics.mean(kd):>8.4f}")
        print(f"{arch:<9} {statistics.mean(teacher):>8.4f} " + " ".join(cells))
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    p = sub.add_parser("delete", help="delete k blocks of a trained MLP, then optionally recover")
    p.add_argument("--arch", choices=delete.ARCHS, default="residual")
    p.add_argument("--k", type=int, default=2, help="blocks to delete (0..7 for the default 8-layer MLP)")
    p.add_argument("--select", choices=search.SELECTIONS, default="greedy")
    p.add_argument("--recovery", choices=RECOVERIES, default="kd")
    p.add_argument("--steps", type=int, default=500, help="recovery steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)
    t = tables.add_parser("delete", help="arch x k x recovery table")
    t.add_argument("--seeds", type=int, default=2)
    t.add_argument("--steps", type=int, default=1500, help="KD steps (the seed's table used 1,500)")
    t.set_defaults(func=_table)
