"""Trained models, built once and then loaded from the store: `trained(spec)` is all an experiment needs.

A `ModelSpec` names the task, the architecture and the training recipe; together with the code version it
identifies the weights exactly, so the same spec gives the same model in every session and process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Union

import torch

from lab.core import tasks
from lab.core.data import Dataset
from lab.core.data_draw import WORDS as DRAW_WORDS
from lab.core.data_draw import drawn
from lab.core.models import MLP, MLPConfig, RoutedModel, ViT, ViTConfig
from lab.core.train import TrainConfig, train
from lab.runtime import quick
from lab.runtime.progress import Progress, silent
from lab.runtime.store import Store, resolve

# Tasks by name (lab/core/tasks.py: one record each). Experiments refer to data by name so that a spec stays a small,
# hashable value; an uploaded CSV is the task `csv:<16 hex digits of its sha256>`, read from the store's root.
TASKS = tasks.TASKS

# Model classes by config type; other model families register here (see lab.core.models).
BUILDERS: dict[type, Callable[[Any], RoutedModel]] = {MLPConfig: MLP, ViTConfig: ViT}

ModelConfig = Union[MLPConfig, Any]


def task(name: str, store: Store | None = None, seed: int | None = None) -> Dataset:
    """The data set of a task name: one of TASKS, or `csv:<hash>` stored under the store's root (`store`, else the
    active store); a CSV that is not stored there is a ValueError that says to upload it again or pass --data PATH.
    With `seed`, the training split is that training seed's own draw (lab/core/data_draw.py; probe and test as
    they are): what a model trained at that seed fits."""
    data = tasks.load(name, resolve(store).root if tasks.is_uploaded(name) else None)
    return data if seed is None else drawn(data, seed)


@dataclass(frozen=True)
class ModelSpec:
    """Everything that determines a trained model's weights."""

    model: ModelConfig = field(default_factory=MLPConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    task: str = "synthetic"

    def code_reaches(self) -> tuple[str, ...]:
        """Code the model's weights rest on that this module reaches by name, not by import: its task's loader
        (lab/core/tasks.py). The store adds it to the model's code version, so a model is keyed by its own task's
        data module, not by every task's (lab/runtime/store.py: Store.describe)."""
        return (tasks.loader_code(self.task),)


@dataclass
class Trained:
    """A trained model with its training record. Treat `model` as read-only: copy before surgery."""

    spec: ModelSpec
    model: RoutedModel
    checkpoints: dict[int, dict[str, torch.Tensor]]
    info: dict[str, Any]

    @property
    def data(self) -> Dataset:
        """The data set as this model saw it: its seed's training draw, the task's probe and test splits."""
        return task(self.spec.task, seed=self.spec.train.seed)


_build_lock = threading.Lock()


def build(cfg: ModelConfig, seed: int) -> RoutedModel:
    """A freshly initialised model; the seed fixes the draw."""
    try:
        cls = BUILDERS[type(cfg)]
    except KeyError:
        raise ValueError(f"no model class registered for {type(cfg).__name__}") from None
    # Model constructors draw from torch's global generator. Two job threads building at once would interleave
    # their draws, and a stored model would no longer match its seed: build one model at a time, and leave the
    # global generator as it was for whoever else uses it.
    with _build_lock, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return cls(cfg)


# Train each spec once per process even when several threads ask at the same moment (the store's file lock
# does the same across processes); after that, the weights are read from the store.
_memo: dict[str, Trained] = {}
_memo_lock = threading.Lock()


# -- quick mode (UI smoke tests; lab/runtime/quick.py) reaches the science here and nowhere else -------------------
QUICK_ORDERS = 24  # in quick mode an experiment walks at most this many orders of a model's blocks


def effective(spec: ModelSpec) -> ModelSpec:
    """The spec that really trains: `spec`, or in quick mode the same with one epoch (the cache key says so)."""
    if quick.quick():
        return replace(spec, train=replace(spec.train, epochs=quick.epochs(spec.train.epochs)))
    return spec


def orders_budget(n: int) -> int:
    """How many block orders an experiment may walk when it would walk `n` (fewer in quick mode)."""
    return min(n, QUICK_ORDERS) if quick.quick() else n


def trained(spec: ModelSpec, progress: Progress = silent, store: Store | None = None) -> Trained:
    """The trained model of `spec`, from the store or trained now (reporting progress)."""
    store = resolve(store)
    spec = effective(spec)  # UI smoke tests only; the spec (and so the cache key) says what really ran
    key = store.key("model", spec)
    with _memo_lock:
        hit = _memo.get(f"{store.root}:{key}")
    if hit is not None:
        progress(1.0, "model loaded")
        return hit
    data = task(spec.task, store, spec.train.seed)

    def fit() -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        model = build(spec.model, spec.train.seed)
        log = train(model, data.train, spec.train, data.test, progress=progress)
        tens = {f"model.{k}": v for k, v in model.state_dict().items()}
        for epoch, sd in log.checkpoints.items():
            tens.update({f"ckpt{epoch}.{k}": v for k, v in sd.items()})
        meta = {"loss": log.loss, "test_acc": log.test_acc, "seconds": log.seconds,
                "checkpoints": sorted(log.checkpoints), "data_draw": DRAW_WORDS}
        return tens, meta

    tens, meta = store.tensors("model", spec, fit)
    model = build(spec.model, spec.train.seed)
    model.load_state_dict({k[6:]: v for k, v in tens.items() if k.startswith("model.")})
    model.eval()
    ckpts: dict[int, dict[str, torch.Tensor]] = {}
    for epoch in meta["checkpoints"]:
        prefix = f"ckpt{epoch}."
        ckpts[int(epoch)] = {k[len(prefix):]: v for k, v in tens.items() if k.startswith(prefix)}
    out = Trained(spec, model, ckpts, meta)
    with _memo_lock:
        if len(_memo) > 64:  # bound memory in a long-running server
            _memo.clear()
        _memo[f"{store.root}:{key}"] = out
    progress(1.0, "model ready")
    return out
