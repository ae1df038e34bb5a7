"""`python -m lab reinit ...` and `python -m lab table reinit`."""

from __future__ import annotations

import argparse
from typing import Any, Optional

from lab.claims import VERDICTS
from lab.cli.common import command, table_pool, text_progress
from lab.experiment import add_arguments
from lab.experiments import reinit


def _fmt(v: Optional[float]) -> str:
    return "n/a" if v is None else f"{v:+.2f}"


def heatmap_text(r: dict[str, Any]) -> str:
    """The robustness map as a fixed-width table: one row per layer, held-out accuracy per column."""
    cols = r["checkpoints"]
    lines = [f"{r['model_name']} ({r['task']}): trained {r['base_acc']:.4f}, chance {r['chance']:.4f}; "
             f"held-out accuracy after changing one layer (columns: re-randomise, then re-initialise to epoch t)",
             f"{'layer':<10} " + " ".join(f"{c:>12}" for c in cols) + f" {'rel dist':>9} {'inf dist':>9}  verdict t=0"]
    for i, layer in enumerate(r["layers"]):
        rel = r["distance"]["rel2"][i]
        lines.append(f"{layer:<10} " + " ".join(f"{a:>12.4f}" for a in r["acc"][i])
                     + f" {'n/a' if rel is None else f'{rel:.3f}':>9} {r['distance']['inf'][i]:>9.3f}"
                     + f"  {r['verdict_t0'][i]}")
    rc = r["rank_corr"]
    lines.append(f"Spearman(distance, damage at t=0): rel 2-norm {_fmt(rc['rel2'])}, inf-norm {_fmt(rc['inf'])}; "
                 f"heatmap computed in {r['heatmap_seconds']:.2f} s "
                 f"({r.get('heatmap_cpu_seconds', float('nan')):.2f} s of CPU)")
    return "\n".join(lines)


def claims_text(claims: list[dict[str, Any]]) -> str:
    """One line per claim: verdict, statement, subject and the numbers (the page draws the same records)."""
    return "\n".join(f"[{VERDICTS[c['holds']]}] {c['claim']}" + (f" ({c['subject']})" if c.get("subject") else "")
                     + f": {c['detail']}" for c in claims)


SHARED = ("model", "seed", "depth", "width", "epochs")  # FocusConfig fields that ReinitConfig already has


def _answer(cfg: reinit.ReinitConfig, args: argparse.Namespace) -> dict[str, Any]:
    r = reinit.run(cfg, progress=text_progress)
    if args.layer is not None:
        focus = {f: getattr(args, f) for f in ("op", "checkpoint", "recovery", "steps")}
        fc = reinit.FocusConfig(**{f: getattr(cfg, f) for f in SHARED}, layer=args.layer, **focus)
        r = {**r, "focus": reinit.focus(fc, progress=text_progress)}
    if args.layers is not None:
        gc = reinit.GroupConfig(**{f: getattr(cfg, f) for f in SHARED}, layers=args.layers, op=args.op,
                                checkpoint=args.checkpoint)
        g = reinit.group(gc, progress=text_progress)
        r = {**r, "group": g, "group_acc": g["group_acc"], "sum_single_damage": g["sum_single_damage"],
             "claims": r["claims"] + g["claims"]}
    return r


def summary(r: dict[str, Any]) -> str:
    text = heatmap_text(r)
    f = r.get("focus")
    if f:
        c = f["config"]
        what = "re-randomised" if c["op"] == "rerand" else f"re-initialised to epoch {c['checkpoint']}"
        text += (f"\n{c['layer']} {what}: {f['cut_acc']:.4f} (keeps {f['kept_share']:.0%} of the above-chance "
                 f"accuracy); after {c['recovery']} {c['steps']} steps: {f['recovered_acc']:.4f}, back within 1 point "
                 f"after {f['steps_to_recover'] if f['steps_to_recover'] is not None else 'never'} steps")
    g = r.get("group")
    if g:
        text += (f"\ngroup {g['layers']}: together {g['group_acc']:.4f} (damage {g['group_damage']:+.4f}); alone "
                 + ", ".join(f"{name} {a:.4f}" for name, a in zip(g["layers"], g["single_accs"], strict=True))
                 + f"; sum of single damages {g['sum_single_damage']:+.4f}")
    return text + "\nAgainst the paper:\n" + claims_text(r["claims"] + (f["claims"] if f else []))


def _focus_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layer", default=None, help="also focus on this layer (e.g. stem, blocks.0, head)")
    p.add_argument("--layers", default=None, help="also change these layers together, comma-separated (e.g. "
                   "blocks.1,blocks.2), with --op and --checkpoint: group_acc against the sum of single damages")
    add_arguments(p, reinit.FocusConfig, skip=(*SHARED, "layer"))


def width_text(w: dict[str, Any]) -> str:
    """One model's width sweep: held-out accuracy after re-initialising each layer to t = 0, one column per width."""
    ws = w["widths"]
    lines = [f"{w['model_name']}, seed {w['seed']}: held-out accuracy after re-initialising one layer to t = 0, by "
             f"width (chance {w['chance']:.4f})", f"{'layer':<10} " + " ".join(f"{'w=' + str(x):>9}" for x in ws)]
    lines.append(f"{'trained':<10} " + " ".join(f"{a:>9.4f}" for a in w["base_acc"]))
    for i, layer in enumerate(w["layers"]):
        lines.append(f"{layer:<10} " + " ".join(f"{w['t0_acc'][j][i]:>9.4f}" for j in range(len(ws))))
    return "\n".join(lines)


def _width_table(args: argparse.Namespace) -> int:
    models = [m for m in args.models if m in reinit.WIDTH_MODELS]
    if not models:
        raise ValueError("the width sweep is for the MLPs: choose --models plain and/or residual")
    pool = table_pool(args)
    claims = []
    for m in models:
        w = reinit.width_sweep(m, args.seed, tuple(args.widths), text_progress, pool)
        claims += w["claims"]
        print(width_text(w))
        print()
    print("Against the paper:\n" + claims_text(claims))
    return 0


def _table(args: argparse.Namespace) -> int:
    if args.widths:
        return _width_table(args)
    cfgs = [reinit.ReinitConfig(model=model, seed=args.seed) for model in args.models]
    results = {}
    for r in table_pool(args)([(reinit.run, c) for c in cfgs], text_progress):
        results[r["model"]] = r
        print(heatmap_text(r))
        print()
    print("Against the paper:\n" + claims_text(reinit.claims(results)))
    return 0


def register(sub: argparse._SubParsersAction, tables: argparse._SubParsersAction) -> None:
    command(sub, "reinit", "re-initialise or re-randomise each layer of a trained model", reinit.ReinitConfig,
            _answer, summary, extra=_focus_flags)
    t = tables.add_parser("reinit", help="robustness maps of the plain MLP, residual MLP and ViT")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--models", nargs="+", choices=reinit.MODELS, default=list(reinit.MODELS))
    t.add_argument("--widths", nargs="+", type=int, default=None,
                   help="a width sweep of the MLPs instead (e.g. 32 64 128 256): each layer's robustness by width")
    t.set_defaults(func=_table)
