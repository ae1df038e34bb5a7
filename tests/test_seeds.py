"""Seeds on a view: which seeds it offers (never fewer than 3 in all), which views pool their recipe claims over 3
seeds without a click (quick models), the verdict over the seeds, and `python -m lab seeds` (lab/classroom/seeds.py,
lab/cli/seeds.py)."""

import json

import numpy as np
import pytest

from lab import catalog
from lab import claims as C
from lab import estimates as E
from lab.catalog import descriptors
from lab.classroom import seeds as S
from lab.estimates import Estimate

N = 2000


def one(value: float, se: float = 0.01, key: str = "k") -> dict:
    return C.claim(key, "s", "src", {"x": value}, "r", [C.test("d", Estimate(value, se, "paired", 4000), ">=", 0.0)],
                   "detail")


def recipe(seed: int, gain: float, name: str = "recipe minus baseline", key: str = "r") -> C.Claim:
    """A recipe claim at one seed from per-input outcomes: the recipe's model wins `gain` of the inputs net."""
    rng = np.random.default_rng(50 + seed)
    base = rng.random(N) < 0.7
    u = rng.random(N)
    better = np.where(base, u > 0.03, u < 0.1 + gain / 0.3)
    t = C.test(name, E.paired(better.astype(float), base.astype(float)), ">=", 0.0)
    return C.claim(key, "the recipe helps", "src", {"x": t["value"]}, "r", [t], "detail", seeds=[seed], over="seeds")

@pytest.fixture(autouse=True)
def _recipe_seeds(monkeypatch):
    """These tests are about the seeds a quick view pools without a click (the suite's page tests set it to 1)."""
    monkeypatch.setenv("LAYERLAB_RECIPE_SEEDS", "3")



def test_the_offer_is_what_settles_the_most_demanding_open_claim():
    open_small, open_large, decided = one(0.015), one(0.011, key="b"), one(0.05, key="c")
    assert decided["holds"] is True and open_small["holds"] is None and open_large["holds"] is None
    offer = S.extra_seeds([open_small, open_large, decided], seed=7)
    assert offer == S.seeds_around(7, open_large["settle"]["seeds"])
    assert offer[0] == 7 and len(set(offer)) == len(offer)
    assert S.extra_seeds([decided], 0) is None  # nothing to settle
    assert S.extra_seeds([one(0.0001)], 0) is None  # an effect at the threshold: no number of seeds within reach


def test_seeds_wrap_and_are_bounded():
    assert S.seeds_around(98, 4) == (98, 99, 0, 1)
    with pytest.raises(ValueError):
        S.seeds_around(0, 0)
    # t-scaled: 2 x t(11) x 1 pt / sqrt(12) = 0.65 pts puts 0.66 pts at the band's edge at 12 seeds; 0.6 needs more
    assert len(S.extra_seeds([one(0.0066)], 0)) == 12
    assert S.extra_seeds([one(0.006)], 0) is None  # beyond reach (more than MAX_SETTLE_SEEDS)


def test_a_recipe_at_one_seed_is_offered_three_seeds_however_large_its_effect():
    c = recipe(0, 0.05)
    assert c["holds"] is None and c["why"] == "one trained network" and C.verdict_words(c).endswith("network)")
    assert c["tests"][0]["holds"] is True  # its one network's effect is plain; the recipe's is not known
    assert S.needs_seeds(c) and not S.needs_seeds(one(0.05))
    assert S.extra_seeds([c], 4) == (4, 5, 6)  # MIN_SEEDS in all, never 2
    assert c["settle"]["spread"] == "unknown"


def test_pooled_verdict_over_three_seeds_and_each_seeds_own():
    out = S.pooled([[recipe(s, 0.05)] for s in (0, 1, 2)], [0, 1, 2])
    [c] = out["claims"]
    assert c["holds"] is True and c["over"] == "seeds" and c["seeds"] == [0, 1, 2]
    assert out["per_seed"]["r|"] == {0: None, 1: None, 2: None}  # no seed alone can tell a recipe
    assert set(out["per_seed_words"]["r|"].values()) == {"cannot tell (one trained network)"}
    # two seeds cannot tell a recipe, however clear
    [c2] = S.pooled([[recipe(s, 0.05)] for s in (0, 1)], [0, 1])["claims"]
    assert c2["holds"] is None and "a recipe needs 3" in c2["why"]
    # no gain: the pool does not hold
    [c0] = S.pooled([[recipe(s, 0.0)] for s in (0, 1, 2)], [0, 1, 2])["claims"]
    assert c0["holds"] is not True


def test_tests_that_differ_between_seeds_are_not_pooled():
    per = [[recipe(0, 0.05)], [recipe(1, 0.05, name="block 3 minus baseline")], [recipe(2, 0.05)]]
    [c] = S.pooled(per, [0, 1, 2])["claims"]
    assert c["holds"] is None and c["why"].startswith("cannot be pooled") and c["seeds"] == [0, 1, 2]
    assert C.verdict_words(c).startswith("cannot tell (cannot be pooled: its tests differ between seeds")


def test_a_config_names_its_settings_without_the_seed():
    a = S.SeedClaims.of("delete", {"k": 2, "seed": 0, "arch": "plain"}, 3)
    b = S.SeedClaims.of("delete", {"arch": "plain", "seed": 5, "k": 2}, 3)
    assert a == b and a.seed == 3 and ("seed", 0) not in a.settings
    with pytest.raises(ValueError):
        S.claims_at(S.SeedClaims.of("no-such-page", {}, 0))


def test_quick_models_pool_by_default_and_a_vit_does_not():
    ds = descriptors()
    for name in ("delete", "layerdrop", "iot"):  # MLPs by default: seconds a model
        assert S.default_seeds(name, ds[name].defaults) == (0, 1, 2), name
    for name in ("shuffle", "matrix", "lens", "rearrange"):  # a ViT: the view offers the seeds instead
        assert S.default_seeds(name, ds[name].defaults) == (), name
    assert S.default_seeds("layerdrop", {**ds["layerdrop"].defaults, "seed": 98}) == (98, 99, 0)
    assert S.default_seeds("layerdrop", {**ds["layerdrop"].defaults, "model": "vit"}) == ()
    assert S.default_seeds("no-such-page", {"seed": 0}) == ()


def test_a_course_judges_every_recipe_over_three_seeds_a_vits_too():
    ds = descriptors()
    for name in ("delete", "layerdrop", "iot", "shuffle", "matrix", "lens", "rearrange"):
        assert S.course_seeds(name, ds[name].defaults) == (0, 1, 2), name
    assert S.course_seeds("shuffle", {**ds["shuffle"].defaults, "seed": 99}) == (99, 0, 1)
    assert S.course_seeds("no-such-page", {"seed": 0}) == ()
    assert S.course_seeds("shuffle", {k: v for k, v in ds["shuffle"].defaults.items() if k != "seed"}) == ()


def test_a_descriptor_can_say_otherwise(monkeypatch):
    import dataclasses

    d = descriptors()["shuffle"]
    monkeypatch.setitem(catalog._FOUND, "shuffle", dataclasses.replace(d, seeds_by_default=lambda s: True))
    assert S.default_seeds("shuffle", d.defaults) == (0, 1, 2)
    monkeypatch.setitem(catalog._FOUND, "shuffle", dataclasses.replace(d, seeds_by_default=lambda s: False))
    assert S.default_seeds("shuffle", d.defaults) == ()


@pytest.fixture
def fake_seeds_page(monkeypatch):
    """A page whose claims at a seed are computed at once: a recipe claim, and one whose test name carries a
    per-seed choice at seed 1 (so it cannot be pooled)."""
    import dataclasses

    def claims_of(settings: dict) -> list:
        s = settings["seed"]
        return [recipe(s, 0.05), recipe(s, 0.05, name="block 3 minus baseline" if s == 1 else "best block", key="b")]

    base = descriptors()["delete"]
    monkeypatch.setitem(catalog._FOUND, "fakeseeds",
                        dataclasses.replace(base, name="fakeseeds", claims=claims_of, plan=lambda s: []))
    return "fakeseeds"


def test_the_cli_wants_three_seeds_and_says_what_each_claim_is_over(fake_seeds_page, capsys):
    from lab.cli import main

    assert main(["seeds", fake_seeds_page, "--seeds", "0", "1", "1", "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "at least 3 distinct seeds" in err and len(err.strip().splitlines()) == 1
    assert main(["seeds", fake_seeds_page, "--seeds", "0", "1", "2", "--workers", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["result"]
    cs = {c["key"]: c for c in out["claims"]}
    assert all(c["over"] == "seeds" and c["seeds"] == [0, 1, 2] for c in cs.values())
    assert cs["r"]["holds"] is True
    assert cs["b"]["holds"] is None and cs["b"]["why"].startswith("cannot be pooled")  # only matching tests pool
    assert main(["seeds", fake_seeds_page, "--seeds", "0", "1", "2", "--workers", "0"]) == 0
    text = capsys.readouterr().out
    assert "[holds] the recipe helps (over training seeds 0, 1, 2)" in text
    assert "Per seed: 0: cannot tell (one trained network)" in text


def test_the_cli_pools_through_the_engine_with_workers(fake_seeds_page, capsys):
    """With workers (the default), each seed's plan goes through the engine's pool, which takes entry points only;
    the claims are then read here (the command once handed the pool its claims function and crashed)."""
    from lab.cli import main

    assert main(["seeds", fake_seeds_page, "--seeds", "0", "1", "2", "--workers", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["result"]
    assert {c["key"] for c in out["claims"]} == {"r", "b"}
