"""`python -m lab delete ...` and `python -m lab table delete`."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from lab.claims import VERDICTS
from lab.cli.common import command, table_pool, text_progress
from lab.experiments import delete


def summary(r: dict[str, Any]) -> str:
    c = r["config"]
    return (f"{c['arch']} MLP, delete {c['k']} ({c['select']}): teacher {r['base_acc']:.4f}, "
            f"cut {r['cut_acc']:.4f} (probe {r['cut_probe_acc']:.4f}), after {c['recovery']} "
            f"{r['recovered_acc']:.4f}; dropped blocks {r['dropped']}; chance {r['chance']:.3f}"
            + "".join(f"\n- [{VERDICTS[cl['holds']]}] {cl['claim']}: {cl['detail']}" for cl in r.get("claims", [])))


def _table(args: argparse.Namespace) -> int:
    ks = (1, 2, 4, 6)
    seeds = list(range(args.seeds))
    print(f"Deleting blocks of an 8x128 MLP (greedy on the probe set); held-out accuracy, mean of {len(seeds)} "
          f"seed(s); KD = {args.steps} distillation steps")
    head = " ".join(f"{f'k={k} none':>10} {f'k={k} kd':>8}" for k in ks)
    print(f"{'arch':<9} {'teacher':>8} {head}")
    cfgs = {(arch, k, s): delete.DeleteConfig(arch=arch, k=k, recovery="kd", steps=args.steps, seed=s)
            for arch in delete.ARCHS for k in ks for s in seeds}
    results = dict(zip(cfgs, table_pool(args)([(delete.run, c) for c in cfgs.values()], text_progress), strict=True))
    for arch in delete.ARCHS:
        cells, teacher = [], []
        for k in ks:
            none, kd = [], []
            for s in seeds:
                r = results[arch, k, s]
                none.append(r["cut_acc"])
                kd.append(r["recovered_acc"])
                teacher.append(r["base_acc"])
            cells.append(f"{statistics.mean(none):>10.4f} {statistics.mean(kd):>8.4f}")
        print(f"{arch:<9} {statistics.mean(teacher):>8.4f} " + " ".join(cells))
    print(f"\nClaims (noise from the spread of {len(seeds)} seed(s)):")
    for c in delete.table_claims_of_runs(results, seeds, ks):
        print(f"- [{VERDICTS[c['holds']]}] {c['claim']}: {c['detail']}")
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    command(sub, "delete", "delete k blocks of a trained MLP, then optionally recover", delete.DeleteConfig,
            lambda cfg, _: delete.run(cfg, progress=text_progress), summary)
    t = tables.add_parser("delete", help="arch x k x recovery table")
    t.add_argument("--seeds", type=int, default=2)
    t.add_argument("--steps", type=int, default=1500, help="KD steps (the seed's table used 1,500)")
    t.set_defaults(func=_table)
