"""'Run N more seeds': which seeds a view offers, and the verdict over them (lab/classroom/seeds.py)."""

import pytest

from lab import claims as C
from lab.classroom import seeds as S
from lab.estimates import MAX_SETTLE_SEEDS, Estimate


def one(value: float, se: float = 0.01, key: str = "k") -> dict:
    return C.claim(key, "s", "src", {"x": value}, "r", [C.test("d", Estimate(value, se, "paired", 4000), ">=", 0.0)],
                   "detail")


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
    assert len(S.extra_seeds([one(0.006)], 0)) == 12  # (2 x 1 pt / 0.6 pt)^2 = 11.1 seeds put it at the band's edge
    assert (0.02 / 0.0015) ** 2 > MAX_SETTLE_SEEDS and S.extra_seeds([one(0.0015)], 0) is None  # beyond reach


def test_pooled_verdict_and_each_seeds_own():
    per = [[one(v)] for v in (0.015, 0.02, 0.018, 0.016)]
    out = S.pooled(per, [0, 1, 2, 3])
    assert [c["holds"] for c in out["claims"]] == [True]
    assert out["per_seed"]["k|"] == {0: None, 1: None, 2: None, 3: None}  # no seed alone could tell


def test_a_config_names_its_settings_without_the_seed():
    a = S.SeedClaims.of("delete", {"k": 2, "seed": 0, "arch": "plain"}, 3)
    b = S.SeedClaims.of("delete", {"arch": "plain", "seed": 5, "k": 2}, 3)
    assert a == b and a.seed == 3 and ("seed", 0) not in a.settings
    with pytest.raises(ValueError):
        S.claims_at(S.SeedClaims.of("no-such-page", {}, 0))
