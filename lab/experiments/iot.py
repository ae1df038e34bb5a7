"""IOT, instance-wise layer reordering (Zhu et al. 2021): every input chooses its own layer order.

The science is `lab/iot.py`; this module caches it by exactly what each piece depends on:
- the sequential model: the zoo's (`recipes.iot_spec`), shared with the Delete and Shuffle pages;
- `fixed_logits(FixedConfig)`: one model trained alone in one candidate order, kept as its test and probe
  logits. Candidate j does not depend on M (the candidates of M are the first M of M + 1), so raising M trains
  only the new orders;
- `observe(ObserveConfig)`: Part 1, the models trained alone in each of the M orders (per-order accuracy, the
  share of inputs each order wins, the oracle, the best fixed order chosen on the probe split);
- `training(IOTConfig)`: Part 2, IOT training (shared weights + predictor) and its evaluation; the collapse
  figure asks for a second training with the exploration term off, cached under its own config.
`run(IOTConfig)` joins Part 1 and Part 2 (both stored: a repeated call reads two files and trains nothing).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any, Optional

import torch

from .. import iot as core
from .. import presets
from ..experiment import Pool, check, entry, param, seed_param, serial
from ..progress import Progress, silent, span
from ..recipes import IOT_MODELS, iot_spec
from ..store import Store, active_store, to_plain, use_store
from ..zoo import ModelSpec, Trained, trained

MODELS = IOT_MODELS
MODEL_LABELS = {"mlp": "residual MLP", "vit": "ViT"}
SPACES = core.SPACES
SPACE_LABELS = {"blocks": "block orders", "sublayers": "sub-layer orders (ViT)"}
M_MIN, M_MAX = 2, 8
WEIGHT_MAX = 10.0
METHODS = ("sequential", "best_fixed", "shared_best", "ensemble", "iot", "oracle")
METHOD_LABELS = {"sequential": "sequential model", "best_fixed": "best fixed order (probe)",
                 "shared_best": "IOT weights, best single order", "ensemble": "ensemble of the M orders",
                 "iot": "IOT (predicted order)", "oracle": "oracle (best order per input)"}


def _check_space(model: str, space: str) -> None:
    if space == "sublayers" and model != "vit":
        raise ValueError("sub-layer orders (attention first or MLP first) exist only in the ViT; choose the ViT "
                         "model or block orders")


@dataclass(frozen=True)
class IOTConfig:
    """One IOT run: candidate orders of a model, the training's loss weights, the seed."""

    model: str = param("mlp", "The network: the Delete page's residual MLP (synthetic task, seconds) or the digits "
                       "ViT (8x8 digits, minutes).", label="Model", choices=MODELS, labels=MODEL_LABELS)
    space: str = param("blocks", "Which orders: permutations of the blocks, or (ViT only) attention-first or "
                       "MLP-first inside each block.", label="Order space", choices=SPACES, labels=SPACE_LABELS)
    m: int = param(4, "Candidate orders M: the trained order plus M - 1 others fixed by the seed.",
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

    def __post_init__(self) -> None:
        check(self)
        _check_space(self.model, self.space)

    @property
    def spec(self) -> ModelSpec:
        return iot_spec(self.model, self.seed)

    @property
    def science(self) -> core.IOTConfig:
        """The science's config (the fixed-order baselines are cached on their own, so compare skips them)."""
        return core.IOTConfig(orders=self.m, space=self.space, gumbel=self.gumbel, explore=self.explore,
                              exploit=self.exploit, order_seed=self.seed, fixed_baseline=False)

    @property
    def observe_cfg(self) -> ObserveConfig:
        return ObserveConfig(self.model, self.space, self.m, self.seed)

    def explore_pair(self) -> tuple[IOTConfig, IOTConfig]:
        """(exploration on, off) for the collapse figure: this run and its twin; 'on' is the default weight when
        this run has it off."""
        on = self if self.explore > 0 else replace(self, explore=IOTConfig.explore)
        return on, replace(on, explore=0.0)


@dataclass(frozen=True)
class FixedConfig:
    """One model trained alone in candidate order `index` (index 0 is the sequential model itself)."""

    model: str = "mlp"
    space: str = "blocks"
    index: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        _check_space(self.model, self.space)
        if not 1 <= self.index < M_MAX:
            raise ValueError(f"candidate index must be 1..{M_MAX - 1}, got {self.index}")


@dataclass(frozen=True)
class ObserveConfig:
    """Part 1 for M candidate orders: each trained alone, on the same data and seed."""

    model: str = "mlp"
    space: str = "blocks"
    m: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        IOTConfig(model=self.model, space=self.space, m=self.m, seed=self.seed)  # the same rules and messages


def _sequential(spec: ModelSpec, progress: Progress) -> Trained:
    """The zoo's sequential model; its `.spec` carries the recipe that really ran (quick mode included)."""
    return trained(spec, progress)


def _orders(model: str, space: str, m: int, seed: int, n_blocks: int) -> list[core.Order]:
    return core.candidate_orders(core.IOTConfig(orders=m, space=space, order_seed=seed), n_blocks)


def fixed_logits(cfg: FixedConfig, progress: Progress = silent) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """(test logits, probe logits, record) of one model trained alone in one candidate order (stored)."""
    t = _sequential(iot_spec(cfg.model, cfg.seed), span(progress, 0.0, 0.1))
    order = _orders(cfg.model, cfg.space, cfg.index + 1, cfg.seed, t.model.n_blocks)[cfg.index]
    d = t.data

    def fit() -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        model, log = core.train_fixed(t.spec, order, d, span(progress, 0.1, 1.0))
        tens = {"test": core.order_logits(model, d.test.x, [order])[0],
                "probe": core.order_logits(model, d.probe.x, [order])[0]}
        return tens, {"seconds": log.seconds, "cpu_seconds": log.cpu_seconds,
                      "order": core.order_label(order, cfg.space)}

    tens, meta = active_store().tensors("iot-fixed", cfg, fit)
    return tens["test"], tens["probe"], meta


@entry("iot-observe")
def observe(cfg: ObserveConfig, progress: Progress) -> dict[str, Any]:
    """Part 1: M orders each trained alone (identity = the sequential model); accuracies on held-out data."""
    t = _sequential(iot_spec(cfg.model, cfg.seed), span(progress, 0.0, 1 / cfg.m))
    d = t.data
    orders = _orders(cfg.model, cfg.space, cfg.m, cfg.seed, t.model.n_blocks)
    seq_te = core.order_logits(t.model, d.test.x, orders)  # the sequential model run in every candidate order
    seq_pr = core.order_logits(t.model, d.probe.x, orders[:1])
    tests, probes, seconds = [seq_te[0]], [seq_pr[0]], [t.info["seconds"]]
    for j in range(1, cfg.m):
        te, pr, meta = fixed_logits(FixedConfig(cfg.model, cfg.space, j, cfg.seed),
                                    span(progress, j / cfg.m, (j + 1) / cfg.m))
        tests.append(te)
        probes.append(pr)
        seconds.append(meta["seconds"])
    out = core.fixed_summary(torch.stack(tests), torch.stack(probes), d)
    seq_acc = out["fixed_acc"][0]
    return {
        "config": cfg,
        "orders": [core.order_label(o, cfg.space) for o in orders],
        "n_blocks": t.model.n_blocks,
        "chance": d.chance,
        "n_test": len(d.test.y),
        "base_acc": seq_acc,
        "sequential_acc": seq_acc,
        # the sequential model forced into each candidate order, untrained for it: what reordering costs a
        # model that never saw it
        "sequential_order_acc": core.observe(seq_te, d.test.y)["order_acc"],
        "fixed_train_seconds": seconds,
        **out,
    }


@entry("iot-train")
def training(cfg: IOTConfig, progress: Progress) -> dict[str, Any]:
    """Part 2: IOT training with shared weights and its evaluation against the sequential model (stored)."""
    t = _sequential(cfg.spec, span(progress, 0.0, 0.15))
    seq = core.Sequential(t.model, t.info["seconds"], None, t.info["test_acc"])
    r = core.compare(t.spec, cfg.science, span(progress, 0.15, 1.0), sequential=seq)
    for k in ("best_fixed_order", "best_fixed_acc"):  # compare's stand-in; the real one is Part 1's
        r.pop(k, None)
    curves = r["curves"]
    return {**r, "config": cfg, "base_acc": r["sequential_acc"], "train_curve": curves["test_acc"],
            "train_seconds": r["cost"]["iot_train_seconds"]}


def run(cfg: IOTConfig, progress: Progress = silent, store: Optional[Store] = None) -> dict[str, Any]:
    """Part 1 and Part 2 of one config, joined (each stored on its own; see the module docstring)."""
    with use_store(store or active_store()):
        obs = observe(cfg.observe_cfg, span(progress, 0.0, 0.45))
        tr = training(cfg, span(progress, 0.45, 1.0))
    progress(1.0, "done")
    part1 = {k: v for k, v in obs.items() if k not in ("config", "orders")}
    return to_plain({**tr, **part1, "config": cfg, "sequential_acc": tr["sequential_acc"]})


def collapse(cfg: IOTConfig, progress: Progress = silent, store: Optional[Store] = None) -> dict[str, Any]:
    """Training curves with the exploration term on and off (the run itself and one more training)."""
    on_cfg, off_cfg = cfg.explore_pair()
    with use_store(store or active_store()):
        on = training(on_cfg, span(progress, 0.0, 0.5))
        off = training(off_cfg, span(progress, 0.5, 1.0))
    progress(1.0, "done")
    keep = ("config", "curves", "iot_acc", "choice_share", "order_acc", "ensemble_acc", "orders")
    return {"on": {k: on[k] for k in keep}, "off": {k: off[k] for k in keep}}


ACC_KEYS = {"sequential": "sequential_acc", "best_fixed": "best_fixed_acc", "shared_best": "shared_best_acc",
            "ensemble": "ensemble_acc", "iot": "iot_acc", "oracle": "oracle_acc"}
TABLE_ROWS = (("mlp", "blocks"), ("vit", "blocks"), ("vit", "sublayers"))


def table(models: list[str], seeds: list[int], m: int = 4, progress: Progress = silent,
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
    runs = [run(c) for c in cfgs]
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


# -- the page's controls and presets (lab/presets.py; no Streamlit) ------------------------------------------
CONTROLS = {"model": "mlp", "space": "blocks", "m": 4, "explore": 1.0, "exploit": 0.1, "gumbel": True, "seed": 0}
PRESETS = (
    presets.preset(CONTROLS, "collapse", "Switch exploration off", "Watch the collapse figure: without the "
                   "exploration term one order takes every input.", explore=0.0),
    presets.preset(CONTROLS, "sublayers", "ViT, attention or MLP first", "The paper's own order space: each block "
                   "runs attention first or its MLP first (trains for a few minutes).", model="vit",
                   space="sublayers"),
    presets.preset(CONTROLS, "m8", "Eight orders", "A larger oracle, a harder choice: does the predictor's "
                   "agreement with the best order drop?", m=8),
    presets.preset(CONTROLS, "gumbel", "No Gumbel noise", "Order weights from a plain softmax: less exploration "
                   "by sampling. Does the choice still spread over the orders?", gumbel=False),
)

# Rough seconds of one model trained alone on the classroom machine (the sequential model, or one candidate order).
# An IOT training runs every one of its M orders at every step: about M times that.
_TRAIN_SECONDS = {"mlp": 6, "vit": 25}


def config_of(settings: dict[str, Any]) -> IOTConfig:
    """The experiment config of a complete page setting."""
    return IOTConfig(**{k: settings[k] for k in ("model", "space", "m", "explore", "exploit", "gumbel", "seed")})


def needs(settings: dict[str, Any]) -> list[presets.Need]:
    """What the page computes for a setting: Part 1 (each order trained alone), IOT's training, and its twin with
    the exploration term switched (the collapse figure)."""
    cfg = config_of(settings)
    one = _TRAIN_SECONDS[cfg.model]
    on, off = cfg.explore_pair()
    # The sequential model is shared by all three and by other pages: counted once, with Part 1.
    return [presets.Need("each order trained alone", observe, cfg.observe_cfg, one * cfg.m),
            presets.Need("IOT training", training, cfg, one * cfg.m),
            presets.Need("the exploration twin", training, off if cfg.explore > 0 else on, one * cfg.m)]
