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
import dataclasses
import functools
import math
import time
from dataclasses import dataclass
from typing import Any, Optional

import torch

from lab.claims import Z, all_of, at_least, at_most, binomial_se, claim, diff_se, noise_words, pct, pts
from lab.core import metrics, streams
from lab.core.models import RoutedModel, accuracy, per_class_accuracy
from lab.core.recipes import reinit_spec
from lab.core.zoo import BUILDERS, ModelSpec, Trained, build, effective, trained
from lab.experiment import SEED_MAX, Pool, check, entry, param, seed_param, serial
from lab.ops import surgery
from lab.ops.recover import RECOVERIES, RecoveryConfig, recover
from lab.runtime.progress import Progress, silent, span

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
    return list(_layer_names(cfg.spec.model))


@functools.lru_cache(maxsize=64)
def _layer_names(model_cfg: Any) -> tuple[str, ...]:
    # once per model shape: building the model to list its layers costs ~5 ms, and every page rerun asks (issue 21)
    with torch.random.fork_rng(devices=[]):
        model = BUILDERS[type(model_cfg)](model_cfg)
    return tuple(surgery.layers(model))


def checkpoint_epochs(cfg: ReinitConfig) -> list[int]:
    """The epochs whose weights training keeps for cfg's model (as it really trains: lab.core.zoo.effective)."""
    tc = cfg.spec.train
    end = effective(cfg.spec).train.epochs
    return sorted({e for e in tc.checkpoints if e <= end} | {end})


def column_labels(epochs: list[int]) -> list[str]:
    """Heatmap column labels: re-randomisation first, then t = each checkpoint epoch."""
    return [RERAND] + [f"t={e}" for e in epochs]


def verdict(acc: float, trained_acc: float, chance: float, n: int) -> str:
    """robust / sensitive / critical by the share of above-chance accuracy a change keeps, or "unclear" when the
    accuracy is inside n held-out inputs' noise of a threshold (the claims use the same thresholds and noise)."""
    gap = trained_acc - chance
    se = diff_se(acc, trained_acc, n)
    robust = at_least(acc, chance + ROBUST_KEEP * gap, se)
    critical = at_most(acc, chance + CRITICAL_KEEP * gap, se)
    if robust:
        return "robust"
    if critical:
        return "critical"
    return "sensitive" if robust is False and critical is False else "unclear"


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
    chance, n_test = d.chance, len(d.test)
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
        "n_test": n_test,
        "verdict_t0": [verdict(row[1], trained_acc, chance, n_test) for row in acc],
        "verdict_rerand": [verdict(row[0], trained_acc, chance, n_test) for row in acc],
        "redraw_seed": redraw_seed,
        "heatmap_seconds": seconds,  # wall clock: slower when other jobs share the cores
        "heatmap_cpu_seconds": cpu_seconds,  # this thread's CPU time: what a quiet machine would take
    }


@entry("reinit")
def run(cfg: ReinitConfig, progress: Progress) -> dict[str, Any]:
    """The robustness map of one model (cached). Accuracies are held-out."""
    t = trained(cfg.spec, span(progress, 0.0, 0.9))
    out = heatmap(t, cfg.redraw_seed, span(progress, 0.9, 1.0))
    r = {"config": cfg, "model": cfg.model, "model_name": MODEL_NAMES[cfg.model], "task": t.spec.task,
         "train_seconds": t.info["seconds"], **out}
    return {**r, "claims": model_claims(r)}


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
    out = {
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
        "recovery_seconds": time.perf_counter() - t0,
    }
    return {**out, "claims": focus_claims(out)}


# -- claims (lab/claims.py): the paper's statements checked against a map, noise included ------------------------
SOURCE = ("Zhang, Bengio, Singer, Are All Layers Created Equal? (seeds/004): FCNs on MNIST, ResNets on CIFAR-10. "
          "Here: 8-layer MLPs on a synthetic 20-class task and a 6-block ViT on 8x8 digits, one model per seed, one "
          "fresh draw per re-randomisation; robust / critical at 90 % / 50 % of the above-chance accuracy kept are "
          "this lab's thresholds (the paper reads its heatmaps by eye)")


def _col(r: dict[str, Any], label: str) -> list[float]:
    """One heatmap column (a list over layers): `RERAND` or `t=e`."""
    j = r["checkpoints"].index(label)
    return [row[j] for row in r["acc"]]


def _threshold(r: dict[str, Any], share: float) -> float:
    """The accuracy that keeps `share` of the trained model's above-chance accuracy."""
    return r["chance"] + share * (r["base_acc"] - r["chance"])


def _mean_and_se(accs: list[float], n: int) -> tuple[float, float]:
    """Mean of accuracies on the same n inputs, with the root-sum-square of their binomial errors over the count."""
    m = sum(accs) / len(accs)
    return m, math.sqrt(sum(binomial_se(a, n) ** 2 for a in accs)) / len(accs)


def _plain_claims(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's fully-connected-net claims, on the plain MLP's map."""
    n, layers, base, chance = r["n_test"], r["layers"], r["base_acc"], r["chance"]
    t0, rr = _col(r, "t=0"), _col(r, RERAND)
    first = layers[0]
    crit = _threshold(r, CRITICAL_KEEP)
    se = diff_se(t0[0], base, n)
    out = [claim(
        "reinit.plain-first-layer-critical", "In a fully connected net the first layer is critical: re-initialising "
        "it to its initial draw (t = 0) loses most of what training gave", SOURCE,
        {"first_t0_acc": t0[0], "base_acc": base, "chance": chance, "threshold": crit, "se": se, "n_test": n},
        f"the first layer ({first}) at t = 0 keeps less than {CRITICAL_KEEP:.0%} of the above-chance accuracy "
        f"(below {pct(crit)}), {noise_words(se)}",
        at_most(t0[0], crit, se),
        f"{first} re-initialised to t = 0: {pct(t0[0])} (trained {pct(base)}, chance {pct(chance)}, critical below "
        f"{pct(crit)}).", subject=r["model_name"])]
    epochs = r["epochs"]
    late = [e for e in epochs if 0 < e < epochs[-1]]
    if late:
        e = late[-1]
        acc_late = _col(r, f"t={e}")[0]
        se = diff_se(acc_late, t0[0], n)
        holds = at_least(acc_late - t0[0], 0.0, se)
        detail = (f"{first} re-initialised to t = 0: {pct(t0[0])}; to t = {e}: {pct(acc_late)} "
                  f"({pts(acc_late - t0[0])}); every checkpoint: "
                  + ", ".join(f"t = {c} {pct(_col(r, f't={c}')[0])}" for c in epochs) + ".")
        measured = {"first_t0_acc": t0[0], "first_late_acc": acc_late, "late_epoch": e, "se": se, "n_test": n}
    else:  # a 1-epoch model (quick mode) has no checkpoint between its start and its end
        holds, measured = None, {"first_t0_acc": t0[0], "n_test": n}
        detail = f"This model kept no checkpoint between t = 0 and the end (epochs {epochs}): nothing to compare."
    out.append(claim(
        "reinit.plain-first-layer-damage-falls", "The first layer's damage falls as the checkpoint t grows: "
        "weights from later in training hurt less", SOURCE, measured,
        "accuracy with the first layer from the last checkpoint before the end is above its accuracy at t = 0"
        + (f", {noise_words(measured['se'])}" if "se" in measured else ""), holds, detail, subject=r["model_name"]))
    later = list(range(1, len(layers)))
    w = min(later, key=lambda i: t0[i])
    se = diff_se(t0[w], t0[0], n)
    out.append(claim(
        "reinit.plain-later-layers-more-robust", "Later layers are more robust to re-initialisation than the first",
        SOURCE, {"first_t0_acc": t0[0], "weakest_later_t0_acc": t0[w], "se": se, "n_test": n},
        "the most damaged later layer, re-initialised to t = 0, keeps more accuracy than the first layer, "
        + noise_words(se), at_least(t0[w] - t0[0], 0.0, se),
        f"at t = 0: {first} {pct(t0[0])}; the weakest later layer, {layers[w]}, {pct(t0[w])} "
        f"({pts(t0[w] - t0[0])}).", subject=r["model_name"]))
    verdicts = [at_most(a, crit, diff_se(a, base, n)) for a in rr]
    worst = max(range(len(rr)), key=lambda i: rr[i])
    out.append(claim(
        "reinit.plain-rerand-fatal", "Re-randomising any layer of a fully connected net is fatal", SOURCE,
        {"rerand_acc": rr, "threshold": crit, "base_acc": base, "chance": chance, "n_test": n},
        f"every layer, re-randomised, keeps less than {CRITICAL_KEEP:.0%} of the above-chance accuracy (below "
        f"{pct(crit)}), each by more than {Z:g} standard errors", all_of(verdicts),
        f"re-randomised: {sum(v is True for v in verdicts)} of {len(rr)} layers clearly below {pct(crit)}; the "
        f"least damaged is {layers[worst]} at {pct(rr[worst])}.", subject=r["model_name"]))
    return out


def model_claims(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims one model's map can test: the fully connected net's (plain MLP), and two for every model."""
    n, layers = r["n_test"], r["layers"]
    out = _plain_claims(r) if r["model"] == "plain" else []
    t0, rr = _col(r, "t=0"), _col(r, RERAND)
    diffs = [a - b for a, b in zip(t0, rr, strict=True)]
    ses = [diff_se(a, b, n) for a, b in zip(t0, rr, strict=True)]
    mean, mean_se_ = sum(diffs) / len(diffs), math.sqrt(sum(s * s for s in ses)) / len(ses)
    against = [i for i, (d, s) in enumerate(zip(diffs, ses, strict=True)) if at_least(-d, 0.0, s)]
    holds = False if against else at_least(mean, 0.0, mean_se_)
    out.append(claim(
        f"reinit.{r['model']}-rerand-hurts-more", "Re-randomising a layer hurts at least as much as re-initialising "
        "it to its own initial draw", SOURCE,
        {"mean_t0_minus_rerand": mean, "se": mean_se_, "layers_against": [layers[i] for i in against],
         "n_test": n},
        f"no layer is clearly better re-randomised than re-initialised (by {Z:g} of its standard errors), and the "
        f"mean over layers of (t = 0 minus re-randomised) is above 0, {noise_words(mean_se_)}", holds,
        f"mean over {len(layers)} layers: t = 0 keeps {pts(mean)} more than a fresh draw"
        + (f"; clearly the other way for {', '.join(layers[i] for i in against)}." if against else "."),
        subject=r["model_name"]))
    out.append(_moved_least_claim(r))
    return out


def _moved_least_claim(r: dict[str, Any]) -> dict[str, Any]:
    """Spearman's rho of distance from init and damage at t = 0, against its null spread 1/sqrt(L - 1)."""
    n, dist, damage = r["n_test"], r["distance"]["rel2"], r["damage"]
    rho = r["rank_corr"]["rel2"]
    pairs = [(x, d) for x, d in zip(dist, damage, strict=True) if x is not None]
    se = 1.0 / math.sqrt(max(len(pairs) - 1, 1))
    visible = [d for d, a in zip(damage, _col(r, "t=0"), strict=True) if at_least(d, 0.0, diff_se(a, r["base_acc"], n))]
    if rho is None or not visible:
        holds = None
        why = ("no layer's damage stands out of the noise: there is nothing to rank" if not visible
               else "the ranking is undefined (a constant column)")
        detail = f"Spearman ρ {'n/a' if rho is None else f'{rho:+.2f}'} over {len(pairs)} layers; {why}."
    else:
        holds = at_least(rho, 0.0, se)
        detail = (f"Spearman ρ(distance, damage) = {rho:+.2f} over {len(pairs)} layers ({len(visible)} with damage "
                  f"beyond the noise); a ranking of {len(pairs)} unrelated numbers scatters ρ by about ±{se:.2f}.")
    return claim(
        f"reinit.{r['model']}-moved-least-robust", "The layers that moved least from their initialisation are the "
        "robust ones", SOURCE + "; the distance is ||θ_T − θ_0||₂ / ||θ_0||₂ per layer",
        {"rho": rho, "se": se, "n_layers": len(pairs), "layers_with_damage": len(visible), "n_test": n},
        f"Spearman's ρ of distance and damage at t = 0 is above 0 by more than {Z:g} x 1/sqrt(L − 1) (its spread "
        "over unrelated rankings), and at least one layer's damage is beyond the noise", holds, detail,
        subject=r["model_name"])


def claims(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every claim the given maps test: each model's own, then plain against residual when both are there."""
    out = [c for m in MODELS if m in results for c in results[m]["claims"]]
    if "plain" in results and "residual" in results:
        out.append(residual_claim(results["plain"], results["residual"]))
    return out


def residual_claim(plain: dict[str, Any], res: dict[str, Any]) -> dict[str, Any]:
    """Residual blocks keep more accuracy than plain ones, re-initialised (t = 0) and re-randomised alike."""
    def blocks(r: dict[str, Any]) -> list[float]:
        idx = [i for i, layer in enumerate(r["layers"]) if layer.startswith("blocks.")]
        return [r["acc"][i][j] for i in idx for j in (0, r["checkpoints"].index("t=0"))]

    (mp, sp), (mr, sr) = _mean_and_se(blocks(plain), plain["n_test"]), _mean_and_se(blocks(res), res["n_test"])
    se = math.hypot(sp, sr)
    return claim(
        "reinit.residual-more-robust", "Residual nets have more robust layers than plain ones", SOURCE
        + "; both MLPs share their width, depth and recipe and differ only in the skip connection",
        {"residual_blocks_mean": mr, "plain_blocks_mean": mp, "se": se, "n_test": plain["n_test"]},
        "mean accuracy over the hidden blocks, re-initialised to t = 0 and re-randomised, is higher in the residual "
        f"MLP, {noise_words(se)}", at_least(mr - mp, 0.0, se),
        f"blocks changed one at a time (t = 0 and re-randomised, mean): residual {pct(mr)}, plain {pct(mp)} "
        f"({pts(mr - mp)}).")


def _plain_config(c: Any) -> dict[str, Any]:
    """A result's config as a dict: the dataclass in a fresh result, a dict once read back from the store."""
    return c if isinstance(c, dict) else dataclasses.asdict(c)


def focus_claims(f: dict[str, Any]) -> list[dict[str, Any]]:
    """The layer in focus, against the paper's notion of a robust layer (this lab's 90 % threshold)."""
    c, n = _plain_config(f["config"]), f["n_test"]
    what = "re-randomised" if c["op"] == "rerand" else f"re-initialised to t = {c['checkpoint']}"
    thr = f["chance"] + ROBUST_KEEP * (f["base_acc"] - f["chance"])
    se = diff_se(f["cut_acc"], f["base_acc"], n)
    return [claim(
        "reinit.focus-robust", f"The layer in focus is robust to this change ({what})", SOURCE,
        {"cut_acc": f["cut_acc"], "base_acc": f["base_acc"], "chance": f["chance"], "threshold": thr, "se": se,
         "n_test": n},
        f"the changed model keeps at least {ROBUST_KEEP:.0%} of the above-chance accuracy (above {pct(thr)}), "
        + noise_words(se), at_least(f["cut_acc"], thr, se),
        f"{c['layer']} {what}: {pct(f['cut_acc'])} (trained {pct(f['base_acc'])}, chance {pct(f['chance'])}); "
        f"it keeps {f['kept_share']:.0%} of the above-chance accuracy.", subject=f"{MODEL_NAMES[c['model']]}, "
        f"{c['layer']}")]


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
    depth: Optional[int] = param(None, "A smaller model for a quick look (default: the classroom model).", lo=1,
                                 hi=32)
    width: Optional[int] = param(None, "Width of the smaller model (default: the classroom model).", lo=4, hi=1024)
    epochs: Optional[int] = param(None, "Training epochs (default: the classroom recipe).", lo=1, hi=200)

    def __post_init__(self) -> None:
        check(self)
        names = parse_layers(self.layers)
        known = layer_names(self.base)  # the base config validates the shared fields
        unknown = [x for x in names if x not in known]
        if unknown:
            raise ValueError(f"unknown layer {unknown[0]!r}; this model has {', '.join(known)}")
        # one spelling per group: the model's own order, so blocks.2,blocks.1 and blocks.1,blocks.2 share a result
        object.__setattr__(self, "layers", ",".join(x for x in known if x in names))

    @property
    def base(self) -> ReinitConfig:
        return ReinitConfig(self.model, self.seed, self.depth, self.width, self.epochs)


def _source(t: Trained, op: str, checkpoint: int, redraw_seed: int) -> dict[str, torch.Tensor]:
    if op == "rerand":
        return build(t.spec.model, redraw_seed).state_dict()
    if op == "reinit":
        if checkpoint not in t.checkpoints:
            raise ValueError(f"no checkpoint at epoch {checkpoint}; this model kept epochs {sorted(t.checkpoints)}")
        return t.checkpoints[checkpoint]
    raise ValueError(f"unknown operation {op!r}; choose reinit or rerand")


@entry("reinit-group")
def group(cfg: GroupConfig, progress: Progress) -> dict[str, Any]:
    """The layers changed together, and each alone: does the damage add up? (cached; held-out accuracies)"""
    t = trained(cfg.base.spec, span(progress, 0.0, 0.9))
    d = t.data
    names = parse_layers(cfg.layers)
    src = _source(t, cfg.op, cfg.checkpoint, cfg.base.redraw_seed)
    base = accuracy(t.model, d.test.x, d.test.y)
    together = accuracy(surgery.with_layers(t.model, names, src), d.test.x, d.test.y)
    alone = [accuracy(surgery.with_layers(t.model, [name], src), d.test.x, d.test.y) for name in names]
    out = {"config": cfg, "layers": list(names), "base_acc": base, "group_acc": together, "single_accs": alone,
           "single_damages": [base - a for a in alone], "sum_single_damage": sum(base - a for a in alone),
           "group_damage": base - together, "chance": d.chance, "n_test": len(d.test)}
    return {**out, "claims": [group_claim(out)]}


def group_claim(g: dict[str, Any]) -> dict[str, Any]:
    """Jointly fragile: the group costs more than the sum of its layers' single costs (noise of every accuracy)."""
    n, k = g["n_test"], len(g["layers"])
    extra = g["group_damage"] - g["sum_single_damage"]
    se = math.sqrt(binomial_se(g["group_acc"], n) ** 2 + sum(binomial_se(a, n) ** 2 for a in g["single_accs"])
                   + ((k - 1) * binomial_se(g["base_acc"], n)) ** 2)
    c = _plain_config(g["config"])
    what = "re-randomised" if c["op"] == "rerand" else f"re-initialised to t = {c['checkpoint']}"
    return claim(
        "reinit.group-jointly-fragile", "Layers can be fragile together: changing a group at once costs more than "
        "the sum of what each layer costs alone", SOURCE + "; the group and its layers get the same change",
        {"group_damage": g["group_damage"], "sum_single_damage": g["sum_single_damage"], "se": se, "n_test": n},
        f"damage of the group exceeds the sum of the single damages, {noise_words(se)} (a group of one layer "
        "cannot tell: the two are the same change)", at_least(extra, 0.0, se),
        f"{', '.join(g['layers'])} {what}: together {pct(g['group_acc'])} (damage {pts(g['group_damage'])}), the sum "
        f"of the single damages {pts(g['sum_single_damage'])} (alone: "
        + ", ".join(f"{name} {pct(a)}" for name, a in zip(g["layers"], g["single_accs"], strict=True)) + ").",
        subject=f"{MODEL_NAMES[c['model']]}, {len(g['layers'])} layers")


# -- width: the same MLP at several widths (each map cached on its own, by `run`) ----------------------------------
WIDTHS = (32, 64, 128, 256)
WIDTH_MODELS = ("plain", "residual")


def width_sweep(model: str, seed: int, widths: tuple[int, ...] = WIDTHS, progress: Progress = silent,
                pool: Pool = serial, depth: Optional[int] = None, epochs: Optional[int] = None) -> dict[str, Any]:
    """The robustness map of the MLP at each width (same depth, recipe and seed), with the width claim; depth and
    epochs: None = the classroom model (tests shrink them)."""
    if model not in WIDTH_MODELS:
        raise ValueError(f"the width sweep is for the MLPs ({', '.join(WIDTH_MODELS)}), not {model!r}")
    ws = sorted(set(widths))
    if len(ws) < 2:
        raise ValueError("a width sweep needs at least two widths")
    maps = pool([(run, ReinitConfig(model=model, seed=seed, depth=depth, width=w, epochs=epochs)) for w in ws],
                progress)
    out = {"model": model, "model_name": MODEL_NAMES[model], "seed": seed, "widths": ws, "layers": maps[0]["layers"],
           "t0_acc": [_col(m, "t=0") for m in maps], "rerand_acc": [_col(m, RERAND) for m in maps],
           "base_acc": [m["base_acc"] for m in maps], "chance": maps[0]["chance"], "n_test": maps[0]["n_test"]}
    return {**out, "claims": [width_claim(out)]}


def top_layers(layers: list[str]) -> list[int]:
    """The upper half of a model's layers (the head included): the paper's "top layers"."""
    return list(range(len(layers) // 2, len(layers)))


def width_claim(w: dict[str, Any]) -> dict[str, Any]:
    """Wider nets have more robust top layers: the mean share of above-chance accuracy the top layers keep at t = 0,
    widest against narrowest."""
    n, chance, top = w["n_test"], w["chance"], top_layers(w["layers"])

    def kept(j: int) -> tuple[float, float]:
        base, gap = w["base_acc"][j], max(w["base_acc"][j] - chance, 1e-9)
        accs = [w["t0_acc"][j][i] for i in top]
        share = sum(kept_share(a, base, chance) for a in accs) / len(accs)
        return share, math.sqrt(sum(binomial_se(a, n) ** 2 for a in accs)) / len(accs) / gap

    (lo, se_lo), (hi, se_hi) = kept(0), kept(len(w["widths"]) - 1)
    se = math.hypot(se_lo, se_hi)
    shares = [kept(j)[0] for j in range(len(w["widths"]))]
    return claim(
        f"reinit.{w['model']}-wider-more-robust-top", "Wider networks have more robust top layers", SOURCE
        + f"; here one MLP per width ({', '.join(map(str, w['widths']))}), the same depth, recipe and seed; top "
        "layers = the upper half, head included",
        {"widths": w["widths"], "top_kept_share": shares, "se": se, "n_test": n},
        f"the top layers, re-initialised to t = 0 one at a time, keep a larger mean share of the above-chance "
        f"accuracy at width {w['widths'][-1]} than at {w['widths'][0]}, {noise_words(se)}",
        at_least(hi - lo, 0.0, se),
        "mean share kept by the top layers at t = 0: " + ", ".join(
            f"width {x} {s:.0%}" for x, s in zip(w["widths"], shares, strict=True)) + ".",
        subject=w["model_name"])
