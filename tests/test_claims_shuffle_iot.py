"""The Shuffle and IOT pages' claims on synthetic per-input outcomes: each claim where it holds, where it does not,
and inside the noise; the rules use the result's own test size (397 digits, 4,000 MLP inputs). Calibration: the
rule families special to these pages (IOT's seed control, Shuffle's cross-fitted slot spread) give a false "holds"
at most 5 % of the time under simulated nulls, and detect a simulated effect. A claim over seeds (a recipe against
another) cannot tell at one seed: `says` reads what its tests say (tests/test_claims_shuffle_iot_seeds.py pools
seeds)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lab import claims as C
from lab import estimates as E
from lab.experiments.iot import claims as iot_claims
from lab.experiments.iot import experiment as iot
from lab.experiments.shuffle import claims as shuffle_claims
from lab.experiments.shuffle import experiment as shuffle

RNG_ORDER = np.random.default_rng(7).permutation(4000)


def vec(acc: float, n: int = 397, shift: int = 0) -> np.ndarray:
    """Right/wrong outcomes with exactly round(acc * n) right; the same `shift` gives nested vectors (maximally
    paired), another shift moves the errors to other inputs."""
    order = np.roll(RNG_ORDER[RNG_ORDER < n], shift)
    v = np.zeros(n, dtype=bool)
    v[order[: round(acc * n)]] = True
    return v


def by_key(cs: list[dict]) -> dict[str, dict]:
    C.check(cs)
    return {c["key"]: c for c in cs}


def says(c: dict) -> bool | None:
    """What a claim's tests say (its rule), also where it cannot tell for want of seeds: a claim over seeds at one
    seed shows its one network's effect in its tests and cannot tell (tests/test_claims_shuffle_iot_seeds.py pools
    three)."""
    return C._combine(c["tests"], c.get("combine", "all"))


def one_network(c: dict) -> bool:
    return c["over"] == "seeds" and c["holds"] is None and c["why"] == C.ONE_NETWORK


# -- Shuffle -----------------------------------------------------------------------------------------------------
def orders(mean: float, worst: float, k: int = 10, n: int = 397, spread: float = 0.0) -> dict:
    """k sampled orders whose mean accuracy is `mean` and worst `worst` (nested outcome vectors); `spread` moves
    the other orders' accuracies apart (a draw variance) without changing their mean."""
    rest = (k * mean - worst) / (k - 1)
    accs = [worst] + [rest + spread * (1 if j % 2 else -1) for j in range(k - 1)]
    vs = [vec(a, n) for a in accs]
    return {"accs": [float(v.mean()) for v in vs], "outcomes": [E.pack(v) for v in vs],
            "mean": float(np.mean([v.mean() for v in vs])), "min": float(min(v.mean() for v in vs))}


def prune_row(acc: float, n: int = 397, exact: bool = True, k: int = 20, spread: float = 0.0) -> dict:
    accs = [acc + spread * (1 if j % 2 else -1) for j in range(k)]
    right = sum(vec(a, n).astype(int) for a in accs)
    return {"mean": float(np.mean(accs)), "accs": accs, "right": [int(x) for x in right], "exact": exact}


def srun(mode: str, base: float, mean: float, worst: float | None = None, n: int = 397, chance: float = 0.1,
         pruned: float | None = None, seq_pruned: float | None = None, depth: int = 6, **kw) -> dict:
    """A synthetic Shuffle piece set: what `shuffle_claims.claims` reads."""
    worst = mean - 0.02 if worst is None else worst
    ro = orders(mean, worst, n=n, **kw)
    out = {"mode": mode, "base_acc": float(vec(base, n).mean()), "chance": chance, "n_test": n, "n_blocks": depth,
           "outcomes": {"base": E.pack(vec(base, n))}, "random_orders": ro, "all_orders": None}
    if pruned is not None or seq_pruned is not None:
        out["pruning"] = [{"removed": k, "random_order": prune_row(pruned if pruned is not None else 0.5, n),
                           "trained_order": prune_row(seq_pruned if seq_pruned is not None else 0.5, n)}
                          for k in range(depth)]
    return out


def test_sequential_falls_to_near_chance_three_ways():
    hold = shuffle_claims.claim_falls_to_chance(srun("sequential", 0.97, 0.12, 0.1))
    fail = shuffle_claims.claim_falls_to_chance(srun("sequential", 0.97, 0.47, 0.3))
    noise = shuffle_claims.claim_falls_to_chance(srun("sequential", 0.97, 0.21, 0.15))
    assert (hold["holds"], fail["holds"], noise["holds"]) == (True, False, None)
    assert hold["measured"]["bar"] == pytest.approx(0.1 + shuffle_claims.NEAR_CHANCE)
    assert "chosen on a validation split" in hold["source"]  # how the recipe was chosen is said
    # the band is the run's own: 4,000 inputs decide what 397 cannot
    assert shuffle_claims.claim_falls_to_chance(srun("sequential", 0.97, 0.23, 0.2, n=4000))["holds"] is False


def test_a_sample_of_orders_adds_its_draw_variance_and_all_orders_add_none():
    tight = shuffle_claims.claim_falls_to_chance(srun("sequential", 0.97, 0.3, 0.2))
    loose = shuffle_claims.claim_falls_to_chance(srun("sequential", 0.97, 0.3, 0.2, spread=0.1))
    assert loose["tests"][0]["se"] > 1.5 * tight["tests"][0]["se"]
    assert "random draws" in loose["tests"][0]["how"]
    # the table of every order: exact over orders (no draw term even when the orders spread)
    r = srun("sequential", 0.97, 0.3, 0.2, spread=0.1)
    r["all_orders"] = {k: r["random_orders"][k] for k in ("accs", "outcomes")}
    exact = shuffle_claims.claim_falls_to_chance(r)
    assert exact["measured"]["exact_over_orders"] is True and "random draws" not in exact["tests"][0]["how"]
    assert exact["tests"][0]["se"] == pytest.approx(E.binomial_se(exact["tests"][0]["value"], 397))


def test_layershuffle_works_in_any_order_three_ways():
    assert shuffle_claims.claim_any_order(srun("shuffle", 0.95, 0.945, 0.92), "LayerShuffle")["holds"] is True
    assert shuffle_claims.claim_any_order(srun("shuffle", 0.95, 0.60, 0.30), "LayerShuffle")["holds"] is False
    # a good mean but one order near chance: not "any order"
    assert shuffle_claims.claim_any_order(srun("shuffle", 0.95, 0.94, 0.15), "LayerShuffle")["holds"] is False
    thr = 0.1 + 0.9 * 0.85
    c = shuffle_claims.claim_any_order(srun("shuffle", 0.95, thr, 0.9), "LayerShuffle")
    assert c["holds"] is None and c["tests"][0]["se_kind"] == "paired"


def test_layershuffle_cost_is_a_band_around_the_paper_s_20_percent():
    lo, hi = shuffle_claims.COST_BAND
    seq = srun("sequential", 0.97, 0.3)

    def cost(shu_mean: float, n: int = 397, seeds: tuple[int, ...] = (0, 1, 2)) -> dict:
        return shuffle_claims.claim_costs_accuracy(srun("sequential", 0.97, 0.3, n=n), srun("shuffle", 0.99, shu_mean,
                                                                                           n=n), "LayerShuffle",
                                                   seeds=seeds)

    inside = cost(0.80)  # 17.5 % lower: inside 10-30 %
    assert inside["holds"] is True and inside["measured"]["gap"] == pytest.approx(0.17, abs=0.01)
    assert inside["measured"]["relative_drop"] == pytest.approx(0.175, abs=0.01)
    assert [t["side"] for t in inside["tests"]] == [">=", "<="] and inside["tests"][0]["se_kind"] == "paired"
    assert cost(0.95)["holds"] is False  # 2 % lower: a cost, but not the paper's
    assert cost(0.50)["holds"] is False  # 48 % lower: more than the paper's
    assert cost(0.985)["holds"] is False  # no cost at all
    assert cost(0.97 * (1 - lo))["holds"] is None and cost(0.97 * (1 - hi))["holds"] is None  # at each bound
    assert cost(0.97 * (1 - hi) - 0.05, n=4000)["holds"] is False  # 4,000 inputs decide past the upper bound
    # a recipe against another: at one seed it cannot tell, and its tests show the one network's effect
    one = shuffle_claims.claim_costs_accuracy(seq, srun("shuffle", 0.99, 0.80), "LayerShuffle")
    assert one_network(one) and says(one) is True and one["seeds"] == [0]
    assert "10 % to 30 %" in one["source"]


def probe(acc: float, order_effect: float = 0.0, seed: int = 0, raw: float | None = None,
          without: float | None = None) -> dict:
    """A probe's test rows ([10 orders, 6 slots, 100 digits]) right with probability `acc`, shifted per order by
    up to `order_effect` (rows of one order are not independent); `without`: the rows' accuracy with the model's own
    added slot vectors removed (the -position control; by default the same rows, as for a model that adds none)."""
    rng = np.random.default_rng(seed)
    shift = np.linspace(-order_effect, order_effect, 10)[:, None, None]
    unit = rng.random((10, 6, 100)) < acc + shift
    rawv = unit if raw is None else rng.random((10, 6, 100)) < raw
    wo = unit if without is None else rng.random((10, 6, 100)) < without + shift
    return {"acc": float(rawv.mean()), "acc_direction": float(unit.mean()), "acc_without_slot": float(wo.mean()),
            "chance": 1 / 6, "n_train": 6000, "n_test": 6000, "shape": [10, 6, 100],
            "outcomes": {"raw": E.pack(rawv.reshape(-1)), "unit": E.pack(unit.reshape(-1)),
                         "unit_without_slot": E.pack(wo.reshape(-1))}}


def test_slot_probe_must_beat_chance_and_plain_layershuffle_without_the_added_slot_vectors():
    shu = {"probe": probe(0.45, seed=1)}

    def claim(p: dict) -> dict:
        return shuffle_claims.claim_slot_decodable({"probe": p}, shu, "-position", seeds=(0, 1, 2))

    assert claim(probe(0.80))["holds"] is True
    assert claim(probe(0.40))["holds"] is False
    assert claim(probe(0.455))["holds"] is None
    # the raw features alone (the stream's norm) do not decide: the verdict reads unit-length features
    assert claim(probe(0.45, seed=2, raw=0.95))["holds"] is not True
    # the control: readable only through the slot vectors the -position model adds by construction is not enough
    added = claim(probe(0.95, seed=3, without=0.45))
    assert added["holds"] is not True and added["measured"]["probe_acc_unit"] > 0.9
    assert claim(probe(0.95, seed=3, without=0.40))["holds"] is False
    assert claim(probe(0.95, seed=3, without=0.80))["holds"] is True  # readable in what the blocks wrote
    c = shuffle_claims.claim_slot_decodable({"probe": probe(0.8)}, shu, "-predict")
    assert "6,000 rows" in c["detail"] and c["measured"]["se_kind"] == "bootstrap"
    assert one_network(c) and says(c) is True  # against plain LayerShuffle, a separately trained model


def test_the_probe_error_counts_orders_as_clusters():
    clustered = shuffle_claims.claim_slot_decodable({"probe": probe(0.6, order_effect=0.3)},
                                                    {"probe": probe(0.45, seed=1)}, "-position")
    naive = E.binomial_se(0.6, 6000)
    assert clustered["tests"][0]["se"] > 3 * naive  # orders that differ widen the error; 6,000 rows do not shrink it


def test_claims_follow_the_mode_and_label_the_model_that_ran():
    seq = srun("sequential", 0.97, 0.3, pruned=0.2, seq_pruned=0.2)
    shu = {**srun("shuffle", 0.95, 0.94, pruned=0.8, seq_pruned=0.9), "probe": probe(0.45)}
    pos = {**srun("position", 0.9, 0.88, pruned=0.8), "probe": probe(0.7)}
    assert [c["key"] for c in shuffle_claims.claims({"sequential": seq, "shuffle": shu}, "sequential")] == [
        "seq_random_chance", "shuffle_any_order", "shuffle_costs_accuracy", "prune_graceful"]
    cs = by_key(shuffle_claims.claims({"position": pos, "sequential": seq, "shuffle": {"probe": shu["probe"]}},
                                      "position"))
    assert set(cs) == {"seq_random_chance", "shuffle_any_order", "shuffle_costs_accuracy", "prune_graceful",
                       "slot_decodable"}
    assert cs["shuffle_any_order"]["subject"] == "LayerShuffle-position"  # the -position model's numbers
    assert cs["shuffle_any_order"]["measured"]["trained_order_acc"] == pytest.approx(0.9, abs=0.003)
    # without plain LayerShuffle's probe, the comparison cannot be made: the claim is left out
    assert "slot_decodable" not in by_key(shuffle_claims.claims({"position": pos, "sequential": seq}, "position"))
    # what each claim generalises over: surgery on one network over inputs, a recipe against another over seeds
    assert {k: c["over"] for k, c in cs.items()} == {
        "seq_random_chance": "inputs", "shuffle_any_order": "inputs", "shuffle_costs_accuracy": "seeds",
        "prune_graceful": "seeds", "slot_decodable": "seeds"}
    pos["config"] = {"seed": 4}
    assert all(c["seeds"] == [4] for c in shuffle_claims.claims({"position": pos, "sequential": seq, "shuffle": {
        "probe": shu["probe"]}}, "position") if c["over"] == "seeds")
    assert shuffle.claim_modes("predict") == ("predict", "sequential", "shuffle")
    assert shuffle.claim_modes("shuffle") == ("shuffle", "sequential")
    assert shuffle.claim_modes("sequential") == ("sequential", "shuffle")  # LayerShuffle is the run's subject


def test_pruning_degrades_gracefully_three_ways():
    def verdict(shu_pruned: float, seq_pruned: float, **kw) -> bool | None:
        shu = srun("shuffle", 0.95, 0.94, pruned=shu_pruned, **kw)
        seq = srun("sequential", 0.97, 0.3, seq_pruned=seq_pruned, **kw)
        return shuffle_claims.claim_prunes_gracefully(shu, seq, "LayerShuffle", seeds=(0, 1, 2))["holds"]

    assert verdict(0.85, 0.3) is True
    assert verdict(0.30, 0.2) is False  # keeps well under half of its margin
    assert verdict(0.85, 0.9) is False  # keeps its margin but the sequential model keeps more
    keep_line = 0.1 + shuffle_claims.PRUNE_KEEP * 0.85
    assert verdict(keep_line, 0.2) is None
    one = shuffle_claims.claim_prunes_gracefully(srun("shuffle", 0.95, 0.94, pruned=0.85),
                                                 srun("sequential", 0.97, 0.3, seq_pruned=0.3), "LayerShuffle")
    assert one_network(one) and says(one) is True


def test_pruning_with_sampled_subsets_adds_the_draw_variance():
    shu = srun("shuffle", 0.95, 0.94, pruned=0.85)
    seq = srun("sequential", 0.97, 0.3, seq_pruned=0.3)
    exact = shuffle_claims.claim_prunes_gracefully(shu, seq, "LayerShuffle")
    k = 3
    shu["pruning"][k]["random_order"] = prune_row(0.85, exact=False, k=10, spread=0.15)
    seq["pruning"][k]["trained_order"] = prune_row(0.3, exact=False, k=10)
    sampled = shuffle_claims.claim_prunes_gracefully(shu, seq, "LayerShuffle")
    assert all(s["se"] > 2 * e["se"] for s, e in zip(sampled["tests"], exact["tests"], strict=True))
    assert sampled["measured"]["exact"] is False and exact["measured"]["removed"] == 3


def all_orders_run(acc_of, n: int = 397, depth: int = 3, noise_seed: int | None = None) -> dict:
    """Every order of `depth` blocks with accuracy acc_of(perm): nested outcome vectors, or independent ones."""
    perms = list(itertools.permutations(range(depth)))
    rng = np.random.default_rng(noise_seed)
    vs = [vec(acc_of(p), n) if noise_seed is None else rng.random(n) < acc_of(p) for p in perms]
    accs = [float(v.mean()) for v in vs]
    return {"all_orders": {"accs": accs, "outcomes": [E.pack(v) for v in vs],
                           "block_slot": shuffle.block_slot_map(accs, depth)}}


def test_blocks_contribute_by_position_three_ways():
    steep = all_orders_run(lambda p: 0.8 + 0.05 * sum(p[s] == s for s in range(3)))  # each block best in its slot
    flat = all_orders_run(lambda p: 0.9)
    noise = all_orders_run(lambda p: 0.5, n=100, noise_seed=3)  # no position effect, few inputs
    verdicts = [shuffle_claims.claim_position_matters(r, None, "LayerShuffle")["holds"] for r in (steep, flat, noise)]
    assert verdicts == [True, False, None]
    c = shuffle_claims.claim_position_matters(steep, flat, "LayerShuffle")
    assert c["measured"]["sequential_held_out_spread"] == pytest.approx(0.0)


def test_block_slot_map_averages_exactly_the_orders_that_put_b_in_s():
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


def test_prune_routes_are_every_subset_where_few_and_share_draws_otherwise():
    plan = shuffle.prune_routes(6, draws=10, seed=0)
    k3 = plan[3]
    assert k3["exact_random"] and k3["exact_trained"]
    assert sorted(k3["trained"]) == sorted(itertools.combinations(range(6), 3))  # all C(6, 3) = 20 subsets
    assert len(k3["random"]) == 120 and len(set(k3["random"])) == 120  # every subset in every order
    big = shuffle.prune_routes(8, draws=10, seed=0)[4]  # C(8, 4) = 70 subsets: sampled
    assert not big["exact_trained"] and not big["exact_random"]
    assert big["trained"] == [tuple(sorted(r)) for r in big["random"]]  # the same subsets: paired draws


def test_calibration_held_out_slot_spread():
    """No position effect (every order equally good, independent per-input noise): choosing each block's best and
    worst slot on the same images would find a spread; chosen on half the images and measured on the other, a test
    of spread >= 0 holds at most 5 % of the time. A 5-point effect per block is detected."""
    perms = np.array(list(itertools.permutations(range(3))))
    rng = np.random.default_rng(11)

    def cells(mat: np.ndarray) -> np.ndarray:
        return np.stack([np.stack([mat[perms[:, s] == b].mean(0) for s in range(3)]) for b in range(3)])

    def holds(effect: float) -> bool | None:
        acc = 0.9 + effect * (perms == np.arange(3)).sum(1)  # each block better in "its" slot
        latent = rng.random(397)  # shared per-input difficulty: orders agree on most images
        mat = (latent[None, :] < acc[:, None]) ^ (rng.random((6, 397)) < 0.03)
        hi, lo = shuffle_claims.held_out_spread(cells(mat.astype(float)))
        return C.test("spread", E.paired(hi, lo), ">=", 0.0)["holds"]

    false_holds = sum(holds(0.0) is True for _ in range(400)) / 400
    detected = sum(holds(0.05) is True for _ in range(100)) / 100
    assert false_holds <= 0.05 and detected >= 0.8


# -- IOT ---------------------------------------------------------------------------------------------------------
def models(m: int, acc: float, overlap: float, n: int = 4000, offset: int = 0) -> list[np.ndarray]:
    """m outcome vectors at accuracy `acc` whose errors are shared on a share `overlap` of them and otherwise fall
    on disjoint inputs: the oracle over them lies (1 - acc)(1 - overlap)(m - 1) above one of them."""
    wrong = round((1 - acc) * n)
    shared = round(overlap * wrong)
    order = np.roll(RNG_ORDER[RNG_ORDER < n], offset)
    out = []
    for j in range(m):
        v = np.ones(n, dtype=bool)
        v[order[:shared]] = False
        start = shared + j * (wrong - shared)
        v[order[start:start + wrong - shared]] = False
        out.append(v)
    return out


def irun(n: int = 4000, fixed=(0.90, 0.905, 0.90, 0.898), iot_acc: float = 0.93, shared_best: float = 0.90,
         oracle: float = 0.96, agreement: float = 0.5, common: float = 0.4, space: str = "blocks",
         explore: float = 1.0, order_overlap: float | None = 0.3, seed_overlap: float = 0.8, top: float = 0.4,
         order_offset: int = 0) -> dict:
    """A synthetic joined IOT run: every accuracy with its per-input outcomes (nested where one is compared with
    another, so the paired error is that of the gap itself)."""
    m = len(fixed)
    # nested outcomes at the given accuracies, or models whose errors overlap by `order_overlap` (an oracle gap)
    fx = [vec(a, n) for a in fixed] if order_overlap is None else models(m, fixed[1], order_overlap, n, order_offset)
    seeds = models(m, fixed[1], seed_overlap, n, offset=n // 3)  # their errors fall on other inputs
    fixed_acc = [float(v.mean()) for v in fx]
    best = int(np.argmax(fixed_acc))
    return {"config": {"space": space, "explore": explore, "exploit": 0.1, "gumbel": True, "m": m}, "n_test": n,
            "fixed_acc": fixed_acc, "fixed_outcomes": [E.pack(v) for v in fx], "best_fixed_order": best,
            "best_fixed_acc": fixed_acc[best], "fixed_oracle_acc": float(np.max(fx, 0).mean()),
            "fixed_best_share": [1 / m] * m,
            "seed_control": {"seeds": list(range(m)), "acc": [float(v.mean()) for v in seeds], "best": 0,
                             "best_acc": float(seeds[0].mean()), "oracle_acc": float(np.max(seeds, 0).mean()),
                             "outcomes": [E.pack(v) for v in seeds]},
            "sequential_acc": fixed_acc[0], "iot_acc": iot_acc, "shared_best_acc": shared_best, "oracle_acc": oracle,
            "shared_best_order": 0, "best_share": [common] + [(1 - common) / (m - 1)] * (m - 1),
            "oracle_agreement": agreement,
            "outcomes": {"sequential": E.pack(fx[0]), "iot": E.pack(vec(iot_acc, n)),
                         "orders": [E.pack(vec(shared_best, n))] + [E.pack(vec(shared_best - 0.01, n))] * (m - 1),
                         "agree": E.pack(vec(agreement, n)), "common_best": E.pack(vec(common, n)),
                         "top_choice": E.pack(vec(top, n))},
            "curves": {"top_share": [0.5, 0.4, top]}}


def twin_of(top: float, explore: float = 0.0, n: int = 4000) -> dict:
    return {"config": {"space": "blocks", "explore": explore, "exploit": 0.1, "gumbel": True},
            "curves": {"top_share": [0.6, 0.8, top]}, "outcomes": {"top_choice": E.pack(vec(top, n))}}


def test_orders_alike_is_a_paired_equivalence_over_every_pair_three_ways():
    def alike(n: int = 4000, **kw) -> dict:
        return iot_claims.claim_orders_alike(irun(n=n, order_overlap=None, **kw))

    assert says(alike(fixed=(0.90, 0.905, 0.90))) is True
    c = alike(fixed=(0.80, 0.905, 0.90))
    assert says(c) is False and len(c["tests"]) == 6  # every ordered pair: no pair picked by its test accuracy
    assert all("order" in t["name"] and t["side"] == "<=" for t in c["tests"])
    noise = alike(n=397, fixed=(0.90, 0.93, 0.90))
    assert says(noise) is None and noise["tests"][0]["se_kind"] == "paired"
    # on 397 digits a spread of one image is "alike" when the outcomes pair (the unpaired error could never tell)
    assert says(alike(n=397, fixed=(0.90, 0.905, 0.90))) is True
    # separately trained models: at one seed it cannot tell
    assert one_network(alike(fixed=(0.90, 0.905, 0.90)))


def test_inputs_prefer_orders_is_judged_against_the_seed_control():
    hold = iot_claims.claim_inputs_prefer(irun(order_overlap=0.3, seed_overlap=0.8))
    assert says(hold) is True and hold["measured"]["excess"] > 0.03 and one_network(hold)
    # noise alone: a gap of several points, but as many seeds open a larger one
    noise_alone = iot_claims.claim_inputs_prefer(irun(order_overlap=0.8, seed_overlap=0.3))
    assert noise_alone["tests"][0]["holds"] is True and says(noise_alone) is False
    same = iot_claims.claim_inputs_prefer(irun(order_overlap=0.5, seed_overlap=0.5))  # the same gap on other inputs
    assert says(same) is None and same["settle"] is not None


def test_router_closes_part_of_the_gap_three_ways():
    c = iot_claims.claim_router_closes_gap(irun(iot_acc=0.93, shared_best=0.90, oracle=0.96))
    assert c["holds"] is True and c["measured"]["gap_share"] == pytest.approx(0.5, abs=0.01)
    assert iot_claims.claim_router_closes_gap(irun(iot_acc=0.85))["holds"] is False
    assert iot_claims.claim_router_closes_gap(irun(iot_acc=0.9005, n=397))["holds"] is None
    assert "temperature fixed at 1" in c["source"] and "0.1 and 0.01" in c["source"]  # the departures are said


def test_iot_against_the_best_fixed_order_chosen_on_the_probe_split():
    def beats(r: dict) -> bool | None:
        c = iot_claims.claim_iot_beats_baselines(r)
        assert one_network(c)
        return says(c)

    assert beats(irun(iot_acc=0.95)) is True
    assert beats(irun(iot_acc=0.85)) is False
    r = irun(iot_acc=0.905, n=397, order_overlap=None, fixed=(0.9, 0.905))
    r["outcomes"]["iot"] = E.pack(vec(0.905, 397, shift=50))  # the same accuracy, other inputs
    assert beats(r) is None
    # the baseline is the order the probe split chose, even where another one scores higher on the test inputs
    r = irun(iot_acc=0.92, order_overlap=None, fixed=(0.90, 0.95))
    r["best_fixed_order"] = 0
    c = iot_claims.claim_iot_beats_baselines(r)
    assert says(c) is True and c["measured"]["best_fixed_order"] == 0
    assert c["tests"][0]["name"] == "IOT - best fixed order"  # no per-seed choice in the name: pooling matches it


def test_agreement_is_judged_against_the_most_common_best_order_not_one_over_m():
    assert iot_claims.claim_agreement(irun(agreement=0.6, common=0.4))["holds"] is True
    c = iot_claims.claim_agreement(irun(agreement=0.35, common=0.4))
    assert c["holds"] is False and c["measured"]["one_over_m"] == 0.25
    r = irun(agreement=0.41, common=0.4)
    r["outcomes"]["agree"] = E.pack(vec(0.41, 4000, shift=900))  # a point more, on partly other inputs
    assert iot_claims.claim_agreement(r)["holds"] is None


def test_collapse_three_ways():
    def collapse(r: dict, twin: dict) -> bool | None:
        c = iot_claims.claim_collapse(r, twin)
        assert one_network(c)  # two separately trained IOT models
        return says(c)

    on = irun(top=0.3)
    c = iot_claims.claim_collapse(on, twin_of(1.0))
    assert says(c) is True and c["measured"]["first_epoch_off"] == 3
    assert collapse(on, twin_of(0.3)) is False
    assert collapse(on, twin_of(0.895)) is None  # 89.5 % on 4,000: at the line
    # when the run itself has exploration off, the twin is the "on" side
    off = irun(explore=0.0, top=1.0)
    assert collapse(off, twin_of(0.3, explore=1.0)) is True
    # "on" collapsing too: the exploration term is not what decides, so the claim is not confirmed
    assert collapse(irun(top=1.0), twin_of(1.0)) is not True


def test_iot_claims_set_and_shared_space_source():
    cs = by_key(iot_claims.claims(irun(space="shared", fixed=(0.9, 0.91), common=0.6), twin_of(1.0)))
    assert set(cs) == {"orders_alike", "inputs_prefer_orders", "router_closes_gap", "iot_beats_baselines",
                       "predictor_finds_best_order", "collapse_without_exploration"}
    assert "2 orders" in cs["orders_alike"]["source"]
    assert "not the paper's space" in iot_claims.claims(irun(space="sublayers"))[0]["source"]
    assert "collapse_without_exploration" not in by_key(iot_claims.claims(irun()))  # no twin: no collapse claim
    # one network's routing over inputs; anything against separately trained models over seeds
    assert {k: c["over"] for k, c in cs.items()} == {
        "orders_alike": "seeds", "inputs_prefer_orders": "seeds", "router_closes_gap": "inputs",
        "iot_beats_baselines": "seeds", "predictor_finds_best_order": "inputs",
        "collapse_without_exploration": "seeds"}
    r = irun()
    r["config"]["seed"] = 2
    assert {tuple(c["seeds"]) for c in iot_claims.claims(r) if c["over"] == "seeds"} == {(2,)}


def test_control_seeds_are_the_run_s_own_then_disjoint_between_runs():
    a, b = iot.control_seeds(0, 8), iot.control_seeds(1, 8)
    assert a[0] == 0 and b[0] == 1 and len(set(a)) == 8
    assert not set(a[1:]) & set(b[1:]) and not set(a[1:]) & set(range(100))  # never another run's or a page seed
    assert iot.control_seeds(0, 4) == a[:4]  # M = 4's models are M = 8's first four (stored once)


def test_each_order_trains_at_the_seed_of_its_control_model():
    """Issue 57: order j and control model j are trainings at one seed that differ only by the order (order 0 is
    the sequential model, the control's model 0), whatever M."""
    for seed in (0, 3):
        for m in (2, 4, 8):
            assert [iot.order_seed(seed, j) for j in range(m)] == iot.control_seeds(seed, m)
    with pytest.raises(ValueError):
        iot.order_seed(0, iot.M_MAX)


def test_seed_control_at_one_seed_shows_the_one_network_effect():
    """At one seed "inputs prefer orders" cannot tell, whatever its tests say: the models' own spread between
    trainings is unknown (tests/test_claims_shuffle_iot_seeds.py calibrates the pooled rule). Its tests still show
    the one network's effect: orders that are only noisier than the control (flipping 8 % of inputs against 3.5 %)
    no longer pass them (issue 57: the excess is charged for the accuracy they lose), orders right on other inputs at
    the same accuracy (a preference) do; the oracle gap alone passes noise."""
    rng = np.random.default_rng(5)
    n, m = 4000, 4

    def group(flip: float, latent: np.ndarray, pref: float = 0.0) -> list[np.ndarray]:
        out = [latent ^ (rng.random(n) < 0.035)]  # model 0: the sequential model, shared by both groups
        for _ in range(1, m):
            lat = latent.copy()
            if pref:  # right on a share `pref` of the hard inputs, wrong on as many easy ones
                u = rng.random(n)
                lat[~latent & (u < pref)] = True
                lat[latent & (u < pref * 0.07 / 0.93)] = False
            out.append(lat ^ (rng.random(n) < flip))
        return out

    def verdict(order_flip: float, seed_flip: float = 0.035, pref: float = 0.0) -> tuple[dict, bool | None]:
        latent = rng.random(n) < 0.93
        sd = group(seed_flip, latent)
        fx = [sd[0]] + group(order_flip, latent, pref)[1:]
        r = irun(n=n, fixed=(0.9,) * m)
        r.update({"fixed_outcomes": [E.pack(v) for v in fx], "best_fixed_order": 0,
                  "fixed_acc": [float(v.mean()) for v in fx], "fixed_oracle_acc": float(np.max(fx, 0).mean()),
                  "best_fixed_acc": float(fx[0].mean())})
        r["seed_control"].update({"outcomes": [E.pack(v) for v in sd], "best": 0, "best_acc": float(sd[0].mean()),
                                  "oracle_acc": float(np.max(sd, 0).mean())})
        c = iot_claims.claim_inputs_prefer(r)
        return c, c["tests"][0]["holds"]

    null = [verdict(0.035) for _ in range(100)]
    assert all(one_network(c) for c, _ in null)
    assert sum(g is True for _, g in null) / 100 > 0.5  # a rule on the gap alone passes noise
    assert sum(says(verdict(0.08)[0]) is True for _ in range(50)) == 0  # only noisier: charged, not passed
    assert sum(says(verdict(0.035, pref=0.4)[0]) is True for _ in range(50)) / 50 >= 0.9


def _sweep_runs(excess: dict[int, float], gains: dict[int, float], n: int = 4000) -> list[dict]:
    out = []
    for m_, e in sorted(excess.items()):
        r = irun(n=n, fixed=(0.9,) * m_ if m_ > 1 else (0.9, 0.9), order_overlap=0.5, seed_overlap=0.5,
                 order_offset=397 * m_)  # each M's models err on other inputs
        if m_ > 1:  # the orders' oracle lies `e` above the seeds' (extra right answers on new inputs)
            fx = [E.unpack(t) for t in r["fixed_outcomes"]]
            extra = np.zeros(n, dtype=bool)
            extra[np.flatnonzero(~np.max(fx, 0))[: round(e * n)]] = True
            fx[-1] = fx[-1] | extra
            r["fixed_outcomes"] = [E.pack(v) for v in fx]
            r["fixed_oracle_acc"] = float(np.max(fx, 0).mean())
        r["config"]["m"] = m_
        r["outcomes"]["iot"] = E.pack(vec(0.9 + gains[m_], n))
        r["outcomes"]["orders"] = [E.pack(vec(0.9, n))] * max(m_, 2)
        r["iot_acc"], r["shared_best_acc"] = 0.9 + gains[m_], 0.9
        out.append(r)
    return out


def test_sweep_claims_three_ways():
    cfg = iot.IOTConfig(m=8)
    cs = by_key(iot_claims.sweep_claims(cfg.space, _sweep_runs({1: 0, 2: 0.0, 4: 0.02, 8: 0.05},
                                                               {1: 0, 2: 0.01, 4: 0.02, 8: 0.04})))
    assert all(one_network(c) for c in cs.values())  # models trained apart at each M: over seeds
    assert says(cs["oracle_gap_grows_with_m"]) is True and says(cs["router_gain_grows_with_m"]) is True
    cs = by_key(iot_claims.sweep_claims(cfg.space, _sweep_runs({2: 0.05, 8: 0.0}, {2: 0.04, 8: 0.0})))
    assert says(cs["oracle_gap_grows_with_m"]) is False and says(cs["router_gain_grows_with_m"]) is False
    cs = by_key(iot_claims.sweep_claims(cfg.space, _sweep_runs({2: 0.0, 8: 0.001}, {2: 0.01, 8: 0.0105})))
    assert says(cs["oracle_gap_grows_with_m"]) is None and says(cs["router_gain_grows_with_m"]) is None
    assert iot_claims.sweep_claims(cfg.space, _sweep_runs({1: 0, 2: 0.03}, {1: 0, 2: 0.0})) == []  # one M >= 2: nothing


def test_sweep_configs_are_checked():
    cfgs = iot.sweep_configs(iot.IOTConfig(m=4), (8, 1, 2))
    assert [c.m for c in cfgs] == [1, 2, 8]
    for bad in ((), (0, 2), (2, 2), (9,)):
        with pytest.raises(ValueError):
            iot.sweep_configs(iot.IOTConfig(), bad)


def test_shared_sublayer_space_is_the_paper_s_two_orders():
    from lab.experiments.iot import routing as core

    orders_ = core.candidate_orders("shared", 2, 0, 6)
    assert [core.order_label(o, "shared") for o in orders_] == ["A A A A A A", "M M M M M M"]
    with pytest.raises(ValueError, match="only 2"):
        core.candidate_orders("shared", 3, 0, 6)
    with pytest.raises(ValueError, match="M = 1 or 2"):
        iot.IOTConfig(model="vit-sequential", space="shared", m=4)
    with pytest.raises(ValueError, match="only in the ViT"):
        iot.IOTConfig(model="residual", space="shared", m=2)


def test_m_one_is_the_sequential_model_and_real_claims_are_complete(tmp_path, monkeypatch):
    """IOT training with one candidate order is the ordinary loop: the same accuracy as the stored sequential model
    (quick mode: one epoch); the claims of real (tiny) runs pass `claims.check`."""
    from lab.runtime.store import Store

    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    store = Store(tmp_path)
    r = iot.run(iot.IOTConfig(m=1), store=store, twin=False)
    assert r["iot_acc"] == r["sequential_acc"] == r["oracle_acc"] == r["fixed_acc"][0]
    assert r["choice_share"] == [1.0]
    r2 = iot.run(iot.IOTConfig(m=2), store=store)
    assert "claims" not in r2  # computed when read, never part of the result
    C.check(C.of(r2))
    assert r2["seed_control"]["acc"][0] == r2["fixed_acc"][0]  # the control's first model is the sequential one
    sw = iot.sweep_of(iot.IOTConfig(m=2), [r, r2])
    assert [row["m"] for row in sw["rows"]] == [1, 2] and sw["rows"][0]["iot_acc"] == r["sequential_acc"]
