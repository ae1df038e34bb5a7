"""`python -m lab rearrange ...` and `python -m lab table rearrange`."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from lab.claims import VERDICTS
from lab.cli.common import command, table_pool, text_progress
from lab.experiments import rearrange


def summary(r: dict[str, Any]) -> str:
    c = r["config"]
    mean = f" (mean of {r['draws']} random orders; first: {r['route']})" if r["draws"] > 1 else f" [{r['route']}]"
    return (f"{rearrange.MODEL_LABELS[c['model']]}, {rearrange.OP_LABELS[c['op']]}{mean}: held-out "
            f"{r['acc']:.4f} (trained order {r['base_acc']:.4f}, chance {r['chance']:.3f}); "
            f"{r['block_runs']} block runs in {r['depth']} sequential steps (trained: {r['n_blocks']})"
            + "".join(f"\n- [{VERDICTS[cl['holds']]}] {cl['claim']}: {cl['detail']}" for cl in r.get("claims", [])))


def _table(args: argparse.Namespace) -> int:
    if not 1 <= args.seeds <= 20:
        raise ValueError(f"--seeds {args.seeds} is out of range: choose 1 to 20")
    seeds = list(range(args.seeds))
    t = rearrange.table(seeds, progress=text_progress, pool=table_pool(args))
    models = list(t["rows"])
    print(f"Rearranged frozen models: held-out accuracy (block runs), mean of seed(s) {seeds}; ends kept, "
          "block operations averaged over the middle blocks")
    print(f"{'operation':<40}" + "".join(f"{rearrange.MODEL_LABELS[m]:>32}" for m in models))
    for name, lab in rearrange.SUMMARY:
        cells = [f"{t['rows'][m][name]['acc']:.4f} ({t['rows'][m][name]['block_runs']:>2})" for m in models]
        print(f"{lab:<40}" + "".join(f"{c:>32}" for c in cells))
    print(f"{'chance':<40}" + "".join(f"{t['chance'][m]:>32.4f}" for m in models))
    print(f"\nClaims (on the means; noise from the spread of {len(seeds)} seed(s)):")
    for c in t["claims"]:
        print(f"- [{VERDICTS[c['holds']]}] {c.get('subject', '')}: {c['claim']}: {c['detail']}")
    secs = {m: statistics.mean(v) for m, v in t["seconds"].items()}
    print("training " + ", ".join(f"{m} {s:.0f} s" for m, s in secs.items()) + " per model (when first built)")
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    command(sub, "rearrange", "skip, swap, reverse, repeat, loop or parallelise the middle blocks of a frozen model",
            rearrange.RearrangeConfig, lambda cfg, _: rearrange.run(cfg, progress=text_progress), summary)
    t = tables.add_parser("rearrange", help="models x rearrangement operations, and the papers' claims")
    t.add_argument("--seeds", type=int, default=2)
    t.set_defaults(func=_table)
