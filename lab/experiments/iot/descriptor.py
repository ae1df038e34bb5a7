"""Choose an order per input (IOT): the descriptor (page, presets, CLI, table) of lab/experiments/iot/experiment.py."""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any, Optional

from lab.catalog.descriptor import Axis, Descriptor, Table, TableRows, config_from, controls, defaults, seeds_axis
from lab.catalog.presets import Need, preset
from lab.claims import Claim, attach, claim_lines
from lab.experiment import Pool
from lab.experiments.iot import claims as iot_claims
from lab.experiments.iot import experiment as iot
from lab.experiments.iot.experiment import IOTConfig
from lab.runtime.progress import silent, text_progress

CONTROLS = controls(IOTConfig, names=("model", "task", "space", "m", "explore", "exploit", "gumbel",
                                            "seed"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "collapse", "Switch exploration off", "Without the exploration term, does one "
           "order take every input? Watch the collapse figure.", explore=0.0),
    preset(DEFAULTS, "shared", "ViT, the paper's sub-layer space", "One sub-layer order shared by every "
           "block, as in the paper: with attention and MLP that is only 2 orders (M = 2). Trains for a few "
           "minutes.", model="vit-sequential", space="shared", m=2),
    preset(DEFAULTS, "sublayers", "ViT, a sub-layer order per block", "The lab's extension: each block "
           "runs attention first or its MLP first on its own (2^6 orders, M of them drawn; trains for a few "
           "minutes).", model="vit-sequential", space="sublayers"),
    preset(DEFAULTS, "m8", "Eight orders", "Eight candidate orders instead of four: how often does the "
           "predictor pick each input's best order?", m=8),
    preset(DEFAULTS, "gumbel", "No Gumbel noise", "Order weights from a plain softmax: less exploration "
           "by sampling. Does the choice still spread over the orders?", gumbel=False),
)


def config_of(settings: dict[str, Any]) -> IOTConfig:
    """The experiment config of a complete page setting."""
    return config_from(IOTConfig, settings, CONTROLS)


def claims(settings: dict[str, Any]) -> list[Claim]:
    """The claims the page shows for a setting: the joined run's, with its exploration twin."""
    return iot_claims.run_claims(iot.run(config_of(settings), silent))


def sweep_ms(space: str) -> tuple[int, ...]:
    """The M values of the page's sweep (the paper's shared space has M = 2 at most)."""
    return tuple(x for x in iot.SWEEP_MS if space != "shared" or x <= 2)


def plan(settings: dict[str, Any]) -> list[Need]:
    """The lab calls of a setting, as the page makes them: IOT's training, Part 1 (each order trained alone), its twin
    with the exploration term switched (the collapse figure), and (on request) the sweep over M."""
    cfg = config_of(settings)
    on, off = cfg.explore_pair()
    twin = (Need("Training once more with the exploration term off", iot.training, off, "twin") if cfg.explore > 0
            else Need("Training once more with the exploration term on", iot.training, on, "twin"))
    out = [Need(f"IOT training with {cfg.m} orders", iot.training, cfg, "training"),
           Need(f"Training each of the {cfg.m} orders alone", iot.observe, cfg.observe_cfg, "observe"), twin]
    for c in iot.sweep_configs(cfg, sweep_ms(cfg.space)):
        out += [Need(f"M = {c.m}: each order trained alone", iot.observe, c.observe_cfg, f"sweep {c.m} observe",
                     optional=True),
                Need(f"M = {c.m}: IOT training", iot.training, c, f"sweep {c.m} training", optional=True)]
    return out


def _shares(v: list[float]) -> str:
    return "/".join(f"{s:.2f}" for s in v)


def summary(r: dict[str, Any]) -> str:
    c = r["config"]
    return (f"IOT, {c['model']} {c['space']}, M={c['m']}: sequential {r['sequential_acc']:.4f}; best fixed order "
            f"{r['best_fixed_acc']:.4f}; IOT weights in their best order {r['shared_best_acc']:.4f}; ensemble "
            f"{r['ensemble_acc']:.4f}; IOT {r['iot_acc']:.4f}; oracle {r['oracle_acc']:.4f} (orders trained "
            f"alone: {r['fixed_oracle_acc']:.4f}); choices {_shares(r['choice_share'])}; agreement with the "
            f"per-input best order {r['oracle_agreement']:.2f}; chance {r['chance']:.3f}; IOT training "
            f"{r['train_seconds']:.1f} s ({r['cost']['train_block_run_ratio']:.0f}x the block runs of sequential)\n"
            + claim_lines(iot_claims.run_claims(r)))


def _sweep(args: argparse.Namespace, pool: Pool) -> None:
    """`table iot --ms 1 2 4 8`: every method against M, per model and seed, with the claims over the sweep."""
    models = ["residual"] if args.model == "all" else [args.model]
    out = []
    for mo in models:
        for s in range(args.seeds):
            cfg = IOTConfig(model=mo, space=args.space, m=max(args.ms), seed=s)
            out.append(iot.sweep(cfg, args.ms, text_progress, pool))
    if args.json:
        print(json.dumps(attach(out)))  # each sweep with its claims, computed now
        return
    for sw in out:
        c = sw["config"]
        print(f"IOT against M: {c['model']} {c['space']}, seed {c['seed']}, held-out accuracy on {sw['n_test']} inputs")
        keys = ("sequential_acc", "best_fixed_acc", "shared_best_acc", "ensemble_acc", "iot_acc", "oracle_acc")
        print(f"{'M':>3}" + "".join(f"{k[:-4]:>14}" for k in keys))
        for r in sw["rows"]:
            print(f"{r['m']:>3}" + "".join(f"{r[k]:>14.4f}" for k in keys))
        print(claim_lines(iot_claims.sweep_result_claims(sw)))


def table(args: argparse.Namespace, pool: Pool) -> Optional[TableRows]:
    """model x method at one M (or, with --ms, every method against M)."""
    if args.ms:
        return _sweep(args, pool)
    seeds = list(range(args.seeds))
    models = list(iot.MODELS) if args.model == "all" else [args.model]
    t = iot.table(models, seeds, args.m, progress=text_progress, pool=pool)
    print(f"IOT with M = {t['m']} candidate orders: held-out accuracy, mean of {len(seeds)} seed(s) [per seed]")
    width = 24
    print(f"{'model':<26}" + "".join(f"{k:>{width}}" for k in iot.METHODS) + f"{'agreement':>{width}}")
    for row in t["rows"]:
        cells = []
        for k in (*iot.METHODS, "agreement"):
            vals = row["values"][k]
            cells.append(f"{statistics.mean(vals):.4f} [{' '.join(f'{v:.3f}' for v in vals)}]".rjust(width))
        print(f"{row['model'] + ' ' + row['space']:<26}" + "".join(cells))
    for row in t["rows"]:
        s = row["values"]["train_seconds"]
        print(f"{row['model']} {row['space']}: IOT training {statistics.mean(s):.1f} s wall per run (from the run "
              f"that built each cache entry); chance {t['chance'][row['model']]:.3f}")
    return TableRows([{"model": row["model"], "space": row["space"], "m": t["m"], "seed": s,
                       **{k: row["values"][k][i] for k in (*iot.METHODS, "agreement", "train_seconds")},
                       "chance": t["chance"][row["model"]]}
                      for row in t["rows"] for i, s in enumerate(seeds)])


_D = IOTConfig()
DESCRIPTOR = Descriptor(
    name="iot", order=50, title="Choose an order per input", icon=":material/alt_route:",
    summary="One set of weights, several layer orders, and a tiny predictor that picks the order for each input.",
    about="""keep one set of weights and several layer orders, and
  let a tiny predictor pick the order for each input (IOT). How far is the best order per input from the best
  single order, and how much of that gap does a learned choice recover?""",
    config=IOTConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=config_of, run=iot.run,
    cli_help="let every input choose its own layer order (IOT) and compare with the baselines", cli_summary=summary,
    demo=("model", "space", "m", "explore"), claims=claims,
    tensor_kinds={"iot-fixed": "lab.experiments.iot.experiment"},
    table=Table("model x method table of IOT and its baselines", (
        Axis("model", "the model (all: every one)", str, "all", choices=(*iot.MODELS, "all")),
        seeds_axis(),
        Axis("m", "candidate orders M", int, _D.m),
        Axis("ms", "sweep M over these values instead (e.g. --ms 1 2 4 8): accuracy of every method against M, for "
             "--model (default residual) and --space", int, None, nargs="+"),
        Axis("space", "order space of the sweep (--ms)", str, _D.space, choices=iot.SPACES),
        Axis("json", "print the result as one JSON object (the sweep, with --ms, as a list under result)", bool,
             False)), table),
)
