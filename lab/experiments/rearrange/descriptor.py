"""Rearrange layers: the descriptor (page, presets, CLI, table) of lab/experiments/rearrange/experiment.py."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from lab.catalog.descriptor import Descriptor, Table, TableRows, config_from, controls, defaults, seeds_axis
from lab.catalog.presets import Need, preset
from lab.claims import Claim, claim_line
from lab.core import model_registry
from lab.experiment import Pool
from lab.experiments.rearrange import claims as rearrange_claims
from lab.experiments.rearrange import experiment as rearrange
from lab.experiments.rearrange.experiment import MODELS, RearrangeConfig
from lab.experiments.rearrange.rows import SUMMARY
from lab.ops import route_ops
from lab.runtime.progress import text_progress

CONTROLS = controls(RearrangeConfig, names=("model", "task", "op", "block", "reduce", "loops", "span", "ends",
                                                   "seed"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "repeat", "Repeat vs skip", "One middle block run in place of the whole middle; then "
           "set the operation to skip the whole middle: the same span, left out.", op="repeat", block=2,
           ends="keep"),
    preset(DEFAULTS, "parallel", "Parallel, by sum", "The middle blocks side by side with their updates "
           "summed; then switch to the mean.", op="parallel", reduce="sum", ends="keep"),
    preset(DEFAULTS, "shuffle", "LayerShuffle, random orders", "Every block in a random order, on the model "
           "trained for it; then the sequential ViT.", model="vit-shuffle", op="random", ends="include"),
    preset(DEFAULTS, "span", "Skip a span of 3", "Blocks 1 to 3 left out; then repeat block 1 over the same "
           "span and compare (Sun et al.'s comparison).", op="skip", block=1, span=3, ends="keep"),
    preset(DEFAULTS, "loops", "Parallel, looped 4 times", "The whole middle in parallel, run 4 times; move "
           "the loop count and the span, and find the best K for each span in the figure below.",
           op="parallel-loop", block=1, span=4, loops=4, ends="keep"),
    preset(DEFAULTS, "first", "Skip the first block", "How much does the first block matter? Then try the "
           "last one.", op="skip", block=0, ends="include"),
)


def config_of(settings: dict[str, Any]) -> RearrangeConfig:
    """The experiment config of a complete page setting."""
    return config_from(RearrangeConfig, settings, CONTROLS)


def plan(settings: dict[str, Any]) -> list[Need]:
    """The lab calls of a setting: the chosen operation, then the profile of every model at the seed (the comparison
    figures and the claims), the chosen model's own last. A view starts its calls in this order on the engine's
    workers (app/jobs.py: `View.head_start`). The chosen operation reads its model's profile and builds it itself
    when it is missing (its bar shows that model's training: the newcomer's first number), so that profile comes
    last: listed earlier, a second worker picked it up while the operation was building it and sat waiting on its
    lock. Measured on an empty store: the LayerShuffle ViT's training began only 67 s in, after such a wait."""
    cfg = config_of(settings)
    order = [mo for mo in MODELS if mo != cfg.model] + [cfg.model]
    return ([Need(f"Training or loading the {model_registry.model(cfg.model).label} and running every rearrangement",
                  rearrange.run, cfg, "run", for_claims=False)]
            + [Need(f"Training or loading the {model_registry.model(mo).label}, every operation", rearrange.profile,
                    rearrange.SeedConfig(cfg.seed, cfg.task).model_seed(mo), f"profile {mo}") for mo in order])


def claims(settings: dict[str, Any]) -> list[Claim]:
    """The claims the page shows for a complete setting: every model's profile at the setting's seed."""
    cfg = config_of(settings)
    return rearrange_claims.compare_claims(rearrange.compare(rearrange.SeedConfig(cfg.seed, cfg.task)))


def summary(r: rearrange.RearrangeResult) -> str:
    c = r.config
    mean = f" (mean of {r.draws} random orders; first: {r.route})" if r.draws > 1 else f" [{r.route}]"
    return (f"{model_registry.model(c.model).label}, {route_ops.OPS[c.op].label}{mean}: held-out "
            f"{r.acc:.4f} (trained order {r.base_acc:.4f}, chance {r.chance:.3f}); "
            f"{r.block_runs} block runs in {r.sequential_steps} sequential steps (trained: {r.n_blocks})"
            + "".join("\n" + claim_line(cl) for cl in rearrange_claims.result_claims(r)))


def table(args: argparse.Namespace, pool: Pool) -> TableRows:
    """models x rearrangement operations (ends kept), and the papers' claims on the means over seeds."""
    if not 1 <= args.seeds <= 20:
        raise ValueError(f"--seeds {args.seeds} is out of range: choose 1 to 20")
    seeds = list(range(args.seeds))
    t = rearrange.table(seeds, progress=text_progress, pool=pool)
    models = list(t["rows"])
    print(f"Rearranged frozen models: held-out accuracy (block runs), mean of seed(s) {seeds}; ends kept, "
          "block operations averaged over the middle blocks")
    print(f"{'operation':<40}" + "".join(f"{model_registry.model(m).label:>32}" for m in models))
    for name, lab in SUMMARY:
        cells = [f"{t['rows'][m][name]['acc']:.4f} ({t['rows'][m][name]['block_runs']:>2})" for m in models]
        print(f"{lab:<40}" + "".join(f"{c:>32}" for c in cells))
    print(f"{'chance':<40}" + "".join(f"{t['chance'][m]:>32.4f}" for m in models))
    print(f"\nClaims (on the means; noise from the spread of {len(seeds)} seed(s)):")
    claims = rearrange_claims.table_claims(t, pool)
    for c in claims:
        print(claim_line(c))
    secs = {m: statistics.mean(v) for m, v in t["seconds"].items()}
    print("training " + ", ".join(f"{m} {s:.0f} s" for m, s in secs.items()) + " per model (when first built)")
    return TableRows([{"model": m, "operation": name, "label": lab, "seeds": seeds,
                       "mean_acc": t["rows"][m][name]["acc"], "block_runs": t["rows"][m][name]["block_runs"],
                       "chance": t["chance"][m]}
                      for m in models for name, lab in SUMMARY], claims)


DESCRIPTOR = Descriptor(
    name="rearrange", order=60, title="Rearrange layers", icon=":material/swap_vert:",
    summary="Skip, swap, reverse, repeat, loop or run in parallel the middle layers of a frozen network.",
    about="""on a frozen trained network, skip, swap, reverse, repeat,
  loop or run the middle layers side by side, as "Transformer Layers as Painters" did to language models. Are the
  first and last layers special? Is a LayerShuffle-trained ViT robust to all of it? Layer-similarity maps show why.""",
    config=RearrangeConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=config_of, claims=claims,
    run=rearrange.run, cli_help="skip, swap, reverse, repeat, loop or parallelise the middle blocks of a frozen model",
    cli_summary=summary, demo=("model", "op", "block", "ends"),
    table=Table("models x rearrangement operations, and the papers' claims", (seeds_axis(),), table),
)
