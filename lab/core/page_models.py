"""The models pages and configs name, as specs. Each page's builder (`mlp_spec`, `vit_spec`, `layerdrop_spec`,
`reinit_spec`, `matrix_spec`, and the matrix's labels and routes) is a lookup into the registry
(lab/core/model_registry.py) by the page's words (lab/core/page_words.py); `model_spec_on` and `ModelSeed` give a
registry model at a seed on a task (lab/core/task_fit.py sizes it to the task).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from lab.core.model_registry import model
from lab.core.page_words import MATRIX_MODELS, MATRIX_RECIPES, layerdrop_name, matrix_name, reinit_name
from lab.core.recipes import MLP_BLOCKS, MLP_EPOCHS, MLP_WIDTH, VIT_EPOCHS, check_mode, mlp_name, tag, vit_name
from lab.core.task_fit import on_task, task_or_own
from lab.core.zoo import ModelSpec

_lookup = model  # for the builders below, whose argument `model` hides the function


def mlp_spec(arch: str, seed: int, blocks: int = MLP_BLOCKS, width: int = MLP_WIDTH,
             epochs: int = MLP_EPOCHS) -> ModelSpec:
    """A plain or residual MLP trained with Adam on the synthetic task: registry model `mlp{blocks}-{arch}`, at
    another width or for other epochs when asked (the Delete page's smaller teachers)."""
    return resized(model(mlp_name(arch, blocks)).spec(seed), width=width, epochs=epochs)


def resized(spec: ModelSpec, width: Optional[int] = None, epochs: Optional[int] = None) -> ModelSpec:
    """A registry model's spec at another width or for other epochs (a page's smaller model for a quick look); the
    same spec when neither is given."""
    if width is not None:
        spec = replace(spec, model=replace(spec.model, width=width))
    if epochs is not None:
        spec = replace(spec, train=replace(spec.train, epochs=epochs))
    return spec


def vit_spec(mode: str, depth: int = 6, seed: int = 0, epochs: int = VIT_EPOCHS) -> ModelSpec:
    """The digits ViT trained in a given mode (sequential, shuffle, position, predict): registry model
    `vit{depth}[.mode]`, for other epochs when asked."""
    check_mode(mode)
    return resized(model(vit_name(depth, tag(mode))).spec(seed), epochs=epochs)


def layerdrop_spec(model: str, p: float, seed: int) -> ModelSpec:
    """The model of the LayerDrop experiments. p = 0 is the ordinary (sequential) recipe itself."""
    # The trainer draws LayerDrop routes from a stream of their own, so p = 0 would give the same weights as
    # sequential training (tests/test_layerdrop.py checks it); naming it sequential lets other pages share it.
    return _lookup(layerdrop_name(model, p)).spec(seed)


def layerdrop_scratch_spec(model: str, blocks: int, seed: int) -> ModelSpec:
    """The ordinary (p = 0) LayerDrop recipe at `blocks` blocks, trained from scratch with the same epochs: the
    paper's baseline for a LayerDrop model pruned to that depth. (At 6 ViT blocks this is the Shuffle page's
    sequential ViT, at 7 residual blocks the Delete page's residual teacher: the same registry names, the same
    weights.)"""
    if not 1 <= blocks <= layerdrop_blocks(model):
        raise ValueError(f"a {model} model of the LayerDrop recipe has 1 to {layerdrop_blocks(model)} blocks")
    return _lookup(layerdrop_name(model, 0.0, blocks)).spec(seed)


def layerdrop_blocks(model: str) -> int:
    """Blocks of the LayerDrop experiment's model, without building it."""
    return _lookup(layerdrop_name(model, 0.0)).blocks


def reinit_spec(model: str, seed: int, blocks: Optional[int] = None, width: Optional[int] = None,
                epochs: Optional[int] = None) -> ModelSpec:
    """The trained model a Re-initialise run takes apart (MLPs: the Delete teachers, shared in the store)."""
    return resized(_lookup(reinit_name(model, blocks)).spec(seed), width=width, epochs=epochs)


def matrix_spec(recipe: str, seed: int, model: str = "vit") -> ModelSpec:
    """The model of one recipe of the matrix: the digits ViT (6 block runs each; the looped model has 3 blocks run
    twice), or the residual MLP (8 block runs; looped: 4 blocks run twice)."""
    return _lookup(matrix_name(recipe, model)).spec(seed)


def matrix_label(recipe: str, model: str = "vit") -> str:
    """A recipe's label for a model family (the looped MLP runs 4 blocks twice)."""
    return _lookup(matrix_name(recipe, model)).recipe_label


def matrix_route(recipe: str, model: str = "vit") -> tuple[int, ...]:
    """The trained route of a recipe's model: its blocks in order (the looped model's k blocks, L times)."""
    return _lookup(matrix_name(recipe, model)).route


MATRIX_RECIPE_LABELS = {r: matrix_label(r) for r in MATRIX_RECIPES}
MATRIX_MODEL_LABELS = {m: "{e.kind} ({e.blocks} blocks, {e.data_words})".format(e=model(matrix_name("sequential", m)))
                       for m in MATRIX_MODELS}


def model_task(name: str, task: Optional[str]) -> Optional[str]:
    """A config's task for registry model `name` (`task_or_own`)."""
    m = model(name)
    return task_or_own(task, m.task, m.family)


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
