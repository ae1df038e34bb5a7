"""Re-initialise's claims over training seeds and over held-out inputs (issue 46): what each claim generalises over,
the recipe claims pooled over seeds both ways, the "moved least" placeholder that a pool refuses to mix with a real
test, its choice made on the even-indexed inputs only, and the new critical-layers-by-task claim both ways.

The matrix's own seed tests are in tests/test_matrix.py (`pooled`) and tests/test_matrix_nulls.py (the nulls with
per-model training variance)."""

from __future__ import annotations

import dataclasses

import numpy as np

from lab import claims as C
from lab import estimates as E
from lab.experiments.reinit import claims as RC
from tests.test_claims_layerdrop_reinit import BASE, LAYERS, fake_map, fake_widths, one_network

SEEDS = [0, 1, 2]


def pooled(per_seed: list[list], key: str):
    (c,) = [c for c in C.pool(per_seed, SEEDS) if c["key"] == key]
    C.check([c])
    return c


def test_every_map_claim_is_about_these_networks_and_the_comparisons_are_over_seeds():
    p, q = fake_map("plain"), fake_map("residual")
    for c in RC.maps_claims({"plain": p, "residual": q}):
        want = "seeds" if c["key"] == "reinit.residual-more-robust" else "inputs"
        assert c["over"] == want, c["key"]
    assert fake_widths((0.4, 0.5, 0.7, 0.85))[0]["over"] == "seeds"


def test_residual_and_width_decide_when_pooled_over_three_seeds():
    def res(r: float, pl: float) -> list:
        p = fake_map("plain", t0=[BASE] + [pl] * 7 + [BASE], rr=[0.05] + [pl] * 7 + [0.05])
        q = fake_map("residual", t0=[BASE] + [r] * 7 + [BASE], rr=[0.05] + [r] * 7 + [0.05])
        return RC.maps_claims({"plain": p, "residual": q})

    key = "reinit.residual-more-robust"
    assert pooled([res(0.85, 0.2)] * 3, key)["holds"] is True
    assert pooled([res(0.2, 0.85)] * 3, key)["holds"] is False
    two = C.pool([res(0.85, 0.2)] * 2, SEEDS[:2])  # two seeds: a recipe needs three
    assert [c for c in two if c["key"] == key][0]["holds"] is None
    wkey = "reinit.plain-wider-more-robust-top"
    assert pooled([fake_widths((0.4, 0.5, 0.7, 0.85))] * 3, wkey)["holds"] is True
    assert pooled([fake_widths((0.85, 0.7, 0.6, 0.4))] * 3, wkey)["holds"] is False


def _with_t0(r, layer: int, ok: np.ndarray):
    """The map `r` with one layer's t = 0 outcomes replaced (its accuracy cell too)."""
    j = r.checkpoints.index("t=0")
    outcomes = [list(row) for row in r.outcomes]
    acc = [list(row) for row in r.acc]
    outcomes[layer][j] = E.pack(ok)
    acc[layer][j] = float(ok.mean())
    return dataclasses.replace(r, outcomes=outcomes, acc=acc)


def test_moved_least_chooses_on_the_even_inputs_and_tests_on_the_odd():
    key = "reinit.plain-moved-least-robust"
    r = fake_map()  # every layer untouched at t = 0: nothing to rank
    base = E.unpack(r.base_outcomes)
    odd_only = base.copy()
    odd_only[1::2] = False  # the stem loses every odd-indexed input it had: a large damage, but not on the even ones
    c = [c for c in C.of(_with_t0(r, 0, odd_only)) if c["key"] == key][0]
    assert c["holds"] is None and c["tests"][0]["se_kind"] == "exact" and c["measured"]["layers_with_damage"] == 0
    # the same damage on the even inputs makes it visible (rho then reads the odd ones)
    even_only = base.copy()
    even_only[0::2] = False
    c = [c for c in C.of(_with_t0(r, 0, even_only)) if c["key"] == key][0]
    assert c["measured"]["layers_with_damage"] == 1


def test_a_placeholder_at_some_seeds_is_not_pooled_with_real_tests():
    key = "reinit.plain-moved-least-robust"
    t0 = [0.9 - 0.08 * i for i in range(9)]
    real = C.of(fake_map(t0=t0, dist=[0.1 * (i + 1) for i in range(9)]))
    empty = C.of(fake_map())  # nothing to rank: the exact 0 against 0
    (ph,) = [c for c in empty if c["key"] == key]
    assert ph["tests"][0]["value"] == ph["tests"][0]["threshold"] == 0 and ph["tests"][0]["se"] == 0
    c = pooled([real, empty, real], key)
    assert c["holds"] is None and c["why"].startswith("cannot be pooled")
    assert pooled([real] * 3, key)["holds"] is True  # the check can fail: real tests at every seed pool


def task_maps(hard_lost: float, easy_lost: float, seed: int = 0) -> list:
    """The plain MLP on two tasks: a harder one (its trained model at 60 %) and an easier one (at 90 %), each
    re-initialised layer at t = 0 losing the given share of the above-chance accuracy."""
    out = []
    for task, base, lost in (("mnist1d", 0.6, hard_lost), ("digits", BASE, easy_lost)):
        acc = 0.05 + (1 - lost) * (base - 0.05)
        r = fake_map("plain", base=base, t0=[acc] * len(LAYERS))
        out.append(dataclasses.replace(r, task=task))
    return out


def test_critical_layers_by_task_both_ways_and_over_seeds():
    key = "reinit.plain-harder-task-more-critical"
    assert RC.task_claim(task_maps(0.6, 0.1)[:1]) is None  # one task: nothing to compare
    c = RC.task_claim(task_maps(0.6, 0.1))
    assert c["measured"]["harder_task"] == "mnist1d" and c["over"] == "seeds"
    assert one_network([c], key) is True
    assert one_network([RC.task_claim(task_maps(0.1, 0.6))], key) is False
    assert one_network([RC.task_claim(task_maps(0.3, 0.3))], key) is None
    assert pooled([[RC.task_claim(task_maps(0.6, 0.1))]] * 3, key)["holds"] is True
    assert pooled([[RC.task_claim(task_maps(0.1, 0.6))]] * 3, key)["holds"] is False
