"""Claims of the LayerDrop and Re-initialise pages: every claim on synthetic per-input outcomes where it holds, where
it does not, and inside the noise (the verdict asserted each time), the record's shape, and calibration of the rule
families special to these pages (simulated nulls rarely "hold", effects of the papers' size are found).

The synthetic results are written by hand here, independently of the experiments: only the keys a claim reads,
with outcome vectors of exactly the accuracy asked for, on inputs drawn by a seeded generator.
"""

from __future__ import annotations

import zlib
from types import SimpleNamespace as NS

import numpy as np
import pytest

from lab import claims as C
from lab import estimates as E
from lab.experiments.layerdrop import claims as LC
from lab.experiments.layerdrop import experiment as layerdrop
from lab.experiments.reinit import claims as RC
from lab.experiments.reinit import experiment as reinit

BASE, CHANCE, N = 0.9, 0.05, 4000


def vec(acc: float, tag: str, n: int = N) -> str:
    """A packed outcome vector with exactly round(acc n) right answers at positions drawn from `tag`'s seed: two
    different tags give (nearly) independent vectors, about as discordant as two different models."""
    k = round(acc * n)
    gen = np.random.default_rng(zlib.crc32(tag.encode()))
    ok = np.zeros(n, dtype=bool)
    ok[gen.permutation(n)[:k]] = True
    return E.pack(ok)


def verdict(claims, key):
    (c,) = [c for c in claims if c["key"] == key]
    C.check([c])
    return c["holds"]


def one_network(claims, key):
    """A claim over training seeds at one seed: it cannot tell (one trained network); what its tests say of this one
    network is returned (the verdict a pool of seeds would weigh)."""
    (c,) = [c for c in claims if c["key"] == key]
    C.check([c])
    assert c["over"] == "seeds" and c["seeds"] == [0] and c["holds"] is None and c["why"] == "one trained network"
    return C._combine(c["tests"], c["combine"])


# -- Re-initialise: a hand-written robustness map ---------------------------------------------------------------
LAYERS = ["stem"] + [f"blocks.{i}" for i in range(7)] + ["head"]
EPOCHS = [0, 5, 12]


def fake_map(model="plain", t0=None, rr=None, late=None, dist=None, n=N, base=BASE, epochs=EPOCHS):
    """A map with columns re-randomise, t=0, t=5 (late), t=12 (the trained model); defaults: every layer robust.
    A cell at the trained accuracy carries the trained model's own outcomes (as a real map's unchanged cells do)."""
    k = len(LAYERS)
    t0 = list(t0 or [base] * k)
    rr = list(rr or [base] * k)
    late = list(late or t0)
    base_v = vec(base, f"{model}-base", n)
    rows, outs = [], []
    for i in range(k):
        row = [rr[i], t0[i]] + ([late[i]] if len(epochs) > 2 else []) + [base]
        rows.append(row)
        outs.append([base_v if a == base else vec(a, f"{model}-{i}-{j}", n) for j, a in enumerate(row)])
    damage = [base - a for a in t0]
    dist = list(dist or [0.1 * (i + 1) for i in range(k)])
    r = reinit.ReinitResult(
        config=reinit.ReinitConfig(model=model), model=model, model_name=reinit.MODEL_NAMES[model], task="fake",
        train_seconds=0.0, layers=LAYERS, n_params=[0] * k, epochs=epochs, checkpoints=reinit.column_labels(epochs),
        acc=rows, outcomes=outs, base_acc=base, base_outcomes=base_v, chance=CHANCE,
        distance={"rel2": dist, "inf": dist}, damage=damage,
        rank_corr={"rel2": reinit._rank_corr(dist, damage), "inf": None}, n_test=n, verdict_t0=[], verdict_rerand=[],
        redraw_seed=0, heatmap_seconds=0.0)
    return r  # its claims are computed when read (RC.model_claims, lab.claims.of)


CRIT = CHANCE + RC.CRITICAL_KEEP * (BASE - CHANCE)  # 0.475: below it a layer is critical


@pytest.mark.parametrize("stem,want", [(0.06, True), (0.88, False), (CRIT + 0.002, None)])
def test_plain_first_layer_critical(stem, want):
    r = fake_map(t0=[stem] + [BASE] * 8)
    assert verdict(C.of(r), "reinit.plain-first-layer-critical") is want


@pytest.mark.parametrize("t0,late,want", [(0.2, 0.8, True), (0.8, 0.2, False), (0.5, 0.505, None)])
def test_plain_first_layer_damage_falls_with_t(t0, late, want):
    r = fake_map(t0=[t0] + [BASE] * 8, late=[late] + [BASE] * 8)
    assert verdict(C.of(r), "reinit.plain-first-layer-damage-falls") is want


def test_damage_falls_cannot_tell_without_a_middle_checkpoint():
    r = fake_map(t0=[0.1] + [BASE] * 8, epochs=[0, 1])  # quick mode: trained one epoch
    assert verdict(C.of(r), "reinit.plain-first-layer-damage-falls") is None


@pytest.mark.parametrize("stem,weakest,want", [(0.2, 0.85, True), (0.85, 0.2, False), (0.5, 0.505, None)])
def test_plain_later_layers_more_robust(stem, weakest, want):
    r = fake_map(t0=[stem, BASE, BASE, weakest] + [BASE] * 5)
    assert verdict(C.of(r), "reinit.plain-later-layers-more-robust") is want


@pytest.mark.parametrize("odd,want", [(0.05, True), (0.85, False), (CRIT - 0.005, None)])
def test_plain_rerand_fatal(odd, want):
    r = fake_map(rr=[0.05] * 4 + [odd] + [0.05] * 4)
    assert verdict(C.of(r), "reinit.plain-rerand-fatal") is want


@pytest.mark.parametrize("model", ["plain", "residual", "vit"])
def test_rerand_hurts_at_least_as_much_with_a_margin(model):
    key = f"reinit.{model}-rerand-hurts-more"
    assert verdict(C.of(fake_map(model, rr=[0.3] * 9)), key) is True
    assert verdict(C.of(fake_map(model, t0=[0.3] * 9, rr=[0.6] * 9)), key) is False
    # re-randomising 1 pt better than re-initialising, on average: exactly the margin, inside the noise
    assert verdict(C.of(fake_map(model, t0=[0.5] * 9, rr=[0.51] * 9)), key) is None
    # untouched by both changes: non-inferior (the point of a margin: equality is not "cannot tell")
    assert verdict(C.of(fake_map(model)), key) is True


def test_moved_least_is_robust_three_ways():
    key = "reinit.plain-moved-least-robust"
    t0 = [0.9 - 0.08 * i for i in range(9)]  # damage grows layer by layer
    assert verdict(C.of(fake_map(t0=t0, dist=[0.1 * (i + 1) for i in range(9)])), key) is True
    assert verdict(C.of(fake_map(t0=t0, dist=[1.0 - 0.1 * i for i in range(9)])), key) is False
    assert verdict(C.of(fake_map(t0=t0, dist=[0.3, 0.1, 0.5, 0.2, 0.9, 0.4, 0.6, 0.8, 0.7])), key) is None
    # a perfect ranking of damages that are all inside the noise is no evidence
    tiny = [BASE - 0.001 * i for i in range(9)]
    assert verdict(C.of(fake_map(t0=tiny, dist=[0.1 * (i + 1) for i in range(9)])), key) is None


@pytest.mark.parametrize("res,plain,want", [(0.85, 0.2, True), (0.2, 0.85, False), (0.5, 0.502, None)])
def test_residual_more_robust(res, plain, want):
    p = fake_map("plain", t0=[BASE] + [plain] * 7 + [BASE], rr=[0.05] + [plain] * 7 + [0.05])
    q = fake_map("residual", t0=[BASE] + [res] * 7 + [BASE], rr=[0.05] + [res] * 7 + [0.05])
    cs = RC.maps_claims({"plain": p, "residual": q})
    assert one_network(cs, "reinit.residual-more-robust") is want  # pooled over seeds: test_claims_matrix_reinit_seeds
    assert [c["key"] for c in cs][-1] == "reinit.residual-more-robust"
    assert "reinit.residual-more-robust" not in [c["key"] for c in RC.maps_claims({"plain": p})]


def fake_focus(cut, n=N, op="reinit", task=None):
    """The parts of a FocusResult the claim reads (attributes, as the typed result has them)."""
    f = NS(config=NS(model="plain", layer="blocks.2", op=op, checkpoint=0, task=task), base_acc=BASE,
           cut_acc=cut, chance=CHANCE, n_test=n, kept_share=reinit.kept_share(cut, BASE, CHANCE),
           outcomes={"base": vec(BASE, "focus-base", n), "cut": vec(cut, f"focus-{cut}", n)})
    return RC.focus_claims(f, "plain MLP")


def test_focus_robust_three_ways():
    thr = CHANCE + RC.ROBUST_KEEP * (BASE - CHANCE)
    assert verdict(fake_focus(0.9), "reinit.focus-robust") is True
    assert verdict(fake_focus(0.3), "reinit.focus-robust") is False
    assert verdict(fake_focus(thr + 0.003), "reinit.focus-robust") is None


def test_the_number_of_inputs_decides_the_noise():
    # the same 3-point gap is beyond the noise on the MLPs' 4,000 inputs and inside it on the ViT's 397
    thr = CHANCE + RC.ROBUST_KEEP * (BASE - CHANCE)
    assert verdict(fake_focus(thr - 0.03, n=4000), "reinit.focus-robust") is False
    assert verdict(fake_focus(thr - 0.03, n=397), "reinit.focus-robust") is None


def test_layer_labels_are_noise_aware():
    b = vec(BASE, "label-base")
    assert reinit.verdict(b, b, CHANCE) == "robust"  # unchanged
    assert reinit.verdict(vec(0.1, "l1"), b, CHANCE) == "critical"
    assert reinit.verdict(vec(0.65, "l2"), b, CHANCE) == "sensitive"
    assert reinit.verdict(vec(CRIT + 0.005, "l3"), b, CHANCE) == "unclear"


def fake_group(group_acc, singles, n=N, task=None):
    g = {"config": {"model": "plain", "op": "reinit", "checkpoint": 0, "task": task},
         "layers": [f"blocks.{i}" for i in range(len(singles))], "base_acc": BASE, "group_acc": group_acc,
         "single_accs": singles, "n_test": n, "chance": CHANCE,
         "single_damages": [BASE - a for a in singles], "sum_single_damage": sum(BASE - a for a in singles),
         "group_damage": BASE - group_acc,
         "outcomes": {"base": vec(BASE, "g-base", n), "group": vec(group_acc, "g-group", n),
                      "single": [vec(a, f"g-single-{i}", n) for i, a in enumerate(singles)]}}
    return [RC.group_claim(g, "plain MLP")]


@pytest.mark.parametrize("together,want", [(0.3, True), (0.89, False), (0.80, None)])
def test_group_jointly_fragile_against_independence(together, want):
    # each layer alone keeps (0.85 - 0.05) / 0.85 = 94.1 % of the above-chance accuracy; independent damages would
    # keep 94.1 %^2 = 88.6 %, an accuracy of 80.3 %
    assert verdict(fake_group(together, [0.85, 0.85]), "reinit.group-jointly-fragile") is want


def test_group_can_hold_where_the_summed_damages_exceed_what_is_left():
    # alone each layer costs 60 pts: summed (120) they exceed the 85 above chance, so the additive null could never
    # be beaten; independence predicts 29.4 %^2 = 8.6 % kept (12.4 % accuracy), and the group at 6 % keeps 1.2 %
    assert verdict(fake_group(0.06, [0.3, 0.3]), "reinit.group-jointly-fragile") is True
    assert verdict(fake_group(0.3, [0.3, 0.3]), "reinit.group-jointly-fragile") is False


def test_group_of_one_layer_cannot_tell():
    assert verdict(fake_group(0.5, [0.5]), "reinit.group-jointly-fragile") is None


def fake_widths(top_by_width, n=N, task=None):
    widths = [32, 64, 128, 256]
    t0 = [[BASE] * 4 + [a] * 5 for a in top_by_width]  # 9 layers, the upper 5 are the "top"
    outs = [[vec(a, f"w{j}-{i}", n) for i, a in enumerate(row)] for j, row in enumerate(t0)]
    w = {"model": "plain", "model_name": "plain MLP", "seed": 0, "widths": widths, "layers": LAYERS, "t0_acc": t0,
         "rerand_acc": t0, "base_acc": [BASE] * 4, "chance": CHANCE, "n_test": n, "t0_outcomes": outs,
         "base_outcomes": [vec(BASE, f"w{j}-base", n) for j in range(4)], "task": task}
    return [RC.width_claim(w)]


@pytest.mark.parametrize("tops,want", [((0.4, 0.5, 0.7, 0.85), True), ((0.85, 0.7, 0.6, 0.4), False),
                                       ((0.6, 0.5, 0.7, 0.605), None)])
def test_wider_nets_have_more_robust_top_layers(tops, want):
    assert one_network(fake_widths(tops), "reinit.plain-wider-more-robust-top") is want


def test_top_layers_are_the_upper_half_with_the_head():
    assert [LAYERS[i] for i in RC.top_layers(LAYERS)] == ["blocks.3", "blocks.4", "blocks.5", "blocks.6", "head"]


# -- LayerDrop: hand-written pruning profiles with per-input outcomes -------------------------------------------
NB = 8


def fake_profile(p, acc=0.8, base=0.9, n=N, **at):
    """A profile whose every strategy scores `acc` at every depth, except at[(strategy, r)] = value; random pruning
    at r = N - 1 removes each block alone (every single deletion, as the experiment does), each scoring
    at["random_7"] (default acc)."""
    def one(s, r):
        a = at.get(f"{s}_{r}", base if r == NB else acc)
        return {"test_acc": a, "outcomes": vec(a, f"{p}-{s}-{r}", n)}

    strategies = {s: [one(s, r) for r in range(NB + 1)] for s in layerdrop.STRATEGIES}
    ra = at.get(f"random_{NB - 1}", acc)
    strategies["random"][NB - 1] = {"test_acc": ra, "subsets": [[i] for i in range(NB)],
                                    "subset_outcomes": [vec(ra, f"{p}-single-{i}", n) for i in range(NB)]}
    return layerdrop.LayerDropProfile(config=layerdrop.ProfileConfig("residual", p, 0), n_blocks=NB, base_acc=base,
                                      base_outcomes=vec(base, f"{p}-base", n), chance=CHANCE, n_test=n,
                                      strategies=strategies, train_curve=[], train_seconds=0.0, eval_seconds=0.0)


def ld_claims(profs, keep=4, p=0.5, scratch=None, distilled=None):
    by_p = {q.config.p: q for q in profs}
    return LC.claims(by_p, keep, p, scratch and scratch["outcomes"], distilled and distilled["outcomes"])


def grid(**per_p):
    """Profiles at 0, 0.2, 0.5 (and any other p given); per_p: p name -> keyword overrides of fake_profile."""
    ps = {"p0": 0.0, "p02": 0.2, "p05": 0.5, "p07": 0.7}
    out = {0.0: {}, 0.2: {}, 0.5: {}}
    for name, kw in per_p.items():
        out[ps[name]] = kw
    return [fake_profile(p, **kw) for p, kw in out.items()]


def recipe_effect(claims, key):
    """A recipe claim at one seed: "cannot tell (one trained network)" whatever its tests say; returns what its
    tests say (the one network's effect, joined as the claim joins them)."""
    (c,) = [c for c in claims if c["key"] == key]
    C.check([c])
    assert c["over"] == "seeds" and c["seeds"] == [0] and c["holds"] is None and c["why"] == C.ONE_NETWORK
    return C._combine(c["tests"], c["combine"])


@pytest.mark.parametrize("a5,a0,want", [(0.8, 0.5, True), (0.5, 0.8, False), (0.6, 0.595, None)])
def test_p05_beats_p0_at_half_depth(a5, a0, want):
    profs = grid(p0={"every-other_4": a0}, p05={"every-other_4": a5})
    assert recipe_effect(ld_claims(profs), "layerdrop.p05-beats-p0-half-depth") is want


@pytest.mark.parametrize("near,far,want", [(0.8, 0.6, True), (0.6, 0.8, False), (0.7, 0.695, None)])
def test_p_star_rule(near, far, want):
    # keep 4 of 8: p* = 0.5, so p = 0.5 is near and 0 and 0.2 are far
    profs = grid(p0={"every-other_4": 0.3}, p02={"every-other_4": far}, p05={"every-other_4": near})
    assert recipe_effect(ld_claims(profs, keep=4), "layerdrop.p-star-rule") is want


def test_p_star_rule_cannot_tell_without_a_rate_near_p_star():
    # keep 2 of 8: p* = 0.75; 0.5 is not within 0.1 of it, so no trained rate is near
    profs = grid(p05={"every-other_2": 0.9})
    assert recipe_effect(ld_claims(profs, keep=2), "layerdrop.p-star-rule") is None
    # train 0.7 and it is: its tests now decide
    profs = grid(p0={"every-other_2": 0.3}, p02={"every-other_2": 0.3}, p05={"every-other_2": 0.5},
                 p07={"every-other_2": 0.8})
    assert recipe_effect(ld_claims(profs, keep=2, p=0.7), "layerdrop.p-star-rule") is True


@pytest.mark.parametrize("eo,first,last,want", [(0.8, 0.4, 0.5, True), (0.5, 0.8, 0.3, False),
                                                (0.8, 0.795, 0.3, None)])
def test_every_other_beats_contiguous(eo, first, last, want):
    profs = grid(p05={"every-other_4": eo, "first_4": first, "last_4": last})
    assert verdict(ld_claims(profs), "layerdrop.every-other-beats-contiguous") is want


@pytest.mark.parametrize("cut,want", [(0.89, True), (0.5, False), (0.9 - 0.085, None)])
def test_one_block_costs_little(cut, want):
    # allowed loss: 10 % of 0.9 - 0.05 = 8.5 pts; every single deletion scores `cut`
    profs = grid(p0={"random_7": cut})
    assert verdict(ld_claims(profs), "layerdrop.one-block-costs-little") is want


@pytest.mark.parametrize("first,rand,want", [(0.3, 0.85, True), (0.88, 0.6, False), (0.85, 0.852, None)])
def test_first_block_not_interchangeable(first, rand, want):
    profs = grid(p05={"first_7": first, "random_7": rand})
    assert verdict(ld_claims(profs, p=0.5), "layerdrop.first-block-not-interchangeable") is want


def test_first_block_is_not_inside_its_own_comparator():
    prof = fake_profile(0.5, random_7=0.85, first_7=0.3)
    # make the single deletion of block 0 (inside the random row) terrible: the comparator must not move
    row = prof.strategies["random"][NB - 1]
    before = LC.first_block_claim(prof)["measured"]["other_removed_acc"]
    row["subset_outcomes"][0] = vec(0.0, "zero")
    assert LC.first_block_claim(prof)["measured"]["other_removed_acc"] == before == pytest.approx(0.85)


def test_layerdrop_noise_follows_the_inputs():
    profs = grid(p0={"every-other_4": 0.6}, p05={"every-other_4": 0.64})
    assert recipe_effect(ld_claims(profs), "layerdrop.p05-beats-p0-half-depth") is True  # 4 pts on 4,000 inputs
    small = [fake_profile(q.config.p, n=397, **{"every-other_4": q.strategies["every-other"][4]["test_acc"]})
             for q in profs]
    assert recipe_effect(ld_claims(small), "layerdrop.p05-beats-p0-half-depth") is None  # the same on 397


def test_pairing_shrinks_the_error_of_correlated_models():
    # two models that agree on all but 40 of 4,000 inputs (+0.5 pt): unpaired this is noise, paired it is not
    a = np.ones(N, bool)
    a[:300] = False
    b = a.copy()
    b[300:330] = False
    b[:10] = True
    est = E.paired(a, b)
    assert est.value == pytest.approx(0.005) and C.test("", est, ">=", 0.0)["holds"] is True
    unpaired = E.independent(E.accuracy(a), E.accuracy(b))
    assert C.test("", unpaired, ">=", 0.0)["holds"] is None


def test_table_claims_are_pooled_over_seeds():
    def seed(a5):
        by_p = {q.config.p: q for q in grid(p0={"every-other_4": 0.5}, p05={"every-other_4": a5})}
        return LC.seed_table_claims(by_p, {}, [8, 6, 4, 2])

    cs = C.pool([seed(0.70), seed(0.71), seed(0.72)], [0, 1, 2])
    assert verdict(cs, "layerdrop.p05-beats-p0-half-depth") is True
    wild = C.pool([seed(0.95), seed(0.25), seed(0.92)], [0, 1, 2])  # the same mean region, the seeds disagree wildly
    assert verdict(wild, "layerdrop.p05-beats-p0-half-depth") is None
    two = C.pool([seed(0.70), seed(0.71)], [0, 1])  # a recipe needs 3 seeds
    assert verdict(two, "layerdrop.p05-beats-p0-half-depth") is None
    assert [c["subject"] for c in cs if c["key"] == "layerdrop.p-star-rule"] == [f"keep {r} of 8" for r in
                                                                                 (8, 6, 4, 2)]


@pytest.mark.parametrize("pruned,scratch,want", [(0.8, 0.6, True), (0.6, 0.8, False), (0.7, 0.695, None)])
def test_beats_scratch(pruned, scratch, want):
    profs = grid(p05={"every-other_4": pruned})
    sc, di = {"outcomes": vec(scratch, "scratch")}, {"outcomes": vec(0.5, "distilled")}
    assert recipe_effect(ld_claims(profs, 4, 0.5, sc, di), "layerdrop.beats-scratch") is want
    # at p = 0 there is no LayerDrop model to test
    sc0, di0 = {"outcomes": vec(0.1, "scratch")}, {"outcomes": vec(0.9, "distilled")}
    assert recipe_effect(ld_claims(profs, 4, 0.0, sc0, di0), "layerdrop.beats-scratch") is None


@pytest.mark.parametrize("pruned,distilled,want", [(0.8, 0.8, True), (0.7, 0.85, False), (0.7, 0.72, None)])
def test_about_as_good_as_distillation(pruned, distilled, want):
    profs = grid(p05={"every-other_4": pruned})
    sc, di = {"outcomes": vec(0.5, "scratch")}, {"outcomes": vec(distilled, "distilled")}
    assert recipe_effect(ld_claims(profs, 4, 0.5, sc, di), "layerdrop.about-as-good-as-distillation") is want


# -- calibration: simulated nulls, outcomes correlated as in real runs (93 % accuracy, ~7 % discordant) ----------
SIMS = 400


def pair(gen, n, acc_b, delta, discordant):
    """Outcomes (a, b) on the same n inputs: b right with probability acc_b, a - b = delta on average, a share
    `discordant` of inputs where they differ."""
    u = gen.random(n)
    p10, p01 = (discordant + delta) / 2, (discordant - delta) / 2
    p11 = acc_b - p01
    a = (u < p11) | ((u >= p11) & (u < p11 + p10))
    b = (u < p11) | ((u >= p11 + p10) & (u < p11 + p10 + p01))
    return a, b


def false_holds(rule, sims=SIMS):
    return sum(rule(i) is True for i in range(sims)) / sims


def test_calibration_kept_share_rules():
    """robust/critical thresholds (acc - s base against (1 - s) chance, paired): a changed model exactly at the
    threshold holds at most 5 % of the time; one 3 pts past it (a clear layer) is found."""
    n, base, chance = N, 0.93, 0.05
    for share, side in ((RC.ROBUST_KEEP, ">="), (RC.CRITICAL_KEEP, "<=")):
        thr = chance + share * (base - chance)

        def rule(i, effect=0.0, share=share, side=side, thr=thr):
            gen = np.random.default_rng(i)
            b = gen.random(n) < base
            # the changed model: right where the trained one is, except for a random share of inputs
            target = thr + (effect if side == ">=" else -effect)
            a = b & (gen.random(n) < target / base)
            return RC.keeps_test("t", a, b, share, chance, side)["holds"]

        assert false_holds(rule) <= 0.05
        assert sum(rule(i, 0.03) is True for i in range(100)) >= 90


def test_calibration_non_inferiority_margin():
    """distilled - pruned <= 2 pts (LayerDrop) and t0 - rerand >= -1 pt (Re-initialise), paired: at the margin,
    false "holds" at most 5 %; equal models (the papers' "about as good") pass."""
    n = N

    def at_margin(i, delta, side, margin):
        gen = np.random.default_rng(1000 + i)
        a, b = pair(gen, n, 0.93, delta, 0.07)
        return C.test("", E.paired(a, b), side, margin)["holds"]

    assert false_holds(lambda i: at_margin(i, LC.SIMILAR, "<=", LC.SIMILAR)) <= 0.05
    assert false_holds(lambda i: at_margin(i, -RC.RERAND_MARGIN, ">=", -RC.RERAND_MARGIN)) <= 0.05
    assert sum(at_margin(i, 0.0, "<=", LC.SIMILAR) is True for i in range(100)) >= 90


def test_calibration_group_independence_null(monkeypatch):
    """Group damages that are independent: each input the model knows (share q) stays known after each layer's
    change on a coin of its own (keep k), an input not known is right by chance. The group then keeps exactly the
    product of the single kept shares of the above-chance accuracy, and "jointly fragile" holds at most 5 % of the
    time; a group that keeps 10 pts less than independence predicts is found."""
    n, q, chance, keep1 = 2000, 0.92, 0.05, 0.8
    monkeypatch.setattr(RC, "BOOTSTRAP", 200)  # the error of a 200-draw bootstrap is within ~5 % of 1,000's

    def rule(i, extra=0.0):
        gen = np.random.default_rng(5000 + i)
        known = gen.random(n) < q
        c1, c2 = gen.random(n) < keep1, gen.random(n) < keep1
        lost = gen.random(n) < extra / (keep1 * keep1)  # the group's own extra damage, beyond independence

        def right(k):
            return k | (gen.random(n) < chance)

        ok, s1, s2, g = right(known), right(known & c1), right(known & c2), right(known & c1 & c2 & ~lost)
        gr = {"config": {"model": "plain", "op": "reinit", "checkpoint": 0}, "layers": ["blocks.1", "blocks.2"],
              "base_acc": ok.mean(), "group_acc": g.mean(), "single_accs": [s1.mean(), s2.mean()], "n_test": n,
              "chance": chance, "group_damage": 0.0, "sum_single_damage": 0.0,
              "outcomes": {"base": E.pack(ok), "group": E.pack(g), "single": [E.pack(s1), E.pack(s2)]}}
        return RC.group_claim(gr, "plain MLP")["holds"]

    assert false_holds(rule, 400) <= 0.05
    assert sum(rule(i, 0.10) is True for i in range(50)) >= 45
