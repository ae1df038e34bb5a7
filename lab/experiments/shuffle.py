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

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

import numpy as np
import torch

from .. import embed, quick
from ..data import Dataset
from ..models import RoutedModel, ViTConfig, accuracy
from ..progress import Progress, silent, span
from ..routes import random_permutation
from ..store import Store, default_store
from ..train import TrainConfig
from ..zoo import ModelSpec, trained

MODES = ("sequential", "shuffle", "position", "predict")
SLOT_MODE = {"sequential": "none", "shuffle": "none", "position": "position", "predict": "predict"}
MODE_LABELS = {"sequential": "sequential", "shuffle": "LayerShuffle", "position": "LayerShuffle-position",
               "predict": "LayerShuffle-predict"}

# Training recipe of every ViT here: about 95 % sequential test accuracy for 40-45 CPU-seconds (1 thread).
# Measured alternatives: lr 3e-3 (93.7 %), 30 epochs (95.5 %), batch 32 lr 1e-3 (94.5 %), L2 1e-3 (94.2 %).
EPOCHS = 20
BATCH = 64
LR = 2e-3

MAX_ALL_ORDERS = 720  # evaluate every order when depth! is at most this (6 blocks); otherwise sample
PRUNE_DRAWS = 10  # random subsets per number of removed blocks
FEATURE_ORDERS = 20  # random orders whose per-slot features feed the probe (half train, half test)
FEATURE_INPUTS = 200  # test images per order (half train, half test)
VIEW_ORDERS = 4  # orders and inputs whose points are drawn in the 2-D views (1,200 at depth 6: UMAP in ~2 s)
VIEW_INPUTS = 50


@dataclass(frozen=True)
class ShuffleConfig:
    """One training mode at one depth and seed; `orders` random orders are evaluated."""

    mode: str = "shuffle"
    depth: int = 6
    orders: int = 50
    seed: int = 0
    epochs: int = EPOCHS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown training mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if not 2 <= self.depth <= 8:
            raise ValueError(f"depth must be between 2 and 8 blocks, got {self.depth}")
        if not 1 <= self.orders <= 1000:
            raise ValueError(f"the number of random orders must be between 1 and 1000, got {self.orders}")
        if not 0 <= self.seed <= 2**31 - 1:
            raise ValueError("the seed must be a non-negative integer")
        if not 1 <= self.epochs <= 200:
            raise ValueError(f"epochs must be between 1 and 200, got {self.epochs}")

    @property
    def spec(self) -> ModelSpec:
        return vit_spec(self.mode, self.depth, self.seed, self.epochs)


def vit_spec(mode: str, depth: int = 6, seed: int = 0, epochs: int = EPOCHS) -> ModelSpec:
    """The digits ViT trained in a given mode (sequential, shuffle, position, predict)."""
    if mode not in MODES:
        raise ValueError(f"unknown training mode {mode!r}; choose one of {', '.join(MODES)}")
    train_mode = "sequential" if mode == "sequential" else "shuffle"
    return ModelSpec(ViTConfig(depth=depth, slot_mode=SLOT_MODE[mode]),
                     TrainConfig(epochs=epochs, batch=BATCH, lr=LR, seed=seed, mode=train_mode), task="digits")


# -- evaluation helpers (work on any RoutedModel) -----------------------------------------------------------
def random_orders(n_blocks: int, n: int, seed: int) -> list[tuple[int, ...]]:
    """n random orders of all blocks; the same for every training mode at a given depth and seed (fair)."""
    gen = torch.Generator().manual_seed(1_000_003 * n_blocks + seed)
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
    gen = torch.Generator().manual_seed(7_000_003 * n + seed)
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
    gen = torch.Generator().manual_seed(9_000_011 * depth + seed)
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


# -- the experiment ---------------------------------------------------------------------------------------
def _run(cfg: ShuffleConfig, progress: Progress) -> dict[str, Any]:
    t = trained(cfg.spec, span(progress, 0.0, 0.85))
    m, d = t.model, t.data
    x, y = d.test.x, d.test.y
    n = m.n_blocks
    progress(0.86, "evaluating random orders")
    orders = random_orders(n, cfg.orders, cfg.seed)
    accs = [accuracy(m, x, y, r) for r in orders]
    all_orders: Optional[dict[str, Any]] = None
    # Quick mode (UI smoke tests) only walks all orders up to 4 blocks: 720 orders of two ViTs cost a minute.
    if math.factorial(n) <= (24 if quick.quick() else MAX_ALL_ORDERS):
        progress(0.89, f"evaluating all {math.factorial(n)} orders")
        every = all_orders_accuracy(m, x, y)
        all_orders = {**summary(every), "n": len(every), "accs": every}
    progress(0.93, "pruning curve")
    prune = pruning_curve(m, x, y, PRUNE_DRAWS, cfg.seed)
    progress(0.96, "position probe")
    probe = position_probe(m, d, cfg.seed)
    feats, labels = view_points(m, d, cfg.seed)
    pca = embed.pca_2d(feats)
    return {
        "config": cfg,
        "mode": cfg.mode,
        "depth": n,
        "class_chance": d.chance,
        "trained_acc": accuracy(m, x, y),
        "reversed_acc": accuracy(m, x, y, tuple(reversed(range(n)))),
        "random_orders": {**summary(accs), "accs": accs, "routes": [list(r) for r in orders]},
        "all_orders": all_orders,
        "pruning": prune,
        "probe": probe,
        "view": {"pca": pca.tolist(), **labels},
        "train_seconds": t.info["seconds"],
        "train_curve": t.info["test_acc"],
    }


def run(cfg: ShuffleConfig, progress: Progress = silent, store: Store | None = None) -> dict[str, Any]:
    """One trained mode, evaluated (cached). Accuracies are on the held-out test split."""
    store = store or default_store()
    cfg = replace(cfg, epochs=quick.epochs(cfg.epochs))  # quick mode (UI tests) gets its own cache entry
    out = store.json("shuffle", cfg, lambda: _run(cfg, progress))
    progress(1.0, "done")
    return out


@dataclass(frozen=True)
class ViewConfig:
    """Which model's per-slot points to embed with UMAP (the orders setting does not change them)."""

    mode: str = "shuffle"
    depth: int = 6
    seed: int = 0
    epochs: int = EPOCHS

    @classmethod
    def of(cls, cfg: ShuffleConfig) -> "ViewConfig":
        return cls(cfg.mode, cfg.depth, cfg.seed, cfg.epochs)


def _umap_view(cfg: ViewConfig, progress: Progress) -> dict[str, Any]:
    t = trained(vit_spec(cfg.mode, cfg.depth, cfg.seed, cfg.epochs), span(progress, 0.0, 0.5))
    feats, labels = view_points(t.model, t.data, cfg.seed)
    progress(0.5, "UMAP: compiling (first use in this process)" if not embed.umap_is_warm() else "UMAP: embedding")
    embed.warm_umap()
    progress(0.7, "UMAP: embedding")
    t0 = time.perf_counter()
    xy = embed.umap_2d(feats, seed=cfg.seed)
    return {"config": cfg, "umap": xy.tolist(), **labels, "seconds": time.perf_counter() - t0}


def umap_view(cfg: ViewConfig, progress: Progress = silent, store: Store | None = None) -> dict[str, Any]:
    """The UMAP view of the per-slot points of `run` (cached; slow the first time)."""
    store = store or default_store()
    cfg = replace(cfg, epochs=quick.epochs(cfg.epochs))
    out = store.json("shuffle-umap", cfg, lambda: _umap_view(cfg, progress))
    progress(1.0, "done")
    return out
