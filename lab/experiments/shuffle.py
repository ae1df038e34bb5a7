"""Shuffle layers (LayerShuffle, Freiberger et al. 2024): train a tiny ViT on 8x8 digits with its blocks in a
fresh random order at every step, then ask how it copes with any order, with fewer blocks, and whether its
blocks know where they run.

Training modes (all on the same ViT shape and data):
  sequential  the ordinary model: blocks always run 0, 1, ..., D-1.
  shuffle     LayerShuffle: a fresh random permutation of the blocks at every training step.
  position    LayerShuffle-position: as shuffle, and every block adds a learned embedding of its current slot.
  predict     LayerShuffle-predict: as shuffle, and every block predicts its current slot (auxiliary loss).

`run(cfg)` evaluates one trained model (cached): accuracy in the trained order, over random orders, over all
orders when there are few enough, reversed, a pruning curve, and per-slot features (a PCA view and a linear
probe that predicts the slot). `umap_view(cfg)` is the slow UMAP view of the same points, cached separately
so a page can show PCA at once and UMAP when it is ready.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

import numpy as np
import torch

from lab.claims import all_of, at_least, at_most, binomial_se, claim, diff_se, noise_words, pct, pts
from lab.core import streams
from lab.core.data import Dataset
from lab.core.models import RoutedModel, accuracy
from lab.core.recipes import VIT_EPOCHS, VIT_MODE_LABELS, VIT_MODES, vit_spec
from lab.core.routes import random_permutation
from lab.core.zoo import ModelSpec, orders_budget, trained
from lab.experiment import check, entry, param, seed_param
from lab.ops import embed, walk
from lab.runtime.progress import Progress, silent, span

MODES = VIT_MODES
MODE_LABELS = VIT_MODE_LABELS
ORDER_CHOICES = (10, 20, 50, 100, 200)  # the page's menu; the CLI accepts any count in range

MAX_ALL_ORDERS = 720  # evaluate every order when depth! is at most this (6 blocks); otherwise sample
PRUNE_DRAWS = 10  # random subsets per number of removed blocks
FEATURE_ORDERS = 20  # random orders whose per-slot features feed the probe (half train, half test)
FEATURE_INPUTS = 200  # test images per order (half train, half test)
VIEW_ORDERS = 4  # orders and inputs whose points are drawn in the 2-D views (1,200 at depth 6: UMAP in ~2 s)
VIEW_INPUTS = 50


@dataclass(frozen=True)
class ShuffleConfig:
    """One training mode at one depth and seed; `orders` random orders are evaluated."""

    mode: str = param("shuffle", "sequential: the ordinary model, blocks always in order 0, 1, 2, ... · shuffle "
                      "(LayerShuffle): a fresh random order of the blocks at every training step · position: as "
                      "LayerShuffle, and each block is told its current slot by a learned slot embedding · predict: "
                      "as LayerShuffle, and each block learns to guess its current slot (an extra loss).",
                      label="Training mode", choices=MODES, labels=MODE_LABELS)
    depth: int = param(6, "Transformer blocks in the ViT. With 6 or fewer every order is also tested (6 blocks: 720 "
                       "orders).", label="Depth (blocks)", lo=2, hi=8)
    orders: int = param(50, "How many random block orders to test each model on (held-out digits).",
                        label="Random orders", lo=1, hi=1000)
    seed: int = seed_param("Fixes the initial weights, the data order and the training orders: same seed, same "
                           "numbers.")
    epochs: int = param(VIT_EPOCHS, "Training epochs.", lo=1, hi=200, cli=False)

    def __post_init__(self) -> None:
        check(self)

    @property
    def spec(self) -> ModelSpec:
        return vit_spec(self.mode, self.depth, self.seed, self.epochs)


# -- evaluation helpers (work on any RoutedModel) -----------------------------------------------------------
def random_orders(n_blocks: int, n: int, seed: int) -> list[tuple[int, ...]]:
    """n random orders of all blocks; the same for every training mode at a given depth and seed (fair)."""
    gen = streams.generator("orders.random", seed, n_blocks)
    return [random_permutation(n_blocks, gen) for _ in range(n)]


def summary(values: Sequence[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(v.mean()), "min": float(v.min()), "max": float(v.max()), "std": float(v.std())}


def all_orders_accuracy(model: RoutedModel, x: torch.Tensor, y: torch.Tensor,
                        progress: Progress = silent) -> list[float]:
    """Accuracy of every permutation of the blocks, in `itertools.permutations` order: one depth-first walk that
    shares common prefixes and runs each order's last block for what the readout reads (lab/ops/walk.py; the same
    bits as evaluating every order on its own)."""
    return walk.all_orders(model, x, y, progress)


def pruning_curve(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, draws: int, seed: int) -> list[dict[str, Any]]:
    """Accuracy with k blocks removed, k = 0..n-1: random subsets run in random order and in trained order."""
    n = model.n_blocks
    gen = streams.generator("orders.prune", seed, n)
    kept = [[tuple(int(i) for i in torch.randperm(n, generator=gen)[: n - k]) for _ in range(draws)]
            for k in range(n)]
    # every route of the curve in one walk (shared prefixes, the same bits as one accuracy() per route)
    routes = [r for rs in kept for route in rs for r in (route, tuple(sorted(route)))]
    accs = iter(walk.route_accuracies(model, x, y, routes))
    rows = []
    for k in range(n):
        pairs = [(next(accs), next(accs)) for _ in range(draws)]
        shuffled, ordered = [a for a, _ in pairs], [b for _, b in pairs]
        rows.append({"removed": k, "random_order": {**summary(shuffled), "accs": shuffled},
                     "trained_order": {**summary(ordered), "accs": ordered}, "routes": [list(r) for r in kept[k]]})
    return rows


@torch.no_grad()
def slot_features(model: RoutedModel, x: torch.Tensor, orders: Sequence[Sequence[int]]) -> np.ndarray:
    """The CLS token after every slot: array [order, slot, input, width] (the stream the next block reads)."""
    was = model.training
    model.eval()
    try:
        out = []
        for route in orders:
            _, states = model.states(x, route)
            out.append(torch.stack([s[:, 0] for s in states[1:]]).numpy())
        return np.stack(out)
    finally:
        model.train(was)


def _feature_orders(depth: int, seed: int) -> list[tuple[int, ...]]:
    gen = streams.generator("orders.features", seed, depth)
    return [random_permutation(depth, gen) for _ in range(FEATURE_ORDERS)]


def position_probe(model: RoutedModel, data: Dataset, seed: int) -> dict[str, Any]:
    """Held-out accuracy of a linear probe that reads the slot from the CLS token after that slot.

    Trained on half the orders and half the inputs, tested on the other orders *and* other inputs, so it can
    not memorise either. Chance is 1 / depth (every slot is equally frequent).
    """
    orders = _feature_orders(model.n_blocks, seed)
    x = data.test.x[:FEATURE_INPUTS]
    f = slot_features(model, x, orders)  # [O, S, I, W]
    o, s, i, w = f.shape
    slots = np.broadcast_to(np.arange(s)[None, :, None], (o, s, i))
    ho, hi = o // 2, i // 2

    def rows(os_: slice, is_: slice) -> tuple[np.ndarray, np.ndarray]:
        return f[os_, :, is_].reshape(-1, w), slots[os_, :, is_].reshape(-1)

    xa, ya = rows(slice(0, ho), slice(0, hi))
    xb, yb = rows(slice(ho, o), slice(hi, i))
    # The stream's norm grows as blocks add to it, which alone reveals roughly how many have run; the probe on
    # unit-length features shows what the *direction* of the stream says about the slot.
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True).clip(1e-8)  # noqa: E731
    return {"acc": embed.linear_probe(xa, ya, xb, yb), "acc_direction": embed.linear_probe(unit(xa), ya, unit(xb), yb),
            "chance": 1.0 / s, "n_train": len(ya), "n_test": len(yb)}


def view_points(model: RoutedModel, data: Dataset, seed: int) -> tuple[np.ndarray, dict[str, list[int]]]:
    """Features and labels of the points drawn in the 2-D views (a subset of the probe's test half)."""
    orders = _feature_orders(model.n_blocks, seed)[-VIEW_ORDERS:]
    part = slice(FEATURE_INPUTS - VIEW_INPUTS, FEATURE_INPUTS)  # inputs and orders the probe was tested on
    x, y = data.test.x[part], data.test.y[part]
    f = slot_features(model, x, orders)  # [O, S, I, W]
    o, s, i, w = f.shape
    grid = np.indices((o, s, i)).reshape(3, -1)
    block = np.array([[orders[a][b] for b in range(s)] for a in range(o)])
    labels = {"slot": grid[1].tolist(), "block": block[grid[0], grid[1]].tolist(),
              "cls": y.numpy()[grid[2]].tolist(), "order": grid[0].tolist()}
    return f.reshape(-1, w), labels


def block_slot_map(accs: Sequence[float], depth: int) -> dict[str, Any]:
    """Where each block works best, read from the all-orders table (no new walk): `acc[b][s]` is the mean held-out
    accuracy of the orders that run block b in slot s ((depth - 1)! of them each), `std[b][s]` their spread and
    `count` how many; `position_contribution[b][s]` is acc[b][s] minus the mean over all orders."""
    a = np.asarray(accs, dtype=np.float64)
    perms = np.array(list(itertools.permutations(range(depth))))  # [orders, slot] -> block
    if len(perms) != len(a):
        raise ValueError(f"the table has {len(a)} orders; {depth} blocks have {len(perms)}")
    acc = np.zeros((depth, depth))
    std = np.zeros((depth, depth))
    for s in range(depth):
        for b in range(depth):
            sel = a[perms[:, s] == b]
            acc[b, s], std[b, s] = sel.mean(), sel.std()
    return {"acc": acc.tolist(), "std": std.tolist(), "count": len(a) // depth,
            "position_contribution": (acc - a.mean()).tolist()}


# -- the experiment: one entry per piece, each cached on exactly what it depends on --------------------------
@dataclass(frozen=True)
class ModelConfig:
    """One trained ViT: what every per-model table depends on (the number of random orders does not)."""

    mode: str = "shuffle"
    depth: int = 6
    seed: int = 0
    epochs: int = VIT_EPOCHS

    @classmethod
    def of(cls, cfg: ShuffleConfig) -> "ModelConfig":
        return cls(cfg.mode, cfg.depth, cfg.seed, cfg.epochs)

    @property
    def spec(self) -> ModelSpec:
        return vit_spec(self.mode, self.depth, self.seed, self.epochs)


ViewConfig = ModelConfig  # the UMAP view belongs to the trained model too


def walks_all_orders(depth: int) -> bool:
    """Whether every order of `depth` blocks is evaluated (up to 6 blocks; the zoo's budget may allow fewer)."""
    return math.factorial(depth) <= orders_budget(MAX_ALL_ORDERS)


@entry("shuffle-model")
def model_summary(cfg: ModelConfig, progress: Progress) -> dict[str, Any]:
    """The trained model in its trained and reversed order, and its training record (trains it if needed)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.95))
    m, d = t.model, t.data
    n = m.n_blocks
    return {"config": cfg, "mode": cfg.mode, "n_blocks": n, "chance": d.chance, "n_test": len(d.test.y),
            "base_acc": accuracy(m, d.test.x, d.test.y),
            "reversed_acc": accuracy(m, d.test.x, d.test.y, tuple(reversed(range(n)))),
            "train_seconds": t.info["seconds"], "train_curve": t.info["test_acc"]}


@entry("shuffle-orders")
def orders_table(cfg: ModelConfig, progress: Progress) -> dict[str, Any]:
    """Held-out accuracy of every order of the blocks, in itertools.permutations order (depth <= 6)."""
    if not walks_all_orders(cfg.depth):
        raise ValueError(f"{math.factorial(cfg.depth)} orders are too many to walk; the table stops at "
                         f"{MAX_ALL_ORDERS}")
    t = trained(cfg.spec, span(progress, 0.0, 0.3))
    progress(0.3, f"evaluating all {math.factorial(cfg.depth)} orders")
    t0 = time.perf_counter()
    every = all_orders_accuracy(t.model, t.data.test.x, t.data.test.y, span(progress, 0.3, 1.0))
    return {"config": cfg, **summary(every), "n": len(every), "accs": every, "seconds": time.perf_counter() - t0}


@entry("shuffle-random")
def random_order_stats(cfg: ShuffleConfig, progress: Progress) -> dict[str, Any]:
    """Accuracy over `cfg.orders` random orders: read from the model's table of all orders when it has one."""
    orders = random_orders(cfg.depth, cfg.orders, cfg.seed)
    if walks_all_orders(cfg.depth):
        table = orders_table(ModelConfig.of(cfg), progress)
        index = {p: i for i, p in enumerate(itertools.permutations(range(cfg.depth)))}
        accs = [table["accs"][index[r]] for r in orders]
    else:
        t = trained(cfg.spec, span(progress, 0.0, 0.5))
        progress(0.5, f"{len(orders)} random orders")
        accs = walk.route_accuracies(t.model, t.data.test.x, t.data.test.y, orders, span(progress, 0.5, 1.0))
    return {**summary(accs), "accs": accs, "routes": [list(r) for r in orders]}


@entry("shuffle-pruning")
def pruning(cfg: ModelConfig, progress: Progress) -> list[dict[str, Any]]:
    """The pruning curve of the trained model (random subsets, in random and in trained order)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.5))
    progress(0.5, "pruning curve")
    return pruning_curve(t.model, t.data.test.x, t.data.test.y, PRUNE_DRAWS, cfg.seed)


@entry("shuffle-probe")
def probe_and_view(cfg: ModelConfig, progress: Progress) -> dict[str, Any]:
    """The slot probe and the PCA view of the per-slot features of the trained model."""
    t = trained(cfg.spec, span(progress, 0.0, 0.5))
    progress(0.5, "slot probe")
    probe = position_probe(t.model, t.data, cfg.seed)
    feats, labels = view_points(t.model, t.data, cfg.seed)
    return {"probe": probe, "view": {"pca": embed.pca_2d(feats).tolist(), **labels}}


def claim_modes(mode: str) -> tuple[str, ...]:
    """The modes whose pieces the claims of a run of `mode` read: the mode itself, the sequential baseline, and
    plain LayerShuffle (the reference for the slot probe of -position and -predict)."""
    out = [mode]
    for m in ("sequential", "shuffle"):
        if m not in out and (m == "sequential" or mode in ("position", "predict")):
            out.append(m)
    return tuple(out)


@entry("shuffle")
def run(cfg: ShuffleConfig, progress: Progress) -> dict[str, Any]:
    """One trained mode, evaluated: the pieces above put together (each cached on its own), the comparison models'
    pieces the claims need (`comparison`, by mode) and the claims."""
    m = ModelConfig.of(cfg)
    base = model_summary(m, span(progress, 0.0, 0.5))
    all_orders = None
    if walks_all_orders(cfg.depth):
        table = orders_table(m, span(progress, 0.5, 0.6))
        all_orders = {k: table[k] for k in ("mean", "min", "max", "std", "n", "accs")}
        all_orders["block_slot"] = block_slot_map(table["accs"], cfg.depth)
    rnd = random_order_stats(cfg, span(progress, 0.6, 0.63))
    prune = pruning(m, span(progress, 0.63, 0.66))
    pv = probe_and_view(m, span(progress, 0.66, 0.7))
    mine = {**base, "config": cfg, "random_orders": rnd, "all_orders": all_orders, "pruning": prune, **pv}
    runs = {cfg.mode: mine}
    others = claim_modes(cfg.mode)[1:]
    for i, other in enumerate(others):
        oc = replace(cfg, mode=other)
        part = span(progress, 0.7 + 0.3 * i / len(others), 0.7 + 0.3 * (i + 1) / len(others))
        runs[other] = {**model_summary(ModelConfig.of(oc), part), "random_orders": random_order_stats(oc, part),
                       "probe": probe_and_view(ModelConfig.of(oc), part)["probe"], "all_orders": None}
        if walks_all_orders(cfg.depth):  # the block x slot map of the comparison model (its table is stored)
            t = orders_table(ModelConfig.of(oc), part)
            runs[other]["all_orders"] = {"block_slot": block_slot_map(t["accs"], cfg.depth)}
    comparison = {k: {f: v[f] for f in ("mode", "base_acc", "reversed_acc", "chance", "n_test", "random_orders",
                                         "probe", "train_seconds", "all_orders")} for k, v in runs.items()
                  if k != cfg.mode}
    return {**mine, "comparison": comparison, "claims": claims(runs, cfg.mode),
            "position_contribution": {k: v["all_orders"]["block_slot"]["position_contribution"]
                                      for k, v in runs.items() if v.get("all_orders")}}


# -- the paper's claims, as data (lab/claims.py): pure functions of the pieces above ---------------------------
SOURCE = "Freiberger et al. 2024 (LayerShuffle), on ImageNet/CIFAR-100 ViTs; here a 6-block ViT on 8x8 digits"
RETAIN_ANY = 0.9  # "works in any order": the mean over random orders keeps 90 % of the trained order's margin
RETAIN_WORST = 0.5  # ... and the worst tested order keeps half of it
FALL = 0.5  # "falls towards chance": the mean over random orders keeps less than half of that margin


def _random_se(r: dict[str, Any]) -> float:
    """Noise of a model's mean accuracy over random orders: the test inputs (binomial) and the draw of orders."""
    ro = r["random_orders"]
    k = max(len(ro["accs"]), 1)
    return math.hypot(binomial_se(ro["mean"], r["n_test"]), ro["std"] / math.sqrt(k))


def _retained(r: dict[str, Any], value: float) -> float:
    """Share of the trained order's margin above chance that `value` keeps."""
    margin = r["base_acc"] - r["chance"]
    return (value - r["chance"]) / margin if margin > 0 else float("nan")


def claim_falls_to_chance(seq: dict[str, Any]) -> dict[str, Any]:
    """A sequential model in random orders falls towards chance: its mean keeps less than half of its margin."""
    ro, n = seq["random_orders"], seq["n_test"]
    thr = seq["chance"] + FALL * (seq["base_acc"] - seq["chance"])
    se = math.hypot(_random_se(seq), FALL * binomial_se(seq["base_acc"], n))
    holds = at_most(ro["mean"], thr, se)
    return claim("seq_random_chance", "A sequentially trained ViT run in random block orders falls towards chance",
                 SOURCE + " (the paper's baseline figure is approximate)",
                 {"sequential_acc": seq["base_acc"], "random_mean": ro["mean"], "random_min": ro["min"],
                  "orders": len(ro["accs"]), "chance": seq["chance"], "threshold": thr, "se": se, "n_test": n},
                 f"the mean over random orders keeps less than {FALL:.0%} of the trained order's margin above chance, "
                 f"i.e. stays below {pct(thr)}, {noise_words(se)}",
                 holds, f"trained order {pct(seq['base_acc'])}, mean of {len(ro['accs'])} random orders "
                 f"{pct(ro['mean'])} (worst {pct(ro['min'])}), chance {pct(seq['chance'])}: "
                 f"{_retained(seq, ro['mean']):.0%} of the margin kept; {n} held-out images",
                 subject="sequential")


def claim_any_order(shu: dict[str, Any], label: str) -> dict[str, Any]:
    """A LayerShuffle model works in any order: the mean over random orders keeps 90 % of the trained order's margin
    above chance, and the worst tested order keeps half of it."""
    ro, n = shu["random_orders"], shu["n_test"]
    margin = shu["base_acc"] - shu["chance"]
    thr_mean = shu["chance"] + RETAIN_ANY * margin
    thr_worst = shu["chance"] + RETAIN_WORST * margin
    se_mean = math.hypot(_random_se(shu), RETAIN_ANY * binomial_se(shu["base_acc"], n))
    se_worst = math.hypot(binomial_se(ro["min"], n), RETAIN_WORST * binomial_se(shu["base_acc"], n))
    holds = all_of([at_least(ro["mean"], thr_mean, se_mean), at_least(ro["min"], thr_worst, se_worst)])
    return claim("shuffle_any_order", "A LayerShuffle-trained ViT works in any block order", SOURCE,
                 {"trained_order_acc": shu["base_acc"], "random_mean": ro["mean"], "random_min": ro["min"],
                  "orders": len(ro["accs"]), "chance": shu["chance"], "threshold_mean": thr_mean,
                  "threshold_worst": thr_worst, "se_mean": se_mean, "se_worst": se_worst, "n_test": n},
                 f"the mean over random orders keeps {RETAIN_ANY:.0%} of the trained order's margin above chance "
                 f"(>= {pct(thr_mean)}) and the worst tested order keeps {RETAIN_WORST:.0%} (>= {pct(thr_worst)}), "
                 f"each {noise_words(se_mean)} for the mean, {noise_words(se_worst)} for the worst",
                 holds, f"trained order {pct(shu['base_acc'])}, mean of {len(ro['accs'])} random orders "
                 f"{pct(ro['mean'])}, worst {pct(ro['min'])}, chance {pct(shu['chance'])}; {n} held-out images",
                 subject=label)


def claim_costs_accuracy(seq: dict[str, Any], shu: dict[str, Any], label: str) -> dict[str, Any]:
    """LayerShuffle pays for order robustness: its mean over random orders against the sequential model in its trained
    order (the paper's "about 20 %" compares arbitrary orders with the sequential baseline)."""
    n = seq["n_test"]
    ro = shu["random_orders"]
    gap = seq["base_acc"] - ro["mean"]
    se = math.hypot(binomial_se(seq["base_acc"], n), _random_se(shu))
    holds = at_least(gap, 0.0, se)
    return claim("shuffle_costs_accuracy", "A LayerShuffle model in arbitrary orders is less accurate than the "
                 "sequential baseline (the paper: about 20 % lower)",
                 SOURCE + "; compared here: LayerShuffle's mean over random orders against the sequential model in "
                 "its trained order",
                 {"sequential_acc": seq["base_acc"], "random_mean": ro["mean"], "gap": gap,
                  "shuffle_trained_order_acc": shu["base_acc"], "se": se, "n_test": n},
                 f"the sequential model in its trained order beats LayerShuffle's mean over random orders "
                 f"{noise_words(se)}; the size is reported, not judged",
                 holds, f"sequential (trained order) {pct(seq['base_acc'])}, {label} over {len(ro['accs'])} random "
                 f"orders {pct(ro['mean'])}: {pts(-gap)} (relative {(-gap / seq['base_acc']):+.0%}; the paper: about "
                 f"-20 %); {label} in its own trained order {pct(shu['base_acc'])}",
                 subject=label)


def claim_slot_decodable(r: dict[str, Any], shu: Optional[dict[str, Any]], label: str) -> dict[str, Any]:
    """-position / -predict: the slot is decodable from the features, above chance and above plain LayerShuffle."""
    p = r["probe"]
    n = p["n_test"]
    se_c = binomial_se(p["acc"], n)
    vs_chance = at_least(p["acc"], p["chance"], se_c)
    measured = {"probe_acc": p["acc"], "chance": p["chance"], "n_train_rows": p["n_train"], "n_test_rows": n}
    if shu is None or shu.get("probe") is None:
        vs_shuffle: Optional[bool] = None
        more = "plain LayerShuffle's probe is not available"
    else:
        q = shu["probe"]
        se = diff_se(p["acc"], q["acc"], n, q["n_test"])
        vs_shuffle = at_least(p["acc"] - q["acc"], 0.0, se)
        measured.update({"shuffle_probe_acc": q["acc"], "se_diff": se})
        more = f"plain LayerShuffle {pct(q['acc'])} ({pts(p['acc'] - q['acc'])}, 2 SE = {100 * 2 * se:.1f} pts)"
    measured["se"] = se_c
    rows = (f"a logistic-regression probe trained on {p['n_train']:,} rows (10 random orders x 100 held-out digits x "
            f"{round(1 / p['chance'])} slots) and tested on {n:,} rows of 10 other orders and 100 other digits")
    return claim("slot_decodable", "Blocks of a LayerShuffle model told (or asked for) their position leave it "
                 "readable in their outputs", "Freiberger et al. 2024 show outputs clustering by position in UMAP; "
                 "this lab tests it with a linear probe on the CLS token after each slot, with the lab's split sizes; "
                 "-predict's stem starts at 0.2, the others at 0.1 (lab/core/recipes.py)",
                 measured,
                 "the probe beats chance (1/slots) and plain LayerShuffle's probe, each by more than 2 standard errors "
                 "(binomial on the test rows; rows share digits, so this understates the noise)",
                 all_of([vs_chance, vs_shuffle]),
                 f"{rows}: {pct(p['acc'])} against chance {pct(p['chance'])}; {more}", subject=label)


SPREAD_MIN = 0.02  # "contribute according to position": a block's accuracy varies by 2+ points across its slots


def claim_position_matters(r: dict[str, Any], seq: Optional[dict[str, Any]], label: str) -> dict[str, Any]:
    """Blocks contribute according to their position: from the block x slot map, the mean over blocks of (best slot
    - worst slot) of the block's accuracy, against SPREAD_MIN; noise: the spread of the orders inside the two cells
    (the images are shared by every cell, so their noise largely cancels in a difference)."""
    bs = r["all_orders"]["block_slot"]
    acc, std, k = np.asarray(bs["acc"]), np.asarray(bs["std"]), bs["count"]
    spreads, ses = [], []
    for b in range(len(acc)):
        hi, lo = int(acc[b].argmax()), int(acc[b].argmin())
        spreads.append(acc[b, hi] - acc[b, lo])
        ses.append(math.hypot(std[b, hi], std[b, lo]) / math.sqrt(k))
    spread, se = float(np.mean(spreads)), float(np.mean(ses))
    measured = {"mean_spread": spread, "spreads": spreads, "se": se, "orders_per_cell": k}
    more = ""
    if seq is not None and seq.get("all_orders"):
        sa = np.asarray(seq["all_orders"]["block_slot"]["acc"])
        measured["sequential_mean_spread"] = float(np.mean(sa.max(1) - sa.min(1)))
        more = f"; the sequential model's: {100 * measured['sequential_mean_spread']:.1f} pts"
    return claim("blocks_by_position", "Blocks of a LayerShuffle model contribute according to their position",
                 "Freiberger et al. 2024 (layers 'learn to contribute differently based on their position', from "
                 "per-layer analyses); here: held-out accuracy of every order, averaged over the orders that put a "
                 "block in a slot", measured,
                 f"a block's mean accuracy differs between its best and worst slot by more than {100 * SPREAD_MIN:.0f} "
                 f"points on average over blocks, {noise_words(se)} (the orders' spread in the two cells)",
                 at_least(spread, SPREAD_MIN, se),
                 f"best minus worst slot per block: {', '.join(f'{100 * d:.1f}' for d in spreads)} pts (mean "
                 f"{100 * spread:.1f}; {k} orders per cell){more}", subject=label)


def claims(runs: dict[str, dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The claims a run of `mode` tests, from the pieces of the modes in `claim_modes(mode)` (any piece that is
    missing leaves its claims out): each with its numbers, rule and three-way verdict."""
    out: list[dict[str, Any]] = []
    seq = runs.get("sequential")
    if seq is not None and seq.get("random_orders") is not None:
        out.append(claim_falls_to_chance(seq))
    subject = "shuffle" if mode == "sequential" else mode
    shu = runs.get(subject)
    if shu is not None and shu.get("random_orders") is not None:
        label = MODE_LABELS[subject]
        out.append(claim_any_order(shu, label))
        if seq is not None:
            out.append(claim_costs_accuracy(seq, shu, label))
        if shu.get("all_orders") and shu["all_orders"].get("block_slot"):
            out.append(claim_position_matters(shu, seq, label))
    r = runs.get(mode)
    if mode in ("position", "predict") and r is not None and r.get("probe") is not None:
        out.append(claim_slot_decodable(r, runs.get("shuffle"), MODE_LABELS[mode]))
    return out


@entry("shuffle-umap")
def umap_view(cfg: ModelConfig, progress: Progress) -> dict[str, Any]:
    """The UMAP view of the per-slot points of `probe_and_view` (cached; slow the first time)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.5))
    feats, labels = view_points(t.model, t.data, cfg.seed)
    progress(0.5, "UMAP: compiling (first use in this process)" if not embed.umap_is_warm() else "UMAP: embedding")
    embed.warm_umap()
    progress(0.7, "UMAP: embedding")
    t0 = time.perf_counter()
    xy = embed.umap_2d(feats, seed=cfg.seed)
    return {"config": cfg, "umap": xy.tolist(), **labels, "seconds": time.perf_counter() - t0}
