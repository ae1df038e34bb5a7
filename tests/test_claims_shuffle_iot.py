"""The Shuffle and IOT pages' claims on synthetic results: each claim on a result where it holds, one where it does
not, and one inside the noise; the rules use the result's own test size (397 digits, 4,000 MLP inputs)."""

from __future__ import annotations

import math

import pytest

from lab import claims as C
from lab.experiments import iot, shuffle


# -- Shuffle -----------------------------------------------------------------------------------------------------
def srun(mode: str, base: float, mean: float, worst: float | None = None, std: float = 0.02, k: int = 50,
         n: int = 397, chance: float = 0.1, probe: float | None = None) -> dict:
    """A synthetic Shuffle piece set: what `shuffle.claims` reads."""
    worst = mean - 2 * std if worst is None else worst
    out = {"mode": mode, "base_acc": base, "chance": chance, "n_test": n,
           "random_orders": {"mean": mean, "min": worst, "max": mean + std, "std": std, "accs": [mean] * k}}
    if probe is not None:
        out["probe"] = {"acc": probe, "chance": 1 / 6, "n_train": 6000, "n_test": 6000}
    return out


def by_key(cs: list[dict]) -> dict[str, dict]:
    C.check(cs)
    return {c["key"]: c for c in cs}


def test_sequential_falls_towards_chance_three_ways():
    hold = shuffle.claim_falls_to_chance(srun("sequential", 0.97, 0.25))
    fail = shuffle.claim_falls_to_chance(srun("sequential", 0.97, 0.90))
    thr = 0.1 + 0.5 * (0.97 - 0.1)
    noise = shuffle.claim_falls_to_chance(srun("sequential", 0.97, thr - 0.01))
    assert (hold["holds"], fail["holds"], noise["holds"]) == (True, False, None)
    assert hold["measured"]["threshold"] == pytest.approx(thr)
    # the noise band is the run's own: the same gap decides on 4,000 inputs and not on 397
    gap = thr - 0.035
    assert shuffle.claim_falls_to_chance(srun("sequential", 0.97, gap, std=0.0))["holds"] is None
    assert shuffle.claim_falls_to_chance(srun("sequential", 0.97, gap, std=0.0, n=4000))["holds"] is True


def test_layershuffle_works_in_any_order_three_ways():
    assert shuffle.claim_any_order(srun("shuffle", 0.95, 0.945, 0.92), "LayerShuffle")["holds"] is True
    assert shuffle.claim_any_order(srun("shuffle", 0.95, 0.60, 0.30), "LayerShuffle")["holds"] is False
    # a good mean but one order near chance: not "any order"
    assert shuffle.claim_any_order(srun("shuffle", 0.95, 0.94, 0.15), "LayerShuffle")["holds"] is False
    thr = 0.1 + 0.9 * 0.85
    assert shuffle.claim_any_order(srun("shuffle", 0.95, thr, 0.9), "LayerShuffle")["holds"] is None


def test_layershuffle_cost_compares_random_orders_with_the_sequential_trained_order():
    seq = srun("sequential", 0.97, 0.3)
    hold = shuffle.claim_costs_accuracy(seq, srun("shuffle", 0.99, 0.80), "LayerShuffle")
    assert hold["holds"] is True and hold["measured"]["gap"] == pytest.approx(0.17)
    # LayerShuffle's own trained order (0.99) is not what is compared: its random-order mean is
    assert hold["measured"]["random_mean"] == 0.80
    assert shuffle.claim_costs_accuracy(srun("sequential", 0.90, 0.3), srun("shuffle", 0.99, 0.985),
                                        "LayerShuffle")["holds"] is False
    assert shuffle.claim_costs_accuracy(seq, srun("shuffle", 0.97, 0.965), "LayerShuffle")["holds"] is None


def test_slot_probe_must_beat_chance_and_plain_layershuffle():
    shu = srun("shuffle", 0.95, 0.94, probe=0.45)
    assert shuffle.claim_slot_decodable(srun("position", 0.95, 0.94, probe=0.80), shu, "-position")["holds"] is True
    assert shuffle.claim_slot_decodable(srun("position", 0.95, 0.94, probe=0.40), shu, "-position")["holds"] is False
    assert shuffle.claim_slot_decodable(srun("position", 0.95, 0.94, probe=0.455), shu, "-position")["holds"] is None
    # above chance but no reference probe: cannot tell
    assert shuffle.claim_slot_decodable(srun("position", 0.95, 0.94, probe=0.8), None, "-position")["holds"] is None
    c = shuffle.claim_slot_decodable(srun("predict", 0.95, 0.94, probe=0.8), shu, "-predict")
    assert "6,000 rows" in c["detail"]  # the probe's split sizes are said


def test_claims_follow_the_mode_and_label_the_model_that_ran():
    seq, shu = srun("sequential", 0.97, 0.3), srun("shuffle", 0.95, 0.94, probe=0.45)
    pos = srun("position", 0.9, 0.88, probe=0.7)
    assert [c["key"] for c in shuffle.claims({"sequential": seq, "shuffle": shu}, "sequential")] == [
        "seq_random_chance", "shuffle_any_order", "shuffle_costs_accuracy"]
    cs = by_key(shuffle.claims({"position": pos, "sequential": seq, "shuffle": {"probe": shu["probe"]}}, "position"))
    assert set(cs) == {"seq_random_chance", "shuffle_any_order", "shuffle_costs_accuracy", "slot_decodable"}
    assert cs["shuffle_any_order"]["subject"] == "LayerShuffle-position"  # the -position model's numbers
    assert cs["shuffle_any_order"]["measured"]["trained_order_acc"] == 0.9
    assert shuffle.claim_modes("predict") == ("predict", "sequential", "shuffle")
    assert shuffle.claim_modes("shuffle") == ("shuffle", "sequential")


# -- IOT ---------------------------------------------------------------------------------------------------------
def irun(n: int = 4000, fixed=(0.90, 0.905, 0.90, 0.898), oracle_fixed: float = 0.95, iot_acc: float = 0.93,
         shared_best: float = 0.90, oracle: float = 0.96, agreement: float = 0.5, best_share=(0.4, 0.2, 0.2, 0.2),
         space: str = "blocks", explore: float = 1.0) -> dict:
    return {"config": {"space": space, "explore": explore}, "n_test": n, "fixed_acc": list(fixed),
            "fixed_oracle_acc": oracle_fixed, "best_fixed_acc": max(fixed), "fixed_best_share": [0.25] * len(fixed),
            "sequential_acc": fixed[0], "iot_acc": iot_acc, "shared_best_acc": shared_best, "oracle_acc": oracle,
            "best_share": list(best_share), "oracle_agreement": agreement,
            "curves": {"top_share": [0.5, 0.4, 0.3]}}


def twin_of(shares: list[float], explore: float = 0.0) -> dict:
    return {"config": {"space": "blocks", "explore": explore}, "curves": {"top_share": shares}}


def test_orders_alike_three_ways_with_the_run_s_own_noise():
    assert iot.claim_orders_alike(irun(fixed=(0.90, 0.905, 0.90)))["holds"] is True
    assert iot.claim_orders_alike(irun(fixed=(0.80, 0.905, 0.90)))["holds"] is False
    assert iot.claim_orders_alike(irun(fixed=(0.88, 0.905, 0.90)))["holds"] is None  # 2.5 pts: inside the band
    # the same 0.5-point spread cannot be told "alike" on 397 digits (2 SE of a difference is 4 points there)
    assert iot.claim_orders_alike(irun(n=397, fixed=(0.90, 0.905, 0.90)))["holds"] is None


def test_inputs_prefer_orders_three_ways():
    assert iot.claim_inputs_prefer(irun(oracle_fixed=0.95))["holds"] is True  # a 4.5-point gap
    assert iot.claim_inputs_prefer(irun(oracle_fixed=0.9055))["holds"] is False  # 0.5 points, 4,000 inputs
    assert iot.claim_inputs_prefer(irun(n=397, oracle_fixed=0.925))["holds"] is None  # 2 points on 397


def test_router_closes_part_of_the_gap_three_ways():
    c = iot.claim_router_closes_gap(irun(iot_acc=0.93, shared_best=0.90, oracle=0.96))
    assert c["holds"] is True and c["measured"]["gap_share"] == pytest.approx(0.5)
    assert iot.claim_router_closes_gap(irun(iot_acc=0.85))["holds"] is False
    assert iot.claim_router_closes_gap(irun(iot_acc=0.905))["holds"] is None


def test_iot_against_the_better_of_sequential_and_best_fixed():
    assert iot.claim_iot_beats_baselines(irun(iot_acc=0.95))["holds"] is True
    assert iot.claim_iot_beats_baselines(irun(iot_acc=0.85))["holds"] is False
    assert iot.claim_iot_beats_baselines(irun(iot_acc=0.91))["holds"] is None  # best fixed is 0.905


def test_agreement_is_judged_against_the_most_common_best_order_not_one_over_m():
    assert iot.claim_agreement(irun(agreement=0.6, best_share=(0.4, 0.2, 0.2, 0.2)))["holds"] is True
    # 35 % is above 1/M = 25 % but below always choosing order 0 (40 %): does not hold
    c = iot.claim_agreement(irun(agreement=0.35, best_share=(0.4, 0.2, 0.2, 0.2)))
    assert c["holds"] is False and c["measured"]["one_over_m"] == 0.25
    assert iot.claim_agreement(irun(agreement=0.41))["holds"] is None


def test_collapse_three_ways_and_measured_per_epoch():
    on = irun()  # exploration on, top share 30 % at the end
    c = iot.claim_collapse(on, twin_of([0.6, 0.95, 1.0]))
    assert c["holds"] is True and c["measured"]["first_epoch_off"] == 2
    assert iot.claim_collapse(on, twin_of([0.4, 0.35, 0.3]))["holds"] is False
    assert iot.claim_collapse(on, twin_of([0.6, 0.85, 0.895]))["holds"] is None  # 89.5 % on 4,000: at the line
    # when the run itself has exploration off, the twin is the "on" side
    off = irun(explore=0.0)
    off["curves"]["top_share"] = [1.0, 1.0, 1.0]
    assert iot.claim_collapse(off, twin_of([0.4, 0.3, 0.3], explore=1.0))["holds"] is True
    # "on" collapsing too: the exploration term is not what decides, so the claim is not confirmed
    both = irun()
    both["curves"]["top_share"] = [1.0, 1.0, 1.0]
    assert iot.claim_collapse(both, twin_of([1.0, 1.0, 1.0]))["holds"] is not True


def test_iot_claims_set_and_shared_space_source():
    cs = by_key(iot.claims(irun(space="shared", fixed=(0.9, 0.91), best_share=(0.6, 0.4)),
                           twin_of([1.0, 1.0, 1.0])))
    assert set(cs) == {"orders_alike", "inputs_prefer_orders", "router_closes_gap", "iot_beats_baselines",
                       "predictor_finds_best_order", "collapse_without_exploration"}
    assert "2 orders" in cs["orders_alike"]["source"]
    assert "not the paper's space" in iot.claims(irun(space="sublayers"))[0]["source"]
    assert "collapse_without_exploration" not in by_key(iot.claims(irun()))  # no twin: no collapse claim


def test_binomial_noise_uses_the_real_test_size():
    c = iot.claim_iot_beats_baselines(irun(n=397, iot_acc=0.93))
    assert c["measured"]["se"] == pytest.approx(math.hypot(C.binomial_se(0.93, 397), C.binomial_se(0.905, 397)))


# -- issue 17: where each block works best (Shuffle), accuracy against M (IOT) -------------------------------------
def test_block_slot_map_averages_exactly_the_orders_that_put_b_in_s():
    import itertools
    import random

    rng = random.Random(3)
    depth = 4
    perms = list(itertools.permutations(range(depth)))
    accs = [rng.random() for _ in perms]
    m = shuffle.block_slot_map(accs, depth)
    for b in range(depth):
        for s in range(depth):
            chosen = [a for p, a in zip(perms, accs, strict=True) if p[s] == b]  # brute force
            assert len(chosen) == m["count"] == 6
            assert m["acc"][b][s] == pytest.approx(sum(chosen) / len(chosen))
            assert m["position_contribution"][b][s] == pytest.approx(sum(chosen) / 6 - sum(accs) / len(accs))
    with pytest.raises(ValueError):
        shuffle.block_slot_map(accs[:-1], depth)


def _with_map(acc_rows: list[list[float]], std: float = 0.01) -> dict:
    d = len(acc_rows)
    return {"all_orders": {"block_slot": {"acc": acc_rows, "std": [[std] * d for _ in range(d)], "count": 120}}}


def test_blocks_contribute_by_position_three_ways():
    flat = [[0.9] * 3 for _ in range(3)]
    steep = [[0.95, 0.9, 0.8], [0.8, 0.95, 0.9], [0.9, 0.8, 0.95]]  # 15 points between best and worst slot
    assert shuffle.claim_position_matters(_with_map(steep), None, "LayerShuffle")["holds"] is True
    assert shuffle.claim_position_matters(_with_map(flat), None, "LayerShuffle")["holds"] is False
    near = [[0.92, 0.9, 0.9], [0.9, 0.92, 0.9], [0.9, 0.9, 0.92]]  # exactly the 2-point line
    assert shuffle.claim_position_matters(_with_map(near), None, "LayerShuffle")["holds"] is None
    c = shuffle.claim_position_matters(_with_map(steep), _with_map(flat), "LayerShuffle")
    assert c["measured"]["sequential_mean_spread"] == pytest.approx(0.0)


def _sweep_rows(gaps: dict[int, float], gains: dict[int, float], best: float = 0.9) -> dict:
    rows = [{"m": m, "sequential_acc": best, "best_fixed_acc": best, "shared_best_acc": best, "ensemble_acc": best,
             "iot_acc": best + gains[m], "oracle_acc": best + gaps[m], "fixed_oracle_acc": best + gaps[m],
             "oracle_agreement": 0.5} for m in sorted(gaps)]
    return {"config": {"space": "blocks"}, "n_test": 4000, "chance": 0.05, "rows": rows}


def test_sweep_claims_three_ways():
    grow = _sweep_rows({1: 0.0, 2: 0.02, 4: 0.05, 8: 0.08}, {1: 0.0, 2: 0.01, 4: 0.02, 8: 0.04})
    cs = by_key(iot.sweep_claims(grow))
    assert cs["oracle_gap_grows_with_m"]["holds"] is True and cs["router_gain_grows_with_m"]["holds"] is True
    shrink = _sweep_rows({1: 0.0, 2: 0.08, 8: 0.02}, {1: 0.0, 2: 0.04, 8: 0.0})
    cs = by_key(iot.sweep_claims(shrink))
    assert cs["oracle_gap_grows_with_m"]["holds"] is False and cs["router_gain_grows_with_m"]["holds"] is False
    flat = _sweep_rows({1: 0.0, 2: 0.03, 8: 0.032}, {1: 0.0, 2: 0.01, 8: 0.011})
    cs = by_key(iot.sweep_claims(flat))
    assert cs["oracle_gap_grows_with_m"]["holds"] is None and cs["router_gain_grows_with_m"]["holds"] is None
    assert iot.sweep_claims(_sweep_rows({1: 0.0, 2: 0.03}, {1: 0.0, 2: 0.0})) == []  # one M >= 2: nothing to compare


def test_sweep_configs_are_checked():
    cfgs = iot.sweep_configs(iot.IOTConfig(m=4), (8, 1, 2))
    assert [c.m for c in cfgs] == [1, 2, 8]
    for bad in ((), (0, 2), (2, 2), (9,)):
        with pytest.raises(ValueError):
            iot.sweep_configs(iot.IOTConfig(), bad)


def test_shared_sublayer_space_is_the_paper_s_two_orders():
    from lab.ops import order_routing as core

    orders = core.candidate_orders(core.IOTConfig(orders=2, space="shared"), 6)
    assert [core.order_label(o, "shared") for o in orders] == ["A A A A A A", "M M M M M M"]
    with pytest.raises(ValueError, match="only 2"):
        core.candidate_orders(core.IOTConfig(orders=3, space="shared"), 6)
    with pytest.raises(ValueError, match="M = 1 or 2"):
        iot.IOTConfig(model="vit", space="shared", m=4)
    with pytest.raises(ValueError, match="only in the ViT"):
        iot.IOTConfig(model="mlp", space="shared", m=2)


def test_m_one_is_the_sequential_model(tmp_path, monkeypatch):
    """IOT training with one candidate order is the ordinary loop: the same accuracy as the stored sequential model
    (quick mode: one epoch)."""
    from lab.runtime.store import Store

    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    store = Store(tmp_path)
    r = iot.run(iot.IOTConfig(m=1), store=store, twin=False)
    assert r["iot_acc"] == r["sequential_acc"] == r["oracle_acc"] == r["fixed_acc"][0]
    assert r["choice_share"] == [1.0]
    sw = iot.sweep_of(iot.IOTConfig(m=2), [r, iot.run(iot.IOTConfig(m=2), store=store, twin=False)])
    assert [row["m"] for row in sw["rows"]] == [1, 2] and sw["rows"][0]["iot_acc"] == r["sequential_acc"]
