"""Re-initialise a layer ("Are all layers created equal?", Zhang, Bengio, Singer): robust and critical layers.

After training, change one layer and keep the rest:
- re-initialise it to its weights at checkpoint t (t = 0 is the initial draw; the last checkpoint is the end),
- re-randomise it: a fresh draw from its own initialisation distribution (biases and norms too), seeded.

`run(cfg)` is the robustness map of one model: held-out accuracy after every single change (rows = layers,
columns = re-randomisation then every checkpoint), each layer's distance from its initialisation, and how
distance and damage rank together. `focus(cfg)` looks at one change: per-class accuracy and, optionally, how
many steps of fine-tuning (ce) or distillation (kd) bring the model back. Both go through the store.

The MLPs are the Delete experiment's teachers (same spec, so the same stored weights); the ViT is a small
pre-norm transformer on the 8x8 digits. The claims are declared in claims.py and computed when a result is read
(this module does not import it: rewording a claim recomputes nothing); the robust / critical thresholds of the
map's per-layer verdicts are here, and the claims use the same ones.
"""

from __future__ import annotations

import copy
import functools
import math
import time
from dataclasses import dataclass
from typing import Any, Optional

import torch

from lab import estimates as E
from lab.core import metrics, model_registry, streams
from lab.core.models import RoutedModel, correct, per_class_accuracy
from lab.core.page_models import reinit_spec
from lab.core.page_words import REINIT_MODELS, reinit_name
from lab.core.task_fit import on_task, task_or_own
from lab.core.zoo import BUILDERS, ModelSpec, Trained, build, effective, trained
from lab.experiment import SEED_MAX, Pool, check, entry, param, seed_param, serial, task_param
from lab.ops import registry, surgery, weight_ops
from lab.ops.recover import RECOVERIES, RecoveryConfig, recover
from lab.runtime.progress import Progress, silent, span

MODELS = REINIT_MODELS
MODEL_NAMES = {m: model_registry.model(reinit_name(m)).kind for m in MODELS}  # lab/core/page_words.py: reinit_name
OPS = weight_ops.OPS  # the registry's weight surgeries (lab/ops/weight_ops.py)
OP_LABELS = registry.labels(OPS)
RECOVERY_LABELS = {"none": "none", "ce": "fine-tune (cross-entropy)", "kd": "distil from the trained model (KD)"}
model_spec = reinit_spec

# The re-randomised layers come from a model built with seed + REDRAW_OFFSET (stream init.redraw): far from any
# training seed, so a "fresh draw" is never the model's own t = 0 draw by accident.
REDRAW_OFFSET = streams.seed_of("init.redraw", 0)

RECOVERED_GAP = 0.01  # "recovered" = back within one point of the trained model's held-out accuracy

# The shape of a smaller model for a quick look, shared by every config of the page (the same fields, the same flags).
def blocks_param() -> Any:
    return param(None, "A smaller model for a quick look (default: the classroom model).", lo=1, hi=32)


def width_param() -> Any:
    return param(None, "Width of the smaller model (default: the classroom model).", lo=4, hi=1024)


def epochs_param() -> Any:
    return param(None, "Training epochs (default: the classroom recipe).", lo=1, hi=200)


@dataclass(frozen=True)
class ReinitConfig:
    """One model's robustness map. blocks / width / epochs: None = the classroom model (tests shrink them)."""

    model: str = param("plain", "The trained network whose layers are changed one at a time.", label="Model",
                       choices=MODELS, labels=MODEL_NAMES)
    seed: int = seed_param("Training seed (re-randomisation draws from seed + 1,000,003).")
    blocks: Optional[int] = blocks_param()
    width: Optional[int] = width_param()
    epochs: Optional[int] = epochs_param()
    task: Optional[str] = task_param()

    def __post_init__(self) -> None:
        check(self)
        own = model_spec(self.model, self.seed).task  # the model's own task is None: one spelling, one result
        object.__setattr__(self, "task", task_or_own(self.task, own, "vit" if self.model == "vit" else "mlp"))
        if not 0 <= self.seed <= SEED_MAX - REDRAW_OFFSET:
            raise ValueError("the seed must be a non-negative integer below 2**31 - 1,000,004")

    @property
    def spec(self) -> ModelSpec:
        return on_task(model_spec(self.model, self.seed, self.blocks, self.width, self.epochs), self.task)

    @property
    def redraw_seed(self) -> int:
        return streams.seed_of("init.redraw", self.seed)


def layer_names(cfg: ReinitConfig) -> list[str]:
    """The layers of cfg's model, without training it (its random draws leave the global generator as it was)."""
    return list(_layer_names(cfg.spec.model))


@functools.lru_cache(maxsize=64)
def _layer_names(model_cfg: Any) -> tuple[str, ...]:
    # once per model shape: building the model to list its layers costs ~5 ms, and every page rerun asks
    with torch.random.fork_rng(devices=[]):
        model = BUILDERS[type(model_cfg)](model_cfg)
    return tuple(surgery.layers(model))


def checkpoint_epochs(cfg: ReinitConfig) -> list[int]:
    """The epochs whose weights training keeps for cfg's model (as it really trains: lab.core.zoo.effective)."""
    tc = cfg.spec.train
    end = effective(cfg.spec).train.epochs
    return sorted({e for e in tc.checkpoints if e <= end} | {end})


RERAND = "re-randomise"  # label of the first heatmap column
# A layer is robust when a change keeps >= 90 % of the trained model's accuracy above chance, critical when it
# keeps < 50 % (the paper's robust layers lose almost nothing; its critical ones fall to chance).
ROBUST_KEEP = 0.9
CRITICAL_KEEP = 0.5


def keeps_estimate(changed: Any, base: Any, share: float) -> E.Estimate:
    """How far the changed model is from keeping `share` of the trained model's above-chance accuracy, on per-input
    outcomes of the same inputs: acc - share x base, to be compared with (1 - share) x chance, paired (the trained
    model's own noise included)."""
    return E.paired(E.as_scores(changed), share * E.as_scores(base))


def _keeps(changed: Any, base: Any, share: float, chance: float, side: str) -> Optional[bool]:
    est = keeps_estimate(changed, base, share)
    return E.verdict(float(est.value), side, (1 - share) * chance, float(est.se), E.Z)


def verdict(changed: Any, base: Any, chance: float) -> str:
    """robust / sensitive / critical by the share of above-chance accuracy a change keeps (per-input outcomes of the
    changed and the trained model), or "unclear" inside the paired noise of a threshold (the claims use the same
    thresholds and noise)."""
    robust = _keeps(changed, base, ROBUST_KEEP, chance, ">=")
    critical = _keeps(changed, base, CRITICAL_KEEP, chance, "<=")
    if robust:
        return "robust"
    if critical:
        return "critical"
    return "sensitive" if robust is False and critical is False else "unclear"


def column(r: Any, label: str) -> list[float]:
    """One heatmap column (a list over layers) of a map (`ReinitResult`): `RERAND` or `t=e`."""
    j = r.checkpoints.index(label)
    return [row[j] for row in r.acc]


def column_labels(epochs: list[int]) -> list[str]:
    """Heatmap column labels: re-randomisation first, then t = each checkpoint epoch."""
    return [RERAND] + [f"t={e}" for e in epochs]


def kept_share(acc: float, trained_acc: float, chance: float) -> float:
    """The share of the trained model's above-chance accuracy that a change keeps (1 = nothing lost)."""
    gap = trained_acc - chance
    return (acc - chance) / gap if gap > 0 else 1.0


def _rank_corr(a: list[Optional[float]], b: list[float]) -> Optional[float]:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None]
    if len(pairs) < 3 or len({p[0] for p in pairs}) < 2 or len({p[1] for p in pairs}) < 2:
        return None  # a constant column has no ranking (e.g. every layer at chance after a 1-epoch run)
    rho = metrics.spearman([p[0] for p in pairs], [p[1] for p in pairs])
    return None if math.isnan(rho) else rho


@torch.no_grad()
def suffix_correct(model: RoutedModel, layer: str, states: list[torch.Tensor], x: torch.Tensor,
                   y: torch.Tensor) -> torch.Tensor:
    """Per-input held-out right/wrong when only `layer` changed: the unchanged layers below it are not run again.

    `states` are the trained model's hidden states on x (`model.states(x)`, full route). A change to `blocks.i`
    starts from the state before block i; a change to `head` runs only the readout; anything else (the stem, or a
    layer this rule does not know) runs the whole model. On average this halves the work of a heatmap.
    """
    n = model.n_blocks
    if layer.startswith("blocks.") and layer[7:].isdigit():
        start = int(layer[7:])
    elif layer == "head":
        start = n
    else:
        return correct(model, x, y)
    return metrics.correct(model.readout(model.run_steps(states[start], range(start, n), start)), y)


def heatmap(t: Trained, redraw_seed: int, progress: Progress = silent) -> dict[str, Any]:
    """The robustness map of a trained model (uncached; `run` caches it). Never changes `t.model`."""
    d = t.data
    work = copy.deepcopy(t.model).eval()  # swapped() works in place: only ever on this private copy
    groups = surgery.layers(work)
    final = t.model.state_dict()
    epochs = sorted(t.checkpoints)
    fresh = build(t.spec.model, redraw_seed).state_dict()
    sources = [fresh] + [t.checkpoints[e] for e in epochs]
    t0, c0 = time.perf_counter(), time.thread_time()
    base_ok = correct(work, d.test.x, d.test.y)
    trained_acc, base_packed = E.accuracy(base_ok).value, E.pack(base_ok)
    with torch.no_grad():
        _, states = work.states(d.test.x)
    acc: list[list[float]] = []
    outcomes: list[list[str]] = []  # per-input held-out outcomes of every cell (packed), for paired comparisons
    own = work.state_dict()
    for i, layer in enumerate(groups):
        row, packed = [], []
        for src in sources:
            if all(torch.equal(own[k], src[k]) for k in groups[layer]):
                row.append(trained_acc)  # the layer already holds these values (e.g. the final checkpoint)
                packed.append(base_packed)
                continue
            with surgery.swapped(work, layer, src):
                ok = suffix_correct(work, layer, states, d.test.x, d.test.y)
            row.append(E.accuracy(ok).value)
            packed.append(E.pack(ok))
        acc.append(row)
        outcomes.append(packed)
        progress((i + 1) / len(groups), f"robustness map: layer {layer}")
    seconds, cpu_seconds = time.perf_counter() - t0, time.thread_time() - c0
    rel2, inf = [], []
    for keys in groups.values():
        r, m = surgery.distance_from_init(final, t.checkpoints[0], keys)
        rel2.append(r)
        inf.append(m)
    chance, n_test = d.chance, len(d.test)
    damage = [trained_acc - row[1] for row in acc]  # re-initialised to t = 0: the paper's robustness test
    return {
        "layers": list(groups),
        "n_params": [sum(final[k].numel() for k in keys) for keys in groups.values()],
        "epochs": epochs,
        "checkpoints": column_labels(epochs),
        "acc": acc,
        "outcomes": outcomes,
        "base_acc": trained_acc,
        "base_outcomes": base_packed,
        "chance": chance,
        "distance": {"rel2": rel2, "inf": inf},
        "damage": damage,
        "rank_corr": {"rel2": _rank_corr(rel2, damage), "inf": _rank_corr(inf, damage)},
        "n_test": n_test,
        "verdict_t0": [verdict(row[1], base_ok, chance) for row in outcomes],
        "verdict_rerand": [verdict(row[0], base_ok, chance) for row in outcomes],
        "redraw_seed": redraw_seed,
        "heatmap_seconds": seconds,  # wall clock: slower when other jobs share the cores
        "heatmap_cpu_seconds": cpu_seconds,  # this thread's CPU time: what a quiet machine would take
    }


@dataclass(frozen=True)
class ReinitResult:
    """`run`'s answer: one model's robustness map (held-out accuracies; rows = layers, columns = `checkpoints`:
    re-randomised, then re-initialised to each checkpoint epoch). Field names are the stored keys."""

    config: ReinitConfig
    model: str
    model_name: str
    task: str
    train_seconds: float
    layers: list[str]
    n_params: list[int]
    epochs: list[int]
    checkpoints: list[str]  # the column labels: RERAND, then "t=<epoch>"
    acc: list[list[float]]  # acc[layer][column]
    outcomes: list[list[str]]  # packed per-input outcomes of every cell
    base_acc: float
    base_outcomes: str
    chance: float
    distance: dict[str, list[Optional[float]]]  # "rel2", "inf": each layer's distance from its initialisation
    damage: list[float]  # trained accuracy minus the t = 0 column
    rank_corr: dict[str, Optional[float]]  # "rel2", "inf": Spearman(distance, damage)
    n_test: int
    verdict_t0: list[str]
    verdict_rerand: list[str]
    redraw_seed: int
    heatmap_seconds: float
    heatmap_cpu_seconds: float = float("nan")  # not in results stored before it was measured


@entry("reinit", result=ReinitResult)
def run(cfg: ReinitConfig, progress: Progress) -> ReinitResult:
    """The robustness map of one model (cached). Accuracies are held-out."""
    t = trained(cfg.spec, span(progress, 0.0, 0.9))
    out = heatmap(t, cfg.redraw_seed, span(progress, 0.9, 1.0))
    return ReinitResult(config=cfg, model=cfg.model, model_name=MODEL_NAMES[cfg.model], task=t.spec.task,
                        train_seconds=t.info["seconds"], **out)


@dataclass(frozen=True)
class FocusConfig:
    """One layer, one operation: `reinit` to checkpoint epoch `checkpoint`, or `rerand`; then optional recovery."""

    model: str = param("plain", "The trained network.", label="Model", choices=MODELS, labels=MODEL_NAMES)
    seed: int = seed_param("Training seed (re-randomisation draws from seed + 1,000,003).")
    layer: str = param("stem", "The layer to change: stem, blocks.0, blocks.1, ..., head.", label="Layer")
    op: str = param("reinit", "Re-initialise the layer to its weights at a checkpoint, or re-randomise it.",
                    label="Operation", choices=OPS, labels=OP_LABELS)
    checkpoint: int = param(0, "The epoch to re-initialise the layer to (0 = its initial draw).", label="Checkpoint",
                            lo=0, hi=200)
    recovery: str = param("none", "After the change: nothing, fine-tune on the labels, or distil from the trained "
                          "model.", label="Recovery", choices=RECOVERIES, labels=RECOVERY_LABELS)
    steps: int = param(300, "Recovery steps.", label="Recovery steps", lo=0, hi=20_000)
    blocks: Optional[int] = blocks_param()
    width: Optional[int] = width_param()
    epochs: Optional[int] = epochs_param()
    task: Optional[str] = task_param()

    def __post_init__(self) -> None:
        check(self)
        object.__setattr__(self, "task", self.base.task)  # validates the shared fields; the own task is None
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates steps

    @property
    def base(self) -> ReinitConfig:
        return ReinitConfig(self.model, self.seed, self.blocks, self.width, self.epochs, self.task)


def changed_model(t: Trained, layer: str, op: str, checkpoint: int, redraw_seed: int) -> torch.nn.Module:
    """A copy of the trained model with one layer re-initialised (to `checkpoint`) or re-randomised."""
    return surgery.with_layer(t.model, layer, weight_ops.source_weights(t, op, checkpoint, redraw_seed))


@dataclass(frozen=True)
class FocusResult:
    """`focus`'s answer: one layer changed once, then recovered (accuracies held-out). Field names are the stored
    keys."""

    config: FocusConfig
    base_acc: float
    cut_acc: float
    recovered_acc: float
    chance: float
    n_test: int
    kept_share: float
    per_class: dict[str, list[float]]  # "base", "cut", "recovered": accuracy within each class
    curve_steps: list[int]
    curve_acc: list[float]
    steps_to_recover: Optional[int]  # the first curve step back within RECOVERED_GAP of the trained model
    outcomes: dict[str, str]  # packed per-input outcomes: "base", "cut"
    recovery_seconds: float


@entry("reinit-focus", result=FocusResult)
def focus(cfg: FocusConfig, progress: Progress) -> FocusResult:
    """One layer changed once: overall and per-class held-out accuracy, then the recovery curve (cached)."""
    t = trained(cfg.base.spec, span(progress, 0.0, 0.5))
    d = t.data
    student = changed_model(t, cfg.layer, cfg.op, cfg.checkpoint, cfg.base.redraw_seed)
    base_ok, cut_ok = correct(t.model, d.test.x, d.test.y), correct(student, d.test.x, d.test.y)
    trained_acc = E.accuracy(base_ok).value
    before = per_class_accuracy(student, d.test.x, d.test.y, d.n_classes)
    rc = RecoveryConfig(method=cfg.recovery, steps=cfg.steps, seed=cfg.seed)
    t0 = time.perf_counter()
    log = recover(student, student.full_route, d, rc, teacher=t.model, progress=span(progress, 0.5, 1.0))
    back = next((s for s, a in zip(log.steps, log.test_acc, strict=True) if a >= trained_acc - RECOVERED_GAP), None)
    return FocusResult(**{
        "config": cfg,
        "base_acc": trained_acc,
        "cut_acc": log.test_acc[0],
        "recovered_acc": log.test_acc[-1],
        "chance": d.chance,
        "n_test": len(d.test),
        "kept_share": kept_share(log.test_acc[0], trained_acc, d.chance),
        "per_class": {
            "base": per_class_accuracy(t.model, d.test.x, d.test.y, d.n_classes),
            "cut": before,
            "recovered": per_class_accuracy(student, d.test.x, d.test.y, d.n_classes),
        },
        "curve_steps": log.steps,
        "curve_acc": log.test_acc,
        "steps_to_recover": back,
        "outcomes": {"base": E.pack(base_ok), "cut": E.pack(cut_ok)},
        "recovery_seconds": time.perf_counter() - t0,
    })


# -- a group of layers changed together (the paper's joint robustness) ------------------------------------------
def parse_layers(text: str) -> tuple[str, ...]:
    """`blocks.1,blocks.2` -> ("blocks.1", "blocks.2"): comma-separated, no repeats, at least one."""
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names:
        raise ValueError("name at least one layer, e.g. blocks.1,blocks.2")
    if len(set(names)) != len(names):
        raise ValueError(f"a layer is named twice in {text!r}")
    return names


@dataclass(frozen=True)
class GroupConfig:
    """Several layers changed at once (`layers`: comma-separated), each to the same source: checkpoint or redraw."""

    model: str = param("plain", "The trained network.", label="Model", choices=MODELS, labels=MODEL_NAMES)
    seed: int = seed_param("Training seed (re-randomisation draws from seed + 1,000,003).")
    layers: str = param("blocks.1,blocks.2", "The layers to change together, comma-separated (e.g. blocks.1,blocks.2).",
                        label="Layers")
    op: str = param("reinit", "Re-initialise the layers to their weights at a checkpoint, or re-randomise them.",
                    label="Operation", choices=OPS, labels=OP_LABELS)
    checkpoint: int = param(0, "The epoch to re-initialise the layers to (0 = the initial draw).", label="Checkpoint",
                            lo=0, hi=200)
    blocks: Optional[int] = blocks_param()
    width: Optional[int] = width_param()
    epochs: Optional[int] = epochs_param()
    task: Optional[str] = task_param()

    def __post_init__(self) -> None:
        check(self)
        object.__setattr__(self, "task", self.base.task)  # the own task is None, as in the map's config
        names = parse_layers(self.layers)
        known = layer_names(self.base)  # the base config validates the shared fields
        unknown = [x for x in names if x not in known]
        if unknown:
            raise ValueError(f"unknown layer {unknown[0]!r}; this model has {', '.join(known)}")
        # one spelling per group: the model's own order, so blocks.2,blocks.1 and blocks.1,blocks.2 share a result
        object.__setattr__(self, "layers", ",".join(x for x in known if x in names))

    @property
    def base(self) -> ReinitConfig:
        return ReinitConfig(self.model, self.seed, self.blocks, self.width, self.epochs, self.task)


@dataclass(frozen=True)
class GroupResult:
    """`group`'s answer: the layers changed together and each alone (held-out accuracies, per-input outcomes packed
    under `outcomes`: base, group, single), what the joint-fragility claim reads."""

    config: GroupConfig
    layers: list[str]
    base_acc: float
    group_acc: float
    single_accs: list[float]
    single_damages: list[float]
    sum_single_damage: float
    group_damage: float
    chance: float
    n_test: int
    outcomes: dict[str, Any]


@entry("reinit-group", result=GroupResult)
def group(cfg: GroupConfig, progress: Progress) -> GroupResult:
    """The layers changed together, and each alone: does the damage add up? (cached; held-out accuracies)"""
    t = trained(cfg.base.spec, span(progress, 0.0, 0.9))
    d = t.data
    names = parse_layers(cfg.layers)
    src = weight_ops.source_weights(t, cfg.op, cfg.checkpoint, cfg.base.redraw_seed)
    base_ok = correct(t.model, d.test.x, d.test.y)
    group_ok = correct(surgery.with_layers(t.model, names, src), d.test.x, d.test.y)
    single_ok = [correct(surgery.with_layers(t.model, [name], src), d.test.x, d.test.y) for name in names]
    base, together = E.accuracy(base_ok).value, E.accuracy(group_ok).value
    alone = [E.accuracy(ok).value for ok in single_ok]
    out = {"config": cfg, "layers": list(names), "base_acc": base, "group_acc": together, "single_accs": alone,
           "single_damages": [base - a for a in alone], "sum_single_damage": sum(base - a for a in alone),
           "group_damage": base - together, "chance": d.chance, "n_test": len(d.test),
           "outcomes": {"base": E.pack(base_ok), "group": E.pack(group_ok), "single": [E.pack(o) for o in single_ok]}}
    return GroupResult(**out)


# -- width: the same MLP at several widths (each map cached on its own, by `run`) ----------------------------------
WIDTHS = (32, 64, 128, 256)
WIDTH_MODELS = ("plain", "residual")


def width_sweep(model: str, seed: int, widths: tuple[int, ...] = WIDTHS, progress: Progress = silent,
                pool: Pool = serial, blocks: Optional[int] = None, epochs: Optional[int] = None,
                task: Optional[str] = None) -> dict[str, Any]:
    """The robustness map of the MLP at each width (same depth, recipe and seed), what the width claim reads; depth and
    epochs: None = the classroom model (tests shrink them)."""
    if model not in WIDTH_MODELS:
        raise ValueError(f"the width sweep is for the MLPs ({', '.join(WIDTH_MODELS)}), not {model!r}")
    ws = sorted(set(widths))
    if len(ws) < 2:
        raise ValueError("a width sweep needs at least two widths")
    maps = pool([(run, ReinitConfig(model=model, seed=seed, blocks=blocks, width=w, epochs=epochs, task=task))
                 for w in ws], progress)
    out = {"model": model, "model_name": MODEL_NAMES[model], "seed": seed, "widths": ws, "layers": maps[0].layers,
           "t0_acc": [column(m, "t=0") for m in maps], "rerand_acc": [column(m, RERAND) for m in maps],
           "base_acc": [m.base_acc for m in maps], "chance": maps[0].chance, "n_test": maps[0].n_test,
           "t0_outcomes": [[row[m.checkpoints.index("t=0")] for row in m.outcomes] for m in maps],
           "base_outcomes": [m.base_outcomes for m in maps],
           "task": maps[0].config.task}  # the width claim's source names it (None: the MLPs' own task)
    return out
