"""Rearrange layers: routes of steps against independent references, CKA's invariants, the store, the CLI."""

import json

import pytest
import torch

from lab import claims
from lab.core import metrics, routes, zoo
from lab.core.models import MLP, MLPConfig, ViT, ViTConfig
from lab.core.models.base import Parallel, Step, block_runs
from lab.core.routes import PrefixStates
from lab.experiments.rearrange import claims as RC
from lab.experiments.rearrange import experiment as R
from lab.ops import route_ops as O
from lab.ops import selection

from .test_cli import run_cli


def small_vit(seed: int = 0) -> ViT:
    torch.manual_seed(seed)
    m = ViT(ViTConfig(depth=5, width=16, heads=2))
    with torch.no_grad():  # larger than the init, so blocks really change the stream and orders differ
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def small_mlp(seed: int = 0) -> MLP:
    torch.manual_seed(seed)
    m = MLP(MLPConfig(arch="residual", width=24, blocks=5))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return m.eval()


def inputs(n_in: int, n: int = 32) -> torch.Tensor:
    return torch.rand(n, n_in, generator=torch.Generator().manual_seed(5))


def logits(m, steps, x):
    with torch.no_grad():
        return m.readout(m.run_steps(m.embed(x), steps))


@pytest.mark.parametrize("make", [small_vit, small_mlp])
def test_identity_rearrangement_reproduces_the_model_exactly(make):
    m = make()
    x = inputs(m.cfg.n_in)
    for ends in O.ENDS:
        steps = O.route_of("identity", m.n_blocks, ends=ends)
        assert torch.equal(logits(m, steps, x), m(x))
    # ints, standard Steps and one-block groups are the same computation, bit for bit
    mixed = [0, Step(1), Parallel((2,), "sum"), Parallel((3,), "mean")] + list(range(4, m.n_blocks))
    assert torch.equal(logits(m, mixed, x), m(x))


def test_swap_twice_is_the_identity_and_differs_once():
    m = small_vit()
    x = inputs(64)
    for b in O.valid_blocks("swap", m.n_blocks, "include"):
        once = O.route_of("swap", m.n_blocks, b, ends="include")
        twice = tuple(once[i] for i in once)  # the swap applied to the swapped route
        assert twice == m.full_route and torch.equal(logits(m, twice, x), m(x))
        assert not torch.allclose(logits(m, once, x), m(x))  # the blocks do not commute: the test can fail


@pytest.mark.parametrize("make", [small_vit, small_mlp])
def test_a_route_run_whole_equals_its_prefix_state_plus_the_rest_exactly(make):
    m = make()
    x = inputs(m.cfg.n_in)
    n = m.n_blocks
    pre = PrefixStates(m, x)
    for b in routes.middle(n, "keep"):
        spanned = (O.route_of("skip", n, b, span=1), O.route_of("repeat", n, b, span=2 if b < n - 2 else 1),
                   O.route_of("parallel-loop", n, b, "sum", loops=3, span=1))
        for r, start in [(r, b) for r in spanned] + [(O.route_of("reverse", n), 1)]:
            assert tuple(r[:start]) == tuple(range(start))  # the route's head is the trained order's
            with torch.no_grad():
                assert torch.equal(m.readout(pre.rest(r[start:], start)), logits(m, r, x))
                assert torch.equal(m.readout(pre.rest(r)), logits(m, r, x))
    body, tail = (Parallel((1, 2), "mean"),), tuple(range(3, n))
    for k, h in enumerate(pre.looped(1, body, tail, times=3), 1):  # each K continues from the K - 1 passes
        with torch.no_grad():
            assert torch.equal(m.readout(h), logits(m, (0,) + body * k + tail, x))


def test_parallel_group_of_one_block_is_that_block():
    m = small_mlp()
    x = inputs(12)
    h = m.embed(x)
    for b in range(m.n_blocks):
        for red in ("mean", "sum"):
            assert torch.equal(m.run_steps(h, [Parallel((b,), red)]), m.run_block(h, b, 0))


def test_loop_of_the_middle_equals_the_route_with_the_middle_repeated():
    m = small_vit()
    x = inputs(64)
    n = m.n_blocks
    loop = O.route_of("loop", n)
    assert loop == (0, 1, 2, 3, 1, 2, 3, 4)
    assert torch.equal(logits(m, loop, x), m(x, [0, 1, 2, 3, 1, 2, 3, 4]))  # through forward(), the int path
    par2 = O.route_of("parallel-loop", n, reduce="sum")
    assert par2 == (0, Parallel((1, 2, 3), "sum"), Parallel((1, 2, 3), "sum"), 4)
    assert block_runs(loop) == 8 and block_runs(par2) == 8 and block_runs(O.route_of("skip-middle", n)) == 2


def test_parallel_sum_and_mean_of_two_blocks_match_a_hand_computation():
    m = small_mlp()
    x = inputs(12)
    h = torch.relu(x @ m.stem.weight.T + m.stem.bias)
    w = [(m.blocks[i].weight, m.blocks[i].bias) for i in (1, 3)]
    upd = [torch.relu(h @ wi.T + bi) for wi, bi in w]  # a residual MLP block adds relu(h W + b)
    with torch.no_grad():
        assert torch.allclose(m.run_steps(m.embed(x), [Parallel((1, 3), "sum")]), h + upd[0] + upd[1], atol=1e-5)
        assert torch.allclose(m.run_steps(m.embed(x), [Parallel((3, 1), "mean")]), h + (upd[0] + upd[1]) / 2,
                              atol=1e-5)
        assert not torch.allclose(h + upd[0] + upd[1], m.run_steps(m.embed(x), [1, 3]), atol=1e-3)  # not sequential


def test_parallel_groups_reject_bad_input():
    with pytest.raises(ValueError, match="at least one block"):
        Parallel(())
    with pytest.raises(ValueError, match="reduce"):
        Parallel((1, 2), "max")
    m = small_mlp()
    with pytest.raises(ValueError, match="names blocks"):
        m.run_steps(m.embed(inputs(12)), [Parallel((1, 9))])


def test_linear_cka_is_one_on_itself_rotation_and_scale_invariant_and_matches_the_feature_formula():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 20, generator=g, dtype=torch.float64)
    q, _ = torch.linalg.qr(torch.randn(20, 20, generator=g, dtype=torch.float64))
    assert metrics.linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)
    assert metrics.linear_cka(x, 3.0 * x @ q) == pytest.approx(1.0, abs=1e-10)
    y = torch.randn(300, 7, generator=g, dtype=torch.float64)
    xc, yc = x - x.mean(0), y - y.mean(0)  # independent reference: ||Y'X||^2 / (||X'X|| ||Y'Y||)
    ref = float((yc.T @ xc).norm() ** 2 / ((xc.T @ xc).norm() * (yc.T @ yc).norm()))
    assert metrics.linear_cka(x, y) == pytest.approx(ref, rel=1e-9)
    assert metrics.linear_cka(x, y) < 0.3  # unrelated noise is far from 1: the test can fail


def _reference_debiased_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    """Independent computation: Kornblith et al.'s unbiased centring of the Gram matrices (their released code),
    then the plain CKA formula on the centred Grams."""
    def centre(g: torch.Tensor) -> torch.Tensor:
        g = g.clone()
        n = len(g)
        g.fill_diagonal_(0)
        means = g.sum(0) / (n - 2)
        means -= means.sum() / (2 * (n - 1))
        g -= means[:, None]
        g -= means[None, :]
        g.fill_diagonal_(0)
        return g

    k, m = centre(x @ x.T), centre(y @ y.T)
    return float((k * m).sum() / (k.norm() * m.norm()))


def test_debiased_cka_is_one_on_itself_near_zero_on_independent_features_and_matches_a_reference():
    g = torch.Generator().manual_seed(1)
    n, d = 397, 1088  # the ViT's held-out inputs and its 17 x 64 features
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randn(n, d, generator=g, dtype=torch.float64)
    assert metrics.debiased_cka(x, x) == pytest.approx(1.0, abs=1e-9)
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    assert metrics.debiased_cka(x, 2.0 * x @ q) == pytest.approx(1.0, abs=1e-9)
    assert abs(metrics.debiased_cka(x, y)) < 0.02  # independent: about 0
    assert metrics.linear_cka(x, y) > 0.5  # while the plain estimate is pulled far up: the fix matters here
    related = x[:, :40] + y[:, :40]
    want = _reference_debiased_cka(x - x.mean(0), related - related.mean(0))
    assert metrics.debiased_cka(x, related) == pytest.approx(want, rel=1e-9)
    with pytest.raises(ValueError, match="at least 4"):
        metrics.unbiased_hsic(torch.eye(3, dtype=torch.float64), torch.eye(3, dtype=torch.float64))


def test_loop_count_is_an_argument_and_one_loop_is_the_single_pass():
    n = 6
    assert O.route_of("loop", n, loops=3) == (0, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 5)
    assert O.route_of("parallel-loop", n, loops=1) == O.route_of("parallel", n)
    assert O.route_of("loop", n, loops=1) == O.route_of("identity", n)
    assert block_runs(O.route_of("parallel-loop", n, loops=4)) == 2 + 4 * 4
    with pytest.raises(ValueError, match="loops"):
        R.RearrangeConfig(op="loop", loops=O.MAX_LOOPS + 1)


@pytest.mark.parametrize("make", [small_vit, small_mlp])
def test_span_one_is_the_single_block_operation_and_the_longest_span_the_whole_middle(make):
    m = make()
    x = inputs(m.cfg.n_in)
    n = m.n_blocks
    mid = routes.middle(n, "keep")
    for b in mid:
        assert O.route_of("skip", n, b, span=1) == O.route_of("skip", n, b)
        for op in ("reverse", "repeat", "parallel"):  # one block reversed, repeated in its own slot, alone in a group
            assert torch.equal(logits(m, O.route_of(op, n, b, span=1), x), m(x))
    whole = len(mid)
    for op in ("reverse", "parallel", "parallel-loop"):
        assert O.route_of(op, n, mid[0], span=whole) == O.route_of(op, n)
    assert O.route_of("skip", n, mid[0], span=whole) == O.route_of("skip-middle", n)
    assert O.route_of("repeat", n, 1, span=2) == (0, 1, 1) + tuple(range(3, n))
    with pytest.raises(ValueError, match="does not fit"):
        O.route_of("skip", n, mid[-1], span=2)


def test_routes_of_every_operation_and_bad_arguments():
    n = 6
    assert O.route_of("skip", n, 2) == (0, 1, 3, 4, 5)
    assert O.route_of("reverse", n) == (0, 4, 3, 2, 1, 5)
    assert O.route_of("reverse", n, ends="include") == (5, 4, 3, 2, 1, 0)
    assert O.route_of("repeat", n, 2) == (0, 2, 2, 2, 2, 5)
    assert O.route_of("parallel", n) == (0, Parallel((1, 2, 3, 4)), 5)
    for r in R.random_routes(n, "keep", seed=0):
        assert r[0] == 0 and r[-1] == 5 and sorted(r) == list(range(n))
    assert len(set(R.random_routes(n, "keep", seed=0))) > 5
    for kw, msg in ((dict(op="skip", block=0), "middle"), (dict(op="swap", block=4), "choose b from 1 to 3"),
                    (dict(op="repeat", block=7), "out of range"), (dict(model="cnn"), "unknown model")):
        with pytest.raises(ValueError, match=msg):
            R.RearrangeConfig(**{"model": "vit-sequential", **kw})
    R.RearrangeConfig(op="skip", block=0, ends="include")  # the ends may be skipped when included
    R.RearrangeConfig(op="reverse", block=0)  # block is not an argument of reverse


def test_profile_is_consistent_store_is_honoured_and_a_second_call_trains_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")  # one epoch: this checks the wiring, not the science
    from lab.runtime.store import Store, use_store

    store = Store(tmp_path / "s")
    calls = []
    real = zoo.train
    monkeypatch.setattr(zoo, "train", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = R.run(R.RearrangeConfig(model="residual", op="loop"), store=store)
    assert len(calls) == 1
    assert first.block_runs == 7 + 5 and first.sequential_steps == 12
    prof = R.profile(R.ModelSeed("residual", 0), store=store)
    assert prof.ops[R.row_key("identity")]["acc"] == prof.base_acc  # the route path equals forward()
    assert all(len(row) == 8 for row in prof.similarity["cka"])  # stem + 7 blocks
    assert prof.n_test == 4000 and first.n_test == 4000
    loop3 = R.run(R.RearrangeConfig(model="residual", op="loop", loops=3), store=store)
    assert loop3.block_runs == 2 + 3 * 5 and loop3.acc == prof.ops[R.row_key("loop", loops=3)]["acc"]
    with use_store(store):  # computed when read, from the stored profile (nothing trains again)
        first_claims = RC.result_claims(first)
    assert [c["key"] for c in first_claims] == [c["key"] for c in RC.model_claims([prof])] and len(calls) == 1
    claims.check(first_claims)  # complete records, decided by paired tests, on a real (quick) profile
    assert all(c["measured"]["se_kind"] == ("jackknife" if "middle-share" in c["key"] else "paired")
               for c in first_claims)
    assert any(c["key"] == "rearrange.residual.middle-share-representation" for c in first_claims)
    assert all(c["over"] == "inputs" for c in first_claims)  # surgery on one trained network
    assert len(prof.similarity["cka_jackknife"]) == R.JACKKNIFE_GROUPS
    for key, row in prof.ops.items():  # every row's stored per-input outcomes are its accuracy
        assert abs(selection.scores(prof.outcomes[key]).mean() - row["acc"]) < 1e-6, key
    for b in routes.middle(7, "keep"):  # the stored sweep: span 1 is the single-block skip, read from the same profile
        assert prof.ops[R.row_key("skip", b, span=1)]["acc"] == prof.ops[R.row_key("skip", b)]["acc"]
    whole = prof.ops[R.row_key("parallel-loop", 1, "mean", "keep", 3, 5)]["acc"]
    assert whole == prof.ops[R.row_key("parallel-loop", reduce="mean", loops=3)]["acc"]
    sw = first.span_sweep
    assert sw["spans"] == [1, 2, 3, 4, 5] and len(sw["loop_curves"]["3"]) == O.MAX_LOOPS
    assert all(abs(prof.similarity["cosine"][i][i] - 1) < 1e-6 for i in range(8))
    zoo._memo.clear()  # a fresh process: the model must come from the store, not from memory
    again = R.run(R.RearrangeConfig(model="residual", op="parallel", reduce="sum"), store=store)
    assert len(calls) == 1 and again.base_acc == first.base_acc
    assert again.acc == prof.ops[R.row_key("parallel", reduce="sum")]["acc"]
    assert len(list((tmp_path / "s").rglob("*.safetensors"))) == 1


def test_cli_prints_the_promised_json():
    p = run_cli("rearrange", "--model", "residual", "--op", "parallel", "--reduce", "sum", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["result"]
    assert {"acc", "base_acc", "block_runs", "chance", "route", "n_blocks", "config", "claims"} <= set(r)
    assert {c["key"] for c in r["claims"]} >= {"rearrange.residual.repeat-worse-than-skip"}
    assert r["block_runs"] == 7 and r["steps"][1] == {"parallel": [1, 2, 3, 4, 5], "reduce": "sum"}
    p = run_cli("rearrange", "--model", "residual", "--op", "parallel-loop", "--span", "3", "--block", "2",
                "--loops", "4", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["result"]
    assert r["steps"][2:6] == [{"parallel": [2, 3, 4], "reduce": "mean"}] * 4 and r["block_runs"] == 4 + 12
    bad = run_cli("rearrange", "--model", "residual", "--op", "skip", "--span", "4", "--block", "4")
    assert bad.returncode == 2 and "does not fit" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli("rearrange", "--model", "residual", "--op", "swap", "--block", "5")
    lines = [ln for ln in bad.stderr.splitlines() if ln.strip()]
    assert bad.returncode == 2 and len(lines) == 1 and "out of range" in lines[0] and "Traceback" not in bad.stderr
