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
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from .. import embed, presets, quick, streams
from ..data import Dataset
from ..experiment import check, entry, param, seed_param
from ..models import RoutedModel, accuracy
from ..progress import Progress, span
from ..recipes import VIT_EPOCHS, VIT_MODE_LABELS, VIT_MODES, vit_spec
from ..routes import random_permutation
from ..zoo import ModelSpec, trained

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


@torch.no_grad()
def all_orders_accuracy(model: RoutedModel, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    """Accuracy of every permutation of the blocks, in `itertools.permutations` order.

    A depth-first walk shares the work of common prefixes: 1,956 block runs for 6 blocks instead of 4,320.
    """
    was = model.training
    model.eval()
    n = model.n_blocks
    out: list[float] = []

    def walk(h: torch.Tensor, used: list[int]) -> None:
        if len(used) == n:
            out.append(float((model.readout(h).argmax(1) == y).float().mean()))
            return
        for b in range(n):
            if b not in used:
                walk(model.run_block(h, b, len(used)), used + [b])

    try:
        walk(model.embed(x), [])
    finally:
        model.train(was)
    return out


def pruning_curve(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, draws: int, seed: int) -> list[dict[str, Any]]:
    """Accuracy with k blocks removed, k = 0..n-1: random subsets run in random order and in trained order."""
    n = model.n_blocks
    gen = streams.generator("orders.prune", seed, n)
    rows = []
    for k in range(n):
        shuffled, ordered, kept = [], [], []
        for _ in range(draws):
            route = tuple(int(i) for i in torch.randperm(n, generator=gen)[: n - k])
            kept.append(list(route))
            shuffled.append(accuracy(model, x, y, route))
            ordered.append(accuracy(model, x, y, sorted(route)))
        rows.append({"removed": k, "random_order": {**summary(shuffled), "accs": shuffled},
                     "trained_order": {**summary(ordered), "accs": ordered}, "routes": kept})
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
    """Whether every order of `depth` blocks is evaluated (quick mode, for UI smoke tests: up to 4 blocks)."""
    return math.factorial(depth) <= (24 if quick.quick() else MAX_ALL_ORDERS)


@entry("shuffle-model")
def model_summary(cfg: ModelConfig, progress: Progress) -> dict[str, Any]:
    """The trained model in its trained and reversed order, and its training record (trains it if needed)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.95))
    m, d = t.model, t.data
    n = m.n_blocks
    return {"config": cfg, "mode": cfg.mode, "n_blocks": n, "chance": d.chance,
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
    every = all_orders_accuracy(t.model, t.data.test.x, t.data.test.y)
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
        accs = []
        for i, r in enumerate(orders):
            accs.append(accuracy(t.model, t.data.test.x, t.data.test.y, r))
            progress(0.5 + 0.5 * (i + 1) / len(orders), f"random order {i + 1} of {len(orders)}")
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


@entry("shuffle")
def run(cfg: ShuffleConfig, progress: Progress) -> dict[str, Any]:
    """One trained mode, evaluated: the pieces above put together (each cached on its own)."""
    m = ModelConfig.of(cfg)
    base = model_summary(m, span(progress, 0.0, 0.8))
    all_orders = None
    if walks_all_orders(cfg.depth):
        table = orders_table(m, span(progress, 0.8, 0.9))
        all_orders = {k: table[k] for k in ("mean", "min", "max", "std", "n", "accs")}
    rnd = random_order_stats(cfg, span(progress, 0.9, 0.93))
    prune = pruning(m, span(progress, 0.93, 0.96))
    pv = probe_and_view(m, span(progress, 0.96, 1.0))
    return {**base, "config": cfg, "random_orders": rnd, "all_orders": all_orders, "pruning": prune, **pv}


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


# -- the page's complete settings: its controls, presets, and what a setting needs (lab/presets.py) -----------
CONTROLS = {"mode": "shuffle", "depth": 6, "orders": 50, "colour": "slot", "removed": 2, "seed": 0}
COLOURS = ("slot", "block", "digit")  # the page's embedding colouring (a view, not part of the experiment)
PRESETS = (
    presets.preset(CONTROLS, "seq", "Sequential in random order", "How much does an ordinary ViT lose when its "
                   "blocks run in another order?", mode="sequential"),
    presets.preset(CONTROLS, "prune", "Prune half the blocks", "LayerShuffle, 3 of 6 blocks removed at test time: "
                   "which model degrades gracefully?", mode="shuffle", removed=3),
    presets.preset(CONTROLS, "position", "Do blocks know their slot?", "The -position variant, embedding coloured "
                   "by slot: does it separate by slot?", mode="position", colour="slot"),
    presets.preset(CONTROLS, "shallow", "Shallow: 3 blocks", "With 3 blocks only 6 orders exist: every one is "
                   "tested; 1 block removed.", depth=3, mode="shuffle", removed=1),
)


def needs(settings: dict[str, Any]) -> list[presets.Need]:
    """What the page computes for a setting: both compared models and the pieces of the chosen one."""
    cfg = ShuffleConfig(mode=settings["mode"], depth=settings["depth"], orders=settings["orders"],
                        seed=settings["seed"])
    other = "sequential" if cfg.mode != "sequential" else "shuffle"
    mine = ModelConfig.of(cfg)
    theirs = ModelConfig(other, cfg.depth, cfg.seed, cfg.epochs)
    train = 15 * cfg.depth  # the ViT recipe: about 90 s at depth 6 on the classroom machine
    return [presets.Need("this model", model_summary, mine, train),
            presets.Need("the comparison model", model_summary, theirs, train),
            presets.Need("random orders", random_order_stats, cfg, 5 + cfg.orders / 20),
            presets.Need("pruning curve", pruning, mine, 5),
            presets.Need("slot probe", probe_and_view, mine, 5)]
