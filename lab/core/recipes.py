"""Recipes: which model, trained how. Every experiment takes its trained models from here, never from another
experiment, so editing one experiment never changes another's code version (and cached results).

A recipe returns a `ModelSpec`; the zoo trains it once and the store keeps it under the spec's own key, which
depends on lab/core/zoo.py and what it imports and on its task's loader (lab/core/tasks.py), not on this file: two
experiments that ask for the same spec share the same stored weights (the Re-initialise page takes apart the Delete
page's teachers).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from lab.core import data_csv, data_digits, data_mnist1d, data_tabular, tasks  # noqa: F401 - keys, see below
from lab.core.models import MLPConfig, ViTConfig
from lab.core.routes import looped
from lab.core.tasks import TaskShape
from lab.core.train import TrainConfig
from lab.core.zoo import ModelSpec

# Every task's loader module is imported here, though only lab/core/tasks.py calls them, so that the code version of
# every result (each experiment takes its models from here) covers the data its models read: a trained model's key
# covers only its own task's loader (lab/core/zoo.py: ModelSpec.code_reaches), and a result whose model was retrained
# on a changed loader must be recomputed too. A task with a new data module adds its import here (tests/test_rekey.py).

# -- the MLPs on the synthetic 20-class task ---------------------------------------------------------------
MLP_BLOCKS = 7  # the Delete / Re-initialise teachers: stem, 7 deletable blocks, head
MLP_WIDTH = 128
MLP_EPOCHS = 12


def mlp_spec(arch: str, seed: int, blocks: int = MLP_BLOCKS, width: int = MLP_WIDTH,
             epochs: int = MLP_EPOCHS) -> ModelSpec:
    """A plain or residual MLP trained with Adam on the synthetic task."""
    return ModelSpec(MLPConfig(arch=arch, width=width, blocks=blocks), TrainConfig(epochs=epochs, seed=seed))


# -- the ViT on 8x8 digits ---------------------------------------------------------------------------------
# How the recipe was chosen (1 torch thread; recipe choices scored on a validation split: trained on the first
# 1,200 training images, scored in order and over 50 random block orders on the last 200; the test split only
# confirmed the final recipe; bench/bench_vit.py). Adam with no warm-up and a unit-scale stem keeps the
# sequential model at 68-71 % over random orders: a unit-scale stream dwarfs what the blocks add. With AdamW,
# lr 2e-3, a 10 % linear warm-up then cosine, batch 64 and 40 epochs, the stem's init scale decides both ends
# (validation, sequential / LayerShuffle over random orders, decay 0.05): stem 0.02 gives 25 % / 52 %
# (LayerShuffle does not train; 15 % with a 30 % warm-up), 0.05 gives 26 % / 71 %, 0.07 36 % / 73 %, 0.1 47 % /
# 95 %, 0.2 51 % / 96 %. At 0.1, no weight decay lowers the sequential model to 42 % (LayerShuffle 96 %); lr 3e-3
# lowers it to 37 % but LayerShuffle drops to 80 %. So: stem 0.1, no decay (AdamW with decay 0 is Adam; the
# fields stay so the recipe names what was run). Batch size barely changes the speed of an epoch on one CPU
# thread (0.58 s at 64, 0.51 s at 256), so it was chosen for accuracy; torch's fused step is ~5 % faster.
# LayerShuffle-predict is the exception: its slot-prediction loss keeps it from training at stem 0.1 (56 % on
# test); at 0.2 it reaches 92 % (validation), so that mode starts from a larger stem.
VIT_MODES = ("sequential", "shuffle", "position", "predict")
VIT_MODE_LABELS = {"sequential": "sequential", "shuffle": "LayerShuffle", "position": "LayerShuffle-position",
                   "predict": "LayerShuffle-predict"}
SLOT_MODE = {"sequential": "none", "shuffle": "none", "position": "position", "predict": "predict"}
VIT_EPOCHS = 40
VIT_BATCH = 64
VIT_LR = 2e-3
VIT_OPTIMIZER = "adamw"
VIT_WEIGHT_DECAY = 0.0
VIT_WARMUP = 0.1
VIT_STEM_SCALE = 0.1
STEM_SCALE = {"sequential": VIT_STEM_SCALE, "shuffle": VIT_STEM_SCALE, "position": VIT_STEM_SCALE, "predict": 0.2}
# Weights kept after these epochs (0: the initial draw). Re-initialise reads all of them; keeping them on every
# ViT costs two small snapshots and makes its ViT the very model the other pages train (one training, not two).
VIT_CHECKPOINTS = (0, 1, 2, 3, 5, 10, 20)


def _check_mode(mode: str) -> None:
    if mode not in VIT_MODES:
        raise ValueError(f"unknown training mode {mode!r}; choose one of {', '.join(VIT_MODES)}")


def vit_model_config(mode: str, depth: int = 6, width: int = 64) -> ViTConfig:
    """The ViT shape of a training mode (the slot machinery and the stem's scale follow the mode)."""
    _check_mode(mode)
    return ViTConfig(depth=depth, width=width, slot_mode=SLOT_MODE[mode], stem_scale=STEM_SCALE[mode])


def vit_train_config(vit_mode: str, seed: int, epochs: int = VIT_EPOCHS,
                     checkpoints: tuple[int, ...] = VIT_CHECKPOINTS, **extra: object) -> TrainConfig:
    """The training config of a mode: sequential, or LayerShuffle (-position, -predict); `extra` overrides
    TrainConfig fields (LayerDrop: mode="layerdrop", drop_p=p)."""
    _check_mode(vit_mode)
    fields: dict = dict(epochs=epochs, batch=VIT_BATCH, lr=VIT_LR, weight_decay=VIT_WEIGHT_DECAY, seed=seed,
                        mode="sequential" if vit_mode == "sequential" else "shuffle", checkpoints=checkpoints,
                        optimizer=VIT_OPTIMIZER, warmup=VIT_WARMUP, fused=True)
    return TrainConfig(**{**fields, **extra})


def vit_spec(mode: str, depth: int = 6, seed: int = 0, epochs: int = VIT_EPOCHS) -> ModelSpec:
    """The digits ViT trained in a given mode (sequential, shuffle, position, predict)."""
    return ModelSpec(vit_model_config(mode, depth), vit_train_config(mode, seed, epochs), task="digits")


# -- LayerDrop: 8 blocks, so N/4, N/2 and 3N/4 are whole numbers -------------------------------------------
LAYERDROP_MODELS = ("residual", "vit")
LAYERDROP_BLOCKS = 8  # both models


def layerdrop_spec(model: str, p: float, seed: int) -> ModelSpec:
    """The model of the LayerDrop experiments. p = 0 is the ordinary (sequential) recipe itself."""
    # The trainer draws LayerDrop routes from a stream of their own, so p = 0 would give the same weights as
    # sequential training (tests/test_layerdrop.py checks it); naming it sequential lets other pages share it.
    mode = dict(mode="layerdrop", drop_p=p) if p > 0 else {}
    if model == "residual":
        return ModelSpec(MLPConfig(arch="residual", blocks=LAYERDROP_BLOCKS),
                         TrainConfig(epochs=MLP_EPOCHS, seed=seed, **mode))
    if model == "vit":  # the Shuffle page's sequential recipe at 8 blocks, with LayerDrop's route draw
        return ModelSpec(vit_model_config("sequential", LAYERDROP_BLOCKS),
                         vit_train_config("sequential", seed, **mode), task="digits")
    raise ValueError(f"unknown model {model!r}; choose one of {', '.join(LAYERDROP_MODELS)}")


def layerdrop_scratch_spec(model: str, blocks: int, seed: int) -> ModelSpec:
    """The ordinary (p = 0) LayerDrop recipe at `blocks` blocks, trained from scratch with the same epochs: the
    paper's baseline for a LayerDrop model pruned to that depth. (At 6 ViT blocks this is the Shuffle page's
    sequential ViT, at 7 residual blocks the Delete page's residual teacher: the same specs, the same weights.)"""
    if model not in LAYERDROP_MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(LAYERDROP_MODELS)}")
    if not 1 <= blocks <= layerdrop_blocks(model):
        raise ValueError(f"a {model} model of the LayerDrop recipe has 1 to {layerdrop_blocks(model)} blocks")
    if model == "residual":
        return ModelSpec(MLPConfig(arch="residual", blocks=blocks), TrainConfig(epochs=MLP_EPOCHS, seed=seed))
    return ModelSpec(vit_model_config("sequential", blocks), vit_train_config("sequential", seed), task="digits")


def layerdrop_blocks(model: str) -> int:
    """Blocks of the LayerDrop experiment's model, without building it."""
    if model not in LAYERDROP_MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(LAYERDROP_MODELS)}")
    return LAYERDROP_BLOCKS


# -- the models other pages read frozen (Rearrange, Layer lens, IOT, the matrix): the same stored weights ---------
VIT_BLOCKS = 6  # the Shuffle page's ViT
SHARED_LAYERDROP_P = 0.5  # the LayerDrop page's default model


# -- Re-initialise: the Delete teachers, and the Shuffle page's sequential ViT (its checkpoints included) ----------
def reinit_spec(model: str, seed: int, blocks: Optional[int] = None, width: Optional[int] = None,
                epochs: Optional[int] = None) -> ModelSpec:
    """The trained model a Re-initialise run takes apart (MLPs: the Delete teachers, shared in the store)."""
    if model in ("plain", "residual"):
        return mlp_spec(model, seed, blocks or MLP_BLOCKS, width or MLP_WIDTH, epochs or MLP_EPOCHS)
    if model == "vit":
        cfg = vit_model_config("sequential", blocks or VIT_BLOCKS, width or 64)
        return ModelSpec(cfg, vit_train_config("sequential", seed, epochs or VIT_EPOCHS),
                         task="digits")
    raise ValueError(f"unknown model {model!r}; choose plain, residual or vit")


# -- tasks: one recipe, another data set (issue 31) -----------------------------------------------------------------
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


# -- the lab's models by name: one vocabulary for every page --------------------------------------------------
@dataclass(frozen=True)
class Model:
    """A named trained model every page may offer: its label, its blocks (the lab counts depth in blocks, for every
    model), its task and its recipe (`spec(seed)`)."""

    name: str
    label: str
    family: str  # "mlp" or "vit": which surgeries apply (sub-layers are the ViT's)
    blocks: int
    task: str
    spec: Callable[[int], ModelSpec]


MODELS: dict[str, Model] = {m.name: m for m in (
    Model("plain", "plain MLP", "mlp", MLP_BLOCKS, "synthetic", lambda seed: mlp_spec("plain", seed)),
    Model("residual", "residual MLP", "mlp", MLP_BLOCKS, "synthetic", lambda seed: mlp_spec("residual", seed)),
    Model("layerdrop", "residual MLP trained with LayerDrop (p = 0.5)", "mlp", LAYERDROP_BLOCKS, "synthetic",
          lambda seed: layerdrop_spec("residual", SHARED_LAYERDROP_P, seed)),
    *(Model(f"vit-{mode}", f"ViT, trained {'in order' if mode == 'sequential' else 'with ' + VIT_MODE_LABELS[mode]}",
            "vit", VIT_BLOCKS, "digits", lambda seed, mode=mode: vit_spec(mode, VIT_BLOCKS, seed))
      for mode in VIT_MODES),
)}


def model(name: str) -> Model:
    """The model of a name; ValueError naming the known ones."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    return MODELS[name]


def labels(names: tuple[str, ...]) -> dict[str, str]:
    """{name: label} of some models (a page's choices), in their order."""
    return {n: model(n).label for n in names}


# -- Train x take apart (the recipe x surgery matrix): six recipes of the Shuffle page's 6-block digits ViT ----------
# Same shape, data and optimiser as 'vit-sequential'; sequential and LayerShuffle are the registry's own specs (the
# same stored weights), the others change one thing each.
MATRIX_RECIPES = ("sequential", "ln-scale", "layerdrop", "shuffle", "looped", "early-exit")
MATRIX_RECIPE_LABELS = {"sequential": "sequential", "ln-scale": "LayerNorm scaling", "layerdrop": "LayerDrop p = 0.5",
                        "shuffle": "LayerShuffle", "looped": "looped 3 x 2", "early-exit": "early-exit loss"}
MATRIX_LAYERDROP_P = 0.5
MATRIX_LOOP = (3, 2)  # k distinct blocks run L times: k x L = VIT_BLOCKS block runs


# The residual MLP's rows, where the recipes apply (it has no LayerNorm to scale): LayerDrop's 8-block residual MLP
# (sequential = its p = 0 model, LayerDrop = the LayerDrop page's p = 0.5 model: the same stored weights), LayerShuffle,
# looped 4 x 2 and the early-exit loss, each with the LayerDrop page's MLP recipe.
MATRIX_MODELS = ("vit", "mlp")
MATRIX_MODEL_LABELS = {"vit": "ViT (6 blocks, 8x8 digits)", "mlp": "residual MLP (8 blocks, synthetic task)"}
MATRIX_MLP_RECIPES = ("sequential", "layerdrop", "shuffle", "looped", "early-exit")
MATRIX_MLP_LOOP = (4, 2)


def matrix_label(recipe: str, model: str = "vit") -> str:
    """A recipe's label for a model family (the looped MLP runs 4 blocks twice)."""
    if model == "mlp" and recipe == "looped":
        return "looped {} x {}".format(*MATRIX_MLP_LOOP)
    return MATRIX_RECIPE_LABELS[recipe]


def matrix_recipes(model: str) -> tuple[str, ...]:
    """The matrix's recipes (rows) of a model family."""
    if model not in MATRIX_MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MATRIX_MODELS)}")
    return MATRIX_RECIPES if model == "vit" else MATRIX_MLP_RECIPES


def _matrix_mlp_spec(recipe: str, seed: int) -> ModelSpec:
    if recipe not in MATRIX_MLP_RECIPES:
        raise ValueError(f"recipe {recipe!r} does not apply to the residual MLP; choose one of "
                         f"{', '.join(MATRIX_MLP_RECIPES)}")
    if recipe in ("sequential", "layerdrop"):
        return layerdrop_spec("residual", MATRIX_LAYERDROP_P if recipe == "layerdrop" else 0.0, seed)
    base = layerdrop_spec("residual", 0.0, seed)
    if recipe == "shuffle":
        return replace(base, train=replace(base.train, mode="shuffle"))
    if recipe == "looped":
        k, loops = MATRIX_MLP_LOOP
        return ModelSpec(replace(base.model, blocks=k), replace(base.train, mode="looped", loops=loops))
    return replace(base, train=replace(base.train, early_exit=True))


def matrix_spec(recipe: str, seed: int, model: str = "vit") -> ModelSpec:
    """The model of one recipe of the matrix: the digits ViT (6 block runs each; the looped model has 3 blocks run
    twice), or the residual MLP (8 block runs; looped: 4 blocks run twice)."""
    if model == "mlp":
        return _matrix_mlp_spec(recipe, seed)
    if model != "vit":
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MATRIX_MODELS)}")
    if recipe == "sequential":
        return vit_spec("sequential", VIT_BLOCKS, seed)
    if recipe == "shuffle":
        return vit_spec("shuffle", VIT_BLOCKS, seed)
    model = vit_model_config("sequential", VIT_BLOCKS)
    if recipe == "ln-scale":
        return ModelSpec(replace(model, ln_scale=True), vit_train_config("sequential", seed), task="digits")
    if recipe == "layerdrop":
        return ModelSpec(model, vit_train_config("sequential", seed, mode="layerdrop", drop_p=MATRIX_LAYERDROP_P),
                         task="digits")
    if recipe == "looped":
        k, loops = MATRIX_LOOP
        return ModelSpec(vit_model_config("sequential", k),
                         vit_train_config("sequential", seed, mode="looped", loops=loops), task="digits")
    if recipe == "early-exit":
        return ModelSpec(model, vit_train_config("sequential", seed, early_exit=True), task="digits")
    raise ValueError(f"unknown recipe {recipe!r}; choose one of {', '.join(MATRIX_RECIPES)}")


def matrix_route(recipe: str, model: str = "vit") -> tuple[int, ...]:
    """The trained route of a recipe's model: its blocks in order (the looped model's k blocks, L times)."""
    recipes = matrix_recipes(model)
    if recipe not in recipes:
        raise ValueError(f"unknown recipe {recipe!r}; choose one of {', '.join(recipes)}")
    if recipe == "looped":
        return looped(*(MATRIX_LOOP if model == "vit" else MATRIX_MLP_LOOP))
    return looped(VIT_BLOCKS if model == "vit" else LAYERDROP_BLOCKS, 1)


def task_or_own(task: Optional[str], own: str, family: str) -> Optional[str]:
    """A config's task: None for the model's own task `own` (one spelling, one stored result), else `task`, checked
    against what a model of `family` can read (ValueError)."""
    if task is None or task == own:
        return None
    check_task(task, family)
    return task


def model_task(name: str, task: Optional[str]) -> Optional[str]:
    """A config's task for registry model `name` (`task_or_own`)."""
    m = model(name)
    return task_or_own(task, m.task, m.family)


def readable(task: Optional[str], family: str) -> Optional[str]:
    """`task` when a model of `family` can read it, else None (its own task): a page's task for the models it shows
    beside the chosen one (the ViT never reads a table)."""
    if task is None or (family == "vit" and task not in FAMILY_TASKS["vit"]):
        return None
    return task


def model_spec_on(name: str, seed: int, task: Optional[str] = None) -> ModelSpec:
    """The spec of registry model `name` at `seed` on `task` (None: its own)."""
    return on_task(model(name).spec(seed), model_task(name, task))


@dataclass(frozen=True)
class ModelSeed:
    """One registry model at one seed: the config of an entry that measures a trained model (a profile)."""

    model: str = "residual"
    seed: int = 0
    task: Optional[str] = None  # None: the model's own task (lab/core/recipes.py: on_task)

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", model_task(self.model, self.task))

    @property
    def spec(self) -> ModelSpec:
        return model_spec_on(self.model, self.seed, self.task)

    @property
    def blocks(self) -> int:
        return model(self.model).blocks
