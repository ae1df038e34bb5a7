"""The training length each page runs follows its evidence (lab/catalog/recipe_evidence.py), and the evidence says
what docs/recipe-decision.md's tables say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.catalog import recipe_evidence as R
from lab.experiments.delete.experiment import DeleteConfig
from lab.experiments.reinit import descriptor as reinit_page
from lab.experiments.shuffle.experiment import ShuffleConfig

DOC = (Path(__file__).resolve().parents[1] / "docs" / "recipe-decision.md").read_text()
DEFAULTS = {"shuffle": ShuffleConfig().epochs, "delete": DeleteConfig().epochs,
            "reinit": reinit_page.map_config("plain", 0, None).spec.train.epochs}  # what each page's default trains
TITLES = {"shuffle": "Shuffle", "delete": "Delete", "reinit": "Re-initialise"}


def _evidence(*trials: R.Trial) -> R.RecipeEvidence:
    return R.RecipeEvidence(page="toy", knob="epochs", unit="epochs", full=40, seeds=5, measured="today",
                            model="a toy", task="digits", trials=trials)


def test_the_rule_takes_the_cheapest_recipe_on_which_every_claim_agrees_else_the_full_one():
    assert _evidence(R.Trial(30, 4, 5, ("a",)), R.Trial(20, 3, 5, ("a", "b"))).chosen() == 40
    assert _evidence(R.Trial(30, 5, 5, ()), R.Trial(20, 5, 5, ()), R.Trial(10, 4, 5, ("a",))).chosen() == 20
    assert _evidence(R.Trial(30, 5, 5, ()), R.Trial(20, 4, 5, ("a",))).chosen() == 30
    assert _evidence().chosen() == 40


@pytest.mark.parametrize("page", sorted(DEFAULTS))
def test_each_studied_page_runs_the_length_its_evidence_chose(page):
    e = R.evidence(page)
    assert e is not None and DEFAULTS[page] == e.chosen()
    for t in e.trials:
        assert t.value < e.full and 0 <= t.agree <= t.claims and len(t.moved) == t.claims - t.agree


@pytest.mark.parametrize("page", sorted(DEFAULTS))
def test_the_evidence_says_what_the_docs_tables_say(page):
    e = R.evidence(page)
    heading = f"## Training length on the {TITLES[page]} page"
    assert heading in DOC
    section = DOC.split(heading, 1)[1].split("\n## ", 1)[0]
    for t in e.trials:
        row = re.search(rf"^\| {t.value} {e.unit} \|[^|\n]+\| (\d+) of (\d+) \|([^\n]*)$", section, re.M)
        assert row, (page, t.value)
        assert (int(row[1]), int(row[2])) == (t.agree, t.claims)
        for key in t.moved:  # the claims that moved are named in the row
            assert key.split(".", 1)[-1] in row[3], (page, t.value, key)


def test_the_words_say_what_ran_and_what_the_evidence_did():
    words = R.evidence_words("delete", 12)
    assert "12 epochs (the full recipe)" in words and "no shorter recipe agreed on every claim" in words
    for t in R.evidence("delete").trials:
        assert f"{t.value} epochs: {t.agree} of {t.claims} claims agree" in words
    assert "a setting the evidence did not choose" in R.evidence_words("delete", 5)
    other = R.evidence_words("delete", 20, task="digits")
    assert "measured on synthetic only" in other and "20 epochs" in other
    assert R.evidence_words("matrix", 40) is None  # not studied: the page says nothing about it
