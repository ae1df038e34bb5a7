"""`python -m lab shuffle ...` and `python -m lab table shuffle`."""

from __future__ import annotations

import argparse
from typing import Any

from lab.claims import VERDICTS
from lab.cli.common import command, table_pool, text_progress
from lab.experiments import shuffle


def _brief(r: dict[str, Any]) -> dict[str, Any]:
    """The fields the command promises (plus the rest of the result under their own names)."""
    ro = r["random_orders"]
    return {
        "mode": r["mode"],
        "depth": r["n_blocks"],
        "base_acc": r["base_acc"],
        "sequential_acc": r["base_acc"],  # accuracy in the order the model was trained in (0, 1, ..., D-1)
        "random_order_acc": {"mean": ro["mean"], "min": ro["min"], "max": ro["max"], "n": len(ro["accs"])},
        "all_orders_acc": ({k: r["all_orders"][k] for k in ("mean", "min", "max", "n")}
                           if r["all_orders"] else None),
        "reversed_acc": r["reversed_acc"],
        "position_probe_acc": r["probe"]["acc"],
        "chance": r["chance"],  # of the classes
        "probe_chance": r["probe"]["chance"],  # of the position probe: 1 / depth
        "pruning": [{"removed": p["removed"], "random_order_mean": p["random_order"]["mean"],
                     "trained_order_mean": p["trained_order"]["mean"]} for p in r["pruning"]],
        "train_seconds": r["train_seconds"],
        "n_test": r["n_test"],
        "comparison": {m: {"base_acc": c["base_acc"], "random_order_acc": {k: c["random_orders"][k] for k in
                                                                            ("mean", "min", "max")},
                           "position_probe_acc": c["probe"]["acc"]} for m, c in r["comparison"].items()},
        "claims": r["claims"],
    }


def summary(b: dict[str, Any]) -> str:
    ro = b["random_order_acc"]
    return (f"{shuffle.MODE_LABELS[b['mode']]} ViT, {b['depth']} blocks: trained order {b['sequential_acc']:.4f}, "
            f"{ro['n']} random orders mean {ro['mean']:.4f} (min {ro['min']:.4f}, max {ro['max']:.4f}), "
            f"reversed {b['reversed_acc']:.4f}; position probe {b['position_probe_acc']:.3f} "
            f"(chance {b['probe_chance']:.3f}); trained in {b['train_seconds']:.0f} s\n" + claim_lines(b["claims"]))


def claim_lines(claims: list[dict[str, Any]]) -> str:
    """One line per claim: verdict, subject, statement, numbers."""
    return "\n".join(f"  [{VERDICTS[c['holds']]}] {c.get('subject', '')}: {c['claim']} ({c['detail']})"
                     for c in claims)


def _table(args: argparse.Namespace) -> int:
    print(f"ViT on digits, {args.depth} blocks; held-out accuracy; {args.orders} random orders")
    print(f"{'mode':<12} {'seed':>4} {'trained':>8} {'rand mean':>9} {'rand min':>8} {'probe':>6} {'train s':>7}")
    cfgs = {(mode, s): shuffle.ShuffleConfig(mode=mode, depth=args.depth, orders=args.orders, seed=s)
            for mode in shuffle.MODES for s in range(args.seeds)}
    results = dict(zip(cfgs, table_pool(args)([(shuffle.run, c) for c in cfgs.values()], text_progress), strict=True))
    for mode in shuffle.MODES:
        for s in range(args.seeds):
            b = _brief(results[mode, s])
            ro = b["random_order_acc"]
            print(f"{mode:<12} {s:>4} {b['sequential_acc']:>8.4f} {ro['mean']:>9.4f} {ro['min']:>8.4f} "
                  f"{b['position_probe_acc']:>6.3f} {b['train_seconds']:>7.1f}")
    print(f"position-probe chance: {1 / args.depth:.3f}")
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    command(sub, "shuffle", "train a digits ViT sequentially or with LayerShuffle; test it in any order",
            shuffle.ShuffleConfig, lambda cfg, _: _brief(shuffle.run(cfg, progress=text_progress)), summary)
    t = tables.add_parser("shuffle", help="mode x seed table")
    t.add_argument("--seeds", type=int, default=2)
    t.add_argument("--depth", type=int, default=6)
    t.add_argument("--orders", type=int, default=50)
    t.set_defaults(func=_table)
