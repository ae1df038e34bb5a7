"""`python -m lab lens ...` and `python -m lab table lens`."""

from __future__ import annotations

import argparse
from typing import Any

from lab.claims import VERDICTS
from lab.cli.common import command, table_pool, text_progress
from lab.experiments import lens


def _row(xs: list[float]) -> str:
    return " ".join(f"{100 * v:5.1f}" for v in xs)


def summary(r: dict[str, Any]) -> str:
    c = r["config"]
    lines = [f"{lens.MODEL_LABELS[c['model']]}, seed {c['seed']}: held-out {r['base_acc']:.4f} (chance "
             f"{r['chance']:.3f}); slots {', '.join(r['slots'])}",
             f"logit lens accuracy %  {_row(r['slot_acc'])}",
             f"tuned lens accuracy %  {_row(r['tuned_slot_acc'])}",
             f"blocks before settling {r['commit']['mean']:.2f} of {r['n_blocks']}",
             "block influence        " + " ".join(f"{v:.3f}" for v in r["block_influence"]),
             "cost of deleting it    " + " ".join(f"{100 * v:+.1f}" for v in r["delete_cost"]) + " pts"]
    if r["change"]:
        ch = r["change"]
        lines.append(f"after {lens.ROUTE_OP_LABELS[ch['op']]} (route {ch['route']}): held-out {ch['acc']:.4f}; "
                     f"lens % {_row(ch['slot_acc'])}")
    lines += [f"- [{VERDICTS[cl['holds']]}] {cl['claim']}: {cl['detail']}" for cl in r["claims"]]
    return "\n".join(lines)


def _table(args: argparse.Namespace) -> int:
    if not 1 <= args.seeds <= 20:
        raise ValueError(f"--seeds {args.seeds} is out of range: choose 1 to 20")
    seeds = list(range(args.seeds))
    t = lens.table(seeds, progress=text_progress, pool=table_pool(args))
    print(f"Layer lens: held-out accuracy (%) read after the stem and after every block, mean of seed(s) {seeds}")
    for mo, row in t["rows"].items():
        print(f"\n{lens.MODEL_LABELS[mo]} (trained {100 * row['base_acc']:.1f} %, chance {100 * row['chance']:.1f} %, "
              f"mean blocks before the answer settles {row['commit_mean']:.2f})")
        print(f"  {'logit lens':<12}{_row(row['slot_acc'])}")
        print(f"  {'tuned lens':<12}{_row(row['tuned_slot_acc'])}")
        for ps in row["per_seed"]:
            print(f"  seed {ps['seed']}: logit {_row(ps['slot_acc'])} | tuned {_row(ps['tuned_slot_acc'])} | "
                  f"influence-cost rho {ps['rho']:+.2f}")
    print("\nClaims (per model and seed):")
    for c in t["claims"]:
        print(f"- [{VERDICTS[c['holds']]}] {c.get('subject', '')}, seed {c['seed']}: {c['claim']}: {c['detail']}")
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    command(sub, "lens", "read every layer of a frozen model: logit and tuned lens, commitment, block influence",
            lens.LensConfig, lambda cfg, _: lens.run(cfg, progress=text_progress), summary)
    t = tables.add_parser("lens", help="every model's lens per slot, and the papers' claims per seed")
    t.add_argument("--seeds", type=int, default=2)
    t.set_defaults(func=_table)
