"""`python -m lab export MODEL [--seed N] [--out DIR] [--json]`: a trained model's weights (safetensors), config,
training curve and model card in one folder (lab/classroom/export.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from lab.classroom import export
from lab.cli.common import JSON_HELP, print_json
from lab.core import model_registry


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out or f"layerlab-{model_registry.model(args.model).name}-seed{args.seed}")
    cfg = export.export(args.model, args.seed, out)
    if args.json:
        print_json("export", {"model": args.model, "seed": args.seed, "out": str(out)},
                   {"folder": str(out), "files": list(export.FILES), "config": cfg})
        return 0
    h = cfg["held_out"]
    print(f"{cfg['model']} seed {args.seed}: held-out {h['accuracy']:.4f} on {h['inputs']:,} inputs; wrote "
          f"{', '.join(export.FILES)} to {out}")
    return 0


def _seed(text: str) -> int:
    n = int(text)
    if not 0 <= n <= 99:
        raise argparse.ArgumentTypeError(f"seed {n} is out of range: choose 0 to 99")
    return n


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a trained model's weights, config, training curve and model card")
    p.add_argument("model", help="a model of the lab's registry or a page's word for it (residual, plain, "
                   "vit-sequential, ...)")
    p.add_argument("--seed", type=_seed, default=0, help="the training seed (default 0)")
    p.add_argument("--out", default="", help="the folder to write (default layerlab-MODEL-seedN)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=_run)
