"""The pages' words for their models, as registry names (lab/core/model_registry.py): a word whose model depends on
the page is mapped by that page's name function (LayerDrop's `residual` is `mlp8-residual`: `layerdrop_name`;
Re-initialise's: `reinit_name`; the matrix's recipes: `matrix_name`), so no stored link, command or result changes.
Names only: the specs, labels and routes they give are lab/core/page_models.py's.
"""

from __future__ import annotations

from typing import Optional

from lab.core.recipes import MLP_BLOCKS, mlp_name, tag, vit_name

# -- LayerDrop: 8 blocks, so N/4, N/2 and 3N/4 are whole numbers -------------------------------------------
LAYERDROP_MODELS = ("residual", "vit")  # the page's words for its models (registry names: layerdrop_name)
LAYERDROP_BLOCKS = 8  # both models


def layerdrop_name(model: str, p: float, blocks: Optional[int] = None) -> str:
    """The registry name of a LayerDrop page model at rate p (p = 0: the ordinary recipe), at its own blocks or at
    `blocks` (the from-scratch baselines)."""
    if model not in LAYERDROP_MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(LAYERDROP_MODELS)}")
    n = LAYERDROP_BLOCKS if blocks is None else blocks
    t = tag("layerdrop", float(p)) if p > 0 else ""
    return mlp_name("residual", n, t) if model == "residual" else vit_name(n, t)


# -- the models other pages read frozen (Rearrange, Layer lens, IOT, the matrix): the same stored weights ---------
VIT_BLOCKS = 6  # the Shuffle page's ViT
SHARED_LAYERDROP_P = 0.5  # the LayerDrop page's default model


# -- Re-initialise: the Delete teachers, and the Shuffle page's sequential ViT (its checkpoints included) ----------
REINIT_MODELS = ("plain", "residual", "vit")  # the page's words


def reinit_name(model: str, blocks: Optional[int] = None) -> str:
    """The registry name of a Re-initialise model, at its own blocks or at `blocks` (a smaller one)."""
    if model in ("plain", "residual"):
        return mlp_name(model, blocks or MLP_BLOCKS)
    if model == "vit":
        return vit_name(blocks or VIT_BLOCKS)
    raise ValueError(f"unknown model {model!r}; choose plain, residual or vit")


# -- the matrix (Train x take apart): six recipes of the Shuffle page's 6-block digits ViT ----------------------------
# Same shape, data and optimiser as 'vit-sequential' (`vit6`); sequential and LayerShuffle are the Shuffle page's own
# models (the same stored weights), the others change one thing each. The residual MLP's rows, where the recipes apply
# (it has no LayerNorm to scale), are LayerDrop's 8-block residual MLP (sequential = its p = 0 model, LayerDrop = the
# LayerDrop page's p = 0.5 model: the same stored weights), LayerShuffle, looped 4 x 2 and the early-exit loss.
MATRIX_MODELS = ("vit", "mlp")  # the page's words
MATRIX_NAMES: dict[str, dict[str, str]] = {  # the page's (model, recipe) -> registry name
    "vit": {"sequential": "vit6", "ln-scale": "vit6.ln-scale", "layerdrop": "vit6.layerdrop0.5",
            "shuffle": "vit6.shuffle", "looped": "vit3.looped2", "early-exit": "vit6.early-exit"},
    "mlp": {"sequential": "mlp8-residual", "layerdrop": "mlp8-residual.layerdrop0.5",
            "shuffle": "mlp8-residual.shuffle", "looped": "mlp4-residual.looped2",
            "early-exit": "mlp8-residual.early-exit"},
}
MATRIX_RECIPES = tuple(MATRIX_NAMES["vit"])
MATRIX_MLP_RECIPES = tuple(MATRIX_NAMES["mlp"])


def matrix_recipes(model: str) -> tuple[str, ...]:
    """The matrix's recipes (rows) of a model family."""
    if model not in MATRIX_MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MATRIX_MODELS)}")
    return tuple(MATRIX_NAMES[model])


def matrix_name(recipe: str, model: str = "vit") -> str:
    """The registry name of one recipe of the matrix."""
    recipes = matrix_recipes(model)
    if recipe not in recipes:
        if model == "mlp" and recipe in MATRIX_RECIPES:
            raise ValueError(f"recipe {recipe!r} does not apply to the residual MLP; choose one of "
                             f"{', '.join(recipes)}")
        raise ValueError(f"unknown recipe {recipe!r}; choose one of {', '.join(recipes)}")
    return MATRIX_NAMES[model][recipe]
