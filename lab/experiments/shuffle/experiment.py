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
so a page can show PCA at once and UMAP when it is ready. The claims are declared in `claims.py` beside this module
and computed when a result is read (this module does not import it: rewording a claim recomputes nothing).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, fields, replace
from typing import Any, Optional, Sequence

import numpy as np
import torch

from lab import estimates as E
from lab.core import model_registry, streams
from lab.core.data import Dataset
from lab.core.models import RoutedModel, correct
from lab.core.models.base import evaluating
from lab.core.page_models import vit_spec
from lab.core.recipes import VIT_EPOCHS, VIT_MODE_LABELS, VIT_MODES
from lab.core.routes import random_orders as draw_orders
from lab.core.task_fit import check_task, on_task
from lab.core.zoo import ModelSpec, orders_budget, trained
from lab.experiment import check, entry, param, seed_param, task_param
from lab.ops import embed, walk
from lab.runtime.plain import to_plain
from lab.runtime.progress import Progress, silent, span

MODES = VIT_MODES
MODE_LABELS = VIT_MODE_LABELS
ORDER_CHOICES = (10, 20, 50, 100, 200)  # the page's menu; the CLI accepts any count in range

MAX_DEPTH = 12  # the Shuffle study's grid reaches a ViT-Base's depth (12 blocks); deeper costs minutes per model
MAX_ALL_ORDERS = 720  # evaluate every order when depth! is at most this (6 blocks); otherwise sample
ALL_ORDERS_DEPTH = max(d for d in range(1, 13) if math.factorial(d) <= MAX_ALL_ORDERS)
PRUNE_DRAWS = 10  # random subsets per number of removed blocks, where not every subset is run
MAX_SUBSETS = 35  # run every kept subset (in trained order) when there are at most this many
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
    depth: int = param(model_registry.model("vit-sequential").blocks, "Transformer blocks in the ViT. With "
                       f"{ALL_ORDERS_DEPTH} or fewer every order is also tested ({ALL_ORDERS_DEPTH} blocks: "
                       f"{math.factorial(ALL_ORDERS_DEPTH)} orders).", label="Depth (blocks)", lo=2, hi=MAX_DEPTH)
    orders: int = param(50, "How many random block orders to test each model on (held-out digits).",
                        label="Random orders", lo=1, hi=1000)
    seed: int = seed_param("Fixes the initial weights, the data order and the training orders: same seed, same "
                           "numbers.")
    epochs: int = param(VIT_EPOCHS, "Training epochs.", lo=1, hi=200, cli=False)
    task: str = task_param("digits")

    def __post_init__(self) -> None:
        check(self)
        check_task(self.task, "vit")

    @property
    def spec(self) -> ModelSpec:
        return on_task(vit_spec(self.mode, self.depth, self.seed, self.epochs), self.task)


# -- evaluation helpers (work on any RoutedModel) -----------------------------------------------------------
def random_orders(n_blocks: int, n: int, seed: int) -> list[tuple[int, ...]]:
    """n random orders of all blocks; the same for every training mode at a given depth and seed (fair)."""
    return draw_orders(n_blocks, n, "orders.random", seed, n_blocks)


def summary(values: Sequence[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(v.mean()), "min": float(v.min()), "max": float(v.max()), "std": float(v.std())}


def all_orders_outcomes(model: RoutedModel, x: torch.Tensor, y: torch.Tensor,
                        progress: Progress = silent) -> list[torch.Tensor]:
    """Per-input right/wrong of every permutation of the blocks, in `itertools.permutations` order: one depth-first
    walk that shares common prefixes and runs each order's last block for what the readout reads (lab/ops/walk.py;
    the same bits as evaluating every order on its own)."""
    return walk.route_outcomes(model, x, y, list(itertools.permutations(range(model.n_blocks))), progress)


def orders_walk(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, progress: Progress = silent
                ) -> tuple[list[torch.Tensor], dict[tuple[int, ...], torch.Tensor]]:
    """`all_orders_outcomes`, and the outcomes of every shorter order (each ordered choice of 1 to n - 1 blocks) from
    the same walk: each is a node the walk passes through, so they cost a readout each, not a block run."""
    n = model.n_blocks
    full = list(itertools.permutations(range(n)))
    shorter = [r for k in range(1, n) for r in itertools.permutations(range(n), k)]
    outs = walk.route_outcomes(model, x, y, full + shorter, progress)
    return outs[:len(full)], dict(zip(shorter, outs[len(full):], strict=True))


def all_orders_accuracy(model: RoutedModel, x: torch.Tensor, y: torch.Tensor,
                        progress: Progress = silent) -> list[float]:
    """Accuracy of every permutation of the blocks, in `itertools.permutations` order (`all_orders_outcomes`)."""
    return [float(c.float().mean()) for c in all_orders_outcomes(model, x, y, progress)]


def prune_routes(n: int, draws: int, seed: int) -> list[dict[str, Any]]:
    """The routes of the pruning curve, per number k of removed blocks: every kept subset in every order when there
    are at most MAX_ALL_ORDERS of them (random order: the mean is then exact over orders), every subset in its
    trained order when there are at most MAX_SUBSETS, otherwise `draws` random subsets (one random order each; the
    trained-order routes are the same subsets sorted, so the two share their draws)."""
    gen = streams.generator("orders.prune", seed, n)
    budget = orders_budget(MAX_ALL_ORDERS)
    out = []
    for k in range(n):
        keep = n - k
        sampled = [tuple(int(i) for i in torch.randperm(n, generator=gen)[:keep]) for _ in range(draws)]
        exact_r, exact_t = math.perm(n, keep) <= budget, math.comb(n, keep) <= MAX_SUBSETS
        out.append({"removed": k, "exact_random": exact_r, "exact_trained": exact_t, "sampled": sampled,
                    "random": list(itertools.permutations(range(n), keep)) if exact_r else sampled,
                    "trained": (list(itertools.combinations(range(n), keep)) if exact_t
                                else [tuple(sorted(r)) for r in sampled])})
    return out


def _over_routes(outcomes: Sequence[torch.Tensor], exact: bool) -> "OverRoutes":
    """Accuracy over a set of routes: summary, each route's accuracy, and per input how many routes got it right
    (the per-input scores a paired error needs)."""
    accs = [float(c.float().mean()) for c in outcomes]
    right = torch.stack(list(outcomes)).sum(0)
    return OverRoutes(**summary(accs), accs=accs, right=[int(v) for v in right], exact=exact)


def pruning_curve(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, draws: int, seed: int) -> list["PruneRow"]:
    """Accuracy with k blocks removed, k = 0..n-1, the kept blocks in random order and in trained order (every
    subset and order where `prune_routes` can, else random subsets)."""
    plan = prune_routes(model.n_blocks, draws, seed)
    # every route of the curve in one walk (shared prefixes, the same bits as one accuracy() per route)
    routes = [r for p in plan for r in (*p["random"], *p["trained"])]
    return _curve(plan, walk.route_outcomes(model, x, y, routes))


def pruning_curve_of(table: "OrdersTable", draws: int, seed: int) -> list["PruneRow"]:
    """`pruning_curve` read from the table of all orders: every route of the curve (an ordered choice of the kept
    blocks, in random or in trained order) is a full order or one of `table.prefixes`, walked on the same held-out
    inputs with the same bits (tests/test_shuffle.py checks it against `pruning_curve`)."""
    n = table.config.depth
    index = order_index(n)
    plan = prune_routes(n, draws, seed)

    def outcome(r: tuple[int, ...]) -> torch.Tensor:
        packed = table.outcomes[index[r]] if len(r) == n else table.prefixes[route_key(r)]
        return torch.from_numpy(E.unpack(packed))

    return _curve(plan, [outcome(r) for p in plan for r in (*p["random"], *p["trained"])])


def _curve(plan: list[dict[str, Any]], outcomes: Sequence[torch.Tensor]) -> list["PruneRow"]:
    outs = iter(outcomes)
    rows = []
    for p in plan:
        rnd = [next(outs) for _ in p["random"]]
        trn = [next(outs) for _ in p["trained"]]
        rows.append(PruneRow(removed=p["removed"], random_order=_over_routes(rnd, p["exact_random"]),
                             trained_order=_over_routes(trn, p["exact_trained"]),
                             routes=[list(r) for r in p["sampled"]]))
    return rows


def order_index(n: int) -> dict[tuple[int, ...], int]:
    """Each order of n blocks -> its row in a table of all orders (itertools.permutations order)."""
    return {p: i for i, p in enumerate(itertools.permutations(range(n)))}


def route_key(route: Sequence[int]) -> str:
    """A route as a table's key: its blocks joined by commas ("3,0,5")."""
    return ",".join(str(b) for b in route)


@torch.no_grad()
def slot_features(model: RoutedModel, x: torch.Tensor, orders: Sequence[Sequence[int]]) -> np.ndarray:
    """The CLS token after every slot: array [order, slot, input, width] (the stream the next block reads)."""
    with evaluating(model):
        out = []
        for route in orders:
            _, states = model.states(x, route)
            out.append(torch.stack([s[:, 0] for s in states[1:]]).numpy())
        return np.stack(out)


@torch.no_grad()
def added_slot_vectors(model: RoutedModel, x: torch.Tensor, features: np.ndarray,
                       orders: Sequence[Sequence[int]]) -> np.ndarray:
    """What the -position model's slot embedding added to the CLS token up to every slot, [order, slot, input,
    width] like `slot_features` (zeros for a model without one): before block b runs in slot s, its `slot_proj` of
    (stream, slot row) is added to the stream, so the slot is in the stream by construction; the features minus
    these vectors are what the blocks' attention and MLP (and the stem) wrote. `features` are `slot_features` of
    `x` in `orders`."""
    blocks = getattr(model, "blocks", None)
    if blocks is None or all(getattr(b, "slot_proj", None) is None for b in blocks):
        return np.zeros_like(features)
    with evaluating(model):
        stem = model.embed(x)[:, 0].numpy()  # the CLS token the first slot's block reads
        out = np.zeros_like(features)
        for o, route in enumerate(orders):
            total = torch.zeros(features.shape[2], features.shape[3])
            for s, b in enumerate(route):
                before = torch.from_numpy(stem if s == 0 else features[o, s - 1])  # the CLS token the block reads
                row = model._depth_row(s)
                total = total + blocks[b].slot_proj(torch.cat([before, row.expand(before.shape[0], -1)], dim=-1))
                out[o, s] = total.numpy()
        return out


def _feature_orders(depth: int, seed: int) -> list[tuple[int, ...]]:
    return draw_orders(depth, FEATURE_ORDERS, "orders.features", seed, depth)


def position_probe(model: RoutedModel, data: Dataset, seed: int) -> dict[str, Any]:
    """Held-out accuracy of a linear probe that reads the slot from the CLS token after that slot, on the raw
    features (`acc`) and on unit-length ones (`acc_direction`).

    Trained on half the orders and half the inputs, tested on the other orders *and* other inputs, so it can
    not memorise either. `acc_without_slot`: the same probe on unit-length features with the model's own added slot
    vectors removed (`added_slot_vectors`; the -position model's control, equal to `acc_direction` elsewhere).
    Chance is 1 / depth (every slot is equally frequent). `outcomes` keeps each test row's
    right/wrong (packed, rows in [order, slot, input] order, `shape`) for the clustered error: rows of one order
    or one digit are not independent.
    """
    orders = _feature_orders(model.n_blocks, seed)
    x = data.test.x[:FEATURE_INPUTS]
    f = slot_features(model, x, orders)  # [O, S, I, W]
    o, s, i, w = f.shape
    slots = np.broadcast_to(np.arange(s)[None, :, None], (o, s, i))
    ho, hi = o // 2, i // 2
    # The control of the -position model: its own added slot vectors removed (none elsewhere: the same probe).
    added = added_slot_vectors(model, x, f, orders)
    g = f - added

    def rows(feats: np.ndarray, os_: slice, is_: slice) -> tuple[np.ndarray, np.ndarray]:
        return feats[os_, :, is_].reshape(-1, w), slots[os_, :, is_].reshape(-1)

    xa, ya = rows(f, slice(0, ho), slice(0, hi))
    xb, yb = rows(f, slice(ho, o), slice(hi, i))
    ga, gb = rows(g, slice(0, ho), slice(0, hi))[0], rows(g, slice(ho, o), slice(hi, i))[0]
    # The stream's norm grows as blocks add to it, which alone reveals roughly how many have run; the probe on
    # unit-length features shows what the *direction* of the stream says about the slot.
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True).clip(1e-8)  # noqa: E731
    raw = embed.linear_probe_correct(xa, ya, xb, yb)
    direction = embed.linear_probe_correct(unit(xa), ya, unit(xb), yb)
    removed = direction if not added.any() else embed.linear_probe_correct(unit(ga), ya, unit(gb), yb)
    return {"acc": float(raw.mean()), "acc_direction": float(direction.mean()),
            "acc_without_slot": float(removed.mean()), "chance": 1.0 / s,
            "n_train": len(ya), "n_test": len(yb), "shape": [o - ho, s, i - hi],
            "outcomes": {"raw": E.pack(raw), "unit": E.pack(direction), "unit_without_slot": E.pack(removed)}}


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
    task: str = "digits"

    @classmethod
    def of(cls, cfg: ShuffleConfig) -> "ModelConfig":
        return cls(cfg.mode, cfg.depth, cfg.seed, cfg.epochs, cfg.task)

    @property
    def spec(self) -> ModelSpec:
        return on_task(vit_spec(self.mode, self.depth, self.seed, self.epochs), self.task)


def walks_all_orders(depth: int) -> bool:
    """Whether every order of `depth` blocks is evaluated (up to 6 blocks; the zoo's budget may allow fewer)."""
    return math.factorial(depth) <= orders_budget(MAX_ALL_ORDERS)


@dataclass(frozen=True)
class ModelSummary:
    """`model_summary`'s answer: the trained model in its trained and reversed order, and its training record."""

    config: ModelConfig
    mode: str
    n_blocks: int
    chance: float
    n_test: int
    base_acc: float
    reversed_acc: float
    outcomes: dict[str, str]  # packed per-input outcomes: "base" (trained order), "reversed"
    train_seconds: float
    train_curve: list[float]


@dataclass(frozen=True)
class OrdersTable:
    """`orders_table`'s answer: every order of the blocks, in itertools.permutations order."""

    config: ModelConfig
    mean: float
    min: float
    max: float
    std: float
    n: int
    accs: list[float]
    outcomes: list[str]  # packed per-input outcomes, one per order
    # packed outcomes of every shorter order (each ordered choice of 1 to n - 1 blocks, by `route_key`): the walk
    # passes through them on its way to the full orders, and the pruning curve reads them (`pruning_curve_of`)
    prefixes: dict[str, str]
    seconds: float


@dataclass(frozen=True)
class RandomOrders:
    """`random_order_stats`'s answer: accuracy over random orders (summary, each order's, its route and outcomes)."""

    mean: float
    min: float
    max: float
    std: float
    accs: list[float]
    routes: list[list[int]]
    outcomes: list[str]


@dataclass(frozen=True)
class OverRoutes:
    """Accuracy over a set of routes (`_over_routes`): summary, each route's, per input how many got it right."""

    mean: float
    min: float
    max: float
    std: float
    accs: list[float]
    right: list[int]
    exact: bool


@dataclass(frozen=True)
class PruneRow:
    """One point of the pruning curve: `removed` blocks gone, the rest in random and in trained order."""

    removed: int
    random_order: OverRoutes
    trained_order: OverRoutes
    routes: list[list[int]]  # the sampled kept subsets


@dataclass(frozen=True)
class ProbeView:
    """`probe_and_view`'s answer: the slot probe (`position_probe`) and the PCA view with its point labels."""

    probe: dict[str, Any]
    view: dict[str, Any]  # "pca" points and the label lists of `view_points`


@dataclass(frozen=True)
class UmapView:
    """`umap_view`'s answer: the UMAP points with the labels of `view_points`."""

    config: ModelConfig
    umap: list[list[float]]
    slot: list[int]
    block: list[int]
    cls: list[int]
    order: list[int]
    seconds: float


@entry("shuffle-model", result=ModelSummary)
def model_summary(cfg: ModelConfig, progress: Progress) -> ModelSummary:
    """The trained model in its trained and reversed order, and its training record (trains it if needed)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.95))
    m, d = t.model, t.data
    n = m.n_blocks
    base = correct(m, d.test.x, d.test.y)
    rev = correct(m, d.test.x, d.test.y, tuple(reversed(range(n))))
    return ModelSummary(config=cfg, mode=cfg.mode, n_blocks=n, chance=d.chance, n_test=len(d.test.y),
                        base_acc=float(base.float().mean()), reversed_acc=float(rev.float().mean()),
                        outcomes={"base": E.pack(base), "reversed": E.pack(rev)},
                        train_seconds=t.info["seconds"], train_curve=t.info["test_acc"])


@entry("shuffle-orders", result=OrdersTable)
def orders_table(cfg: ModelConfig, progress: Progress) -> OrdersTable:
    """Held-out accuracy of every order of the blocks, in itertools.permutations order (depth <= 6), and the
    outcomes of every shorter order on the way (scored where the walk passes; a readout of the CLS row each)."""
    if not walks_all_orders(cfg.depth):
        raise ValueError(f"{math.factorial(cfg.depth)} orders are too many to walk; the table stops at "
                         f"{MAX_ALL_ORDERS}")
    t = trained(cfg.spec, span(progress, 0.0, 0.3))
    progress(0.3, f"evaluating all {math.factorial(cfg.depth)} orders")
    t0 = time.perf_counter()
    outs, shorter = orders_walk(t.model, t.data.test.x, t.data.test.y, span(progress, 0.3, 1.0))
    every = [float(c.float().mean()) for c in outs]
    return OrdersTable(config=cfg, **summary(every), n=len(every), accs=every, outcomes=[E.pack(c) for c in outs],
                       prefixes={route_key(r): E.pack(c) for r, c in shorter.items()},
                       seconds=time.perf_counter() - t0)


@entry("shuffle-random", result=RandomOrders)
def random_order_stats(cfg: ShuffleConfig, progress: Progress) -> RandomOrders:
    """Accuracy over `cfg.orders` random orders: read from the model's table of all orders when it has one."""
    orders = random_orders(cfg.depth, cfg.orders, cfg.seed)
    if walks_all_orders(cfg.depth):
        table = orders_table(ModelConfig.of(cfg), progress)
        index = order_index(cfg.depth)
        accs = [table.accs[index[r]] for r in orders]
        outcomes = [table.outcomes[index[r]] for r in orders]
    else:
        t = trained(cfg.spec, span(progress, 0.0, 0.5))
        progress(0.5, f"{len(orders)} random orders")
        outs = walk.route_outcomes(t.model, t.data.test.x, t.data.test.y, orders, span(progress, 0.5, 1.0))
        accs, outcomes = [float(c.float().mean()) for c in outs], [E.pack(c) for c in outs]
    return RandomOrders(**summary(accs), accs=accs, routes=[list(r) for r in orders], outcomes=outcomes)


@entry("shuffle-pruning", result=list[PruneRow])
def pruning(cfg: ModelConfig, progress: Progress) -> list[PruneRow]:
    """The pruning curve of the trained model (random subsets, in random and in trained order): read from the
    table of all orders where there is one (it walks every route of the curve on its way), else walked."""
    if walks_all_orders(cfg.depth):
        return pruning_curve_of(orders_table(cfg, progress), PRUNE_DRAWS, cfg.seed)
    t = trained(cfg.spec, span(progress, 0.0, 0.5))
    progress(0.5, "pruning curve")
    return pruning_curve(t.model, t.data.test.x, t.data.test.y, PRUNE_DRAWS, cfg.seed)


@entry("shuffle-probe", result=ProbeView)
def probe_and_view(cfg: ModelConfig, progress: Progress) -> ProbeView:
    """The slot probe and the PCA view of the per-slot features of the trained model."""
    t = trained(cfg.spec, span(progress, 0.0, 0.5))
    progress(0.5, "slot probe")
    probe = position_probe(t.model, t.data, cfg.seed)
    feats, labels = view_points(t.model, t.data, cfg.seed)
    return ProbeView(probe=probe, view={"pca": embed.pca_2d(feats).tolist(), **labels})


def claim_modes(mode: str) -> tuple[str, ...]:
    """The modes whose pieces the claims of a run of `mode` read: the mode itself, the sequential baseline, and
    plain LayerShuffle (the subject when the run is sequential; the reference of -position's and -predict's slot
    probe)."""
    return (mode, *(m for m in ("sequential", "shuffle") if m != mode))


def _needs_pruning(mode: str, other: str) -> bool:
    """Whether the claims of a run of `mode` read the pruning curve of `other` (the sequential model, and plain
    LayerShuffle when it is the subject)."""
    return other == "sequential" or (other == "shuffle" and mode == "sequential")


def model_of(s: ModelSummary) -> dict[str, Any]:
    """A model's summary as the run's (and the page's) record of one model reads it: its fields, by name."""
    return {f.name: getattr(s, f.name) for f in fields(s)}


def all_orders_of(table: OrdersTable, depth: int) -> dict[str, Any]:
    """A run's `all_orders`: the table of all orders (without its config and timing) and its block x slot map."""
    return {"mean": table.mean, "min": table.min, "max": table.max, "std": table.std, "n": table.n,
            "accs": table.accs, "outcomes": table.outcomes, "block_slot": block_slot_map(table.accs, depth)}


@dataclass(frozen=True)
class ShuffleResult(ModelSummary):
    """`run`'s answer: one trained mode, evaluated (the fields of `model_summary` with the run's config, the pieces,
    the comparison modes' pieces the claims read and the block x slot maps the page draws). Its claims are
    computed when it is read (claims.py: `result_claims`)."""

    config: ShuffleConfig  # type: ignore[assignment] - the run's config in place of the model's
    random_orders: dict[str, Any]  # `random_order_stats`
    all_orders: Optional[dict[str, Any]]  # `orders_table` with its block x slot map; None past MAX_ALL_ORDERS
    pruning: list[dict[str, Any]]  # `pruning`
    probe: dict[str, Any]  # `probe_and_view`
    view: dict[str, Any]
    comparison: dict[str, dict[str, Any]]  # by mode: the comparison models' pieces
    position_contribution: dict[str, list[list[float]]]  # by mode: the block x slot map of every mode that has one


@entry("shuffle", result=ShuffleResult)
def run(cfg: ShuffleConfig, progress: Progress) -> ShuffleResult:
    """One trained mode, evaluated: the pieces above put together (each cached on its own), the comparison models'
    pieces the claims need (`comparison`, by mode)."""
    m = ModelConfig.of(cfg)
    base = model_summary(m, span(progress, 0.0, 0.5))
    all_orders = None
    if walks_all_orders(cfg.depth):
        all_orders = all_orders_of(orders_table(m, span(progress, 0.5, 0.6)), cfg.depth)
    rnd = to_plain(random_order_stats(cfg, span(progress, 0.6, 0.63)))
    prune = to_plain(pruning(m, span(progress, 0.63, 0.66)))
    pv = probe_and_view(m, span(progress, 0.66, 0.7))
    mine = {**model_of(base), "config": cfg, "random_orders": rnd, "all_orders": all_orders, "pruning": prune,
            "probe": pv.probe, "view": pv.view}
    runs = {cfg.mode: mine}
    others = claim_modes(cfg.mode)[1:]
    for i, other in enumerate(others):
        oc = replace(cfg, mode=other)
        part = span(progress, 0.7 + 0.3 * i / len(others), 0.7 + 0.3 * (i + 1) / len(others))
        runs[other] = {**model_of(model_summary(ModelConfig.of(oc), part)),
                       "random_orders": to_plain(random_order_stats(oc, part)),
                       "probe": probe_and_view(ModelConfig.of(oc), part).probe, "all_orders": None,
                       "pruning": (to_plain(pruning(ModelConfig.of(oc), part)) if _needs_pruning(cfg.mode, other)
                                   else None)}
        if walks_all_orders(cfg.depth):  # the comparison model's table of all orders (stored)
            runs[other]["all_orders"] = all_orders_of(orders_table(ModelConfig.of(oc), part), cfg.depth)
    comparison = {k: {f: v[f] for f in ("mode", "base_acc", "reversed_acc", "chance", "n_test", "random_orders",
                                         "probe", "train_seconds", "all_orders", "outcomes", "pruning")}
                  for k, v in runs.items() if k != cfg.mode}
    model = {k: v for k, v in model_of(base).items() if k != "config"}  # the run's config (with its orders) replaces it
    return ShuffleResult(**model, config=cfg, random_orders=rnd, all_orders=all_orders, pruning=prune, probe=pv.probe,
                         view=pv.view,
                         comparison=comparison,
                         position_contribution={k: v["all_orders"]["block_slot"]["position_contribution"]
                                                for k, v in runs.items() if v.get("all_orders")})


@entry("shuffle-umap", result=UmapView)
def umap_view(cfg: ModelConfig, progress: Progress) -> UmapView:
    """The UMAP view of the per-slot points of `probe_and_view` (cached; slow the first time)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.5))
    feats, labels = view_points(t.model, t.data, cfg.seed)
    progress(0.5, "UMAP: compiling (first use in this process)" if not embed.umap_is_warm() else "UMAP: embedding")
    embed.warm_umap()
    progress(0.7, "UMAP: embedding")
    t0 = time.perf_counter()
    xy = embed.umap_2d(feats, seed=cfg.seed)
    return UmapView(config=cfg, umap=xy.tolist(), **labels, seconds=time.perf_counter() - t0)
