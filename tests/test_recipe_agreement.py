"""bench/recipe_agreement.py: a cheaper recipe agrees with the full one claim by claim, on both sides of its rule."""

from __future__ import annotations

import math

from bench.recipe_agreement import compare, paired


def _rows(page: str, key: str, values: list[float], pooled: object) -> list[dict]:
    rows = [{"page": page, "key": key, "subject": "", "seed": s, "holds": None,
             "tests": [{"name": "t", "value": v}]} for s, v in enumerate(values)]
    return rows + [{"page": page, "key": key, "subject": "", "seed": "pool", "holds": pooled, "tests": []}]


def test_paired_difference_and_its_interval_match_a_hand_computation():
    mean, half, n = paired([0.90, 0.92, 0.91], [0.89, 0.92, 0.89])  # d = -0.01, 0, -0.02
    assert n == 3 and math.isclose(mean, -0.01)
    assert math.isclose(half, 2.919986 * 0.01 / math.sqrt(3), rel_tol=1e-5)  # t(0.95, 2) * sd / sqrt(n)


def test_a_claim_agrees_by_its_verdict_or_by_a_move_inside_the_margin_and_moves_otherwise():
    full = _rows("p", "same-verdict", [0.9, 0.8, 0.95], True) + _rows("p", "small", [0.5, 0.6, 0.7], None) \
        + _rows("p", "large", [0.5, 0.6, 0.7], True) + _rows("p", "noisy", [0.5, 0.6, 0.7], None)
    cheap = _rows("p", "same-verdict", [0.5, 0.4, 0.6], True) + _rows("p", "small", [0.505, 0.604, 0.706], None) \
        + _rows("p", "large", [0.45, 0.55, 0.66], None) + _rows("p", "noisy", [0.53, 0.57, 0.70], None)
    got = {r["key"]: r for r in compare(full, cheap, margin=0.02)}
    assert got["same-verdict"]["agrees"] and got["same-verdict"]["how"] == "same decided verdict"
    assert got["small"]["agrees"] and got["small"]["how"].startswith("every test within")
    assert not got["large"]["agrees"] and got["large"]["worst"]["mean"] < -0.04  # a real move: 4-5 points down
    # a mean move of 0 whose seeds scatter by 3 points: not shown to be inside the margin, so it moves
    assert not got["noisy"]["agrees"] and abs(got["noisy"]["worst"]["mean"]) < 0.01
