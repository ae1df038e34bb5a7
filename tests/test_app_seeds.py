"""Seeds on a page: a claim about a recipe says "cannot tell (one trained network)" at one seed and the view offers
the seeds (at least 3) that would settle it; where the models are quick to train, or every seed is stored already (a
warmed course), the view pools it over seeds 0, 1 and 2 without a click. Each claim says what it generalises over."""

import time
import uuid

import pytest
from streamlit.testing.v1 import AppTest

from app.claims_view import rendered_verdicts
from lab import catalog

from .apptest_util import open_test_app


@pytest.fixture(autouse=True)
def _recipe_seeds(monkeypatch):
    """These tests are about the seeds a quick view pools without a click (the suite's page tests set it to 1)."""
    monkeypatch.setenv("LAYERLAB_RECIPE_SEEDS", "3")



def _demo(monkeypatch, mode: str, run: str = "") -> AppTest:
    monkeypatch.setenv("SEEDS_DEMO", mode)
    monkeypatch.setenv("SEEDS_DEMO_RUN", run or uuid.uuid4().hex)  # this test's own stored results
    return open_test_app("seeds_demo")


def _until(at: AppTest, text: str, limit: float = 60) -> list[str]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and not any(text in m.value for m in at.markdown):
        time.sleep(0.3)
        at.run()
        assert not at.exception, at.exception
    return [m.value for m in at.markdown]


def test_one_network_cannot_tell_a_recipe_and_the_offer_is_three_seeds(monkeypatch):
    try:
        at = _demo(monkeypatch, "offer")
        md = [m.value for m in at.markdown]
        text = " ".join(md)
        assert rendered_verdicts(md) == [("holds", "the change helps"),
                                         ("cannot tell (one trained network)", "the recipe trains better models")]
        assert "For these trained networks." in text
        assert "About the recipe, over training seeds: trained at seed 0 only." in text
        assert "the between-seed spread is unknown at one seed; 3 seeds are the fewest that can estimate it" in text
        assert "1 claim cannot tell at this seed" in text
        buttons = [b for b in at.button if "more seed" in b.label]
        assert len(buttons) == 1
        n = at.number_input[0].value
        assert n == 3 and at.number_input[0].min == 3 and buttons[0].label == "Run 2 more seeds"
        buttons[0].click().run()
        md = _until(at, "(3 of 3 computed)")
        # the asked view's blocks: those after its heading (once the seeds are stored, the default view above may
        # pool the recipe claim too, as a warmed course's would)
        start = next(i for i, m in enumerate(md) if m.startswith("**Over seeds 0, 1, 2** (3 of 3 computed)"))
        pooled = [m for m in md[start:] if "Each seed alone" in m]
        assert len(pooled) == 2, pooled
        recipe = next(m for m in pooled if "recipe" in m)
        # each seed alone cannot tell a recipe; the pool over 3 seeds, its spread the error, holds
        assert rendered_verdicts([recipe]) == [("holds", "the recipe trains better models")]
        assert recipe.count("cannot tell (one trained network)") == 3 and "Over training seeds 0, 1, 2." in recipe
    finally:
        catalog._FOUND.pop("seedsdemo", None)


def test_quick_models_pool_the_recipe_claim_over_three_seeds_without_a_click(monkeypatch):
    try:
        at = _demo(monkeypatch, "auto")
        md = _until(at, "Each seed alone")
        text = " ".join(md)
        assert rendered_verdicts(md) == [("holds", "the change helps"), ("holds", "the recipe trains better models")]
        assert "For these trained networks." in text and "Over training seeds 0, 1, 2." in text
        assert "0: cannot tell (one trained network), 1: cannot tell (one trained network)" in text
        assert not [b for b in at.button if "more seed" in b.label]  # every claim decided: nothing to offer
    finally:
        catalog._FOUND.pop("seedsdemo", None)


def test_a_view_whose_seeds_are_all_stored_pools_them_without_a_click_and_starts_nothing(monkeypatch):
    """A ViT's view (not quick) in a warmed course: seeds 0, 1 and 2 stored, so the recipe claim is pooled at once;
    with one seed missing, the view offers the seeds and computes nothing on its own."""
    from app import stored_results
    from lab.runtime.store import active_store
    from tests.seeds_demo_lab import DemoConfig, demo_model

    run = uuid.uuid4().hex
    try:
        for seed in (0, 2):  # seed 1 missing: what a course that was not warmed has
            demo_model(DemoConfig(run, seed))
        at = _demo(monkeypatch, "offer", run)
        md = [m.value for m in at.markdown]
        assert ("cannot tell (one trained network)", "the recipe trains better models") in rendered_verdicts(md)
        assert [b.label for b in at.button if "more seed" in b.label] == ["Run 2 more seeds"]
        assert not active_store().has("seeds-demo-model", DemoConfig(run, 1))  # the view started nothing
        demo_model(DemoConfig(run, 1))  # warming stores the last seed
        stored_results._results.clear()  # a new visitor's server process: nothing remembered in memory
        at = _demo(monkeypatch, "offer", run)
        md = [m.value for m in at.markdown]
        assert rendered_verdicts(md) == [("holds", "the change helps"), ("holds", "the recipe trains better models")]
        assert "Over training seeds 0, 1, 2." in " ".join(md)
        assert not [b for b in at.button if "more seed" in b.label]
    finally:
        catalog._FOUND.pop("seedsdemo", None)
