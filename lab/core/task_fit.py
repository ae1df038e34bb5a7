"""A recipe on another task (issue 31): which tasks a model family reads (`check_task`, `FAMILY_TASKS`, from the task
records' `families`; `TASK_SHAPES`, their `shape`), the same recipe sized to a task and trained on it (`on_task`),
and a config's task spelled once (`task_or_own`, `readable`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from lab.core import data_csv, tasks
from lab.core.models import ViTConfig
from lab.core.tasks import TaskShape
from lab.core.zoo import ModelSpec

# The ready-made tasks' shapes and the tasks each model family reads, from their records (lab/core/tasks.py;
# tests/test_tasks.py checks the shapes against the data sets). An uploaded CSV is a table whose shape is read from
# its stored file.
TASK_SHAPES: dict[str, TaskShape] = {t.name: t.shape for t in tasks.TASKS.values()}
FAMILY_TASKS = {family: tasks.family_tasks(family) for family in tasks.FAMILIES}
MNIST1D_PATCH = 4  # the ViT reads MNIST-1D's 40 values as 10 patches of 4
MAX_EPOCH_SCALE = 40  # a tiny table trains at most 40x the recipe's epochs (wine: 12 -> 480 epochs of 107 rows)


def family_of(spec: ModelSpec) -> str:
    """'mlp' or 'vit': which tasks a spec's model can read."""
    return "vit" if isinstance(spec.model, ViTConfig) else "mlp"


def check_task(name: Optional[str], family: str) -> None:
    """ValueError unless a model of `family` can read task `name` (a ready-made task or `csv:<16 hex>`; None: the
    recipe's own task); reads no data, so a config validates it at once."""
    if name is None:
        return
    if not isinstance(name, str):
        raise ValueError(f"a task is named by a string, got {name!r}")
    if family == "mlp" and data_csv.is_csv_task(name):
        data_csv.parse_name(name)
        return
    allowed = FAMILY_TASKS[family]
    if name not in allowed:
        extra = " or your own CSV (csv:<16 hex digits>, or --data PATH)" if family == "mlp" else ""
        what = "an MLP" if family == "mlp" else "the ViT (it reads images and sequences, not tables)"
        raise ValueError(f"unknown task {name!r} for {what}; choose one of {', '.join(allowed)}{extra}")


def task_shape(name: str) -> TaskShape:
    """The shape of a ready-made task, or of an uploaded CSV read from the active store."""
    if name in TASK_SHAPES:
        return TASK_SHAPES[name]
    from lab.core.zoo import task

    d = task(name)
    return TaskShape("table", d.n_features, d.n_classes, len(d.train))


def _epochs_on(epochs: int, recipe_train: int, n_train: int) -> tuple[float, int]:
    """(scale, epochs): the recipe's epochs, or more on a smaller task, so that training sees at least as many inputs
    as on the recipe's own task (at most MAX_EPOCH_SCALE x its epochs). Never fewer epochs: the digits ViT's 880
    steps leave it at 75 % on MNIST-1D (14 epochs) where its 40 epochs reach 92 %."""
    scale = min(float(MAX_EPOCH_SCALE), max(1.0, recipe_train / n_train))
    return scale, max(1, round(epochs * scale))


def on_task(spec: ModelSpec, name: Optional[str]) -> ModelSpec:
    """The same recipe on task `name`: the model's input and output sized to the task, and its epochs, or more on a
    smaller task so that training sees as many inputs (`_epochs_on`; checkpoints scaled alike). The spec
    itself when `name` is None or already its task, so a page's default keeps its stored weights."""
    if name is None or name == spec.task:
        return spec
    check_task(name, family_of(spec))
    shape, own = task_shape(name), TASK_SHAPES[spec.task]
    scale, epochs = _epochs_on(spec.train.epochs, own.n_train, shape.n_train)
    ckpts = tuple(sorted({min(epochs, round(c * scale)) for c in spec.train.checkpoints}))
    train = replace(spec.train, epochs=epochs, checkpoints=ckpts)
    m = spec.model
    if isinstance(m, ViTConfig):
        if shape.kind == "sequence":
            m = replace(m, seq=shape.n_features, patch=MNIST1D_PATCH, channels=1, n_classes=shape.n_classes)
        else:  # a square image of side sqrt(n_features)
            side = round(shape.n_features ** 0.5)
            m = replace(m, seq=0, image=side, patch=2, channels=1, n_classes=shape.n_classes)
    else:
        m = replace(m, n_in=shape.n_features, n_out=shape.n_classes)
    return ModelSpec(m, train, task=name)


def task_or_own(task: Optional[str], own: str, family: str) -> Optional[str]:
    """A config's task: None for the model's own task `own` (one spelling, one stored result), else `task`, checked
    against what a model of `family` can read (ValueError)."""
    if task is None or task == own:
        return None
    check_task(task, family)
    return task


def readable(task: Optional[str], family: str) -> Optional[str]:
    """`task` when a model of `family` can read it, else None (its own task): a page's task for the models it shows
    beside the chosen one (the ViT never reads a table)."""
    if task is None or (family == "vit" and task not in FAMILY_TASKS["vit"]):
        return None
    return task
