"""LayerDrop: the descriptor (page, presets, CLI, table) of lab/experiments/layerdrop/experiment.py."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from lab.catalog.descriptor import Axis, Descriptor, Table, TableRows, config_from, controls, defaults, seeds_axis
from lab.catalog.presets import Need, preset
from lab.claims import Claim, claim_lines
from lab.experiment import Pool
from lab.experiments.layerdrop import claims as layerdrop_claims
from lab.experiments.layerdrop import experiment as layerdrop
from lab.experiments.layerdrop.experiment import BaselineConfig, CompareConfig, LayerDropConfig, ProfileConfig
from lab.runtime.progress import text_progress

CONTROLS = controls(LayerDropConfig, names=("model", "task", "p", "keep", "strategy", "recovery", "seed"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "half", "Half depth, ordinary model", f"p = 0 pruned to 4 of {layerdrop.n_blocks('residual')} "
           "blocks by every other: pin it, then set p = 0.5 and compare.", keep=4, strategy="every-other", p=0.0),
    preset(DEFAULTS, "quarter", "Quarter depth, p = 0.7", "The rule says p* = 0.75 for a quarter of the "
           "blocks: is the largest p trained here the best one?", keep=2, p=0.7, strategy="every-other"),
    preset(DEFAULTS, "first", "Contiguous cuts", "The first 4 blocks removed: then switch to last and every "
           "other. Which blocks can the model not lose?", strategy="first", keep=4),
    preset(DEFAULTS, "kd", "Prune, then distil", "An ordinary model (p = 0) cut to 2 blocks and distilled: "
           "compare with LayerDrop's result without it.", recovery="kd", keep=2, p=0.0),
)


def config_of(settings: dict[str, Any]) -> LayerDropConfig:
    """The experiment config of a complete page setting."""
    return config_from(LayerDropConfig, settings, CONTROLS)


def plan(settings: dict[str, Any]) -> list[Need]:
    """The lab calls of a setting, as the page makes them, side by side: the model at every rate of the comparison
    (one trained model per rate), the depth-r models trained from scratch and distilled (when r is below the full
    depth), and this run, which reads them all."""
    cfg = config_of(settings)
    ps = CompareConfig(cfg.model, cfg.p, cfg.seed, cfg.task).ps
    b = BaselineConfig(cfg.model, cfg.keep, cfg.seed, cfg.task)
    base = ([Need(f"Training {cfg.keep} blocks from scratch", layerdrop.scratch, b, "scratch"),
             Need(f"Distilling the p = 0 model into {cfg.keep} blocks", layerdrop.distil, b, "distil")]
            if cfg.keep < layerdrop.n_blocks(cfg.model) else [])
    return ([Need(f"Training the model at p = {q:g} (the comparison)", layerdrop.profile,
                  ProfileConfig(cfg.model, q, cfg.seed, cfg.task), f"p={q:g}") for q in ps]
            + base + [Need(f"Pruning the p = {cfg.p:g} model to {cfg.keep} blocks", layerdrop.run, cfg, "run")])


def profile_keys(settings: dict[str, Any]) -> list[str]:
    """The plan's keys of the comparison's models, ascending p (what `layerdrop.compare` lists)."""
    cfg = config_of(settings)
    return [f"p={q:g}" for q in CompareConfig(cfg.model, cfg.p, cfg.seed, cfg.task).ps]


def claims(settings: dict[str, Any]) -> list[Claim]:
    """The claims the page shows for a complete setting: the run's (its profiles and the depth-r baselines)."""
    return layerdrop_claims.run_claims(layerdrop.run(config_of(settings)))


def summary(r: layerdrop.LayerDropResult) -> str:
    c = r.config
    rec = f", after KD {r.recovered_acc:.4f}" if r.recovered_acc is not None else ""
    if r.scratch_acc is not None:
        rec += (f"; depth {c.keep} from scratch {r.scratch_acc:.4f}, distilled from the p=0 model "
                f"{r.distilled_acc:.4f}")
    exact = c.strategy == "random" and r.strategies["random"].get("exact")
    mean = (f" (mean over {'all ' if exact else ''}{r.draws} {'subsets' if exact else 'random subsets'})"
            if r.draws > 1 else "")
    return (f"{c.model}, trained with p={c.p}: full {r.base_acc:.4f}; kept {c.keep} of {r.n_blocks} "
            f"({c.strategy}) {r.cut_acc:.4f}{mean}{rec}; kept blocks {r.kept}; "
            f"p* = 1 - r/N = {r.p_star:.3f}; chance {r.chance:.3f}\nAgainst the paper:\n"
            + claim_lines(layerdrop_claims.run_claims(r)))


def table(args: argparse.Namespace, pool: Pool) -> TableRows:
    """p x blocks kept under every-other pruning, the depth-r baselines, and the claims on the means."""
    seeds = list(range(args.seeds))
    t = layerdrop.table(args.model, seeds, progress=text_progress, pool=pool)
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
    claims = layerdrop_claims.table_claims(t, pool)
    print("Against the paper (on the means over seeds):\n" + claim_lines(claims))
    rows = [{"model": args.model, "recipe": f"p={p}", "kept": r, "seed": s, "acc": per_seed[i][j]}
            for p, per_seed in t["rows"].items() for i, s in enumerate(seeds) for j, r in enumerate(t["keeps"])]
    rows += [{"model": args.model, "recipe": name, "kept": r, "seed": s, "acc": v}
             for name in ("scratch", "distilled") for r in t["keeps"]
             for s, v in zip(seeds, t["baselines"][name].get(r) or [], strict=False)]
    return TableRows(rows, claims)


DESCRIPTOR = Descriptor(
    name="layerdrop", order=40, title="LayerDrop", icon=":material/layers_clear:",
    summary="Train with each block skipped at random (probability p), then prune to any depth without retraining.",
    about="""train with each block skipped at random (probability p), then
  prune the network to any depth without retraining. Which p should you train with for the depth you want, and
  which blocks should go?""",
    config=LayerDropConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=config_of,
    run=layerdrop.run, cli_help="train with LayerDrop rate p, prune to r blocks, optionally recover",
    cli_summary=summary, demo=("model", "p", "keep", "strategy"), claims=claims,
    table=Table("p x blocks kept table under every-other pruning", (
        Axis("model", "the model", str, LayerDropConfig().model, choices=layerdrop.MODELS), seeds_axis()), table),
)
