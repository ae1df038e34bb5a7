"""A page with a claim about these networks and a claim about a recipe, from a stand-in experiment whose claims at
each seed are cheap (tests/test_app_seeds.py): drives claims_view's seeds through the real job runner.

SEEDS_DEMO=auto: the stand-in's models count as quick to train (`Descriptor.seeds_by_default`), so the view pools
the recipe claim over seeds 0, 1, 2 without a click; otherwise (a ViT's case) the recipe claim cannot tell (one
trained network) and the view offers the seeds, unless every seed's result is stored already (a warmed course:
tests/seeds_demo_lab.py, under SEEDS_DEMO_RUN), when it pools them without a click and starts nothing."""

import dataclasses
import os

import numpy as np

from app import claims_view
from lab import catalog
from lab import claims as C
from lab import estimates as E
from lab.catalog.presets import Need
from tests.seeds_demo_lab import DemoConfig, demo_model

N = 4000


def recipe_outcomes(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-input outcomes of two separately trained models at `seed`: the recipe's model right on ~4 pts more of the
    same held-out inputs (about 9 se at one seed), so a pool over 3 seeds decides where one seed cannot."""
    rng = np.random.default_rng(1000 + seed)
    base = rng.random(N) < 0.7
    u = rng.random(N)
    recipe = np.where(base, u > 0.03, u < 0.2)  # loses 3 % of the right ones, wins 20 % of the wrong ones
    return recipe.astype(float), base.astype(float)


def claims_of(settings: dict) -> list:
    seed = settings["seed"]
    gain = C.test("gain", E.Estimate(0.03, 0.01, "paired", N, "paired over 4,000 inputs"), ">=", 0.0)
    recipe, base = recipe_outcomes(seed)
    better = C.test("recipe minus baseline", E.paired(recipe, base), ">=", 0.0)
    return [C.claim("demo.gain", "the change helps", "a stand-in", {"gain": 0.03}, "gain above 0 by 2 se", [gain],
                    f"gain 3.0 pts at seed {seed}"),
            C.claim("demo.recipe", "the recipe trains better models", "a stand-in", {"gain": better["value"]},
                    "recipe above baseline by 2 se over training seeds", [better],
                    f"recipe {100 * better['value']:+.1f} pts at seed {seed}", seeds=[seed], over="seeds")]


base = next(iter(catalog.descriptors().values()))
quick = os.environ.get("SEEDS_DEMO") == "auto"
run = os.environ.get("SEEDS_DEMO_RUN", "")


class FakePage:
    name = "seedsdemo"
    student = False

    def settings(self) -> dict:
        # `run` is a setting: each test's claims at seeds 1 and 2 are its own, in the shared store and in the
        # job runner's memory, as two views' claims are apart when their settings differ
        return {"seed": 0, "k": 2, "run": run}

catalog._FOUND["seedsdemo"] = dataclasses.replace(
    base, name="seedsdemo", claims=claims_of, seeds_by_default=lambda s: quick,
    plan=lambda s: [Need("the stand-in model", demo_model, DemoConfig(run, s["seed"]))])
claims_view.show(claims_of({"seed": 0, "k": 2}), page=FakePage())
