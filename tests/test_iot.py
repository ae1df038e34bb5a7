"""IOT (instance-wise layer reordering): candidate orders, the sub-layer swap, the predictor, the training loop
against the ordinary loop, collapse without exploration, and the oracle invariant."""

import pytest
import torch
import torch.nn.functional as F

from lab import estimates as E
from lab.core.data import SyntheticConfig, synthetic
from lab.core.models import MLP, MLPConfig, ViT, ViTConfig
from lab.core.models.base import Step
from lab.core.train import TrainConfig, train
from lab.core.zoo import build
from lab.experiments.iot import experiment
from lab.experiments.iot import routing as iot

SMALL_TASK = SyntheticConfig(n_train=1_500, n_probe=200, n_test=600)


def small_mlp(seed: int = 0, blocks: int = 4, width: int = 32) -> MLP:
    return build(MLPConfig(width=width, blocks=blocks), seed)


def small_vit(seed: int = 0, depth: int = 3) -> ViT:
    torch.manual_seed(seed)
    m = ViT(ViTConfig(depth=depth, width=16, heads=2))
    with torch.no_grad():  # move off the near-identity init so sub-layer order matters visibly
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def reference_vit_block(blk, h, mlp_first):
    """An independent pre-norm block: attention written out per head, the MLP from its linear layers."""
    def attn(z):
        b, t, w = z.shape
        heads = blk.heads
        qkv = z @ blk.qkv.weight.T + blk.qkv.bias
        q, k, v = qkv.split(w, dim=-1)
        outs = []
        for i in range(heads):
            sl = slice(i * w // heads, (i + 1) * w // heads)
            a = torch.softmax(q[..., sl] @ k[..., sl].transpose(1, 2) / (w // heads) ** 0.5, -1)
            outs.append(a @ v[..., sl])
        return torch.cat(outs, -1) @ blk.proj.weight.T + blk.proj.bias

    def mlp(z):
        return blk.fc2(F.gelu(blk.fc1(z)))

    if mlp_first:
        h = h + mlp(blk.ln2(h))
        return h + attn(blk.ln1(h))
    h = h + attn(blk.ln1(h))
    return h + mlp(blk.ln2(h))


# -- candidate orders ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("space,n", [("blocks", 4), ("blocks", 7), ("sublayers", 3), ("sublayers", 6)])
def test_candidates_are_distinct_include_identity_and_are_seeded(space, n):
    a = iot.candidate_orders(space, 6, 3, n)
    assert len(a) == 6 and len(set(a)) == 6
    assert a[0] == iot.identity_order(n) == tuple(Step(b) for b in range(n))
    assert a == iot.candidate_orders(space, 6, 3, n)  # fixed by the seed
    assert a != iot.candidate_orders(space, 6, 4, n)
    for o in a:
        if space == "blocks":
            assert sorted(s.block for s in o) == list(range(n)) and all(s.variant == "" for s in o)
        else:
            assert [s.block for s in o] == list(range(n))


def test_order_labels():
    assert iot.order_label(iot.block_orders(3, 2, 0)[0]) == "0 1 2"
    subs = iot.sublayer_orders(3, 8, 0)
    assert iot.order_label(subs[0], "sublayers") == "A A A"
    assert sorted(iot.order_label(o, "sublayers") for o in subs)[-1] == "M M M"


def test_order_spaces_cannot_ask_for_more_orders_than_exist():
    assert len(set(iot.sublayer_orders(3, 8, 0))) == 8  # all of them
    with pytest.raises(ValueError):
        iot.sublayer_orders(3, 9, 0)
    with pytest.raises(ValueError):
        iot.block_orders(3, 7, 0)


# -- the sub-layer swap --------------------------------------------------------------------------------------
def test_mlp_first_matches_an_independent_block_and_changes_the_output():
    m = small_vit(depth=3)
    x = torch.rand(5, 64)
    with torch.no_grad():
        std = m.readout(m.run_steps(m.embed(x), [0, 1, 2]))
        assert torch.allclose(std, m(x), atol=1e-6)  # plain ints = Step(b) = the ordinary forward
        swapped = [Step(0), Step(1, "mlp_first"), Step(2)]
        out = m.readout(m.run_steps(m.embed(x), swapped))
        h = m.embed(x)
        for s in swapped:
            h = reference_vit_block(m.blocks[s.block], h, s.variant == "mlp_first")
        assert torch.allclose(out, m.readout(h), atol=1e-5)
        assert (out - std).abs().max() > 1e-3  # the swap really changes the computation
    n_params = sum(p.numel() for p in m.parameters())
    assert n_params == sum(p.numel() for p in small_vit(depth=3).parameters())  # no new weights for a variant


def test_unknown_variants_and_blocks_are_rejected():
    mlp, vit = small_mlp(), small_vit()
    h = mlp.embed(torch.rand(2, 12))
    with pytest.raises(ValueError):
        mlp.run_steps(h, [Step(0, "mlp_first")])  # the MLP has no sub-layers to swap
    with pytest.raises(ValueError):
        vit.run_steps(vit.embed(torch.rand(2, 64)), [Step(0, "sideways")])
    with pytest.raises(ValueError):
        mlp.run_steps(h, [Step(mlp.n_blocks)])


# -- the predictor and inference -----------------------------------------------------------------------------
@pytest.mark.parametrize("cfg,n_in", [(MLPConfig(), 12), (ViTConfig(), 64), (ViTConfig(depth=4), 64)])
def test_predictor_adds_less_than_one_percent_of_the_parameters(cfg, n_in):
    m = build(cfg, 0)
    p = iot.Predictor(iot.stem_width(m, torch.rand(1, n_in)), 4)
    assert iot.parameter_count(p) < 0.01 * iot.parameter_count(m)


@pytest.mark.parametrize("space", ["blocks", "sublayers"])
def test_forced_choice_equals_running_that_order(space):
    m = small_vit(depth=4)
    orders = iot.candidate_orders(space, 4, 1, 4)
    x = torch.rand(9, 64)
    for j, o in enumerate(orders):
        pred = iot.Predictor(iot.stem_width(m, x), 4)
        with torch.no_grad():
            pred.fc.bias[j] = 5.0  # zero weights: every input picks order j
        logits, choice, _ = iot.iot_predict(m, pred, x, orders)
        assert (choice == j).all()
        with torch.no_grad():
            h = m.embed(x)
            for slot, s in enumerate(o):  # by hand, not through run_steps
                h = m.blocks[s.block](h, slot, mlp_first=s.variant == "mlp_first")
            ref = m.readout(h)
        assert torch.allclose(logits, ref, atol=1e-6)


def test_mixed_choices_route_each_input_to_its_own_order():
    m = small_mlp()
    orders = iot.block_orders(m.n_blocks, 3, 0)
    x = torch.rand(12, 12)
    pred = iot.Predictor(iot.stem_width(m, x), 3)
    with torch.no_grad():
        pred.fc.weight.normal_(0, 1.0)
    logits, choice, _ = iot.iot_predict(m, pred, x, orders)
    assert len(set(choice.tolist())) > 1
    for i in range(len(x)):
        assert torch.allclose(logits[i], m(x[i : i + 1], [s.block for s in orders[int(choice[i])]])[0], atol=1e-6)


# -- observation ---------------------------------------------------------------------------------------------
def test_oracle_is_never_below_the_best_single_order():
    gen = torch.Generator().manual_seed(0)
    for trial in range(20):
        logits = torch.randn(4, 50, 5, generator=gen) * (trial % 3 + 0.5)
        y = torch.randint(0, 5, (50,), generator=gen)
        o = iot.observe(logits, y)
        assert o["oracle_acc"] >= o["best_single_acc"] == max(o["order_acc"])
        assert sum(o["best_share"]) == pytest.approx(1.0)
        # brute force: right if any order is right
        assert o["oracle_acc"] == pytest.approx(float((logits.argmax(2) == y).any(0).float().mean()))


# -- training ------------------------------------------------------------------------------------------------
def test_one_order_trains_exactly_like_the_ordinary_loop():
    d = synthetic(SMALL_TASK)
    tc = TrainConfig(epochs=2, batch=128, lr=3e-3, seed=5, checkpoints=())
    a, b = small_mlp(seed=5), small_mlp(seed=5)
    ref = train(a, d.train, tc)
    pred = iot.Predictor(iot.stem_width(b, d.test.x), 1)
    log = iot.train_iot(b, pred, d.train, [iot.identity_order(b.n_blocks)], tc, explore=1.0, exploit=1.0, gumbel=True)
    assert log.loss == pytest.approx(ref.loss, rel=1e-6, abs=1e-7)
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.allclose(va, vb, atol=1e-6), k
    assert (pred.fc.weight == 0).all() and (pred.fc.bias == 0).all()  # no signal for a single order


def test_one_permuted_order_equals_ordinary_training_on_that_route():
    d = synthetic(SMALL_TASK)
    tc = TrainConfig(epochs=1, batch=128, seed=2, checkpoints=())
    order = iot.block_orders(4, 2, 0)[1]
    a, b = small_mlp(seed=2), small_mlp(seed=2)
    route = tuple(s.block for s in order)
    train(a, d.train, tc, sampler=lambda gen: route)
    iot.train_iot(b, iot.Predictor(32, 1), d.train, [order], tc)
    for va, vb in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.allclose(va, vb, atol=1e-6)


def _choices(explore: float, exploit: float):
    d = synthetic(SMALL_TASK)
    tc = TrainConfig(epochs=3, batch=128, lr=3e-2, seed=0, checkpoints=())  # few steps: a fast lr
    m = small_mlp(seed=0)
    orders = iot.block_orders(m.n_blocks, 4, 0)
    pred = iot.Predictor(iot.stem_width(m, d.test.x), 4)
    log = iot.train_iot(m, pred, d.train, orders, tc, d.test, explore=explore, exploit=exploit)
    return log.choice_share[-1], log


def test_choice_collapses_without_exploration():
    collapsed, log = _choices(explore=0.0, exploit=2.0)
    spread, _ = _choices(explore=2.0, exploit=2.0)
    used = lambda share: sum(s >= 0.05 for s in share)  # noqa: E731
    assert used(collapsed) < used(spread)
    assert max(collapsed) > max(spread)
    assert log.choice_entropy[-1] < 0.5 * torch.log(torch.tensor(4.0)).item()  # choices became unambiguous


def test_iot_training_is_seeded():
    a, _ = _choices(explore=1.0, exploit=0.1)
    b, _ = _choices(explore=1.0, exploit=0.1)
    assert a == b


def test_compare_reports_every_baseline_on_a_tiny_run(monkeypatch):
    import dataclasses

    from lab.core import tasks, zoo

    tiny = dataclasses.replace(tasks.TASKS["synthetic"], name="tiny", loader=lambda: synthetic(SMALL_TASK))
    monkeypatch.setitem(tasks.TASKS, "tiny", tiny)
    spec = zoo.ModelSpec(MLPConfig(width=32, blocks=3), TrainConfig(epochs=1, batch=128, seed=0), task="tiny")
    r = experiment.compare(spec, experiment.IOTConfig(m=3, explore=1.0, exploit=0.1))
    for key in ("sequential_acc", "best_fixed_acc", "ensemble_acc", "oracle_acc", "iot_acc", "shared_best_acc",
                "chance", "order_acc", "fixed_acc", "choice_share", "oracle_agreement"):
        assert key in r
    assert len(r["order_acc"]) == len(r["choice_share"]) == 3
    assert sum(r["choice_share"]) == pytest.approx(1.0)
    assert r["oracle_acc"] >= max(r["order_acc"]) and r["fixed_oracle_acc"] >= max(r["fixed_acc"])
    assert r["fixed_acc"][0] == r["sequential_acc"]  # the identity's fixed model is the sequential model
    assert r["cost"]["train_block_run_ratio"] == pytest.approx(3.0)
    assert len(r["curves"]["test_acc"]) == 1 and len(r["choice_share_per_class"]) == 20
    # the per-input outcomes the claims pair are those of the accuracies reported
    oc = {k: E.unpack(v) for k, v in r["outcomes"].items() if k != "orders"}
    assert oc["iot"].mean() == pytest.approx(r["iot_acc"]) and oc["sequential"].mean() == pytest.approx(
        r["sequential_acc"])
    assert [E.unpack(v).mean() for v in r["outcomes"]["orders"]] == pytest.approx(r["order_acc"])
    assert [E.unpack(v).mean() for v in r["fixed_outcomes"]] == pytest.approx(r["fixed_acc"])
    assert oc["agree"].mean() == pytest.approx(r["oracle_agreement"])
    assert oc["common_best"].mean() == pytest.approx(max(r["best_share"]))
    assert oc["top_choice"].mean() == pytest.approx(max(r["choice_share"]))


def test_one_order_follows_the_recipe_optimizer_and_warmup_exactly():
    """The ViT recipe's AdamW, warm-up and fused step: IOT with M = 1 must still be the ordinary loop."""
    d = synthetic(SMALL_TASK)
    tc = TrainConfig(epochs=2, batch=128, lr=3e-3, seed=1, checkpoints=(), optimizer="adamw", warmup=0.2,
                     fused=True, weight_decay=0.05)
    a, b = small_mlp(seed=1), small_mlp(seed=1)
    ref = train(a, d.train, tc)
    log = iot.train_iot(b, iot.Predictor(32, 1), d.train, [iot.identity_order(b.n_blocks)], tc)
    assert log.loss == pytest.approx(ref.loss, rel=1e-6, abs=1e-7)
    for va, vb in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.allclose(va, vb, atol=1e-6)
