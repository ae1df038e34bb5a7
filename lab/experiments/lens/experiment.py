"""Layer lens: where in the network is the answer decided? Read the hidden state after every slot of a frozen model.

`profile(ModelConfig)` trains (or loads: the same specs and seeds as the Delete, Shuffle and LayerDrop pages) one
model and measures, on the held-out split: the logit lens and a tuned lens per slot (accuracy, entropy, KL to the
final prediction), commitment depth per input, block influence and the angular-distance triangle, and what
deleting each block (and each pair of neighbours) really costs, plus the claims that compare them (lab/ops/layer_lens.py
has the methods). One entry per (model, seed) serves every control of the page.
`run(LensConfig)` adds the logit lens of the same model after a change of route (a block deleted, two swapped, a
random order) beside the intact one.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

from lab import claims as C
from lab import estimates as E
from lab.claims import Z
from lab.core import metrics, streams
from lab.core.models import RoutedModel
from lab.core.models.base import logits_of
from lab.core.recipes import layerdrop_blocks, shared_blocks, shared_spec
from lab.core.routes import random_permutation, without
from lab.core.zoo import ModelSpec, trained
from lab.experiment import Pool, check, entry, param, seed_param, serial
from lab.ops import layer_lens as lens
from lab.runtime.progress import Progress, silent, span

MODELS = ("residual", "plain", "vit-sequential", "vit-shuffle", "layerdrop")
MODEL_LABELS = {"residual": "residual MLP", "plain": "plain MLP", "vit-sequential": "ViT, trained in order",
                "vit-shuffle": "ViT, trained with LayerShuffle", "layerdrop": "residual MLP, LayerDrop p = 0.5"}
ROUTE_OPS = ("none", "delete", "swap", "random")
ROUTE_OP_LABELS = {"none": "intact (trained order)", "delete": "delete block b", "swap": "swap blocks b and b+1",
                   "random": "every block in a random order"}
TUNED_INPUTS = 10_000  # training inputs the tuned lens is fitted on (the digits have 1,400)
BOOTSTRAP = 200  # resamples of the held-out inputs for the error of a rank correlation
RHO_BAR = 0.5  # "predicts": Spearman's rho at least this
P_BAR = 0.05  # and a random ranking of the blocks does as well at most this often
EXAMPLES = 6  # early- and late-committing inputs shown


def n_blocks(model: str) -> int:
    """Blocks of a model, without building it."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    return shared_blocks(model)


def model_spec(model: str, seed: int) -> ModelSpec:
    """The other pages' recipes: Delete's MLPs, Shuffle's 6-block ViTs, LayerDrop's residual MLP at p = 0.5."""
    n_blocks(model)
    return shared_spec(model, seed)


def route_of(op: str, n: int, block: int, seed: int) -> tuple[int, ...]:
    """The route of a change: the trained order, block b deleted, b and b+1 swapped, or a seeded random order."""
    if op not in ROUTE_OPS:
        raise ValueError(f"unknown route operation {op!r}; choose one of {', '.join(ROUTE_OPS)}")
    if op == "delete":
        if not 0 <= block < n:
            raise ValueError(f"block {block} is out of range for delete: this {n}-block model has blocks 0 to {n - 1}")
        return without(n, [block])
    if op == "swap":
        if not 0 <= block < n - 1:
            raise ValueError(f"block {block} is out of range for swap: b and b+1 must both exist, so choose b from 0 "
                             f"to {n - 2}")
        r = list(range(n))
        r[block], r[block + 1] = r[block + 1], r[block]
        return tuple(r)
    if op == "random":
        return random_permutation(n, streams.generator("lens.random", seed, n))
    return tuple(range(n))


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


@dataclass(frozen=True)
class ModelConfig:
    """One trained model: what every lens measurement depends on."""

    model: str = "vit-sequential"
    seed: int = 0

    def __post_init__(self) -> None:
        n_blocks(self.model)

    @property
    def spec(self) -> ModelSpec:
        return model_spec(self.model, self.seed)


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


@entry("lens-profile")
def profile(cfg: ModelConfig, progress: Progress) -> dict[str, Any]:
    """Every lens measurement of one trained model (cached per model and seed)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.85))
    m, d = t.model, t.data
    progress(0.85, "reading every layer")
    t0 = time.perf_counter()
    out = measure(m, d.test.x, d.test.y, d.train.x[:TUNED_INPUTS], d.n_classes, cfg.seed,
                  images=cfg.model.startswith("vit"))
    out.update({"config": cfg, "model": cfg.model, "chance": d.chance, "train_seconds": t.info["seconds"],
                "eval_seconds": time.perf_counter() - t0})
    out["claims"] = claims(out)
    return out


# -- after a change ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LensConfig:
    """The layer lens of one frozen model, intact and after a change of route."""

    model: str = param("vit-sequential", "The frozen trained model, shared with the other pages: the Delete page's "
                       "residual or plain MLP (synthetic 20-class task, 7 blocks), the Shuffle page's 6-block ViT on "
                       "8x8 digits trained in order or with LayerShuffle, or the LayerDrop page's residual MLP "
                       "(8 blocks, p = 0.5).", label="Model", choices=MODELS, labels=MODEL_LABELS)
    route_op: str = param("none", "A change of route whose lens is drawn beside the intact model's: none, block b "
                          "deleted, blocks b and b+1 swapped, or a random order (fixed by the seed).",
                          label="After a change", choices=ROUTE_OPS, labels=ROUTE_OP_LABELS)
    block: int = param(2, "Block b of delete and swap, numbered from 0.", label="Block b", lo=0,
                       hi=layerdrop_blocks("residual") - 1)
    seed: int = seed_param("Fixes the trained model (the same seeds as the other pages) and the random order.")

    def __post_init__(self) -> None:
        check(self)
        route_of(self.route_op, n_blocks(self.model), self.block, self.seed)

    @property
    def model_cfg(self) -> ModelConfig:
        return ModelConfig(self.model, self.seed)


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


@entry("lens")
def run(cfg: LensConfig, progress: Progress) -> dict[str, Any]:
    """The model's lens profile, plus the lens after the chosen change (None for the intact model)."""
    prof = profile(cfg.model_cfg, span(progress, 0.0, 0.95))
    change = None
    if cfg.route_op != "none":
        t = trained(cfg.model_cfg.spec)
        route = route_of(cfg.route_op, prof["n_blocks"], cfg.block, cfg.seed)
        change = {"op": cfg.route_op, **changed(t.model, t.data.test.x, t.data.test.y, route)}
    return {**prof, "config": cfg, "change": change}


# -- claims: pure functions of a profile's `checks` -------------------------------------------------------------
def _rank_claim(key: str, statement: str, source: str, chk: dict[str, Any], what: str, items: str,
                subject: Optional[str]) -> dict[str, Any]:
    rho, se, p, n = chk["rho"], chk["se"], chk["p"], chk["n"]
    if math.isnan(rho) or math.isnan(se):
        est = E.exact(0.0, "no ranking: every item ties")
        why = "one side has no spread (every item ties), so no ranking can be compared"
        test = C.test("Spearman rho", est, ">=", 0.0, unit="")
    else:
        est = E.Estimate(rho, se, "bootstrap", n, f"bootstrap over the held-out inputs ({BOOTSTRAP} draws)")
        why = (f"ρ = {rho:.2f} ± {se:.2f} (bootstrap over the held-out inputs); a random ordering of the {n} {items} "
               f"reaches ρ with exact permutation p = {p:.3f}")
        test = C.test("Spearman rho", est, ">=", RHO_BAR, unit="")
        if test["holds"] is True and p > P_BAR:
            # the inputs' noise would pass it, but so would a random ranking of this few items: undecided
            test = C.test("Spearman rho, against random rankings of the items",
                          E.exact(0.0, f"permutation p = {p:.3f} > {P_BAR}"), ">=", 0.0, unit="")
            why += f": with {n} {items}, a random ranking does this well too often to decide"
    rule = (f"Spearman ρ between {what} at least {RHO_BAR} by more than {Z:g} bootstrap standard errors (over the "
            f"held-out inputs), and a random ordering of the {items} reaches ρ at most {P_BAR:.0%} of the time "
            f"(exact permutation test; more often: cannot tell); below {RHO_BAR} by {Z:g} standard errors: does not "
            "hold; otherwise cannot tell")
    return C.claim(key, statement, source, {"rho": rho, "p": p, "n": n}, rule, [test], f"Over {n} {items}: {why}.",
                   subject)


def claims(prof: dict[str, Any]) -> list[dict[str, Any]]:
    """The papers' claims on one profile (synthetic `checks` in the tests)."""
    who = MODEL_LABELS.get(prof.get("model", ""), prof.get("model"))
    chk = prof["checks"]
    out = [
        _rank_claim("influence", "blocks that change their input least cost least to delete",
                    "Men et al. 2024 (ShortGPT), Block Influence on LLMs, Sec. 3. Here: the lab's small models, "
                    "influence 1 − cos(input, output) per token averaged over tokens and held-out inputs, cost = "
                    "held-out accuracy lost when that one block is skipped, no retraining", chk["influence"],
                    "a block's influence and the accuracy lost by deleting it", "blocks", who),
        _rank_claim("angular", "the run of n blocks whose input and output are closest in angle costs least to "
                    "delete", "Gromov et al. 2024, The Unreasonable Ineffectiveness of the Deeper Layers, angular "
                    "distance at the last token of LLMs, then healed. Here: n = 2 neighbours, the distance averaged "
                    "over every token (ViT) or the whole vector (MLP), no healing", chk["angular"],
                    "the angular distance across two neighbouring blocks and the accuracy lost by deleting both",
                    "pairs of neighbours", who),
    ]
    gain, se = chk["tuned"]["gain"], chk["tuned"]["se"]
    n_test = int(prof.get("n_test", 0))
    tests = [C.test(f"slot {i}", E.Estimate(g, s, "paired", n_test, "paired over the held-out inputs"), ">=", 0.0,
                     unit="nats") for i, (g, s) in enumerate(zip(gain, se, strict=True))]
    if not tests:
        tests = [C.test("no slot before the last", E.exact(0.0, "nothing to compare"), ">=", 0.0)]
    worst = min(range(len(gain)), key=lambda i: gain[i] / max(se[i], 1e-12)) if gain else 0
    out.append(C.claim(
        "tuned", "a tuned lens is closer to the final prediction than the logit lens at every layer",
        "Belrose et al. 2023, Eliciting Latent Predictions with the Tuned Lens (affine translators trained on the "
        "KL to the final output, LLMs). Here: a closed-form least-squares map of what the head reads at each slot "
        "onto the final state, fitted on the training split",
        {"kl_gain": gain, "slots": len(gain)},
        f"at every slot before the last, the mean KL to the final prediction drops through the tuned lens by more "
        f"than {Z:g} standard errors (paired over the held-out inputs); a slot where it rises by that much: does "
        "not hold; otherwise cannot tell", tests,
        f"KL gain (logit lens minus tuned lens, nats) per slot: {', '.join(f'{g:+.3f}' for g in gain)}; the "
        f"weakest is slot {worst} ({gain[worst]:+.3f} ± {se[worst]:.3f})." if gain else "No slot before the last.",
        who))
    return out


# -- a table over models and seeds ----------------------------------------------------------------------------
def table(seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Every model's lens per slot (mean over seeds) and every claim at every seed (profiles computed by `pool`)."""
    jobs = [(mo, s) for mo in MODELS for s in seeds]
    profs = pool([(profile, ModelConfig(mo, s)) for mo, s in jobs], progress)
    per: dict[str, list[dict[str, Any]]] = {}
    for (mo, _), p in zip(jobs, profs, strict=True):
        per.setdefault(mo, []).append(p)

    def mean(mo: str, key: str) -> list[float]:
        return [statistics.fmean(v) for v in zip(*(p[key] for p in per[mo]), strict=True)]

    return {"seeds": seeds,
            "rows": {mo: {"slot_acc": mean(mo, "slot_acc"), "tuned_slot_acc": mean(mo, "tuned_slot_acc"),
                          "base_acc": statistics.fmean(p["base_acc"] for p in ps), "chance": ps[0]["chance"],
                          "commit_mean": statistics.fmean(p["commit"]["mean"] for p in ps),
                          "per_seed": [{"seed": s, "slot_acc": p["slot_acc"], "tuned_slot_acc": p["tuned_slot_acc"],
                                        "rho": p["checks"]["influence"]["rho"]} for s, p in zip(seeds, ps,
                                                                                                strict=True)]}
                     for mo, ps in per.items()},
            "claims": [{**c, "seed": s} for mo in per for s, p in zip(seeds, per[mo], strict=True)
                       for c in p["claims"]]}
