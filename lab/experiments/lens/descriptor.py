"""Layer lens: the descriptor (page, presets, CLI, table) of lab/experiments/lens/experiment.py."""

from __future__ import annotations

import argparse
from typing import Any

from lab.catalog.descriptor import Descriptor, Table, TableRows, config_from, controls, defaults, seeds_axis
from lab.catalog.presets import Need, preset
from lab.claims import Claim, claim_line
from lab.core import model_registry
from lab.experiment import Pool
from lab.experiments.lens import claims as lens_claims
from lab.experiments.lens import experiment as lens
from lab.experiments.lens.experiment import LensConfig
from lab.runtime.progress import text_progress

# The page calls the route change "change" in its links (change=delete); the config's field is `route_op`.
CONTROLS = controls(LensConfig, names=("model", "task", "change", "block", "seed"), aliases={"change": "route_op"})
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "plain", "Plain MLP", "The plain MLP's lens, slot by slot: where does it decide? Then "
           "switch to the residual MLP.", model="plain"),
    preset(DEFAULTS, "shuffle", "ViT trained with LayerShuffle", "The ViT trained in random orders: does it "
           "decide later? Compare its commitment with the ViT trained in order.", model="vit-shuffle"),
    preset(DEFAULTS, "delete", "Delete a block, watch the lens", "The ViT with block 2 deleted, beside the "
           "intact one: where is the answer lost?", model="vit-sequential", change="delete", block=2),
    preset(DEFAULTS, "random", "A random order", "The ViT trained in order, run in a random order; then the "
           "LayerShuffle ViT.", model="vit-sequential", change="random"),
    preset(DEFAULTS, "layerdrop", "Residual MLP trained with LayerDrop", "The residual MLP trained with "
           "LayerDrop (p = 0.5): does it decide earlier? Compare with the ordinary residual MLP.", model="layerdrop"),
)


def config_of(settings: dict[str, Any]) -> LensConfig:
    """The experiment config of a complete page setting."""
    return config_from(LensConfig, settings, CONTROLS)


def plan(settings: dict[str, Any]) -> list[Need]:
    """The lab call of a setting, as the page makes it: the model's lens (its stored profile, computed on the way)
    with the chosen change of route."""
    cfg = config_of(settings)
    return [Need(f"Training or loading the {model_registry.model(cfg.model).label} and reading every layer", lens.run,
                 cfg, "run")]


def claims(settings: dict[str, Any]) -> list[Claim]:
    """The claims the page shows for a complete setting: the model's lens profile's."""
    return lens_claims.profile_claims(lens.run(config_of(settings)))


def _row(xs: list[float]) -> str:
    return " ".join(f"{100 * v:5.1f}" for v in xs)


def summary(r: lens.LensResult) -> str:
    c = r.config
    lines = [f"{model_registry.model(c.model).label}, seed {c.seed}: held-out {r.base_acc:.4f} (chance "
             f"{r.chance:.3f}); slots {', '.join(r.slots)}",
             f"logit lens accuracy %  {_row(r.slot_acc)}",
             f"tuned lens accuracy %  {_row(r.tuned_slot_acc)}",
             f"blocks before settling {r.commit['mean']:.2f} of {r.n_blocks}",
             "block influence        " + " ".join(f"{v:.3f}" for v in r.block_influence),
             "cost of deleting it    " + " ".join(f"{100 * v:+.1f}" for v in r.delete_cost) + " pts"]
    if r.change is not None:
        ch = r.change
        lines.append(f"after {lens.ROUTE_OP_LABELS[ch.op]} (route {ch.route}): held-out {ch.acc:.4f}; "
                     f"lens % {_row(ch.slot_acc)}")
    lines += [claim_line(cl) for cl in lens_claims.profile_claims(r)]
    return "\n".join(lines)


def table(args: argparse.Namespace, pool: Pool) -> TableRows:
    """Every model's lens per slot (means over seeds) and the claims per model and seed."""
    if not 1 <= args.seeds <= 20:
        raise ValueError(f"--seeds {args.seeds} is out of range: choose 1 to 20")
    seeds = list(range(args.seeds))
    t = lens.table(seeds, progress=text_progress, pool=pool)
    print(f"Layer lens: held-out accuracy (%) read after the stem and after every block, mean of seed(s) {seeds}")
    for mo, row in t["rows"].items():
        print(f"\n{model_registry.model(mo).label} (trained {100 * row['base_acc']:.1f} %, "
              f"chance {100 * row['chance']:.1f} %, "
              f"mean blocks before the answer settles {row['commit_mean']:.2f})")
        print(f"  {'logit lens':<12}{_row(row['slot_acc'])}")
        print(f"  {'tuned lens':<12}{_row(row['tuned_slot_acc'])}")
        for ps in row["per_seed"]:
            print(f"  seed {ps['seed']}: logit {_row(ps['slot_acc'])} | tuned {_row(ps['tuned_slot_acc'])} | "
                  f"influence-cost rho {ps['rho']:+.2f}")
    print("\nClaims (per model and seed):")
    claims = lens_claims.table_claims(t, pool)
    for c in claims:
        print(claim_line(c))
    rows = [{"model": mo, "seed": ps["seed"], "slot": i, "logit_lens_acc": a, "tuned_lens_acc": ps["tuned_slot_acc"][i],
             "base_acc": row["base_acc"], "chance": row["chance"]}
            for mo, row in t["rows"].items() for ps in row["per_seed"] for i, a in enumerate(ps["slot_acc"])]
    return TableRows(rows, claims)


DESCRIPTOR = Descriptor(
    name="lens", order=70, title="Layer lens", icon=":material/visibility:",
    summary="Read a trained network from the inside: its own head applied after every block.",
    about="""read a trained network from the inside: its own head applied after
  every block (logit and tuned lens). Where is each answer decided? Do block influence and angular distance predict
  what deleting a block really costs?""",
    config=LensConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=config_of, run=lens.run,
    cli_help="read every layer of a frozen model: logit and tuned lens, commitment, block influence",
    cli_summary=summary, demo=("model", "change", "block"), claims=claims,
    table=Table("every model's lens per slot, and the papers' claims per seed", (seeds_axis(),), table),
)
