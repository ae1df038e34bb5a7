"""Train x take apart: the descriptor (page, presets, CLI, table) of lab/experiments/matrix/experiment.py."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any

from lab import claims as C
from lab.catalog.descriptor import Descriptor, Table, TableRows, config_from, controls, defaults, seeds_axis
from lab.catalog.presets import Need, preset
from lab.claims import Claim, claim_line
from lab.core.page_models import matrix_label
from lab.experiment import Pool, check, param
from lab.experiments.matrix import claims as matrix_claims
from lab.experiments.matrix import experiment as matrix
from lab.experiments.matrix.experiment import OP_LABELS, OPS, MatrixConfig, MatrixResult
from lab.runtime.progress import text_progress


@dataclass(frozen=True)
class MatrixPage:
    """The page's own control: which column's per-block profile it draws (it changes no result)."""

    op: str = param("delete", "The operation whose per-block profile is drawn under the heatmap, one line per recipe.",
                    label="Profile of", choices=OPS, labels=OP_LABELS)

    def __post_init__(self) -> None:
        check(self)


CONTROLS = controls(MatrixPage, MatrixConfig, names=("model", "task", "op", "orders", "seed"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "sublayers", "Attention or MLP?", "Delete one block's attention sub-layer: how much is lost, "
           "recipe by recipe? Then switch to the MLP sub-layer.", op="no_attn"),
    preset(DEFAULTS, "exits", "Exit early", "Read the head after every block: which recipe has usable early exits?",
           op="exit"),
    preset(DEFAULTS, "linear", "Secretly linear?", "Replace one block by its least-squares linear map: which blocks "
           "survive it?", op="linear"),
    preset(DEFAULTS, "influence", "Block influence", "ShortGPT's block influence of every run: which runs would it "
           "delete, against the last quarter?", op="influence"),
    preset(DEFAULTS, "seed1", "Another seed", "The same matrix with every model trained from seed 1: which verdicts "
           "survive?", seed=1),
)


def config_of(settings: dict[str, Any]) -> MatrixConfig:
    """The experiment config of a complete page setting."""
    return config_from(MatrixConfig, settings, CONTROLS)


def plan(settings: dict[str, Any]) -> list[Need]:
    """The lab calls of a setting, as the page makes them: one row per recipe (each its own job, drawn as it lands),
    then the matrix with its claims (asked once every row is in)."""
    cfg = config_of(settings)
    what = "ViT" if cfg.model == "vit" else "residual MLP"
    return [Need(f"Training and taking apart the {what} trained {matrix_label(rc.recipe, rc.model)}", matrix.row,
                 rc, f"row {rc.recipe}") for rc in cfg.rows()] + [
        Need("Joining the rows and judging the claims", matrix.run, cfg, "matrix")]


def claims(settings: dict[str, Any]) -> list[Claim]:
    """The claims the page shows for a complete setting."""
    return matrix_claims.result_claims(matrix.run(config_of(settings)))


def _cell(v: float) -> str:
    return "   nan" if math.isnan(v) else f"{100 * v:6.1f}"


def matrix_lines(r: MatrixResult) -> list[str]:
    """The matrix as text: the share of above-chance accuracy kept (%), recipes x operations."""
    t = r.matrix
    head = f"{'recipe':<20}{'base %':>8} " + " ".join(f"{op[:9]:>9}" for op in t["ops"])
    out = [head]
    for i, rec in enumerate(t["recipes"]):
        out.append(f"{r.rows[rec].label:<20}{100 * t['base_acc'][i]:8.1f} "
                   + " ".join(f"{_cell(v):>9}" for v in t["kept"][i]))
    return out


def summary(r: MatrixResult) -> str:
    lines = [f"Train x take apart, seed {r.seed}: share of the above-chance accuracy kept (%), chance "
             f"{100 * r.chance:.1f} %"] + matrix_lines(r)
    lines.append("seconds: " + ", ".join(f"{v.label} train {v.train_seconds:.0f} / fill "
                                         f"{v.fill_seconds:.1f}" for k, v in r.rows.items()))
    lines += [claim_line(c) for c in matrix_claims.result_claims(r)]
    return "\n".join(lines)


def table(args: argparse.Namespace, pool: Pool) -> TableRows:
    """The matrix at each seed, the mean share kept over seeds, and the claims pooled over the seeds."""
    if not 1 <= args.seeds <= 10:
        raise ValueError(f"--seeds {args.seeds} is out of range: choose 1 to 10")
    seeds = list(range(args.seeds))
    runs = pool([(matrix.run, MatrixConfig(seed=s)) for s in seeds], text_progress)
    for r in runs:
        print("\n".join([f"\nseed {r.seed}"] + matrix_lines(r)))
    print(f"\nClaims over seeds {seeds}:")
    per_seed = [matrix_claims.result_claims(r) for r in runs]
    claims = C.pool(per_seed, seeds) if len(seeds) > 1 else per_seed[0]
    for c in claims:
        print(claim_line(c))
    rows = [{"seed": s, "recipe": rec, "operation": op, "base_acc": r.matrix["base_acc"][i],
             "acc": r.matrix["acc"][i][j], "kept": r.matrix["kept"][i][j]}
            for s, r in zip(seeds, runs, strict=True) for i, rec in enumerate(r.matrix["recipes"])
            for j, op in enumerate(r.matrix["ops"])]
    return TableRows(rows, list(claims))


DESCRIPTOR = Descriptor(
    name="matrix", order=65, title="Train x take apart", icon=":material/grid_on:",
    summary="Six ways to train the same ViT, nine ways to take it apart: what each recipe lets you remove.",
    about="""train the same small ViT six ways (in order, with LayerNorm scaling,
  LayerDrop, LayerShuffle, looped, with an early-exit loss) and take each apart nine ways without retraining (delete a
  block, the last quarter or the least influential, swap, shuffle, delete a sub-layer, make a block linear, exit
  early). Does how a network is trained decide what can be removed?""",
    config=MatrixConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=config_of, run=matrix.run,
    cli_help="the recipe x surgery matrix of the digits ViT (or the residual MLP, --model mlp): every row, "
             "per-block profiles and the claims",
    cli_summary=summary, demo=("op", "seed"), claims=claims, page_controls=MatrixPage,
    table=Table("the recipe x surgery matrix at each seed, and the claims pooled over the seeds", (seeds_axis(),),
                table),
)
