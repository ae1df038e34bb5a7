"""IOT, instance-wise layer reordering (Zhu et al. 2021): every input chooses its own layer order.

The orders, the predictor and IOT training are `routing.py` beside this module; `compare` here trains IOT and
assembles its result against the baselines, and the entry points cache the pieces by exactly what each depends on:
- the sequential model: the zoo's (`model_registry.MODELS[model].spec`), shared with the Delete and Shuffle pages;
- `fixed_model(FixedConfig)`: one model trained alone in one candidate order, kept as its test and probe
  logits (a tensor entry; `fixed_logits` reads it). Candidate j does not depend on M (the candidates of M are the
  first M of M + 1), so raising M trains only the new orders;
- `observe(ObserveConfig)`: Part 1, the models trained alone in each of the M orders (per-order accuracy, the
  share of inputs each order wins, the oracle, the best fixed order chosen on the probe split), with its seed
  control;
- `seed_control(SeedControlConfig)`: the same oracle over M models of the trained order that differ only in their
  seed (the zoo's sequential models at M seeds): how large an oracle gap training noise alone gives. It depends on
  neither the order space nor the loss weights, so every setting of one model, M and seed shares it;
- `training(IOTConfig)`: Part 2, IOT training (shared weights + predictor) and its evaluation; the collapse
  figure asks for a second training with the exploration term off, cached under its own config.
`run(IOTConfig)` joins Part 1 and Part 2 (both stored: a repeated call reads two files and trains nothing).

Part 1 compares like with like (issue 57): candidate order j is trained at the seed of the control's model j
(`order_seed(seed, j) = control_seeds(seed, m)[j]`; order 0 is the sequential model at the run's own seed, which is
also the control's model 0). So the M orders and the M control models are M trainings at the same M seeds, with the
same initial weights and batch order seed by seed, and they differ only by the order. Without a preference of the
inputs the two sets are exchangeable: their oracle gaps have the same distribution, and the paired comparison of
the claims (claims.py) is centred at 0. Why this design and not the older one (every order at the run's seed,
the control at fresh seeds): orders that share one seed share its per-input errors, so their oracle gap was smaller
than M independent trainings' (measured in quick mode: orders disagreeing on 8.5-9.5 % of inputs against the
control's 13.6-14.5 %), and the claim said "does not hold" where there was nothing to find. Training each order at
a fresh seed of its own, apart from the control's, would also be exchangeable, but pairing order j with control
model j seed by seed makes the per-input differences smaller (what the seed gives both cancels) and trains nothing
more: the control's models are the zoo's sequential models at those seeds, which order j's training reads its
recipe from anyway.
The claims are declared in `claims.py` beside this module and computed when a result is read: `join` and
`sweep_of` give plain data with a type of its own (`JoinedRun`, `SweepOfM`), whose claims claims.py declares (this
module does not import it: rewording a claim recomputes nothing).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Sequence

import torch

from lab import estimates as E
from lab.core import metrics, model_registry, page_models
from lab.core.data import Dataset
from lab.core.models.base import RoutedModel
from lab.core.models.vit import ViTConfig
from lab.core.train import train
from lab.core.zoo import ModelSpec, Trained, build, task, trained
from lab.experiment import Pool, check, entry, param, seed_param, serial, task_param
from lab.experiments.iot import routing
from lab.runtime.cores import lanes
from lab.runtime.plain import to_plain
from lab.runtime.progress import Progress, silent, span
from lab.runtime.store import Store, resolve, use_store

MODELS = ("residual", "vit-sequential")  # names of lab/core/model_registry.MODELS: the Delete and Shuffle pages' models
_MLP, _VIT = (model_registry.model(m) for m in MODELS)  # for the help
SPACES = routing.SPACES
SPACE_LABELS = {"blocks": "block orders", "shared": "one sub-layer order for every block (the paper's; ViT, M = 2)",
                "sublayers": "a sub-layer order per block (the lab's extension; ViT)"}
M_MIN, M_MAX = 1, 8  # M = 1 is the sequential model itself (the sweep's first point); the page offers 2..8
M_DEFAULT = 4  # candidate orders of the default run (the page, the CLI and the table)
WEIGHT_MAX = 10.0
METHODS = ("sequential", "best_fixed", "shared_best", "ensemble", "iot", "oracle")


def _check_space(model: str, space: str, m: Optional[int] = None) -> None:
    if space in ("sublayers", "shared") and model_registry.model(model).family != "vit":
        raise ValueError("sub-layer orders (attention first or MLP first) exist only in the ViT; choose the ViT "
                         "model or block orders")
    if space == "shared" and m is not None and m > routing.SHARED_ORDERS:
        raise ValueError(f"one sub-layer order shared by every block has only {routing.SHARED_ORDERS} candidates "
                         f"(attention first or MLP first in every block): choose M = 1 or 2, or the per-block space")


@dataclass(frozen=True)
class IOTConfig:
    """One IOT run: candidate orders of a model, the training's loss weights, the seed."""

    model: str = param("residual", f"The network: the Delete page's {_MLP.title} ({_MLP.data_words}, seconds) "
                       f"or the Shuffle page's {_VIT.title} trained in order ({_VIT.data_words}, minutes).",
                       label="Model", choices=MODELS, labels=model_registry.labels(MODELS))
    space: str = param("blocks", "Which orders: permutations of the blocks; or (ViT only) one sub-layer order shared "
                       "by every block, the paper's space (attention first or MLP first everywhere: 2 orders); or "
                       "attention-first or MLP-first chosen for each block on its own (2^D orders, the lab's "
                       "extension).", label="Order space", choices=SPACES, labels=SPACE_LABELS)
    m: int = param(M_DEFAULT, "Candidate orders M: the trained order plus M - 1 others fixed by the seed.",
                   label="Candidate orders M", lo=M_MIN, hi=M_MAX)
    explore: float = param(1.0, "Weight of the exploration loss KL(uniform || batch-mean choice), which keeps "
                           "every order in use; 0 switches it off.", label="Exploration weight", lo=0.0,
                           hi=WEIGHT_MAX)
    exploit: float = param(0.1, "Weight of the exploitation loss (mean entropy of each input's choice), which "
                           "makes each choice unambiguous; 0 switches it off.", label="Exploitation weight",
                           lo=0.0, hi=WEIGHT_MAX)
    gumbel: bool = param(True, "Gumbel noise on the order weights during training (sampling); off = plain "
                         "softmax.", label="Gumbel-softmax")
    seed: int = seed_param("Fixes the initial weights, the data order, the candidate orders and the Gumbel draws: "
                           "same seed, same numbers.")
    task: Optional[str] = task_param()

    def __post_init__(self) -> None:
        check(self)
        _check_space(self.model, self.space, self.m)
        object.__setattr__(self, "task", page_models.model_task(self.model, self.task))

    @property
    def spec(self) -> ModelSpec:
        """The sequential model and the recipe every model of the run trains with."""
        return page_models.model_spec_on(self.model, self.seed, self.task)

    @property
    def observe_cfg(self) -> ObserveConfig:
        return ObserveConfig(self.model, self.space, self.m, self.seed, self.task)

    def explore_pair(self) -> tuple[IOTConfig, IOTConfig]:
        """(exploration on, off) for the collapse figure: this run and its twin; 'on' is the default weight when
        this run has it off."""
        on = self if self.explore > 0 else replace(self, explore=IOTConfig.explore)
        return on, replace(on, explore=0.0)


@dataclass(frozen=True)
class FixedConfig:
    """One model trained alone in candidate order `index` (index 0 is the sequential model itself), the orders drawn
    by `seed` and the model trained at `order_seed(seed, index)`."""

    model: str = "residual"
    space: str = "blocks"
    index: int = 1
    seed: int = 0
    task: Optional[str] = None

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        object.__setattr__(self, "task", page_models.model_task(self.model, self.task))
        _check_space(self.model, self.space, self.index + 1)
        if not 1 <= self.index < M_MAX:
            raise ValueError(f"candidate index must be 1..{M_MAX - 1}, got {self.index}")


@dataclass(frozen=True)
class ObserveConfig:
    """Part 1 for M candidate orders: each trained alone on the same data, order j at the control's seed j."""

    model: str = "residual"
    space: str = "blocks"
    m: int = M_DEFAULT
    seed: int = 0
    task: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", IOTConfig(model=self.model, space=self.space, m=self.m, seed=self.seed,
                                                   task=self.task).task)  # the same rules and messages


@dataclass(frozen=True)
class SeedControlConfig:
    """The seed control of Part 1: M models of the trained order, the run's own seed and M - 1 others."""

    model: str = "residual"
    m: int = M_DEFAULT
    seed: int = 0
    task: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", IOTConfig(model=self.model, m=self.m, seed=self.seed, task=self.task).task)


CONTROL_SEED_BASE = 10_000  # the control's extra seeds: apart from every page seed, disjoint between run seeds


def control_seeds(seed: int, m: int) -> list[int]:
    """The seeds of the control's M models: the run's own (its sequential model is order 0 of Part 1 too), then
    M - 1 seeds no other run's control shares (so controls measured at several seeds are independent)."""
    return [seed] + [CONTROL_SEED_BASE + M_MAX * seed + j for j in range(1, m)]


def order_seed(seed: int, index: int) -> int:
    """The training seed of candidate order `index` of a run at `seed`: the seed of the control's model `index`
    (`control_seeds`), so that order j and control model j differ only by the order (see the module docstring).
    It does not depend on M, so raising M trains only the new orders."""
    if not 0 <= index < M_MAX:
        raise ValueError(f"candidate index must be 0..{M_MAX - 1}, got {index}")
    return control_seeds(seed, index + 1)[index]


def _sequential(spec: ModelSpec, progress: Progress) -> Trained:
    """The zoo's sequential model; its `.spec` carries the recipe that really ran (quick mode included)."""
    return trained(spec, progress)


def _orders(space: str, m: int, seed: int, n_blocks: int) -> list[routing.Order]:
    return routing.candidate_orders(space, m, seed, n_blocks)


# -- the comparison ------------------------------------------------------------------------------------------
@dataclass
class Sequential:
    """A trained sequential model and its record (`seconds`, `cpu_seconds` (None when unknown), `test_acc`)."""

    model: RoutedModel
    seconds: float
    cpu_seconds: Optional[float]
    test_acc: list[float]


def train_sequential(spec: ModelSpec, data: Dataset) -> Sequential:
    """The ordinary loop on `spec` (callers with a store pass the zoo's model to `compare` instead)."""
    model = build(spec.model, spec.train.seed)
    c0 = time.thread_time()
    log = train(model, data.train, replace(spec.train, checkpoints=()), data.test)
    return Sequential(model, log.seconds, time.thread_time() - c0, log.test_acc)


def _timed(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _best_on_probe(acc: Sequence[float], loss: Sequence[float]) -> int:
    """The order with the best probe accuracy, ties broken by the lower probe loss.

    Why the tie-break: the digits probe split is carved from the training images, where every model scores 100 %.
    """
    return min(range(len(acc)), key=lambda j: (-acc[j], loss[j]))


def fixed_summary(test_logits: torch.Tensor, probe_logits: torch.Tensor, data: Dataset) -> dict[str, Any]:
    """Part 1 on models trained alone, one per candidate order: logits (M, N, C) on the test and probe splits.

    The best fixed order is chosen on the probe split and scored on the test split.
    """
    fobs = routing.observe(test_logits, data.test.y)
    fobs.pop("oracle_order")
    right = metrics.correct(test_logits, data.test.y)  # (M, N): per-input outcomes, for paired errors
    fprobe_obs = routing.observe(probe_logits, data.probe.y)
    fj = _best_on_probe(fprobe_obs["order_acc"], fprobe_obs["order_loss"])
    return {
        "fixed_acc": fobs["order_acc"],
        "fixed_probe_acc": fprobe_obs["order_acc"],
        "best_fixed_order": fj,
        "best_fixed_acc": fobs["order_acc"][fj],
        # the paper's Table 1 setting: separately trained orders, their per-input best and oracle
        "fixed_best_share": fobs["best_share"],
        "fixed_oracle_acc": fobs["oracle_acc"],
        "fixed_ensemble_acc": metrics.accuracy(test_logits.mean(0), data.test.y),
        "fixed_outcomes": [E.pack(r) for r in right],
    }


def compare(spec: ModelSpec, cfg: IOTConfig, progress: Progress = silent,
            sequential: Optional[Sequential] = None, fixed: bool = True) -> dict[str, Any]:
    """IOT against its baselines on the task, architecture and recipe of `spec` (same data, same seed; `cfg` gives
    the orders, the loss weights and the seed of the orders, `spec` the model).

    Baselines: `sequential_acc` (ordinary training, identity order; `sequential` passes a model already trained
    on `spec`, e.g. the store's); `fixed_acc` (one model trained alone in each candidate order; identity = the
    sequential model) and `best_fixed_acc` (the one with the best probe accuracy); `shared_best_acc` (the
    IOT-trained weights run in the one order that is best on the probe split); `ensemble_acc` (the shared
    weights, logits averaged over all M orders: M x compute); `oracle_acc` (the shared weights, right when any
    order is right). `fixed=False` skips the models trained alone (the stored `observe` has them). `iot_acc`
    runs each input in the predictor's order. Accuracies are on the test split;
    choices are made on the probe split. `choice_confusion[i][j]`: share of test inputs for which the predictor
    chose order i while order j had the lowest loss (the diagonal sums to `oracle_agreement`).
    """
    if isinstance(spec.model, ViTConfig) and spec.model.slot_mode != "none":
        raise ValueError("IOT trains plain models: the ViT's slot modes add losses and inputs it does not model")
    data = task(spec.task, seed=spec.train.seed)  # the run's seed's training draw (lab/core/data_draw.py)
    tc = spec.train
    te, pr = data.test, data.probe
    fixed_on = fixed and cfg.m > 1
    n_fixed = cfg.m - 1 if fixed_on else 0
    parts = 2 + n_fixed
    if sequential is None:  # sequential baseline: the ordinary loop
        progress(0.0, "training the sequential model")
        sequential = train_sequential(spec, data)
    seq = sequential.model
    orders = routing.candidate_orders(cfg.space, cfg.m, cfg.seed, seq.n_blocks)
    # one model per fixed candidate order; the identity is the sequential model itself
    fixed_models = [seq]
    fixed_secs = [sequential.seconds]
    for j, o in enumerate(orders[1:] if fixed_on else [], start=1):
        # order j at the control's seed j, as `fixed_model` trains it (the module docstring says why)
        spec_j = replace(spec, train=replace(tc, seed=order_seed(tc.seed, j)))
        mj, lg = routing.train_fixed(spec_j, o, task(spec.task, seed=spec_j.train.seed),
                                     span(progress, j / parts, (j + 1) / parts))
        fixed_models.append(mj)
        fixed_secs.append(lg.seconds)
    # IOT
    model = build(spec.model, tc.seed)
    pred = routing.Predictor(routing.stem_width(model, te.x), len(orders))
    log = routing.train_iot(model, pred, data.train, orders, tc, te, span(progress, (1 + n_fixed) / parts, 1.0),
                            explore=cfg.explore, exploit=cfg.exploit, gumbel=cfg.gumbel)

    seq_logits, seq_infer_s = _timed(lambda: routing.order_logits(seq, te.x, [orders[0]])[0])
    (iot_logits, choice, _), iot_infer_s = _timed(lambda: routing.iot_predict(model, pred, te.x, orders))
    shared_te, ens_s = _timed(lambda: routing.order_logits(model, te.x, orders))
    shared_pr = routing.order_logits(model, pr.x, orders)
    obs = routing.observe(shared_te, te.y)
    oracle_order = obs.pop("oracle_order")
    probe_obs = routing.observe(shared_pr, pr.y)
    probe_obs.pop("oracle_order")
    best_j = _best_on_probe(probe_obs["order_acc"], probe_obs["order_loss"])
    m = len(orders)
    shares = [float((choice == j).float().mean()) for j in range(m)]
    common_best = max(range(m), key=lambda j: obs["best_share"][j])
    # per-input outcomes of every accuracy and share the claims compare (packed bits: lab/estimates.py)
    outcomes = {"sequential": metrics.correct(seq_logits, te.y), "iot": metrics.correct(iot_logits, te.y),
                "agree": choice == oracle_order, "common_best": oracle_order == common_best,
                "top_choice": choice == max(range(m), key=lambda j: shares[j])}

    out: dict[str, Any] = {
        "config": cfg,
        "orders": [routing.order_label(o, cfg.space) for o in orders],
        "chance": data.chance,
        "n_blocks": seq.n_blocks,
        "sequential_acc": metrics.accuracy(seq_logits, te.y),
        "iot_acc": metrics.accuracy(iot_logits, te.y),
        "order_acc": obs["order_acc"],  # the shared (IOT-trained) weights in each candidate order
        "order_probe_acc": probe_obs["order_acc"],
        "best_share": obs["best_share"],
        "oracle_acc": obs["oracle_acc"],
        "shared_best_order": best_j,
        "shared_best_acc": obs["order_acc"][best_j],
        "ensemble_acc": metrics.accuracy(shared_te.mean(0), te.y),
        "choice_share": shares,
        "choice_share_per_class": [
            [float((choice[te.y == c] == j).float().mean()) for j in range(m)]
            for c in range(data.n_classes)
        ],
        "oracle_agreement": float((choice == oracle_order).float().mean()),
        "choice_confusion": [[float(((choice == i) & (oracle_order == j)).float().mean()) for j in range(m)]
                             for i in range(m)],
        "predictor_params": routing.parameter_count(pred),
        "predictor_share": routing.parameter_count(pred) / routing.parameter_count(model),
        "curves": {"loss": log.loss, "task_loss": log.task_loss, "test_acc": log.test_acc,
                   "choice_entropy": log.choice_entropy, "top_share": log.top_share,
                   "choice_share": log.choice_share, "sequential_test_acc": sequential.test_acc},
        "outcomes": {**{k: E.pack(v) for k, v in outcomes.items()},
                     "orders": [E.pack(r) for r in metrics.correct(shared_te, te.y)]},
    }
    if fixed_on:
        pairs = list(zip(fixed_models, orders, strict=True))
        fx_te = torch.stack([routing.order_logits(mj, te.x, [o])[0] for mj, o in pairs])
        fx_pr = torch.stack([routing.order_logits(mj, pr.x, [o])[0] for mj, o in pairs])
        out.update(fixed_summary(fx_te, fx_pr, data))
    else:  # without separate models the best fixed order is the sequential one
        out.update({"best_fixed_order": 0, "best_fixed_acc": out["sequential_acc"]})
    seq_runs = log.steps * seq.n_blocks
    out["cost"] = {
        "sequential_train_seconds": sequential.seconds,
        "sequential_train_cpu_seconds": sequential.cpu_seconds,
        "iot_train_seconds": log.seconds,
        "iot_train_cpu_seconds": log.cpu_seconds,
        "fixed_train_seconds": sum(fixed_secs),
        "train_time_ratio": log.seconds / max(sequential.seconds, 1e-9),
        "train_block_run_ratio": log.block_runs / seq_runs,
        "infer_block_run_ratio": 1.0,  # every input runs one order; the predictor is one small linear layer
        "ensemble_block_run_ratio": float(m),
        "infer_time_ratio": iot_infer_s / max(seq_infer_s, 1e-9),
        "ensemble_time_ratio": ens_s / max(seq_infer_s, 1e-9),
    }
    progress(1.0, "IOT comparison done")
    return out


@entry("iot-fixed", tensors=True)
def fixed_model(cfg: FixedConfig, progress: Progress) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """One model trained alone in one candidate order: its test and probe logits (kept as tensors) and its record.
    The orders are drawn by the run's seed; the model trains at `order_seed` with the recipe of the zoo's sequential
    model at that seed, which is the seed control's model `index` (the same initial weights and batches)."""
    s = order_seed(cfg.seed, cfg.index)
    t = _sequential(page_models.model_spec_on(cfg.model, s, cfg.task), span(progress, 0.0, 0.1))
    order = _orders(cfg.space, cfg.index + 1, cfg.seed, t.model.n_blocks)[cfg.index]
    d = t.data
    model, log = routing.train_fixed(t.spec, order, d, span(progress, 0.1, 1.0))
    tens = {"test": routing.order_logits(model, d.test.x, [order])[0],
            "probe": routing.order_logits(model, d.probe.x, [order])[0]}
    return tens, {"seconds": log.seconds, "cpu_seconds": log.cpu_seconds,
                  "order": routing.order_label(order, cfg.space), "seed": s}


def fixed_logits(cfg: FixedConfig, progress: Progress = silent) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """(test logits, probe logits, record) of one model trained alone in one candidate order (`fixed_model`)."""
    tens, meta = fixed_model(cfg, progress)
    return tens["test"], tens["probe"], meta


@dataclass(frozen=True)
class SeedControl:
    """`seed_control`'s answer: M sequential models that differ only in their seed, on held-out data."""

    config: SeedControlConfig
    seeds: list[int]
    n_test: int
    acc: list[float]  # each seed's model
    best: int  # index into `seeds`, chosen on the probe split
    best_acc: float
    oracle_acc: float
    outcomes: list[str]  # packed per-input outcomes of each seed's model


@entry("iot-seed-control", result=SeedControl)
def seed_control(cfg: SeedControlConfig, progress: Progress) -> SeedControl:
    """The oracle over M sequential models that differ only in their seed (the zoo's; the trained order each), with
    the best of them chosen on the probe split, as Part 1 does for orders: the oracle gap of training noise."""
    seeds = control_seeds(cfg.seed, cfg.m)

    def one(s: int) -> Callable[[Progress], tuple[torch.Tensor, torch.Tensor, Any]]:
        def go(report: Progress) -> tuple[torch.Tensor, torch.Tensor, Any]:
            t = _sequential(page_models.model_spec_on(cfg.model, s, cfg.task), report)
            ident = [routing.identity_order(t.model.n_blocks)]
            return routing.order_logits(t.model, t.data.test.x, ident)[0], routing.order_logits(t.model, t.data.probe.x,
                                                                                         ident)[0], t.data
        return go

    got = lanes([one(s) for s in seeds], progress)  # independent trainings, side by side when a core is free
    d = got[0][2]
    out = fixed_summary(torch.stack([g[0] for g in got]), torch.stack([g[1] for g in got]), d)
    return SeedControl(config=cfg, seeds=seeds, n_test=len(d.test.y), acc=out["fixed_acc"],
                       best=out["best_fixed_order"], best_acc=out["best_fixed_acc"], oracle_acc=out["fixed_oracle_acc"],
                       outcomes=out["fixed_outcomes"])


@dataclass(frozen=True)
class IOTObservation:
    """Part 1 (`observe`): the M orders each trained alone (order j at the seed of the control's model j), on
    held-out data (the keys of `fixed_summary` with the sequential model's), and the seed control its oracle gap is
    judged against."""

    config: ObserveConfig
    orders: list[str]  # `routing.order_label` of each candidate
    n_blocks: int
    chance: float
    n_test: int
    base_acc: float
    sequential_acc: float
    sequential_order_acc: list[float]  # the sequential model forced into each order, untrained for it
    fixed_train_seconds: list[float]
    fixed_acc: list[float]  # each order trained alone (order 0: the sequential model)
    fixed_probe_acc: list[float]
    best_fixed_order: int  # chosen on the probe split
    best_fixed_acc: float
    fixed_best_share: list[float]
    fixed_oracle_acc: float
    fixed_ensemble_acc: float
    fixed_outcomes: list[str]  # packed per-input outcomes of each order trained alone
    seed_control: SeedControl  # `seed_control`'s result


@entry("iot-observe", result=IOTObservation)
def observe(cfg: ObserveConfig, progress: Progress) -> IOTObservation:
    """Part 1: M orders each trained alone (identity = the sequential model, order j at the control's seed j);
    accuracies on held-out data; and the seed control (`seed_control`) its oracle gap is judged against."""
    t = _sequential(page_models.model_spec_on(cfg.model, cfg.seed, cfg.task), span(progress, 0.0, 1 / cfg.m))
    d = t.data
    orders = _orders(cfg.space, cfg.m, cfg.seed, t.model.n_blocks)
    seq_te = routing.order_logits(t.model, d.test.x, orders)  # the sequential model run in every candidate order
    seq_pr = routing.order_logits(t.model, d.probe.x, orders[:1])
    tests, probes, seconds = [seq_te[0]], [seq_pr[0]], [t.info["seconds"]]

    def alone(j: int) -> Callable[[Progress], tuple[torch.Tensor, torch.Tensor, dict[str, Any]]]:
        return lambda report: fixed_logits(FixedConfig(cfg.model, cfg.space, j, cfg.seed, cfg.task), report)

    # independent trainings (each its own seeds and stream): side by side when a core is free (lab/runtime/cores.py)
    for te, pr, meta in lanes([alone(j) for j in range(1, cfg.m)], span(progress, 1 / cfg.m, 0.8)):
        tests.append(te)
        probes.append(pr)
        seconds.append(meta["seconds"])
    out = fixed_summary(torch.stack(tests), torch.stack(probes), d)
    seq_acc = out["fixed_acc"][0]
    return IOTObservation(
        config=cfg,
        orders=[routing.order_label(o, cfg.space) for o in orders],
        n_blocks=t.model.n_blocks,
        chance=d.chance,
        n_test=len(d.test.y),
        base_acc=seq_acc,
        sequential_acc=seq_acc,
        # the sequential model forced into each candidate order, untrained for it: what reordering costs a
        # model that never saw it
        sequential_order_acc=routing.observe(seq_te, d.test.y)["order_acc"],
        fixed_train_seconds=seconds,
        **out,
        seed_control=seed_control(SeedControlConfig(cfg.model, cfg.m, cfg.seed, cfg.task),
                                  span(progress, 0.8, 1.0)),
    )


@dataclass(frozen=True)
class IOTTraining:
    """Part 2 (`training`): IOT's shared weights and predictor against the sequential model, on held-out data (the
    keys of `compare` without its stand-in best fixed order, which is Part 1's)."""

    config: IOTConfig
    orders: list[str]  # `routing.order_label` of each candidate
    chance: float
    n_blocks: int
    sequential_acc: float
    iot_acc: float  # each input in the predictor's order
    order_acc: list[float]  # the shared weights in each candidate order
    order_probe_acc: list[float]
    best_share: list[float]  # share of inputs whose lowest-loss order is each one
    oracle_acc: float
    shared_best_order: int
    shared_best_acc: float
    ensemble_acc: float
    choice_share: list[float]
    choice_share_per_class: list[list[float]]
    oracle_agreement: float
    choice_confusion: list[list[float]]
    predictor_params: int
    predictor_share: float
    curves: dict[str, Any]  # per epoch: loss, task_loss, test_acc, choice_entropy, top_share, choice_share, ...
    outcomes: dict[str, Any]  # packed per-input outcomes the claims pair
    cost: dict[str, Any]  # seconds and block runs against the sequential model
    base_acc: float
    train_curve: list[float]
    train_seconds: float


@entry("iot-train", result=IOTTraining)
def training(cfg: IOTConfig, progress: Progress) -> IOTTraining:
    """Part 2: IOT training with shared weights and its evaluation against the sequential model (stored)."""
    t = _sequential(cfg.spec, span(progress, 0.0, 0.15))
    seq = Sequential(t.model, t.info["seconds"], None, t.info["test_acc"])
    r = compare(t.spec, cfg, span(progress, 0.15, 1.0), sequential=seq, fixed=False)
    drop = ("config", "best_fixed_order", "best_fixed_acc")  # compare's stand-in; the real one is Part 1's
    return IOTTraining(**{k: v for k, v in r.items() if k not in drop}, config=cfg, base_acc=r["sequential_acc"],
                       train_curve=r["curves"]["test_acc"], train_seconds=r["cost"]["iot_train_seconds"])


class JoinedRun(dict):  # type: ignore[type-arg]
    """A joined run (`join`): plain data, read by key, of a type of its own so that its claims can be declared for it
    (claims.py)."""


class SweepOfM(dict):  # type: ignore[type-arg]
    """A sweep over M (`sweep_of`): plain data of a type of its own, like `JoinedRun`."""


TWIN_KEYS = ("config", "curves", "iot_acc", "choice_share", "order_acc", "ensemble_acc", "orders", "outcomes")


def run(cfg: IOTConfig, progress: Progress = silent, store: Optional[Store] = None,
        twin: bool = True) -> JoinedRun:
    """Part 1 and Part 2 of one config, joined (each stored on its own; see the module docstring), with the
    training whose exploration term is switched (`twin`, for the collapse claim; skipped with twin=False)."""
    on, off = cfg.explore_pair()
    parts: list[Callable[[Progress], Any]] = [lambda p: observe(cfg.observe_cfg, p), lambda p: training(cfg, p)]
    if twin:
        parts.append(lambda p: training(off if cfg.explore > 0 else on, p))
    with use_store(resolve(store)):
        got = lanes(parts, progress)  # three stored pieces, side by side when a core is free
    progress(1.0, "done")
    return join(cfg, got[0], got[1], got[2] if twin else None)


def join(cfg: IOTConfig, obs: IOTObservation, tr: IOTTraining,
         twin: Optional[IOTTraining] = None) -> JoinedRun:
    """One result from the stored pieces (what `run` returns; the page joins the pieces it has the same way)."""
    part1 = {k: v for k, v in to_plain(obs).items() if k not in ("config", "orders")}
    out = JoinedRun(to_plain({**to_plain(tr), **part1, "config": cfg, "sequential_acc": tr.sequential_acc}))
    if twin is not None:
        out["twin"] = {k: v for k, v in to_plain(twin).items() if k in TWIN_KEYS}
    return out


def collapse(cfg: IOTConfig, progress: Progress = silent, store: Optional[Store] = None) -> dict[str, Any]:
    """Training curves with the exploration term on and off (the run itself and one more training)."""
    on_cfg, off_cfg = cfg.explore_pair()
    with use_store(resolve(store)):
        on = training(on_cfg, span(progress, 0.0, 0.5))
        off = training(off_cfg, span(progress, 0.5, 1.0))
    progress(1.0, "done")
    return {"on": {k: v for k, v in to_plain(on).items() if k in TWIN_KEYS},
            "off": {k: v for k, v in to_plain(off).items() if k in TWIN_KEYS}}


ACC_KEYS = {"sequential": "sequential_acc", "best_fixed": "best_fixed_acc", "shared_best": "shared_best_acc",
            "ensemble": "ensemble_acc", "iot": "iot_acc", "oracle": "oracle_acc"}
# "shared" has M = 2 only: not here
TABLE_ROWS = (("residual", "blocks"), ("vit-sequential", "blocks"), ("vit-sequential", "sublayers"))


def table(models: list[str], seeds: list[int], m: int = M_DEFAULT, progress: Progress = silent,
          pool: Pool = serial) -> dict[str, Any]:
    """Held-out accuracy of every method for each (model, order space), per seed, with default weights (runs
    computed by `pool`)."""
    rows = [(mo, sp) for mo, sp in TABLE_ROWS if mo in models]
    jobs = [(mo, sp, s) for mo, sp in rows for s in seeds]
    out: dict[str, Any] = {"m": m, "seeds": seeds, "rows": [], "chance": {}}
    per: dict[tuple[str, str], dict[str, list[float]]] = {}
    cfgs = [IOTConfig(model=mo, space=sp, m=m, seed=s) for mo, sp, s in jobs]
    # The pool computes the two stored parts of every run (side by side on the engine from the CLI); each run then
    # joins its parts from the store here.
    pool([(observe, c.observe_cfg) for c in cfgs] + [(training, c) for c in cfgs], progress)
    runs = [run(c, twin=False) for c in cfgs]  # the table's claims leave out the collapse (no twin trained)
    for (mo, sp, _), r in zip(jobs, runs, strict=True):
        cell = per.setdefault((mo, sp), {k: [] for k in (*METHODS, "agreement", "train_seconds")})
        for k in METHODS:
            cell[k].append(r[ACC_KEYS[k]])
        cell["agreement"].append(r["oracle_agreement"])
        cell["train_seconds"].append(r["train_seconds"])
        out["chance"][mo] = r["chance"]
    for (mo, sp), cell in per.items():
        out["rows"].append({"model": mo, "space": sp, "values": cell,
                            "mean": {k: statistics.mean(v) for k, v in cell.items()}})
    return out


# -- accuracy against M: the stored pieces of each M, joined (claims.py judges the sweep) ------------------------
SWEEP_MS = (1, 2, 4, 8)
SWEEP_KEYS = ("sequential_acc", "best_fixed_acc", "shared_best_acc", "ensemble_acc", "iot_acc", "oracle_acc",
              "fixed_oracle_acc", "oracle_agreement")


def sweep_configs(cfg: IOTConfig, ms: Sequence[int] = SWEEP_MS) -> list[IOTConfig]:
    """The configs of a sweep over M: this setting with each M (the candidates of M are the first M of M + 1's,
    so the orders trained alone are shared along the sweep)."""
    if not ms or any(not M_MIN <= m_ <= M_MAX for m_ in ms) or len(set(ms)) != len(ms):
        raise ValueError(f"the sweep's M values must be distinct, from {M_MIN} to {M_MAX}; got {list(ms)}")
    return [replace(cfg, m=m_) for m_ in sorted(ms)]


def sweep(cfg: IOTConfig, ms: Sequence[int] = SWEEP_MS, progress: Progress = silent,
          pool: Pool = serial) -> SweepOfM:
    """Accuracy of every method against M for one setting (Part 1 and Part 2 of each M, computed by `pool`). M = 1
    is the sequential model itself (IOT training with one order is the ordinary loop)."""
    cfgs = sweep_configs(cfg, ms)
    pool([(observe, c.observe_cfg) for c in cfgs] + [(training, c) for c in cfgs], progress)
    runs = [run(c, twin=False) for c in cfgs]
    return sweep_of(cfg, runs)


def sweep_of(cfg: IOTConfig, runs: Sequence[dict[str, Any]]) -> SweepOfM:
    """The sweep's rows from joined runs of increasing M (the page joins the pieces it has the same way); its claims
    read the runs again (claims.py)."""
    rows = [{"m": r["config"]["m"], **{k: r[k] for k in SWEEP_KEYS},
             "seed_oracle_acc": r["seed_control"]["oracle_acc"], "seed_best_acc": r["seed_control"]["best_acc"]}
            for r in runs]
    return SweepOfM({"config": to_plain(cfg), "n_test": runs[0]["n_test"], "chance": runs[0]["chance"], "rows": rows})
