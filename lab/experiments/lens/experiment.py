"""Layer lens: where in the network is the answer decided? Read the hidden state after every slot of a frozen model.

`profile(ModelSeed)` trains (or loads: the same specs and seeds as the Delete, Shuffle and LayerDrop pages) one
model and measures, on the held-out split: the logit lens and a tuned lens per slot (accuracy, entropy, KL to the
final prediction), commitment depth per input, block influence and the angular-distance triangle, and what
deleting each block (and each pair of neighbours) really costs, and the rank checks the claims compare (claims.py
declares them and computes them when a result is read; this module does not import it, so rewording a claim
recomputes nothing; lab/ops/layer_lens.py has the methods). One entry per (model, seed) serves every control of the
page.
`run(LensConfig)` adds the logit lens of the same model after a change of route (a block deleted, two swapped, a
random order) beside the intact one.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, fields
from typing import Any, Optional

import numpy as np
import torch

from lab.core import metrics, model_registry, page_models, streams
from lab.core.models import RoutedModel
from lab.core.models.base import logits_of
from lab.core.page_models import ModelSeed
from lab.core.routes import without
from lab.core.zoo import trained
from lab.experiment import Pool, check, entry, param, seed_param, serial, task_param
from lab.ops import layer_lens as lens
from lab.ops import route_ops
from lab.runtime.progress import Progress, silent, span

# a subset of lab.core.model_registry.MODELS
MODELS = ("residual", "plain", "vit-sequential", "vit-shuffle", "layerdrop")
# The page's changes of route, each a word of the surgeries' registry (lab/ops/route_ops.py: OPS) applied to every
# block: "none" and "delete" are its aliases of identity and skip, the page's words, so that its links keep their
# values. The registry's random is "of the middle"; here the middle is every block.
ROUTE_OPS = ("none", "delete", "swap", "random")
ROUTE_OP_LABELS = {**route_ops.op_labels(ROUTE_OPS), "random": "every block in a random order"}
BOOTSTRAP = 200  # resamples of the held-out inputs for the error of a rank correlation
TUNED_INPUTS = 10_000  # training inputs the tuned lens is fitted on (the digits have 1,100)
EXAMPLES = 6  # early- and late-committing inputs shown


def slot_labels(route: tuple[int, ...]) -> list[str]:
    """'stem', then 'after b' for the block that ran at each slot."""
    return ["stem"] + [f"after {b}" for b in route]


# -- measurements on one model --------------------------------------------------------------------------------
def _commit_summary(depth: torch.Tensor, y: torch.Tensor, n_slots: int, n_classes: int) -> dict[str, Any]:
    hist = torch.bincount(depth, minlength=n_slots)
    per_class = [float(depth[y == c].double().mean()) if (y == c).any() else float("nan") for c in range(n_classes)]
    return {"depth": depth.tolist(), "hist": hist.tolist(), "mean": float(depth.double().mean()),
            "per_class": per_class}


def _examples(depth: torch.Tensor, x: torch.Tensor, y: torch.Tensor, pred: torch.Tensor,
              images: bool) -> dict[str, list[dict[str, Any]]]:
    """The earliest and the latest committing inputs (ties broken by index), with the image for the digits."""
    order = sorted(range(len(depth)), key=lambda i: (int(depth[i]), i))
    late = sorted(range(len(depth)), key=lambda i: (-int(depth[i]), i))

    def one(i: int) -> dict[str, Any]:
        out = {"index": i, "label": int(y[i]), "pred": int(pred[i]), "depth": int(depth[i])}
        if images:
            out["image"] = [round(float(v), 4) for v in x[i]]
        return out

    return {"early": [one(i) for i in order[:EXAMPLES]], "late": [one(i) for i in late[:EXAMPLES]]}


def _rank_check(score: np.ndarray, cost: np.ndarray, seed: int, salt: int) -> dict[str, Any]:
    """rho between the mean score and the mean cost of each item (columns), its bootstrap error over the inputs
    (rows) and the exact permutation p-value over the items."""
    s, c = score.mean(0), cost.mean(0)
    gen = np.random.default_rng(streams.seed_of("lens.bootstrap", seed, salt))
    return {"rho": metrics.spearman(s, c), "se": lens.bootstrap_rho(score, cost, BOOTSTRAP, gen),
            "p": metrics.permutation_p(s, c), "n": int(score.shape[1])}


@torch.no_grad()
def measure(m: RoutedModel, x: torch.Tensor, y: torch.Tensor, x_train: torch.Tensor, n_classes: int, seed: int,
            images: bool) -> dict[str, Any]:
    """Every lens measurement of a frozen model in its trained order (see the module docstring)."""
    n = m.n_blocks
    states = lens.slot_states(m, x)
    logit = lens.lens_logits(m, states)
    out_model = logits_of(m, x)
    st = lens.per_slot(logit, y)
    maps = lens.fit_tuned_lens(lens.slot_states(m, x_train))
    tuned = lens.tuned_logits(m, states, maps)
    ts = lens.per_slot(tuned, y, final=logit[-1])
    preds = torch.stack([lg.argmax(1) for lg in logit])
    depth = lens.commitment(preds)
    tdepth = lens.commitment(torch.cat([torch.stack([lg.argmax(1) for lg in tuned[:-1]]), preds[-1:]]))
    # the tuned lens's KL gain over the logit lens, per slot before the last, with its paired error
    gain = [st["kl_each"][s] - ts["kl_each"][s] for s in range(n)]
    # geometry of the stream, and what deleting really costs (per input, for the bootstrap)
    bi = torch.stack([metrics.block_influence(states[s], states[s + 1]) for s in range(n)], 1)
    tri = lens.angular_triangle(states)
    base_ok = metrics.correct(logit[-1], y).double()
    del_ok = torch.stack([metrics.correct(logits_of(m, x, without(n, [b])), y).double() for b in range(n)], 1)
    pair_ok = torch.stack([metrics.correct(logits_of(m, x, without(n, [b, b + 1])), y).double()
                           for b in range(n - 1)], 1)
    ang2 = torch.stack([tri[1][b] for b in range(n - 1)], 1)
    cost1, cost2 = base_ok[:, None] - del_ok, base_ok[:, None] - pair_ok
    return {
        "n_blocks": n, "n_test": len(y), "slots": slot_labels(tuple(range(n))),
        "base_acc": float(base_ok.mean()), "lens_exact": float((logit[-1] - out_model).abs().max()),
        "slot_acc": st["acc"], "entropy": st["entropy"], "kl_to_final": st["kl"], "agree": st["agree"],
        "tuned_slot_acc": ts["acc"], "tuned_entropy": ts["entropy"], "tuned_kl_to_final": ts["kl"],
        "tuned_agree": ts["agree"],
        "commit": {**_commit_summary(depth, y, n + 1, n_classes),
                   "examples": _examples(depth, x, y, preds[-1], images)},
        "tuned_commit": {k: v for k, v in _commit_summary(tdepth, y, n + 1, n_classes).items() if k != "depth"},
        "block_influence": bi.mean(0).tolist(),
        "angular_distance": [[None if v is None else float(v.mean()) for v in row] for row in tri],
        "delete_acc": del_ok.mean(0).tolist(), "delete_cost": cost1.mean(0).tolist(),
        "pair_delete_acc": pair_ok.mean(0).tolist(), "pair_delete_cost": cost2.mean(0).tolist(),
        "checks": {
            "influence": _rank_check(bi.numpy(), cost1.numpy(), seed, 1),
            "angular": _rank_check(ang2.numpy(), cost2.numpy(), seed, 2),
            "tuned": {"gain": [float(g.mean()) for g in gain],
                      "se": [float(g.std() / math.sqrt(len(g))) for g in gain]},
        },
    }


@dataclass(frozen=True)
class LensProfile:
    """`profile`'s answer: every lens measurement of one trained model (the keys of `measure`, see the module
    docstring) and its config."""

    n_blocks: int
    n_test: int
    slots: list[str]
    base_acc: float
    lens_exact: float
    slot_acc: list[float]
    entropy: list[float]
    kl_to_final: list[float]
    agree: list[float]
    tuned_slot_acc: list[float]
    tuned_entropy: list[float]
    tuned_kl_to_final: list[float]
    tuned_agree: list[float]
    commit: dict[str, Any]  # depth, hist, mean, per_class, examples (early and late)
    tuned_commit: dict[str, Any]  # hist, mean, per_class
    block_influence: list[float]
    angular_distance: list[list[Optional[float]]]
    delete_acc: list[float]
    delete_cost: list[float]
    pair_delete_acc: list[float]
    pair_delete_cost: list[float]
    checks: dict[str, Any]  # influence, angular: rank checks; tuned: the tuned lens's KL gain
    config: ModelSeed
    model: str
    chance: float
    train_seconds: float
    eval_seconds: float


@entry("lens-profile", result=LensProfile)
def profile(cfg: ModelSeed, progress: Progress) -> LensProfile:
    """Every lens measurement of one trained model (cached per model and seed)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.85))
    m, d = t.model, t.data
    progress(0.85, "reading every layer")
    t0 = time.perf_counter()
    out = measure(m, d.test.x, d.test.y, d.train.x[:TUNED_INPUTS], d.n_classes, cfg.seed,
                  images=cfg.model.startswith("vit"))
    out.update({"config": cfg, "model": cfg.model, "chance": d.chance, "train_seconds": t.info["seconds"],
                "eval_seconds": time.perf_counter() - t0})
    return LensProfile(**out)


# -- after a change ---------------------------------------------------------------------------------------------
_MLP, _VIT, _LAYERDROP = (model_registry.model(m) for m in ("residual", "vit-sequential", "layerdrop"))  # for the help


@dataclass(frozen=True)
class LensConfig:
    """The layer lens of one frozen model, intact and after a change of route."""

    model: str = param("vit-sequential", "The frozen trained model, shared with the other pages: the Delete page's "
                       f"residual or plain MLP ({_MLP.data_words}, {_MLP.blocks} blocks), the Shuffle page's "
                       f"{_VIT.title} on {_VIT.data_words} trained in order or with LayerShuffle, or the LayerDrop "
                       f"page's residual MLP ({_LAYERDROP.blocks} blocks, {_LAYERDROP.recipe_label}).", label="Model",
                       choices=MODELS, labels=model_registry.labels(MODELS))
    route_op: str = param("none", "A change of route whose lens is drawn beside the intact model's: none, block b "
                          "deleted, blocks b and b+1 swapped, or a random order (fixed by the seed).",
                          label="After a change", choices=ROUTE_OPS, labels=ROUTE_OP_LABELS)
    block: int = param(2, "Block b of delete and swap, numbered from 0.", label="Block b", lo=0,
                       hi=max(model_registry.model(m).blocks for m in MODELS) - 1)
    seed: int = seed_param("Fixes the trained model (the same seeds as the other pages) and the random order.")
    task: Optional[str] = task_param()

    def __post_init__(self) -> None:
        check(self)
        self.route(model_registry.model(self.model).blocks)
        object.__setattr__(self, "task", page_models.model_task(self.model, self.task))

    def route(self, n_blocks: int) -> tuple[int, ...]:
        """The changed route of an n-block model: the registry's operation on every block (ends included): the
        trained order, block b deleted (skip), b and b+1 swapped, or a random order from the stream `lens.random`
        (fixed by the seed, not by b)."""
        gen = streams.generator("lens.random", self.seed, n_blocks)
        return tuple(int(b) for b in route_ops.route_of(self.route_op, n_blocks, self.block, ends="include", gen=gen))

    @property
    def model_cfg(self) -> ModelSeed:
        return ModelSeed(self.model, self.seed, self.task)


@torch.no_grad()
def changed(m: RoutedModel, x: torch.Tensor, y: torch.Tensor, route: tuple[int, ...]) -> dict[str, Any]:
    """The logit lens of a changed route: accuracy, entropy, KL to the route's own final prediction, commitment."""
    logit = lens.lens_logits(m, lens.slot_states(m, x, route))
    st = lens.per_slot(logit, y)
    depth = lens.commitment(torch.stack([lg.argmax(1) for lg in logit]))
    return {"route": list(route), "slots": slot_labels(route), "acc": st["acc"][-1], "slot_acc": st["acc"],
            "entropy": st["entropy"], "kl_to_final": st["kl"],
            "commit_hist": torch.bincount(depth, minlength=len(route) + 1).tolist(),
            "commit_mean": float(depth.double().mean())}


@dataclass(frozen=True)
class LensChange:
    """The logit lens of the model after a change of route (`changed`), with the change's name."""

    op: str
    route: list[int]
    slots: list[str]
    acc: float
    slot_acc: list[float]
    entropy: list[float]
    kl_to_final: list[float]
    commit_hist: list[int]
    commit_mean: float


@dataclass(frozen=True)
class LensResult(LensProfile):
    """`run`'s answer: the model's lens profile with the run's config, and the lens after the chosen change (None
    for the intact model)."""

    config: LensConfig  # in the profile's place: the run's config, not the model's
    change: Optional[LensChange]


@entry("lens", result=LensResult)
def run(cfg: LensConfig, progress: Progress) -> LensResult:
    """The model's lens profile, plus the lens after the chosen change (None for the intact model)."""
    prof = profile(cfg.model_cfg, span(progress, 0.0, 0.95))
    change = None
    if cfg.route_op != "none":
        t = trained(cfg.model_cfg.spec)
        route = cfg.route(prof.n_blocks)
        change = LensChange(op=cfg.route_op, **changed(t.model, t.data.test.x, t.data.test.y, route))
    return LensResult(**{**{f.name: getattr(prof, f.name) for f in fields(prof)}, "config": cfg, "change": change})


# -- a table over models and seeds ----------------------------------------------------------------------------
def table(seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Every model's lens per slot (mean over seeds; profiles computed by `pool`; claims.py: `table_claims` reads
    every claim at every seed from the same stored profiles)."""
    jobs = [(mo, s) for mo in MODELS for s in seeds]
    profs = pool([(profile, ModelSeed(mo, s)) for mo, s in jobs], progress)
    per: dict[str, list[LensProfile]] = {}
    for (mo, _), p in zip(jobs, profs, strict=True):
        per.setdefault(mo, []).append(p)

    def mean(mo: str, key: str) -> list[float]:
        return [statistics.fmean(v) for v in zip(*(getattr(p, key) for p in per[mo]), strict=True)]

    return {"seeds": seeds,
            "rows": {mo: {"slot_acc": mean(mo, "slot_acc"), "tuned_slot_acc": mean(mo, "tuned_slot_acc"),
                          "base_acc": statistics.fmean(p.base_acc for p in ps), "chance": ps[0].chance,
                          "commit_mean": statistics.fmean(p.commit["mean"] for p in ps),
                          "per_seed": [{"seed": s, "slot_acc": p.slot_acc, "tuned_slot_acc": p.tuned_slot_acc,
                                        "rho": p.checks["influence"]["rho"]} for s, p in zip(seeds, ps, strict=True)]}
                     for mo, ps in per.items()}}
