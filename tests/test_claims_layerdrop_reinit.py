"""Claims of the LayerDrop and Re-initialise pages: every claim on a synthetic result where it holds, one where it
does not, and one inside the noise (the verdict asserted each time), plus the record's shape.

The synthetic results are written by hand here, independently of the experiments: only the keys a claim reads.
"""

from __future__ import annotations

import pytest

from lab import claims as C
from lab.experiments import layerdrop, reinit

# -- Re-initialise: a hand-written robustness map ---------------------------------------------------------------
BASE, CHANCE, N = 0.9, 0.05, 4000
LAYERS = ["stem"] + [f"blocks.{i}" for i in range(7)] + ["head"]
EPOCHS = [0, 5, 12]


def fake_map(model="plain", t0=None, rr=None, late=None, dist=None, n=N, base=BASE, epochs=EPOCHS):
    """A map with columns re-randomise, t=0, t=5 (late), t=12 (the trained model); defaults: every layer robust."""
    k = len(LAYERS)
    t0 = list(t0 or [base] * k)
    rr = list(rr or [base] * k)
    late = list(late or t0)
    rows = []
    for i in range(k):
        row = [rr[i], t0[i]]
        if len(epochs) > 2:
            row.append(late[i])
        rows.append(row + [base])
    damage = [base - a for a in t0]
    dist = list(dist or [0.1 * (i + 1) for i in range(k)])
    r = {"model": model, "model_name": reinit.MODEL_NAMES[model], "layers": LAYERS, "epochs": epochs,
         "checkpoints": reinit.column_labels(epochs), "acc": rows, "base_acc": base, "chance": CHANCE,
         "n_test": n, "damage": damage, "distance": {"rel2": dist, "inf": dist},
         "rank_corr": {"rel2": reinit._rank_corr(dist, damage), "inf": None}}
    return {**r, "claims": reinit.model_claims(r)}


def verdict(claims, key):
    (c,) = [c for c in claims if c["key"] == key]
    C.check([c])
    return c["holds"]


CRIT = CHANCE + reinit.CRITICAL_KEEP * (BASE - CHANCE)  # 0.475: below it a layer is critical


@pytest.mark.parametrize("stem,want", [(0.06, True), (0.88, False), (CRIT + 0.002, None)])
def test_plain_first_layer_critical(stem, want):
    r = fake_map(t0=[stem] + [BASE] * 8)
    assert verdict(r["claims"], "reinit.plain-first-layer-critical") is want


@pytest.mark.parametrize("t0,late,want", [(0.2, 0.8, True), (0.8, 0.2, False), (0.5, 0.505, None)])
def test_plain_first_layer_damage_falls_with_t(t0, late, want):
    r = fake_map(t0=[t0] + [BASE] * 8, late=[late] + [BASE] * 8)
    assert verdict(r["claims"], "reinit.plain-first-layer-damage-falls") is want


def test_damage_falls_cannot_tell_without_a_middle_checkpoint():
    r = fake_map(t0=[0.1] + [BASE] * 8, epochs=[0, 1])  # quick mode: trained one epoch
    assert verdict(r["claims"], "reinit.plain-first-layer-damage-falls") is None


@pytest.mark.parametrize("stem,weakest,want", [(0.2, 0.85, True), (0.85, 0.2, False), (0.5, 0.505, None)])
def test_plain_later_layers_more_robust(stem, weakest, want):
    r = fake_map(t0=[stem, BASE, BASE, weakest] + [BASE] * 5)
    assert verdict(r["claims"], "reinit.plain-later-layers-more-robust") is want


@pytest.mark.parametrize("odd,want", [(0.05, True), (0.85, False), (CRIT - 0.005, None)])
def test_plain_rerand_fatal(odd, want):
    r = fake_map(rr=[0.05] * 4 + [odd] + [0.05] * 4)
    assert verdict(r["claims"], "reinit.plain-rerand-fatal") is want


@pytest.mark.parametrize("model", ["plain", "residual", "vit"])
def test_rerand_hurts_at_least_as_much(model):
    key = f"reinit.{model}-rerand-hurts-more"
    assert verdict(fake_map(model, rr=[0.3] * 9)["claims"], key) is True
    # one layer clearly better re-randomised than re-initialised: the claim fails even if the mean favours it
    assert verdict(fake_map(model, t0=[0.2] + [BASE] * 8, rr=[0.6] + [0.1] * 8)["claims"], key) is False
    assert verdict(fake_map(model)["claims"], key) is None  # every layer untouched by both: nothing to tell


def test_moved_least_is_robust_three_ways():
    key = "reinit.plain-moved-least-robust"
    t0 = [0.9 - 0.08 * i for i in range(9)]  # damage grows layer by layer
    assert verdict(fake_map(t0=t0, dist=[0.1 * (i + 1) for i in range(9)])["claims"], key) is True
    assert verdict(fake_map(t0=t0, dist=[1.0 - 0.1 * i for i in range(9)])["claims"], key) is False
    assert verdict(fake_map(t0=t0, dist=[0.3, 0.1, 0.5, 0.2, 0.9, 0.4, 0.6, 0.8, 0.7])["claims"], key) is None
    # a perfect ranking of damages that are all inside the noise is no evidence
    tiny = [BASE - 0.001 * i for i in range(9)]
    assert verdict(fake_map(t0=tiny, dist=[0.1 * (i + 1) for i in range(9)])["claims"], key) is None


@pytest.mark.parametrize("res,plain,want", [(0.85, 0.2, True), (0.2, 0.85, False), (0.5, 0.502, None)])
def test_residual_more_robust(res, plain, want):
    p = fake_map("plain", t0=[BASE] + [plain] * 7 + [BASE], rr=[0.05] + [plain] * 7 + [0.05])
    q = fake_map("residual", t0=[BASE] + [res] * 7 + [BASE], rr=[0.05] + [res] * 7 + [0.05])
    cs = reinit.claims({"plain": p, "residual": q})
    assert verdict(cs, "reinit.residual-more-robust") is want
    assert [c["key"] for c in cs][-1] == "reinit.residual-more-robust"
    assert "reinit.residual-more-robust" not in [c["key"] for c in reinit.claims({"plain": p})]


def fake_focus(cut, n=N, op="reinit"):
    f = {"config": {"model": "plain", "layer": "blocks.2", "op": op, "checkpoint": 0}, "base_acc": BASE,
         "cut_acc": cut, "chance": CHANCE, "n_test": n, "kept_share": reinit.kept_share(cut, BASE, CHANCE)}
    return reinit.focus_claims(f)


def test_focus_robust_three_ways():
    thr = CHANCE + reinit.ROBUST_KEEP * (BASE - CHANCE)
    assert verdict(fake_focus(0.9), "reinit.focus-robust") is True
    assert verdict(fake_focus(0.3), "reinit.focus-robust") is False
    assert verdict(fake_focus(thr + 0.003), "reinit.focus-robust") is None


def test_the_number_of_inputs_decides_the_noise():
    # the same 3-point gap is beyond the noise on the MLPs' 4,000 inputs and inside it on the ViT's 397
    assert verdict(fake_focus(0.6, n=4000), "reinit.focus-robust") is False
    thr = CHANCE + reinit.ROBUST_KEEP * (BASE - CHANCE)
    assert verdict(fake_focus(thr - 0.03, n=4000), "reinit.focus-robust") is False
    assert verdict(fake_focus(thr - 0.03, n=397), "reinit.focus-robust") is None


def test_layer_labels_are_noise_aware():
    assert reinit.verdict(0.9, BASE, CHANCE, N) == "robust"
    assert reinit.verdict(0.1, BASE, CHANCE, N) == "critical"
    assert reinit.verdict(0.65, BASE, CHANCE, N) == "sensitive"
    assert reinit.verdict(CRIT + 0.005, BASE, CHANCE, N) == "unclear"


# -- LayerDrop: hand-written pruning profiles -------------------------------------------------------------------
NB = 8


def fake_profile(p, acc=0.8, base=0.9, n=N, **at):
    """A profile whose every strategy scores `acc` at every depth, except at[(strategy, r)] = value."""
    strategies = {s: [{"test_acc": at.get(f"{s}_{r}", base if r == NB else acc)} for r in range(NB + 1)]
                  for s in layerdrop.STRATEGIES}
    return {"config": {"model": "residual", "p": p, "seed": 0}, "n_blocks": NB, "base_acc": base, "chance": CHANCE,
            "n_test": n, "strategies": strategies}


def ld_claims(profs, keep=4, p=0.5):
    by_p = {q["config"]["p"]: q for q in profs}
    return layerdrop.claims(by_p, keep, p)


def grid(**per_p):
    """Profiles at 0, 0.2, 0.5 (and any other p given); per_p: p name -> keyword overrides of fake_profile."""
    ps = {"p0": 0.0, "p02": 0.2, "p05": 0.5, "p07": 0.7}
    out = {0.0: {}, 0.2: {}, 0.5: {}}
    for name, kw in per_p.items():
        out[ps[name]] = kw
    return [fake_profile(p, **kw) for p, kw in out.items()]


@pytest.mark.parametrize("a5,a0,want", [(0.8, 0.5, True), (0.5, 0.8, False), (0.6, 0.595, None)])
def test_p05_beats_p0_at_half_depth(a5, a0, want):
    profs = grid(p0={"every-other_4": a0}, p05={"every-other_4": a5})
    assert verdict(ld_claims(profs), "layerdrop.p05-beats-p0-half-depth") is want


@pytest.mark.parametrize("near,far,want", [(0.8, 0.6, True), (0.6, 0.8, False), (0.7, 0.695, None)])
def test_p_star_rule(near, far, want):
    # keep 4 of 8: p* = 0.5, so p = 0.5 is near and 0 and 0.2 are far
    profs = grid(p0={"every-other_4": 0.3}, p02={"every-other_4": far}, p05={"every-other_4": near})
    assert verdict(ld_claims(profs, keep=4), "layerdrop.p-star-rule") is want


def test_p_star_rule_cannot_tell_without_a_rate_near_p_star():
    # keep 2 of 8: p* = 0.75; 0.5 is not within 0.1 of it, so no trained rate is near
    profs = grid(p05={"every-other_2": 0.9})
    assert verdict(ld_claims(profs, keep=2), "layerdrop.p-star-rule") is None
    # train 0.7 and it is: the claim now decides
    profs = grid(p0={"every-other_2": 0.3}, p02={"every-other_2": 0.3}, p05={"every-other_2": 0.5},
                 p07={"every-other_2": 0.8})
    assert verdict(ld_claims(profs, keep=2, p=0.7), "layerdrop.p-star-rule") is True


@pytest.mark.parametrize("eo,first,last,want", [(0.8, 0.4, 0.5, True), (0.5, 0.8, 0.3, False),
                                                (0.8, 0.795, 0.3, None)])
def test_every_other_beats_contiguous(eo, first, last, want):
    profs = grid(p05={"every-other_4": eo, "first_4": first, "last_4": last})
    assert verdict(ld_claims(profs), "layerdrop.every-other-beats-contiguous") is want


@pytest.mark.parametrize("cut,want", [(0.89, True), (0.5, False), (0.9 - 0.085 - 0.001, None)])
def test_one_block_costs_little(cut, want):
    # allowed loss: 10 % of 0.9 - 0.05 = 8.5 pts
    profs = grid(p0={"random_7": cut})
    assert verdict(ld_claims(profs), "layerdrop.one-block-costs-little") is want


@pytest.mark.parametrize("first,rand,want", [(0.3, 0.85, True), (0.88, 0.6, False), (0.85, 0.852, None)])
def test_first_block_not_interchangeable(first, rand, want):
    profs = grid(p05={"first_7": first, "random_7": rand})
    assert verdict(ld_claims(profs, p=0.5), "layerdrop.first-block-not-interchangeable") is want


def test_layerdrop_noise_follows_the_inputs():
    profs = grid(p0={"every-other_4": 0.6}, p05={"every-other_4": 0.64})
    assert verdict(ld_claims(profs), "layerdrop.p05-beats-p0-half-depth") is True  # 4 pts on 4,000 inputs
    profs = [fake_profile(q["config"]["p"], n=397, **{"every-other_4": q["strategies"]["every-other"][4]["test_acc"]})
             for q in profs]
    assert verdict(ld_claims(profs), "layerdrop.p05-beats-p0-half-depth") is None  # the same on 397


def test_table_claims_use_the_spread_of_seeds():
    t = {"n_test": N, "n_blocks": NB, "keeps": [8, 6, 4, 2], "seeds": [0, 1],
         "rows": {0.0: [[0.9, 0.8, 0.50, 0.3], [0.9, 0.8, 0.52, 0.3]],
                  0.2: [[0.9, 0.8, 0.60, 0.3], [0.9, 0.8, 0.60, 0.3]],
                  0.5: [[0.9, 0.8, 0.70, 0.3], [0.9, 0.8, 0.71, 0.3]]}}
    cs = layerdrop.table_claims(t)
    assert verdict(cs[:1], "layerdrop.p05-beats-p0-half-depth") is True
    t["rows"][0.5] = [[0.9, 0.8, 0.95, 0.3], [0.9, 0.8, 0.25, 0.3]]  # same mean region, seeds disagree wildly
    assert verdict(layerdrop.table_claims(t)[:1], "layerdrop.p05-beats-p0-half-depth") is None
    assert [c["subject"] for c in cs[1:]] == [f"keep {r} of 8" for r in t["keeps"]]


@pytest.mark.parametrize("pruned,scratch,want", [(0.8, 0.6, True), (0.6, 0.8, False), (0.7, 0.695, None)])
def test_beats_scratch(pruned, scratch, want):
    profs = grid(p05={"every-other_4": pruned})
    cs = layerdrop.claims({q["config"]["p"]: q for q in profs}, 4, 0.5, scratch_acc=scratch, distilled_acc=0.5)
    assert verdict(cs, "layerdrop.beats-scratch") is want
    # at p = 0 there is no LayerDrop model to test
    cs0 = layerdrop.claims({q["config"]["p"]: q for q in profs}, 4, 0.0, scratch_acc=0.1, distilled_acc=0.9)
    assert verdict(cs0, "layerdrop.beats-scratch") is None


@pytest.mark.parametrize("pruned,distilled,want", [(0.8, 0.8, True), (0.7, 0.85, False), (0.7, 0.72, None)])
def test_about_as_good_as_distillation(pruned, distilled, want):
    profs = grid(p05={"every-other_4": pruned})
    cs = layerdrop.claims({q["config"]["p"]: q for q in profs}, 4, 0.5, scratch_acc=0.5, distilled_acc=distilled)
    assert verdict(cs, "layerdrop.about-as-good-as-distillation") is want


# -- Re-initialise: groups and widths ----------------------------------------------------------------------------
def fake_group(group_acc, singles, n=N):
    g = {"config": {"model": "plain", "op": "reinit", "checkpoint": 0}, "layers": [f"blocks.{i}" for i in
                                                                                   range(len(singles))],
         "base_acc": BASE, "group_acc": group_acc, "single_accs": singles, "n_test": n,
         "single_damages": [BASE - a for a in singles], "sum_single_damage": sum(BASE - a for a in singles),
         "group_damage": BASE - group_acc}
    return [reinit.group_claim(g)]


@pytest.mark.parametrize("together,want", [(0.3, True), (0.89, False), (0.8, None)])
def test_group_jointly_fragile(together, want):
    # each layer alone costs 5 pts: together 60 pts is more than the 10-pt sum, 1 pt is less, 10 pts is the sum
    assert verdict(fake_group(together, [0.85, 0.85]), "reinit.group-jointly-fragile") is want


def fake_widths(top_by_width, n=N):
    widths = [32, 64, 128, 256]
    t0 = [[BASE] * 4 + [a] * 5 for a in top_by_width]  # 9 layers, the upper 5 are the "top"
    w = {"model": "plain", "model_name": "plain MLP", "seed": 0, "widths": widths, "layers": LAYERS, "t0_acc": t0,
         "rerand_acc": t0, "base_acc": [BASE] * 4, "chance": CHANCE, "n_test": n}
    return [reinit.width_claim(w)]


@pytest.mark.parametrize("tops,want", [((0.4, 0.5, 0.7, 0.85), True), ((0.85, 0.7, 0.6, 0.4), False),
                                       ((0.6, 0.5, 0.7, 0.605), None)])
def test_wider_nets_have_more_robust_top_layers(tops, want):
    assert verdict(fake_widths(tops), "reinit.plain-wider-more-robust-top") is want


def test_top_layers_are_the_upper_half_with_the_head():
    assert [LAYERS[i] for i in reinit.top_layers(LAYERS)] == ["blocks.3", "blocks.4", "blocks.5", "blocks.6", "head"]
