"""Train x take apart: how a model is trained decides what can be removed from it (the recipe x surgery matrix).

Rows are recipes of the Shuffle page's 6-block digits ViT (`lab/core/page_models.py: matrix_spec`): sequential,
LayerNorm scaling, LayerDrop (p = 0.5), LayerShuffle, looped (3 blocks run twice) and an early-exit loss. Columns are
surgeries on the frozen trained model, none retrained (`surgery.py`): delete each block, delete the last quarter of
the route, delete the same number of slots in ShortGPT's block-influence order, swap each adjacent pair, random
orders, delete each block's attention or MLP sub-layer, replace each block by its least-squares linear map, and exit
early after every slot. Each cell is the held-out accuracy, and its share of the above-chance accuracy kept,
(acc - chance) / (base - chance).

`row(RowConfig)` is one cached entry per (recipe, seed): the model (trained once, shared with the other pages
where the recipe is theirs) and every column with its per-block profile, a typed `RowResult`. `run(MatrixConfig)`
joins the six rows of a seed, a typed `MatrixResult`; its claims (claims.py, by key: robust, u_shape, attention,
linear, early_exit, looped, ln_scale, influence) are computed when it is read (this module does not import claims.py:
rewording a claim recomputes nothing). The results' field names are the stored keys (the
inner tables stay dicts and lists), so stored results and `python -m lab matrix --json` read as before.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass
from typing import Any, Optional

import torch

from lab import estimates as E
from lab.core import model_registry
from lab.core import routes as R
from lab.core.models import ViT
from lab.core.page_models import MATRIX_MODEL_LABELS, MATRIX_RECIPE_LABELS, matrix_label, matrix_route, matrix_spec
from lab.core.page_words import MATRIX_MODELS, MATRIX_RECIPES, matrix_name, matrix_recipes
from lab.core.task_fit import on_task, task_or_own
from lab.core.zoo import ModelSpec, trained
from lab.experiment import check, entry, param, seed_param, task_param
from lab.experiments.matrix import surgery as S
from lab.ops import registry, route_ops
from lab.ops.recover import RecoveryConfig, recover
from lab.runtime.progress import Progress, span

RECIPES = MATRIX_RECIPES
RECIPE_LABELS = MATRIX_RECIPE_LABELS
_VIT, _MLP = (model_registry.model(matrix_name("sequential", m)) for m in ("vit", "mlp"))  # for the help
OPS = ("delete", "last_quarter", "healed", "influence", "swap", "random", "no_attn", "no_mlp", "linear", "exit")
OP_LABELS = {"delete": "delete one block", "last_quarter": "delete the last quarter",
             "healed": "last quarter, then head + last block fine-tuned",
             "influence": "delete by block influence", "swap": "swap a neighbouring pair", "random": "random order",
             "no_attn": registry.get("no-attn").label, "no_mlp": registry.get("no-mlp").label,
             "linear": "one block made linear", "exit": "exit early"}
# The registry's surgery each column applies (lab/ops/registry.py); linear and exit are the matrix's own measures (a
# fitted affine map, a read-out), changes of neither a route nor a layer's values.
COLUMN_SURGERY = {"delete": "skip", "last_quarter": "skip", "healed": "skip", "influence": "skip", "swap": "swap",
                  "random": "random", "no_attn": "no-attn", "no_mlp": "no-mlp", "linear": None, "exit": None}
FT_STEPS = 150  # fine-tuning after the last-quarter deletion: steps, batch, learning rate (Adam, cosine)
FT_BATCH = 64
FT_LR = 1e-3
# What each column's per-block profile runs over, and what the column's single number is.
PROFILE_AXIS = {"delete": "block", "last_quarter": "slot deleted", "healed": "fine-tuning step", "influence": "slot",
                "swap": "slots swapped",
                "random": "order", "no_attn": "block", "no_mlp": "block", "linear": "block", "exit": "exit after"}
OP_HELP = {
    "delete": "every run of one block skipped; the mean over the blocks",
    "last_quarter": f"the last quarter of the route's runs skipped ({_VIT.runs} runs: the last "
                    f"{S.quarter(_VIT.runs)})",
    "healed": "the last quarter deleted, then only the head and the last remaining block fine-tuned on the training "
              f"split (cross-entropy, {FT_STEPS} steps of {FT_BATCH}; Lu et al. 2024's baseline)",
    "influence": "as many runs skipped as the last quarter, those of lowest block influence (1 - cos) on the probe "
                 "split",
    "swap": "two neighbouring runs exchanged; the mean over the pairs",
    "random": "the runs in a random order; the mean over the seeded orders",
    "no_attn": "one block's attention sub-layer deleted (at every run); the mean over the blocks",
    "no_mlp": "one block's MLP sub-layer deleted (at every run); the mean over the blocks",
    "linear": "one block replaced by its least-squares affine map fitted on the training split; the mean over the "
              "blocks",
    "exit": "the head read after a slot before the last; the mean over those exits",
}
MODELS = MATRIX_MODELS
MODEL_LABELS = MATRIX_MODEL_LABELS
MODEL_HELP = (f"The model trained by every recipe: the Shuffle page's {_VIT.title} on {_VIT.data_words} (every "
              f"recipe and operation), or LayerDrop's {_MLP.title} on the {_MLP.data_words} (no LayerNorm and no "
              "sub-layers: the LayerNorm-scaling row and the two sub-layer columns do not apply).")
ORDERS = 20  # random orders per row (the Shuffle page's "mean over orders")


def own_task_of(model: str) -> str:
    """The task a model family of the matrix trains on by its own recipe."""
    return matrix_spec("sequential", 0, model).task


def own_task(model: str, task: Optional[str]) -> Optional[str]:
    """A config's task: None for the model's own (one spelling, one result), else checked against the model."""
    return task_or_own(task, own_task_of(model), "vit" if model == "vit" else "mlp")


def kept(acc: float, base: float, chance: float) -> float:
    """Share of the above-chance accuracy kept: (acc - chance) / (base - chance); NaN for a model at chance."""
    return (acc - chance) / (base - chance) if base - chance > 1e-9 else float("nan")


@dataclass(frozen=True)
class RowConfig:
    """One recipe's trained model and every surgery on it."""

    recipe: str = param("sequential", "How the model was trained.", label="Recipe", choices=RECIPES,
                        labels=RECIPE_LABELS)
    seed: int = seed_param("Fixes the trained model (the same seeds as the other pages) and the random orders.")
    orders: int = param(ORDERS, "Random orders of the route each model is run in (the mean is the column).",
                        label="Random orders", lo=2, hi=200)
    task: Optional[str] = task_param()
    model: str = param("vit", MODEL_HELP, label="Model", choices=MODELS, labels=MODEL_LABELS)

    def __post_init__(self) -> None:
        check(self)
        object.__setattr__(self, "task", own_task(self.model, self.task))
        if self.recipe not in matrix_recipes(self.model):
            raise ValueError(f"recipe {self.recipe!r} does not apply to the {MODEL_LABELS[self.model]}: choose one "
                             f"of {', '.join(matrix_recipes(self.model))}")

    @property
    def spec(self) -> ModelSpec:
        return on_task(matrix_spec(self.recipe, self.seed, self.model), self.task)


def _shares(rows: list[torch.Tensor]) -> torch.Tensor:
    """The per-input share of right answers over several outcome vectors."""
    return torch.stack([r.double() for r in rows]).mean(0)


def _plain_shares(v: torch.Tensor) -> list[float]:
    return [round(float(a), 6) for a in v]


def heal(m: Any, data: Any, route: tuple[int, ...], seed: int) -> tuple[torch.Tensor, list[float]]:
    """Fine-tune only the head and the last block on `route` (a copy; the stored model is untouched): per-input
    outcomes after, and the held-out accuracy curve (step 0 = the cut). A looped model's last block runs earlier
    too, so its earlier run changes with it."""
    student = copy.deepcopy(m)
    last = route[-1]
    with torch.enable_grad():  # measure() runs without gradients
        return _heal(student, last, data, route, seed)


def _heal(student: Any, last: int, data: Any, route: tuple[int, ...], seed: int) -> tuple[torch.Tensor, list[float]]:
    for name, p in student.named_parameters():
        p.requires_grad_(name.startswith("head.") or name.startswith(f"blocks.{last}."))
    cfg = RecoveryConfig(method="ce", steps=FT_STEPS, lr=FT_LR, batch=FT_BATCH, eval_every=max(1, FT_STEPS // 3),
                         seed=seed)
    log = recover(student, route, data, cfg)
    return S.outcomes(student, data.test.x, data.test.y, route), log.test_acc


@torch.no_grad()
def measure(m: Any, data: Any, route: tuple[int, ...], seed: int, orders: int,
            progress: Progress) -> dict[str, Any]:
    """Every column of the battery on one frozen model (see the module docstring); per-input outcomes kept for the
    claims, and the seconds each column took."""
    x, y = data.test.x, data.test.y
    chance = data.chance
    blocks = R.blocks_of(route)
    n = len(route)
    secs: dict[str, float] = {}
    t = time.perf_counter()
    base_ok = S.outcomes(m, x, y, route)
    base = float(base_ok.double().mean())
    secs["base"] = time.perf_counter() - t
    prof: dict[str, list[float]] = {}
    acc: dict[str, float] = {}
    per_input: dict[str, Any] = {"base": E.pack(base_ok)}

    def timed(op: str) -> None:
        secs[op] = time.perf_counter() - t0

    progress(0.05, "deleting each block")
    t0 = time.perf_counter()
    dels = [S.outcomes(m, x, y, route_ops.route_of(COLUMN_SURGERY["delete"], route, b, ends="include")) for b in blocks]
    prof["delete"] = [float(d.double().mean()) for d in dels]
    acc["delete"] = statistics.fmean(prof["delete"])
    per_input["delete"] = _plain_shares(_shares(dels))
    per_input["delete_each"] = [E.pack(d) for d in dels]
    deep = blocks[len(blocks) // 2:]  # the deeper half of the blocks
    per_input["delete_deep"] = _plain_shares(_shares([dels[blocks.index(b)] for b in deep]))
    timed("delete")

    progress(0.15, "deleting the last quarter, and by block influence")
    t0 = time.perf_counter()
    q = S.quarter(n)
    last = list(range(n - q, n))
    lq_ok = S.outcomes(m, x, y, R.without_slots(route, last))
    prof["last_quarter"] = [float(lq_ok.double().mean())]
    acc["last_quarter"] = prof["last_quarter"][0]
    per_input["last_quarter"] = E.pack(lq_ok)
    timed("last_quarter")
    progress(0.2, "fine-tuning the head and the last remaining block")
    t0 = time.perf_counter()
    healed, curve = heal(m, data, R.without_slots(route, last), seed)
    prof["healed"] = curve
    acc["healed"] = float(healed.double().mean())
    per_input["healed"] = E.pack(healed)
    timed("healed")
    t0 = time.perf_counter()
    infl = S.influence(m, data.probe.x, route)
    chosen = S.influence_slots(infl, q)
    in_ok = S.outcomes(m, x, y, R.without_slots(route, chosen))
    prof["influence"] = infl
    acc["influence"] = float(in_ok.double().mean())
    per_input["influence"] = E.pack(in_ok)
    timed("influence")

    progress(0.3, "swapping neighbours")
    t0 = time.perf_counter()
    swaps = [S.outcomes(m, x, y, route_ops.route_of(COLUMN_SURGERY["swap"], route, s, ends="include"))
             for s in range(n - 1)]
    prof["swap"] = [float(s.double().mean()) for s in swaps]
    acc["swap"] = statistics.fmean(prof["swap"])
    timed("swap")

    progress(0.4, "random orders")
    t0 = time.perf_counter()
    rand = [S.outcomes(m, x, y, r) for r in R.random_orders(route, orders, "matrix.orders", seed, n)]
    prof["random"] = [float(r.double().mean()) for r in rand]
    acc["random"] = statistics.fmean(prof["random"])
    per_input["random"] = _plain_shares(_shares(rand))
    timed("random")

    progress(0.55, "deleting sub-layers")
    for op in ("no_attn", "no_mlp"):  # sub-layer surgeries, ViT blocks only
        t0 = time.perf_counter()
        if not isinstance(m, ViT):  # an MLP block is one sub-layer: the column does not apply
            prof[op], acc[op] = [], float("nan")
            timed(op)
            continue
        outs = [S.outcomes(m, x, y, route_ops.route_of(COLUMN_SURGERY[op], route, b, ends="include")) for b in blocks]
        prof[op] = [float(o.double().mean()) for o in outs]
        acc[op] = statistics.fmean(prof[op])
        per_input[op] = _plain_shares(_shares(outs))
        timed(op)

    progress(0.7, "fitting each block's linear map")
    t0 = time.perf_counter()
    lin_acc, r2, r2u, r2se, r2use = [], [], [], [], []
    train_states = S.train_states(m, data.train.x, route)  # one pass for every block's fit (the same states)
    for b in blocks:
        lin, fit = S.fit_linear(m, data.train.x, route, b, seed, train_states)
        lin_acc.append(float(S.outcomes(m, x, y, route, {b: lin}).double().mean()))
        r2.append(fit["r2"])
        r2u.append(fit["r2_update"])
        r2se.append(fit["r2_se"])
        r2use.append(fit["r2_update_se"])
    prof["linear"] = lin_acc
    acc["linear"] = statistics.fmean(lin_acc)
    timed("linear")

    progress(0.9, "exiting early")
    t0 = time.perf_counter()
    ex = S.exits(m, x, y, route)
    prof["exit"] = [float(e.double().mean()) for e in ex]  # after the stem, then after every slot
    acc["exit"] = statistics.fmean(prof["exit"][1:-1]) if n > 1 else prof["exit"][-1]
    per_input["exit"] = _plain_shares(_shares(ex[1:-1])) if n > 1 else _plain_shares(ex[-1].double())
    per_input["exit_mid"] = E.pack(ex[n // 2])
    timed("exit")
    return {
        "route": list(route), "blocks": blocks, "n_blocks": len(blocks), "n_slots": n, "n_test": len(y),
        "base_acc": base, "chance": chance, "acc": acc,
        "kept": {op: kept(a, base, chance) for op, a in acc.items()},
        "profiles": prof, "profile_kept": {op: [kept(a, base, chance) for a in v] if op != "influence" else None
                                           for op, v in prof.items()},
        "quarter": q, "last_slots": last, "influence_slots": chosen,
        "influence_route": list(R.without_slots(route, chosen)),
        "last_quarter_route": list(R.without_slots(route, last)),
        "deep_blocks": deep, "linear_r2": r2, "linear_r2_update": r2u, "linear_r2_se": r2se,
        "linear_r2_update_se": r2use,
        "exit_mid_slot": n // 2,
        "per_input": per_input, "op_seconds": secs,
    }


@dataclass(frozen=True)
class RowResult:
    """`row`'s answer: one recipe's trained model taken apart by every column (accuracies held-out). Field names are
    the stored keys; the tables by operation (`acc`, `kept`, `profiles`, `per_input`, ...) stay dicts."""

    route: list[int]  # the trained route (block indices; a looped model runs its blocks more than once)
    blocks: list[int]  # its distinct blocks, in order of first run
    n_blocks: int
    n_slots: int  # runs on the route
    n_test: int
    base_acc: float
    chance: float
    acc: dict[str, float]  # op -> the column's held-out accuracy (OPS)
    kept: dict[str, float]  # op -> share of the above-chance accuracy kept (NaN for a model at chance)
    profiles: dict[str, list[float]]  # op -> the per-block (per-slot, per-pair, per-order) numbers (PROFILE_AXIS)
    profile_kept: dict[str, Optional[list[float]]]  # the same as shares kept (None for influence, not an accuracy)
    quarter: int  # runs "the last quarter" deletes
    last_slots: list[int]
    influence_slots: list[int]  # the runs of lowest block influence (as many as the last quarter)
    influence_route: list[int]
    last_quarter_route: list[int]
    deep_blocks: list[int]  # the deeper half of the blocks
    linear_r2: list[float]  # per block: R^2 of its affine fit of the output (training split)
    linear_r2_update: list[float]  # the same of its update (output - input)
    linear_r2_se: list[float]  # linear_r2's standard error over the training inputs (a bootstrap over them)
    linear_r2_update_se: list[float]  # the same of linear_r2_update (what the `linear` claim judges)
    exit_mid_slot: int
    per_input: dict[str, Any]  # the per-input outcomes the claims pair: packed right/wrong, or shares over runs
    op_seconds: dict[str, float]
    config: RowConfig
    recipe: str
    label: str
    seed: int
    train_seconds: float
    train_curve: list[float]
    fill_seconds: float


@entry("matrix-row", result=RowResult)
def row(cfg: RowConfig, progress: Progress) -> RowResult:
    """One recipe at one seed: the trained model (stored, shared) and every column of the battery."""
    t = trained(cfg.spec, span(progress, 0.0, 0.8))
    route = matrix_route(cfg.recipe, cfg.model)
    t0 = time.perf_counter()
    out = measure(t.model, t.data, route, cfg.seed, cfg.orders, span(progress, 0.8, 1.0))
    return RowResult(**out, config=cfg, recipe=cfg.recipe, label=matrix_label(cfg.recipe, cfg.model), seed=cfg.seed,
                     train_seconds=t.info["seconds"], train_curve=t.info["test_acc"],
                     fill_seconds=time.perf_counter() - t0)


@dataclass(frozen=True)
class MatrixConfig:
    """Every recipe of a model at one seed: the matrix (and the claims it decides)."""

    seed: int = seed_param("Fixes the trained models (the same seeds as the other pages) and the random orders.")
    orders: int = param(ORDERS, "Random orders of the route each model is run in (the mean is the column).",
                        label="Random orders", lo=2, hi=200)
    task: Optional[str] = task_param()
    model: str = param("vit", MODEL_HELP, label="Model", choices=MODELS, labels=MODEL_LABELS)

    def __post_init__(self) -> None:
        check(self)
        object.__setattr__(self, "task", own_task(self.model, self.task))

    def rows(self) -> list[RowConfig]:
        return [RowConfig(r, self.seed, self.orders, self.task, self.model) for r in matrix_recipes(self.model)]


def table_of(rows: dict[str, RowResult]) -> dict[str, Any]:
    """The matrix of some rows: accuracy and share kept per (recipe, operation), in RECIPES and OPS order."""
    present = [r for r in RECIPES if r in rows]
    return {"recipes": present, "ops": list(OPS),
            "acc": [[rows[r].acc[op] for op in OPS] for r in present],
            "kept": [[rows[r].kept[op] for op in OPS] for r in present],
            "base_acc": [rows[r].base_acc for r in present]}


@dataclass(frozen=True)
class MatrixResult:
    """`run`'s answer: the six rows of one seed and their matrix. Field names are the stored keys."""

    config: MatrixConfig
    seed: int
    chance: float
    matrix: dict[str, Any]  # `table_of(rows)`: recipes, ops, and acc / kept / base_acc by recipe (and op)
    rows: dict[str, RowResult]  # recipe -> its row


@entry("matrix", result=MatrixResult)
def run(cfg: MatrixConfig, progress: Progress) -> MatrixResult:
    """Every row of one seed and the matrix."""
    rows: dict[str, RowResult] = {}
    rcs = cfg.rows()
    for i, rc in enumerate(rcs):
        rows[rc.recipe] = row(rc, span(progress, i / len(rcs), (i + 1) / len(rcs)))
    return MatrixResult(config=cfg, seed=cfg.seed, chance=rows[rcs[0].recipe].chance, matrix=table_of(rows), rows=rows)
