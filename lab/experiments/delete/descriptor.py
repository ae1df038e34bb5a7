"""Delete layers: the descriptor (page, presets, CLI, table) of lab/experiments/delete/experiment.py."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from lab.catalog.descriptor import Axis, Descriptor, Table, TableRows, config_from, controls, defaults, seeds_axis
from lab.catalog.presets import Need, preset
from lab.claims import Claim, claim_line
from lab.core import model_registry, recipes
from lab.experiment import Pool
from lab.experiments.delete import claims as delete_claims
from lab.experiments.delete import experiment as delete
from lab.experiments.delete.experiment import DeleteConfig, RaceConfig, ShallowConfig, SweepConfig
from lab.runtime.progress import text_progress

_DEFAULT = DeleteConfig()
TEACHER = model_registry.model(recipes.mlp_name(_DEFAULT.arch, _DEFAULT.blocks))  # both architectures share its shape
CONTROLS = controls(DeleteConfig, names=("arch", "task", "k", "select", "recovery", "steps", "seed"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "plain1", "Plain, 1 deleted, no recovery",
           "Delete one block of a plain net, no recovery. Pin it, then switch the architecture to residual.",
           arch="plain", k=1, recovery="none"),
    preset(DEFAULTS, "res4", "Residual, 4 deleted, no recovery",
           f"Four of {TEACHER.blocks} blocks gone, no recovery: step k from 1 to {TEACHER.blocks - 1} and compare the "
           "curve with the plain net's in the sweep below.", arch="residual", k=4, recovery="none"),
    preset(DEFAULTS, "kd6", "Plain, 6 deleted, distil", "Six blocks cut from the plain net, then 500 steps "
           "of distillation: how close does it come to its teacher?", arch="plain", k=6,
           recovery="kd", steps=500),
    preset(DEFAULTS, "opt3", "Optimal selection, k = 3", "The exhaustive optimum of 3 deletions on the probe set, no "
           "recovery: compare its held-out accuracy with greedy's in the selection chart.", arch="residual", k=3,
           select="optimal", recovery="none"),
)


def config_of(settings: dict[str, Any]) -> DeleteConfig:
    """The experiment config of a complete page setting."""
    return config_from(DeleteConfig, settings, CONTROLS)


def plan(settings: dict[str, Any]) -> list[Need]:
    """The lab calls of a setting, as the page makes them: this deletion, the sweep over k, CE against KD from this
    cut (when something is cut), the one-block MLP trained from scratch, and (on request) the DistilBERT-style
    students."""
    cfg = config_of(settings)
    race = [Need("Fine-tuning and distilling the same cut", delete.race, RaceConfig.of(cfg), "race")] if cfg.k else []
    return [Need("Training the teacher and cutting it", delete.run, cfg, "run"),
            Need(f"Deleting 0 to {cfg.blocks} blocks of both architectures", delete.sweep, SweepConfig.of(cfg),
                 "sweep"),
            *race,
            Need("Training a one-block MLP from scratch", delete.shallow, ShallowConfig.of(cfg), "shallow",
                 for_claims=False),
            Need("Distilling two students", delete.student_init, cfg, "student", optional=True)]


def claims(settings: dict[str, Any]) -> list[Claim]:
    """The claims the page shows for a complete setting (the run's, the sweep's and the race's)."""
    return delete_claims.claims_of(config_of(settings))


def summary(r: delete.DeleteResult) -> str:
    c = r.config
    return (f"{c.arch} MLP, delete {c.k} ({c.select}): teacher {r.base_acc:.4f}, "
            f"cut {r.cut_acc:.4f} (probe {r.cut_probe_acc:.4f}), after {c.recovery} "
            f"{r.recovered_acc:.4f}; dropped blocks {r.dropped}; chance {r.chance:.3f}"
            + "".join("\n" + claim_line(cl) for cl in delete_claims.run_claims(r)))


TABLE_KS = (1, 2, 4, 6)


def table(args: argparse.Namespace, pool: Pool) -> TableRows:
    """arch x k x recovery: held-out accuracy before and after KD, and the claims over seeds."""
    ks = TABLE_KS
    seeds = list(range(args.seeds))
    print(f"Deleting blocks of a {TEACHER.size} MLP (greedy on the probe set); held-out accuracy, mean of {len(seeds)} "
          f"seed(s); KD = {args.steps} distillation steps")
    head = " ".join(f"{f'k={k} none':>10} {f'k={k} kd':>8}" for k in ks)
    print(f"{'arch':<9} {'teacher':>8} {head}")
    cfgs = {(arch, k, s): DeleteConfig(arch=arch, k=k, recovery="kd", steps=args.steps, seed=s)
            for arch in delete.ARCHS for k in ks for s in seeds}
    results = dict(zip(cfgs, pool([(delete.run, c) for c in cfgs.values()], text_progress), strict=True))
    for arch in delete.ARCHS:
        cells, teacher = [], []
        for k in ks:
            none, kd = [], []
            for s in seeds:
                r = results[arch, k, s]
                none.append(r.cut_acc)
                kd.append(r.recovered_acc)
                teacher.append(r.base_acc)
            cells.append(f"{statistics.mean(none):>10.4f} {statistics.mean(kd):>8.4f}")
        print(f"{arch:<9} {statistics.mean(teacher):>8.4f} " + " ".join(cells))
    print(f"\nClaims (noise from the spread of {len(seeds)} seed(s)):")
    claims = delete_claims.table_claims_of_runs(results, seeds, ks)
    for c in claims:
        print(claim_line(c))
    rows = [{"arch": arch, "k": k, "seed": s, "teacher_acc": r.base_acc, "cut_acc": r.cut_acc,
             "kd_acc": r.recovered_acc} for (arch, k, s), r in results.items()]
    return TableRows(rows, claims)


DESCRIPTOR = Descriptor(
    name="delete", order=10, title="Delete layers", icon=":material/content_cut:",
    summary="Remove k hidden layers from a trained MLP, plain or residual, and recover by fine-tuning or distillation.",
    about=f"""remove k hidden blocks from a trained MLP of {TEACHER.blocks} blocks, plain or residual.
  Which layers can go, chosen greedily, exhaustively, evenly, by how little they change their input, or at random?
  What does one deletion do to a plain network, and to a residual one? How much does distillation from the uncut
  network bring back?""",
    config=DeleteConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=config_of, run=delete.run,
    claims=claims,
    cli_help="delete k blocks of a trained MLP, then optionally recover", cli_summary=summary,
    demo=("arch", "k", "select", "recovery"),
    table=Table("arch x k x recovery table",
                (seeds_axis(), Axis("steps", "KD steps", int, 1500)), table),
)
