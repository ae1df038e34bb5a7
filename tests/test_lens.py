"""Layer lens: the lens against the model itself, the tuned lens's fit, commitment, the stream's geometry, rank
statistics against scipy, the claims in all three directions, and the CLI."""

import json
import math

import numpy as np
import pytest
import torch

from lab.claims import check
from lab.core import metrics, routes, streams
from lab.core.models import MLP, MLPConfig, ViT, ViTConfig
from lab.experiments.lens import claims as LC
from lab.experiments.lens import experiment as E
from lab.ops import layer_lens as L
from lab.ops import route_ops

from .test_cli import run_cli


def small_vit(seed: int = 0) -> ViT:
    torch.manual_seed(seed)
    m = ViT(ViTConfig(depth=4, width=16, heads=2))
    with torch.no_grad():  # larger than the init, so every block really changes the stream
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def small_mlp(arch: str = "residual", seed: int = 0) -> MLP:
    torch.manual_seed(seed)
    m = MLP(MLPConfig(arch=arch, width=24, blocks=4))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return m.eval()


def inputs(n_in: int, n: int = 64, seed: int = 5) -> torch.Tensor:
    return torch.rand(n, n_in, generator=torch.Generator().manual_seed(seed))


MAKERS = [small_vit, small_mlp, lambda: small_mlp("plain")]


@pytest.mark.parametrize("make", MAKERS)
def test_the_last_slots_lens_is_the_model_exactly(make):
    m = make()
    x = inputs(m.cfg.n_in)
    states = L.slot_states(m, x)
    assert len(states) == m.n_blocks + 1
    logits = L.lens_logits(m, states)
    assert torch.equal(logits[-1], m(x))
    assert not torch.equal(logits[0], m(x))  # earlier slots are other readings (the test could fail)
    route = (2, 0, 1)
    assert torch.equal(L.lens_logits(m, L.slot_states(m, x, route))[-1], m(x, route))


@pytest.mark.parametrize("make", MAKERS)
def test_a_tuned_lens_fitted_at_the_last_slot_is_the_identity_and_reproduces_the_head(make):
    m = make()
    x = inputs(m.cfg.n_in, n=400, seed=1)
    states = L.slot_states(m, x)
    maps = L.fit_tuned_lens(states)
    a, b = maps[-1]
    last = L.head_rows(states[-1])  # what the head reads; the map must send it to itself
    assert torch.allclose(last @ a + b, last, atol=1e-4 * float(last.abs().max()))
    if arch_is_full_rank(last):  # then the map itself is the identity
        assert torch.allclose(a, torch.eye(a.shape[0]), atol=1e-3) and b.abs().max() < 1e-3
    tuned = L.tuned_logits(m, states, maps)
    assert torch.allclose(tuned[-1], m(x), atol=1e-3)
    assert torch.equal(tuned[-1].argmax(1), m(x).argmax(1))
    assert not torch.allclose(maps[0][0], torch.eye(a.shape[0]), atol=1e-2)  # an earlier slot needs a real map


def arch_is_full_rank(rows: torch.Tensor) -> bool:
    return int(torch.linalg.matrix_rank(torch.cat([rows, torch.ones(len(rows), 1)], 1).double())) == rows.shape[1] + 1


def test_fit_affine_recovers_a_known_map():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(500, 6, generator=g)
    a, b = torch.randn(6, 4, generator=g), torch.randn(4, generator=g)
    fa, fb = L.fit_affine(x, x @ a + b)
    assert torch.allclose(fa, a, atol=1e-4) and torch.allclose(fb, b, atol=1e-4)
    fi, fz = L.fit_affine(x, x)  # onto itself: the identity
    assert torch.allclose(fi, torch.eye(6), atol=1e-5) and fz.abs().max() < 1e-5


def test_commitment_by_hand_and_never_after_the_last_slot():
    # columns are inputs, rows slots; the last row is the final answer
    preds = torch.tensor([[3, 1, 1, 4],
                          [1, 1, 2, 4],
                          [1, 1, 1, 4]])
    assert L.commitment(preds).tolist() == [1, 0, 2, 0]
    g = torch.Generator().manual_seed(0)
    rnd = torch.randint(0, 3, (7, 500), generator=g)
    d = L.commitment(rnd)
    assert int(d.max()) <= 6 and int(d.min()) >= 0
    for i in range(50):  # every later slot agrees, the one before (if any) does not
        s = int(d[i])
        assert bool((rnd[s:, i] == rnd[-1, i]).all())
        assert s == 0 or rnd[s - 1, i] != rnd[-1, i]


def test_angular_distance_of_a_state_with_itself_is_zero():
    h = torch.randn(10, 17, 8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(metrics.angular_distance(h, h), torch.zeros(10, dtype=torch.float64))
    assert torch.allclose(metrics.angular_distance(h, -h), torch.ones(10, dtype=torch.float64))
    e1, e2 = torch.eye(2)[:1], torch.eye(2)[1:]
    assert float(metrics.angular_distance(e1, e2)) == pytest.approx(0.5)
    assert float(metrics.angular_distance(e1, 3 * e1)) == 0.0  # scale does not matter
    tri = L.angular_triangle([h, 2 * h, -h])
    assert len(tri) == 2 and tri[1][1] is None
    assert float(tri[0][0].max()) == 0.0 and float(tri[1][0].min()) == pytest.approx(1.0)


@pytest.mark.parametrize("arch", ["vit", "mlp"])
def test_block_influence_of_an_identity_block_is_zero(arch):
    m = small_vit() if arch == "vit" else small_mlp()
    with torch.no_grad():  # block 1 adds nothing to its stream: it is the identity
        blk = m.blocks[1]
        for p in ([blk.proj.weight, blk.proj.bias, blk.fc2.weight, blk.fc2.bias] if arch == "vit"
                  else [blk.weight, blk.bias]):
            p.zero_()
    states = L.slot_states(m, inputs(m.cfg.n_in))
    bi = [float(metrics.block_influence(states[s], states[s + 1]).mean()) for s in range(m.n_blocks)]
    assert bi[1] == pytest.approx(0.0, abs=1e-12)
    assert min(bi[0], bi[2]) > 1e-4


def test_spearman_and_the_permutation_test_against_references():
    from scipy.stats import spearmanr

    a, b = [0.1, 0.5, 0.3, 0.3, 0.9], [1.0, 3.0, 2.0, 5.0, 4.0]
    assert metrics.spearman(a, b) == pytest.approx(spearmanr(a, b).statistic)
    assert math.isnan(metrics.spearman([1, 1, 1], [1, 2, 3]))
    assert metrics.permutation_p([1, 2, 3, 4, 5], [2, 4, 6, 8, 10]) == pytest.approx(1 / 120)
    assert metrics.permutation_p([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]) == pytest.approx(1.0)


def test_bootstrap_error_shrinks_with_more_inputs():
    rng = np.random.default_rng(0)
    score = rng.normal(size=(4000, 6)) + np.arange(6)
    cost = rng.normal(size=(4000, 6)) * 3 + 0.2 * np.arange(6)
    small = L.bootstrap_rho(score[:100], cost[:100], 100, np.random.default_rng(1))
    big = L.bootstrap_rho(score, cost, 100, np.random.default_rng(1))
    assert 0 < big < small


def test_measure_on_a_small_model():
    m = small_mlp()
    x, y = inputs(12, 300), torch.randint(0, 20, (300,), generator=torch.Generator().manual_seed(2))
    r = E.measure(m, x, y, inputs(12, 500, seed=9), 20, 0, images=False)
    n = m.n_blocks
    assert r["lens_exact"] == 0.0
    assert len(r["slot_acc"]) == len(r["tuned_slot_acc"]) == len(r["entropy"]) == n + 1
    assert r["kl_to_final"][-1] == 0.0 and r["agree"][-1] == 1.0
    assert r["slot_acc"][-1] == pytest.approx(r["base_acc"])
    assert max(r["commit"]["depth"]) <= n and sum(r["commit"]["hist"]) == 300
    assert len(r["block_influence"]) == n and len(r["delete_cost"]) == n and len(r["pair_delete_cost"]) == n - 1
    assert [len(row) for row in r["angular_distance"]] == [n] * n
    check(LC.claims({**r, "model": "residual"}))


def change(op: str, block: int, seed: int = 0) -> tuple[int, ...]:
    """The changed route of the 6-block ViT."""
    return E.LensConfig(model="vit-sequential", route_op=op, block=block, seed=seed).route(6)


def test_a_change_is_the_registry_operation_on_every_block():
    assert set(E.ROUTE_OPS) <= set(route_ops.OPS) | set(route_ops.ALIASES)  # the page's words are the registry's
    assert route_ops.canonical("delete") == "skip" and route_ops.canonical("none") == "identity"
    for b in range(6):
        assert change("delete", b) == route_ops.route_of("skip", 6, b, ends="include")
    for b in range(5):
        assert change("swap", b) == route_ops.route_of("swap", 6, b, ends="include")
    assert change("none", 2) == route_ops.route_of("identity", 6)
    assert change("random", 0, 3) == routes.random_permutation(6, streams.generator("lens.random", 3, 6))


def test_routes_of_a_change_and_bad_blocks():
    assert change("delete", 2) == (0, 1, 3, 4, 5)
    assert change("swap", 4) == (0, 1, 2, 3, 5, 4)
    assert sorted(change("random", 0, 3)) == list(range(6))
    assert change("random", 0, 3) == change("random", 5, 3)  # the seed fixes it, not b
    assert change("random", 0, 3) != change("random", 0, 4)
    with pytest.raises(ValueError, match="out of range"):
        E.LensConfig(model="vit-sequential", route_op="swap", block=5)
    with pytest.raises(ValueError, match="out of range"):
        E.LensConfig(model="residual", route_op="delete", block=7)
    E.LensConfig(model="layerdrop", route_op="delete", block=7)  # 8 blocks


# -- claims: each holds, does not hold, and cannot tell on synthetic checks --------------------------------
def _prof(influence=None, angular=None, tuned=None) -> dict:
    rank = {"rho": 0.9, "se": 0.05, "p": 0.01, "n": 7}
    return {"model": "residual", "checks": {"influence": influence or rank, "angular": angular or rank,
                                             "tuned": tuned or {"gain": [0.5, 0.2], "se": [0.01, 0.01]}}}


def _verdict(prof: dict, key: str):
    return {c["key"]: c for c in LC.claims(prof)}[key]["holds"]


@pytest.mark.parametrize("key", ["influence", "angular"])
def test_rank_claims_three_ways(key):
    assert _verdict(_prof(**{key: {"rho": 0.9, "se": 0.05, "p": 0.01, "n": 7}}), key) is True
    assert _verdict(_prof(**{key: {"rho": 0.1, "se": 0.05, "p": 0.4, "n": 7}}), key) is False
    assert _verdict(_prof(**{key: {"rho": 0.6, "se": 0.1, "p": 0.1, "n": 7}}), key) is None  # inside the noise
    assert _verdict(_prof(**{key: {"rho": 0.9, "se": 0.05, "p": 0.2, "n": 5}}), key) is None  # too few blocks
    assert _verdict(_prof(**{key: {"rho": float("nan"), "se": 0.05, "p": 1.0, "n": 7}}), key) is None


def test_tuned_claim_three_ways():
    assert _verdict(_prof(tuned={"gain": [0.5, 0.2], "se": [0.01, 0.01]}), "tuned") is True
    assert _verdict(_prof(tuned={"gain": [0.5, -0.2], "se": [0.01, 0.01]}), "tuned") is False
    assert _verdict(_prof(tuned={"gain": [0.5, 0.01], "se": [0.01, 0.01]}), "tuned") is None


def test_cli_lens_json_has_the_promised_keys():
    p = run_cli("lens", "--model", "residual", "--route-op", "swap", "--block", "1", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["result"]
    for key in ("slot_acc", "tuned_slot_acc", "entropy", "kl_to_final", "commit", "block_influence",
                "angular_distance", "base_acc", "chance", "claims", "change"):
        assert key in r, key
    assert r["lens_exact"] == 0.0 and len(r["slot_acc"]) == 8
    assert r["change"]["route"] == [0, 2, 1, 3, 4, 5, 6]
    check(r["claims"])
    bad = run_cli("lens", "--model", "residual", "--route-op", "swap", "--block", "6")
    assert bad.returncode == 2 and "out of range" in bad.stderr and "Traceback" not in bad.stderr


def test_table_averages_seeds_and_keeps_every_claim():
    m = small_mlp()
    x, y = inputs(12, 200), torch.randint(0, 20, (200,), generator=torch.Generator().manual_seed(2))
    base = E.measure(m, x, y, inputs(12, 300, seed=9), 20, 0, images=False)

    def fake_pool(calls, progress):  # a profile per call, as the store would return it
        out = []
        for _, cfg in calls:
            p = {**base, "model": cfg.model, "chance": 0.05,
                 "slot_acc": [a + 0.1 * cfg.seed for a in base["slot_acc"]]}
            out.append(E.LensProfile(**p, config=cfg, train_seconds=0.0, eval_seconds=0.0))
        return out

    t = E.table([0, 1], pool=fake_pool)
    assert set(t["rows"]) == set(E.MODELS)
    row = t["rows"]["plain"]
    assert row["slot_acc"] == pytest.approx([a + 0.05 for a in base["slot_acc"]])
    assert [p["seed"] for p in row["per_seed"]] == [0, 1]
    assert "claims" not in t  # computed when read, from the same profiles
    claims = LC.table_claims(t, fake_pool)
    assert len(claims) == 3 * len(E.MODELS) * 2 and [c["seed"] for c in claims[:6]] == [0, 0, 0, 1, 1, 1]


def test_calibration_rank_rule(monkeypatch):
    """The rank rule (rho >= 0.5 by 2 bootstrap errors, and an exact permutation p <= 0.05): blocks whose influence
    says nothing about their cost (7 blocks, per-input noise as in real runs) rarely "hold"; blocks whose influence
    orders their cost are found."""
    n_in, n_blocks = 200, 7
    monkeypatch.setattr(E, "BOOTSTRAP", 25)  # a coarser error estimate, to keep 420 simulated models fast

    def verdict(i, effect):
        rng = np.random.default_rng(700 + i)
        order = rng.permutation(n_blocks).astype(float)
        score = rng.normal(size=(n_in, n_blocks)) * 0.5 + order
        cost = rng.normal(size=(n_in, n_blocks)) + effect * order + (1 - effect) * rng.permutation(n_blocks)
        return LC._rank_claim("influence", "s", "src", E._rank_check(score, cost, i, 1), "w", "blocks", None)["holds"]

    assert sum(verdict(i, 0.0) is True for i in range(400)) / 400 <= 0.05
    assert sum(verdict(i, 1.0) is True for i in range(20)) >= 18
