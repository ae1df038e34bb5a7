"""Re-initialise a layer ("Are all layers created equal?", Zhang, Bengio, Singer): robust and critical layers.

After training, change one layer and keep the rest:
- re-initialise it to its weights at checkpoint t (t = 0 is the initial draw; the last checkpoint is the end),
- re-randomise it: a fresh draw from its own initialisation distribution (biases and norms too), seeded.

`run(cfg)` is the robustness map of one model: held-out accuracy after every single change (rows = layers,
columns = re-randomisation then every checkpoint), each layer's distance from its initialisation, and how
distance and damage rank together. `focus(cfg)` looks at one change: per-class accuracy and, optionally, how
many steps of fine-tuning (ce) or distillation (kd) bring the model back. Both go through the store.

The MLPs are the Delete experiment's teachers (same spec, so the same stored weights); the ViT is a small
pre-norm transformer on the 8x8 digits.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any, Optional

import torch
from scipy.stats import spearmanr

from .. import presets, quick, streams, surgery
from ..experiment import SEED_MAX, check, entry, param, seed_param
from ..models import RoutedModel, accuracy, per_class_accuracy
from ..progress import Progress, silent, span
from ..recipes import reinit_spec
from ..recover import RECOVERIES, RecoveryConfig, recover
from ..zoo import BUILDERS, ModelSpec, Trained, build, trained

MODELS = ("plain", "residual", "vit")
MODEL_NAMES = {"plain": "plain MLP", "residual": "residual MLP", "vit": "ViT"}
OPS = ("reinit", "rerand")
OP_LABELS = {"reinit": "re-initialise to a checkpoint", "rerand": "re-randomise"}
RECOVERY_LABELS = {"none": "none", "ce": "fine-tune (cross-entropy)", "kd": "distil from the trained model (KD)"}
RERAND = "re-randomise"  # label of the first heatmap column
model_spec = reinit_spec

# The re-randomised layers come from a model built with seed + REDRAW_OFFSET (stream init.redraw): far from any
# training seed, so a "fresh draw" is never the model's own t = 0 draw by accident.
REDRAW_OFFSET = streams.seed_of("init.redraw", 0)

# A layer is robust when a change keeps >= 90 % of the trained model's accuracy above chance, critical when it
# keeps < 50 % (the paper's robust layers lose almost nothing; its critical ones fall to chance).
ROBUST_KEEP = 0.9
CRITICAL_KEEP = 0.5
RECOVERED_GAP = 0.01  # "recovered" = back within one point of the trained model's held-out accuracy

@dataclass(frozen=True)
class ReinitConfig:
    """One model's robustness map. depth / width / epochs: None = the classroom model (tests shrink them)."""

    model: str = param("plain", "The trained network whose layers are changed one at a time.", label="Model",
                       choices=MODELS, labels=MODEL_NAMES)
    seed: int = seed_param("Training seed (re-randomisation draws from seed + 1,000,003).")
    depth: Optional[int] = param(None, "A smaller model for a quick look (default: the classroom model).", lo=1,
                                 hi=32)
    width: Optional[int] = param(None, "Width of the smaller model (default: the classroom model).", lo=4, hi=1024)
    epochs: Optional[int] = param(None, "Training epochs (default: the classroom recipe).", lo=1, hi=200)

    def __post_init__(self) -> None:
        check(self)
        if not 0 <= self.seed <= SEED_MAX - REDRAW_OFFSET:
            raise ValueError("the seed must be a non-negative integer below 2**31 - 1,000,004")

    @property
    def spec(self) -> ModelSpec:
        return model_spec(self.model, self.seed, self.depth, self.width, self.epochs)

    @property
    def redraw_seed(self) -> int:
        return streams.seed_of("init.redraw", self.seed)


def layer_names(cfg: ReinitConfig) -> list[str]:
    """The layers of cfg's model, without training it (its random draws leave the global generator as it was)."""
    with torch.random.fork_rng(devices=[]):
        model = BUILDERS[type(cfg.spec.model)](cfg.spec.model)
    return list(surgery.layers(model))


def checkpoint_epochs(cfg: ReinitConfig) -> list[int]:
    """The epochs whose weights training keeps for cfg's model (quick mode trains 1 epoch; see lab.quick)."""
    tc = cfg.spec.train
    end = quick.epochs(tc.epochs)
    return sorted({e for e in tc.checkpoints if e <= end} | {end})


def column_labels(epochs: list[int]) -> list[str]:
    """Heatmap column labels: re-randomisation first, then t = each checkpoint epoch."""
    return [RERAND] + [f"t={e}" for e in epochs]


def verdict(acc: float, trained_acc: float, chance: float) -> str:
    """robust / sensitive / critical, by the share of above-chance accuracy a change keeps."""
    gap = trained_acc - chance
    kept = (acc - chance) / gap if gap > 0 else 1.0
    return "robust" if kept >= ROBUST_KEEP else "critical" if kept < CRITICAL_KEEP else "sensitive"


def _rank_corr(a: list[Optional[float]], b: list[float]) -> Optional[float]:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None]
    if len(pairs) < 3 or len({p[0] for p in pairs}) < 2 or len({p[1] for p in pairs}) < 2:
        return None  # a constant column has no ranking (e.g. every layer at chance after a 1-epoch run)
    rho = spearmanr([p[0] for p in pairs], [p[1] for p in pairs]).statistic
    return None if rho is None or math.isnan(rho) else float(rho)


@torch.no_grad()
def suffix_accuracy(model: RoutedModel, layer: str, states: list[torch.Tensor], x: torch.Tensor,
                    y: torch.Tensor) -> float:
    """Held-out accuracy when only `layer` changed: the unchanged layers below it are not run again.

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
        return accuracy(model, x, y)
    h = states[start]
    for slot in range(start, n):
        h = model.run_block(h, slot, slot)
    return float((model.readout(h).argmax(1) == y).float().mean())


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
    trained_acc = accuracy(work, d.test.x, d.test.y)
    with torch.no_grad():
        _, states = work.states(d.test.x)
    acc: list[list[float]] = []
    own = work.state_dict()
    for i, layer in enumerate(groups):
        row = []
        for src in sources:
            if all(torch.equal(own[k], src[k]) for k in groups[layer]):
                row.append(trained_acc)  # the layer already holds these values (e.g. the final checkpoint)
                continue
            with surgery.swapped(work, layer, src):
                row.append(suffix_accuracy(work, layer, states, d.test.x, d.test.y))
        acc.append(row)
        progress((i + 1) / len(groups), f"robustness map: layer {layer}")
    seconds, cpu_seconds = time.perf_counter() - t0, time.thread_time() - c0
    rel2, inf = [], []
    for keys in groups.values():
        r, m = surgery.distance_from_init(final, t.checkpoints[0], keys)
        rel2.append(r)
        inf.append(m)
    chance = d.chance
    damage = [trained_acc - row[1] for row in acc]  # re-initialised to t = 0: the paper's robustness test
    return {
        "layers": list(groups),
        "n_params": [sum(final[k].numel() for k in keys) for keys in groups.values()],
        "epochs": epochs,
        "checkpoints": column_labels(epochs),
        "acc": acc,
        "base_acc": trained_acc,
        "chance": chance,
        "distance": {"rel2": rel2, "inf": inf},
        "damage": damage,
        "rank_corr": {"rel2": _rank_corr(rel2, damage), "inf": _rank_corr(inf, damage)},
        "verdict_t0": [verdict(row[1], trained_acc, chance) for row in acc],
        "verdict_rerand": [verdict(row[0], trained_acc, chance) for row in acc],
        "redraw_seed": redraw_seed,
        "heatmap_seconds": seconds,  # wall clock: slower when other jobs share the cores
        "heatmap_cpu_seconds": cpu_seconds,  # this thread's CPU time: what a quiet machine would take
    }


@entry("reinit")
def run(cfg: ReinitConfig, progress: Progress) -> dict[str, Any]:
    """The robustness map of one model (cached). Accuracies are held-out."""
    t = trained(cfg.spec, span(progress, 0.0, 0.9))
    out = heatmap(t, cfg.redraw_seed, span(progress, 0.9, 1.0))
    return {"config": cfg, "model": cfg.model, "model_name": MODEL_NAMES[cfg.model], "task": t.spec.task,
            "train_seconds": t.info["seconds"], **out}


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
    depth: Optional[int] = param(None, "A smaller model for a quick look (default: the classroom model).", lo=1,
                                 hi=32)
    width: Optional[int] = param(None, "Width of the smaller model (default: the classroom model).", lo=4, hi=1024)
    epochs: Optional[int] = param(None, "Training epochs (default: the classroom recipe).", lo=1, hi=200)

    def __post_init__(self) -> None:
        check(self)
        ReinitConfig(self.model, self.seed, self.depth, self.width, self.epochs)  # validates the shared fields
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates steps

    @property
    def base(self) -> ReinitConfig:
        return ReinitConfig(self.model, self.seed, self.depth, self.width, self.epochs)


def changed_model(t: Trained, layer: str, op: str, checkpoint: int, redraw_seed: int) -> torch.nn.Module:
    """A copy of the trained model with one layer re-initialised (to `checkpoint`) or re-randomised."""
    if op == "rerand":
        source = build(t.spec.model, redraw_seed).state_dict()
    elif op == "reinit":
        if checkpoint not in t.checkpoints:
            raise ValueError(f"no checkpoint at epoch {checkpoint}; this model kept epochs {sorted(t.checkpoints)}")
        source = t.checkpoints[checkpoint]
    else:
        raise ValueError(f"unknown operation {op!r}; choose reinit or rerand")
    return surgery.with_layer(t.model, layer, source)


@entry("reinit-focus")
def focus(cfg: FocusConfig, progress: Progress) -> dict[str, Any]:
    """One layer changed once: overall and per-class held-out accuracy, then the recovery curve (cached)."""
    t = trained(cfg.base.spec, span(progress, 0.0, 0.5))
    d = t.data
    student = changed_model(t, cfg.layer, cfg.op, cfg.checkpoint, cfg.base.redraw_seed)
    trained_acc = accuracy(t.model, d.test.x, d.test.y)
    before = per_class_accuracy(student, d.test.x, d.test.y, d.n_classes)
    rc = RecoveryConfig(method=cfg.recovery, steps=cfg.steps, seed=cfg.seed)
    t0 = time.perf_counter()
    log = recover(student, student.full_route, d, rc, teacher=t.model, progress=span(progress, 0.5, 1.0))
    back = next((s for s, a in zip(log.steps, log.test_acc, strict=True) if a >= trained_acc - RECOVERED_GAP), None)
    return {
        "config": cfg,
        "base_acc": trained_acc,
        "cut_acc": log.test_acc[0],
        "recovered_acc": log.test_acc[-1],
        "chance": d.chance,
        "verdict": verdict(log.test_acc[0], trained_acc, d.chance),
        "per_class": {
            "base": per_class_accuracy(t.model, d.test.x, d.test.y, d.n_classes),
            "cut": before,
            "recovered": per_class_accuracy(student, d.test.x, d.test.y, d.n_classes),
        },
        "curve_steps": log.steps,
        "curve_acc": log.test_acc,
        "steps_to_recover": back,
        "recovery_seconds": time.perf_counter() - t0,
    }


# -- the page's complete settings: its controls, presets, and what a setting needs (lab/presets.py) -----------
CONTROLS = {"model": "plain", "seed": 0, "layer": "stem", "op": "reinit", "checkpoint": 0, "recovery": "none",
            "steps": 300}
PRESETS = (
    presets.preset(CONTROLS, "stem", "Plain MLP: reset the stem, distil", "The bottom layer of a fully connected "
                   "net is critical in the paper: reset it to its initial draw, then distil for 300 steps. How fast "
                   "does it come back?", model="plain", layer="stem", op="reinit", checkpoint=0, recovery="kd"),
    presets.preset(CONTROLS, "resblock", "Residual: reset a middle block", "Residual blocks only add a correction: "
                   "the paper found most of them robust.", model="residual", layer="blocks.3", op="reinit",
                   checkpoint=0),
    presets.preset(CONTROLS, "rerand_kd", "Re-randomise, then distil", "A fresh draw of the plain stem, then 300 "
                   "distillation steps: how many bring it back?", op="rerand", recovery="kd", steps=300),
    presets.preset(CONTROLS, "vit_head", "ViT: reset the head", "The classifier on top of the ViT, back to its "
                   "initial draw, no recovery: what is left when it forgets all it learned?", model="vit",
                   layer="head", op="reinit", checkpoint=0),
)

_TRAIN_SECONDS = {"plain": 25, "residual": 25, "vit": 90}  # rough, classroom machine, nothing stored


def focus_config(settings: dict[str, Any]) -> FocusConfig:
    """The focus config of a complete page setting."""
    return FocusConfig(model=settings["model"], seed=settings["seed"], layer=settings["layer"], op=settings["op"],
                       checkpoint=settings["checkpoint"], recovery=settings["recovery"], steps=settings["steps"])


def needs(settings: dict[str, Any]) -> list[presets.Need]:
    """The three robustness maps (the page always shows all of them) and the change in focus."""
    f = focus_config(settings)
    maps = [presets.Need(f"map of the {MODEL_NAMES[m]}", run, ReinitConfig(model=m, seed=f.seed),
                         _TRAIN_SECONDS[m] + 5) for m in MODELS]
    recovery = 0 if f.recovery == "none" else f.steps / (10 if f.model == "vit" else 30)
    return maps + [presets.Need("the change in focus", focus, f, 2 + recovery)]
