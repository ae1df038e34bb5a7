"""LayerDrop: the training draw (p = 0, the skip rate, the shared mask) and pruning (the every-other rule, weights).

The references are independent of the code under test: a hand-written forward pass, the paper's rule spelled
out with exact fractions, and binomial statistics for the random draws.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F

from lab import claims as C
from lab import estimates as E
from lab.cli import main
from lab.core.models import MLP, MLPConfig, accuracy
from lab.core.routes import layerdrop_route, without
from lab.core.train import TrainConfig, train
from lab.core.zoo import ModelSpec
from lab.experiments.layerdrop import claims as LC
from lab.experiments.layerdrop import experiment as layerdrop
from lab.ops import search, selection

from .helpers import small_data, small_mlp


class Recorder(MLP):
    """A residual MLP that records, for every training step, the route and the rows each block processed."""

    def __init__(self, cfg: MLPConfig) -> None:
        super().__init__(cfg)
        self.steps: list[dict] = []

    def loss(self, x, y, route=None):
        self.steps.append({"route": tuple(route), "rows": {}, "batch": x.shape[0]})
        return super().loss(x, y, route)

    def run_block(self, h, block, slot):
        if self.training and self.steps:
            self.steps[-1]["rows"][block] = h.shape[0]
        return super().run_block(h, block, slot)


def tiny_split(n: int = 64):
    d = small_data()
    return type(d.train)(d.train.x[:n], d.train.y[:n])


# -- training ------------------------------------------------------------------------------------------------


def test_p0_trains_exactly_like_the_ordinary_trainer():
    split = tiny_split(1024)
    models = []
    for cfg in (TrainConfig(epochs=2, seed=5, checkpoints=()),
                TrainConfig(epochs=2, seed=5, checkpoints=(), mode="layerdrop", drop_p=0.0)):
        torch.manual_seed(5)
        m = MLP(MLPConfig(arch="residual", width=24, blocks=5))
        log = train(m, split, cfg)
        models.append((m.state_dict(), log.loss))
    (a, loss_a), (b, loss_b) = models
    assert loss_a == loss_b
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_p_above_zero_really_changes_training():
    """Guards the test above: p > 0 must not silently fall back to the full route."""
    split = small_data().train
    out = []
    for p in (0.0, 0.3):
        torch.manual_seed(5)
        m = MLP(MLPConfig(arch="residual", width=24, blocks=5))
        train(m, split, TrainConfig(epochs=1, seed=5, checkpoints=(), mode="layerdrop", drop_p=p))
        out.append(m.state_dict())
    assert not all(torch.equal(out[0][k], out[1][k]) for k in out[0])


def test_trainer_skips_blocks_at_rate_p_with_a_mask_shared_by_the_batch():
    p = 0.3
    torch.manual_seed(0)
    m = Recorder(MLPConfig(arch="residual", width=4, blocks=8))  # 8 blocks
    train(m, tiny_split(64), TrainConfig(epochs=60, batch=16, seed=1, checkpoints=(), mode="layerdrop", drop_p=p))
    n, steps = m.n_blocks, m.steps
    assert len(steps) == 60 * 4
    skipped = sum(n - len(s["route"]) for s in steps)
    draws = n * len(steps)
    # each block of each step is an independent Bernoulli(p): 5 standard deviations (two-sided ~6e-7)
    assert abs(skipped / draws - p) < 5 * math.sqrt(p * (1 - p) / draws)
    for s in steps:
        # one draw per block for the whole batch: a block either processed every row of the batch or none
        assert sorted(s["rows"]) == sorted(s["route"])
        assert all(rows == s["batch"] for rows in s["rows"].values())
        assert list(s["route"]) == sorted(s["route"])  # skipping never reorders the blocks that run
    assert len({s["route"] for s in steps}) > 20  # a fresh draw at every step, not one mask reused


@pytest.mark.parametrize("p", [0.1, 0.5, 0.7])
def test_every_block_is_skipped_at_rate_p(p):
    n, steps = 8, 5000
    gen = torch.Generator().manual_seed(1)
    routes = [layerdrop_route(n, p, gen) for _ in range(steps)]
    for b in range(n):
        rate = sum(b not in r for r in routes) / steps
        assert abs(rate - p) < 5 * math.sqrt(p * (1 - p) / steps)


def test_blocks_are_dropped_independently_not_a_fixed_count():
    """The number of blocks kept per step must spread like Binomial(N, 1 - p), not sit at round(N(1 - p))."""
    n, p, steps = 8, 0.5, 4000
    gen = torch.Generator().manual_seed(0)
    counts = [len(layerdrop_route(n, p, gen)) for _ in range(steps)]
    mean = sum(counts) / steps
    var = sum((c - mean) ** 2 for c in counts) / (steps - 1)
    assert abs(mean - n * (1 - p)) < 5 * math.sqrt(n * p * (1 - p) / steps)
    assert abs(var / (n * p * (1 - p)) - 1) < 0.15  # sample variance of 4000 draws: relative sd ~ 0.022


def test_training_route_is_not_rescaled():
    """A skipped block contributes nothing and a kept one its plain output: train-mode forward = hand-written."""
    m = small_mlp("residual")
    x = small_data().test.x[:32]
    route = (0, 2)
    m.train()
    try:
        got = m(x, route)
    finally:
        m.eval()
    h = F.relu(F.linear(x, m.stem.weight, m.stem.bias))
    for b in route:
        h = h + F.relu(F.linear(h, m.blocks[b].weight, m.blocks[b].bias))
    assert torch.allclose(got, F.linear(h, m.head.weight, m.head.bias), atol=1e-5)


# -- pruning -------------------------------------------------------------------------------------------------


def rule_reference(n: int, p: str) -> list[int]:
    """Fan et al.'s rule with exact arithmetic: drop depth d (1-based) when d = 0 mod floor(1/p)."""
    stride = math.floor(1 / Fraction(p))
    return [d - 1 for d in range(1, n + 1) if d % stride == 0]


@pytest.mark.parametrize("n,p", [(8, "0.5"), (8, "0.25"), (12, "0.33"), (10, "0.2"), (12, "0.1"), (6, "0.4"),
                                 (7, "0.3"), (8, "0.7"), (5, "1")])
def test_every_other_rule_drops_the_depths_of_the_formula(n, p):
    assert selection.every_other_by_rate(n, float(p)) == rule_reference(n, p)


def test_every_other_examples_by_hand():
    assert selection.every_other_by_rate(8, 0.5) == [1, 3, 5, 7]  # keeps 0, 2, 4, 6 like fairseq's example
    assert selection.every_other(8, 4) == [1, 3, 5, 7]
    assert selection.every_other(8, 6) == [3, 7]
    assert selection.every_other(8, 2) == [1, 2, 3, 5, 6, 7]  # rate 3/4 has stride 1: windows end at depths 2,3,4,6,7,8
    assert selection.every_other(8, 3) == [1, 3, 4, 6, 7]
    assert selection.kept(8, selection.every_other(8, 4)) == [0, 2, 4, 6]


@pytest.mark.parametrize("n", [1, 5, 7, 8, 12])
def test_every_other_keeps_r_blocks_spread_evenly_and_follows_the_rule_when_it_can(n):
    for keep in range(n + 1):
        dropped = selection.every_other(n, keep)
        k = n - keep
        assert len(dropped) == k and len(set(dropped)) == k and dropped == sorted(dropped)
        assert all(0 <= i < n for i in dropped)
        if k and n % k == 0:  # the rate k/N has a whole stride: exactly the paper's rule
            assert dropped == rule_reference(n, str(Fraction(k, n)))
        if 0 < keep:
            assert 0 not in dropped  # the first block stays while anything stays, as with the rule
        if k >= 2:  # spread: the gaps between dropped depths differ by at most one
            gaps = [b - a for a, b in zip(dropped, dropped[1:], strict=False)]
            assert max(gaps) - min(gaps) <= 1


def test_contiguous_and_p_star():
    assert selection.contiguous(8, 5, "first") == [0, 1, 2]
    assert selection.contiguous(8, 5, "last") == [5, 6, 7]
    assert LC.p_star(4, 8) == 0.5 and LC.p_star(6, 8) == 0.25 and LC.p_star(8, 8) == 0.0
    with pytest.raises(ValueError):
        selection.to_drop("middle", small_mlp("residual"), 2, None, None)


@pytest.mark.parametrize("strategy", layerdrop.STRATEGIES)
def test_pruning_never_changes_the_kept_blocks_weights(strategy):
    m = small_mlp("residual")
    d = small_data()
    before = copy.deepcopy(m.state_dict())
    for keep in range(m.n_blocks + 1):
        dropped = selection.to_drop(strategy, m, m.n_blocks - keep, d.probe.x, d.probe.y, seed=3)
        kept = selection.kept(m.n_blocks, dropped)
        assert len(kept) == keep
        # the pruned model is the stem, the kept blocks with their own weights, and the head
        x = d.test.x[:64]
        h = F.relu(F.linear(x, before["stem.weight"], before["stem.bias"]))
        for b in kept:
            h = h + F.relu(F.linear(h, before[f"blocks.{b}.weight"], before[f"blocks.{b}.bias"]))
        ref = F.linear(h, before["head.weight"], before["head.bias"])
        m.eval()
        with torch.no_grad():
            assert torch.allclose(m(x, without(m.n_blocks, dropped)), ref, atol=1e-5)
    after = m.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_pruning_a_vit_keeps_its_weights_and_runs_the_kept_blocks():
    from lab.core.models import ViT, ViTConfig

    torch.manual_seed(0)
    m = ViT(ViTConfig(depth=4, width=16, heads=2)).eval()
    x, y = torch.rand(32, 64), torch.randint(0, 10, (32,))
    before = copy.deepcopy(m.state_dict())
    for s in layerdrop.STRATEGIES:
        kept = selection.kept(4, selection.to_drop(s, m, 2, x, y))
        assert len(kept) == 2
        with torch.no_grad():
            h = m.stem(x)
            for b in kept:
                h = m.blocks[b](h, 0)
            assert torch.allclose(m(x, tuple(kept)), m.head(h), atol=1e-5)
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    spec = layerdrop.model_spec("vit", 0.3, 0)
    assert spec.task == "digits" and spec.model.depth == layerdrop.n_blocks("vit") == 8
    assert spec.train.mode == "layerdrop" and spec.train.drop_p == 0.3


def test_greedy_and_influence_are_the_search_modules_answers():
    m = small_mlp("residual")
    d = small_data()
    for keep in (1, 2, 3):
        k = m.n_blocks - keep
        greedy = sorted(search.greedy(m, k, d.probe.x, d.probe.y))
        assert selection.to_drop("greedy", m, k, d.probe.x, d.probe.y) == greedy
        assert selection.to_drop("influence", m, k, d.probe.x, d.probe.y) == search.lowest_influence(m, k, d.probe.x)


# -- the experiment and the CLI, on a tiny model -------------------------------------------------------------


@pytest.fixture
def tiny_specs(monkeypatch):
    """Swap the experiment's models for a 4-block MLP trained for one epoch (the plumbing is what is tested)."""

    def spec(model, p, seed):
        mode = dict(mode="layerdrop", drop_p=p) if p > 0 else {}
        return ModelSpec(MLPConfig(arch="residual", width=16, blocks=4),
                         TrainConfig(epochs=1, batch=1024, seed=seed, checkpoints=(), **mode))

    def scratch(model, blocks, seed):
        return ModelSpec(MLPConfig(arch="residual", width=16, blocks=blocks),
                         TrainConfig(epochs=1, batch=1024, seed=seed, checkpoints=()))

    monkeypatch.setattr(layerdrop, "model_spec", spec)
    monkeypatch.setattr(layerdrop, "scratch_spec", scratch)
    monkeypatch.setattr(layerdrop, "n_blocks", lambda model: 4)


def test_run_reports_what_it_pruned(tiny_specs):
    from lab.core.zoo import trained

    cfg = layerdrop.LayerDropConfig(p=0.5, keep=2, strategy="every-other", seed=0)
    r = layerdrop.run(cfg)
    assert r.kept == [0, 2] and r.dropped == [1, 3] and r.p_star == 0.5
    t = trained(layerdrop.model_spec("residual", 0.5, 0))
    d = t.data
    assert r.base_acc == pytest.approx(accuracy(t.model, d.test.x, d.test.y))
    assert r.cut_acc == pytest.approx(accuracy(t.model, d.test.x, d.test.y, (0, 2)))
    assert 0 < r.chance < 0.2
    assert set(r.strategies) == set(layerdrop.STRATEGIES)
    assert r.strategies["first"]["kept"] == [2, 3] and r.strategies["last"]["kept"] == [0, 1]
    rnd = r.strategies["random"]
    # 2 of 4 blocks dropped: C(4, 2) = 6 <= EXACT_SUBSETS, so random pruning is the mean over every subset
    assert rnd["exact"] and sorted(map(tuple, rnd["subsets"])) == list(itertools.combinations(range(4), 2))
    every = [accuracy(t.model, d.test.x, d.test.y, without(4, s)) for s in itertools.combinations(range(4), 2)]
    assert rnd["test_acc"] == pytest.approx(sum(every) / len(every))
    assert rnd["test_min"] <= rnd["test_acc"] <= rnd["test_max"]
    # the per-input outcomes travel with the profile and agree with the accuracies
    prof = layerdrop.profile(layerdrop.ProfileConfig(p=0.5, seed=0))
    assert E.unpack(prof.base_outcomes).mean() == pytest.approx(r.base_acc)
    assert E.unpack(prof.strategies["every-other"][2]["outcomes"]).mean() == pytest.approx(r.cut_acc)
    # the curves its figure draws travel with the result: every reference rate, the run's strategy, kept r = 0..n
    ps = layerdrop.CompareConfig("residual", 0.5, 0).ps
    assert [c["config"]["p"] for c in r.by_p] == sorted(ps)
    mine = next(c for c in r.by_p if c["config"]["p"] == 0.5)["strategies"]["every-other"]
    assert [row["test_acc"] for row in mine] == [row["test_acc"] for row in prof.strategies["every-other"]]


def test_random_subsets_exact_when_few_else_distinct_draws():
    subsets, exact = layerdrop.random_subsets(8, 1, 0)
    assert exact and subsets == [[i] for i in range(8)]
    subsets, exact = layerdrop.random_subsets(8, 4, 0)  # C(8, 4) = 70 > 35: distinct draws without replacement
    assert not exact and len(subsets) == layerdrop.RANDOM_DRAWS
    assert len({tuple(s) for s in subsets}) == len(subsets) and all(len(s) == 4 for s in subsets)
    assert layerdrop.random_subsets(8, 4, 0) == (subsets, False)  # seeded


def test_cli_json_and_errors(tiny_specs, capsys):
    assert main(["layerdrop", "--p", "0.2", "--keep", "3", "--strategy", "last", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["result"]
    assert {"base_acc", "cut_acc", "kept", "p_star", "chance"} <= set(out)
    assert out["kept"] == [0, 1, 2] and out["p_star"] == pytest.approx(0.25)
    assert main(["layerdrop", "--p", "0.9"]) == 2
    assert "out of range" in capsys.readouterr().err
    assert main(["layerdrop", "--keep", "9"]) == 2


def test_config_rounds_p_and_rejects_bad_values():
    assert layerdrop.ProfileConfig(p=0.1 + 0.2) == layerdrop.ProfileConfig(p=0.3)
    with pytest.raises(ValueError):
        layerdrop.LayerDropConfig(strategy="middle")
    with pytest.raises(ValueError):
        layerdrop.LayerDropConfig(model="cnn")


# -- the paper's baselines at depth r: from scratch, and distilled ---------------------------------------------


@pytest.mark.parametrize("model", layerdrop.MODELS)
@pytest.mark.parametrize("r", [1, 4, 6])
def test_the_scratch_recipe_has_r_blocks_and_the_ordinary_recipe(model, r):
    from lab.core.zoo import build

    spec = layerdrop.scratch_spec(model, r, 3)
    assert build(spec.model, 0).n_blocks == r
    full = layerdrop.model_spec(model, 0.0, 3)
    assert spec.train == full.train and spec.task == full.task  # same recipe and epochs, only the depth differs
    with pytest.raises(ValueError):
        layerdrop.scratch_spec(model, layerdrop.n_blocks(model) + 1, 0)


def test_baselines_train_r_blocks_and_distil_from_every_other(tiny_specs):
    from lab.core.zoo import trained

    cfg = layerdrop.BaselineConfig(keep=2, seed=0)
    s = layerdrop.scratch(cfg)
    t = trained(layerdrop.scratch_spec("residual", 2, 0))
    assert s.n_blocks == t.model.n_blocks == 2
    assert s.scratch_acc == pytest.approx(accuracy(t.model, t.data.test.x, t.data.test.y))
    d = layerdrop.distil(cfg)
    teacher = trained(layerdrop.model_spec("residual", 0.0, 0))
    assert d.kept == [0, 2]  # the teacher's every other blocks
    # the student starts as the pruned teacher: its first point is the every-other cut of the p = 0 model
    assert d.start_acc == pytest.approx(accuracy(teacher.model, t.data.test.x, t.data.test.y, (0, 2)))
    assert d.steps == layerdrop.distil_steps(teacher.spec, len(t.data.train), 256) > 0
    with pytest.raises(ValueError):
        layerdrop.BaselineConfig(keep=4)  # nothing is pruned at r = N: no baseline


def test_run_carries_the_baselines_and_their_claims(tiny_specs):
    r = layerdrop.run(layerdrop.LayerDropConfig(p=0.5, keep=2, seed=0))
    cfg = layerdrop.BaselineConfig(keep=2, seed=0)
    assert r.scratch_acc == layerdrop.scratch(cfg).scratch_acc
    assert r.distilled_acc == layerdrop.distil(cfg).distilled_acc
    claims = LC.run_claims(r)  # computed when read, from the stored profiles and baselines
    keys = [c["key"] for c in claims]
    assert keys[-2:] == ["layerdrop.beats-scratch", "layerdrop.about-as-good-as-distillation"]
    C.check(claims)
    full = layerdrop.run(layerdrop.LayerDropConfig(p=0.5, keep=4, seed=0))
    assert full.scratch_acc is None and "layerdrop.beats-scratch" not in [c["key"] for c in LC.run_claims(full)]


def test_table_claims_are_the_seeds_claims_pooled(tiny_specs):
    t = layerdrop.table("residual", [0, 1])
    claims = LC.table_claims(t)
    C.check(claims)
    assert t["keeps"] == [4, 3, 2, 1]
    keys = [(c["key"], c.get("subject")) for c in claims]
    assert ("layerdrop.p-star-rule", "keep 2 of 4") in keys
    assert sum(k == "layerdrop.beats-scratch" for k, _ in keys) == 3  # every kept depth below N
    # each pooled test is the mean of the seeds' own paired estimates
    by_seed = []
    for s in (0, 1):
        by_p = {p: layerdrop.profile(layerdrop.ProfileConfig("residual", p, s)) for p in layerdrop.P_GRID}
        by_seed.append({c["key"]: c for c in LC.seed_table_claims(by_p, {}, t["keeps"])})
    half = next(c for c in claims if c["key"] == "layerdrop.p05-beats-p0-half-depth")
    want = [s["layerdrop.p05-beats-p0-half-depth"]["tests"][0]["value"] for s in by_seed]
    assert half["tests"][0]["value"] == pytest.approx(sum(want) / 2)
