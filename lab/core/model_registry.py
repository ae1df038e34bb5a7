"""The model registry: every trained model the lab names (`model(name)`: its `Model` entry, whose `spec(seed)` is its
ModelSpec), the registered ones the pages offer (`register_model`, `list_models`) and the words that mean one model
everywhere (`ALIASES`, `MODELS`).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass
from typing import Callable

from lab.core import tasks
from lab.core.page_words import MATRIX_NAMES, SHARED_LAYERDROP_P, VIT_BLOCKS, layerdrop_name
from lab.core.recipes import (
    MLP_WIDTH,
    RECIPES,
    VIT_MODES,
    mlp_build,
    mlp_name,
    tag,
    vit_build,
    vit_model_config,
    vit_name,
)
from lab.core.routes import looped
from lab.core.zoo import ModelSpec


# -- the registry: every trained model the lab names ------------------------------------------------------------------
# A model's name says its shape and how it was trained, in the style of timm's names: the architecture and its blocks
# (`mlp7-residual`, `mlp7-plain`, `vit6`: the digits ViT of width 64), then, after a dot, its recipe (RECIPES) when it
# is not the ordinary one: `vit6.shuffle`, `vit6.position`, `vit6.predict` (LayerShuffle and its variants),
# `vit6.ln-scale`, `mlp8-residual.layerdrop0.5` (LayerDrop at p = 0.5), `vit3.looped2` (3 blocks run twice),
# `vit6.early-exit`. Every name of this grammar is a model (`model(name)` builds its entry); the registered ones
# (`register_model`, `list_models`) are the ones the pages offer. The words pages, links and the CLI have always used
# stay their configs' choices, so no stored link, command or result changes: a word that means one model everywhere is
# an alias of its entry (`residual` = `mlp7-residual`, `vit-sequential` = `vit6`: ALIASES); a word whose model
# depends on the page (LayerDrop's `residual` is the 8-block MLP, the matrix's `mlp` too) is mapped by that page's
# name function (`layerdrop_name`, `matrix_name`, `reinit_name`).
@dataclass(frozen=True)
class Model:
    """A registry entry: a named trained model, its label, its shape (`blocks` blocks of one `width`; the lab counts
    depth in blocks, for every model), its task and its recipe (`spec(seed)`: the ModelSpec at a training seed)."""

    name: str
    label: str
    family: str  # "mlp" or "vit": which surgeries apply (sub-layers are the ViT's)
    blocks: int  # distinct blocks (a looped model runs them `loops` times)
    width: int
    task: str
    spec: Callable[[int], ModelSpec]
    recipe: str = "sequential"
    recipe_label: str = "sequential"  # the recipe in a table of recipes (the matrix's rows, the Shuffle page's modes)
    loops: int = 1
    arch: str = ""  # an MLP's: plain or residual

    @property
    def runs(self) -> int:
        """Block runs of the trained route."""
        return self.blocks * self.loops

    @property
    def route(self) -> tuple[int, ...]:
        """The trained route: the blocks in order (a looped model's, `loops` times)."""
        return looped(self.blocks, self.loops)

    @property
    def kind(self) -> str:
        """"residual MLP", "plain MLP" or "ViT"."""
        return f"{self.arch} MLP" if self.family == "mlp" else "ViT"

    @property
    def title(self) -> str:
        """Its shape in two words: "7-block residual MLP", "6-block ViT"."""
        return f"{self.blocks}-block {self.kind}"

    @property
    def size(self) -> str:
        """Blocks x width: "7x128"."""
        return f"{self.blocks}x{self.width}"

    @property
    def data_words(self) -> str:
        """Its own task as a sentence names it: "synthetic 20-class task", "8x8 digits"."""
        return data_words(self.task)

    @property
    def n_classes(self) -> int:
        return tasks.get(self.task).shape.n_classes


def data_words(task: str) -> str:
    """A ready-made task as a model's description names it, from its shape: "8x8 digits", "synthetic 20-class task"."""
    shape = tasks.get(task).shape
    if shape.kind == "image":
        side = round(shape.n_features ** 0.5)
        return f"{side}x{side} {task}"
    if shape.kind == "sequence":
        return f"{task} ({shape.n_features}-value sequences)"
    return f"{task} {shape.n_classes}-class task"


_GRAMMAR = re.compile(r"(?:mlp(?P<mlp>\d+)-(?P<arch>plain|residual)|vit(?P<vit>\d+))"
                      r"(?:\.(?P<recipe>[a-z]+(?:-[a-z]+)*)(?P<number>\d+(?:\.\d+)?)?)?")
REGISTRY: dict[str, Model] = {}  # registered name -> entry, in registration order
ALIASES: dict[str, str] = {}  # a page word that means one model everywhere -> its registered name


@functools.lru_cache(maxsize=512)
def _entry(name: str) -> Model:
    """The entry of a name of the grammar; ValueError with the reason it names no model."""
    m = _GRAMMAR.fullmatch(name)
    if m is None:
        raise ValueError(f"unknown model {name!r}; the lab's models: {', '.join(REGISTRY)} (also written "
                         f"{', '.join(ALIASES)})")
    family = "mlp" if m["mlp"] else "vit"
    blocks = int(m["mlp"] or m["vit"])
    if m["recipe"] == "sequential":
        raise ValueError(f"model {name!r} is written {name.split('.')[0]!r} (the ordinary recipe has no tag)")
    rname = m["recipe"] or "sequential"
    r = RECIPES.get(rname)
    if r is None:
        raise ValueError(f"unknown recipe {rname!r} in model {name!r}; choose one of "
                         f"{', '.join(k for k in RECIPES if k != 'sequential')}")
    if family not in r.families:
        raise ValueError(f"recipe {rname!r} does not apply to {'an MLP' if family == 'mlp' else 'the ViT'} "
                         f"(model {name!r})")
    if (r.number is None) != (m["number"] is None):
        raise ValueError(f"recipe {rname!r} {'takes a' if r.number else 'takes no'} number (model {name!r})")
    number = None if r.number is None else r.number(m["number"])
    if rname == "layerdrop" and not 0.0 < number < 1.0:
        raise ValueError(f"a LayerDrop rate is between 0 and 1 (model {name!r})")
    if rname == "looped" and number < 2:
        raise ValueError(f"a looped model runs its blocks at least twice (model {name!r})")
    t = tag(rname, number)
    canonical = mlp_name(m["arch"], blocks, t) if family == "mlp" else vit_name(blocks, t)
    if canonical != name:
        raise ValueError(f"model {name!r} is written {canonical!r}")
    if family == "mlp":
        spec = functools.partial(mlp_build, m["arch"], blocks, rname, number)
        kind, width, task = f"{m['arch']} MLP", MLP_WIDTH, "synthetic"
        label = kind if rname == "sequential" else f"{kind} trained {r.phrase}"
    else:
        spec = functools.partial(vit_build, blocks, rname, number)
        width, task = vit_model_config("sequential").width, "digits"
        label = f"ViT, trained {r.phrase}"
    words = dict(n=number if number is None or r.number is int else repr(number), blocks=blocks)
    entry = Model(name=name, label=label.format(**words), family=family, blocks=blocks, width=width, task=task,
                  spec=spec, recipe=rname, recipe_label=r.label.format(**words),
                  loops=int(number) if rname == "looped" else 1, arch=m["arch"] or "")
    entry.spec(0)  # the model config's own checks (an MLP has at most 63 blocks)
    return entry


def model(name: str) -> Model:
    """The entry of a registered name, an alias or any name of the grammar; ValueError naming the known ones."""
    if not isinstance(name, str):
        raise ValueError(f"a model is named by a string, got {name!r}")
    name = ALIASES.get(name, name)
    return REGISTRY.get(name) or _entry(name)


def register_model(name: str, *aliases: str) -> Model:
    """Register the model of a grammar name (under `aliases` too: page words that mean it everywhere)."""
    if name in REGISTRY:
        raise ValueError(f"model {name!r} is registered already")
    entry = _entry(name)
    for a in aliases:
        if a in ALIASES or a in REGISTRY or _GRAMMAR.fullmatch(a):
            raise ValueError(f"alias {a!r} is taken")
        ALIASES[a] = name
    REGISTRY[name] = entry
    return entry


def list_models(pattern: str = "*") -> list[str]:
    """The registered names that match a shell-style pattern (`list_models("vit6*")`), in registration order."""
    return [n for n in REGISTRY if fnmatch.fnmatchcase(n, pattern)]


def labels(names: tuple[str, ...]) -> dict[str, str]:
    """{name: label} of some models (a page's choices), in their order."""
    return {n: model(n).label for n in names}


# -- what the pages offer ---------------------------------------------------------------------------------------------
register_model("mlp7-plain", "plain")  # the Delete / Re-initialise teachers
register_model("mlp7-residual", "residual")
register_model("mlp1-plain")  # the Delete page's one-block MLP trained from scratch
register_model("mlp1-residual")
register_model("mlp8-residual")  # LayerDrop's ordinary (p = 0) model
register_model(layerdrop_name("residual", SHARED_LAYERDROP_P), "layerdrop")
register_model("vit6", "vit-sequential")  # the Shuffle page's ViT in each training mode
for _mode in VIT_MODES[1:]:
    register_model(vit_name(VIT_BLOCKS, tag(_mode)), f"vit-{_mode}")
register_model("vit8")  # LayerDrop's ViT
register_model(layerdrop_name("vit", SHARED_LAYERDROP_P))
for _name in (*MATRIX_NAMES["vit"].values(), *MATRIX_NAMES["mlp"].values()):
    if _name not in REGISTRY:
        register_model(_name)

MODELS: dict[str, Model] = {word: REGISTRY[name] for word, name in ALIASES.items()}  # the pages' shared words
