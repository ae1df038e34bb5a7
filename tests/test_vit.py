"""The routed ViT: its forward against independent references, the slot machinery, and every route tool on it."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from lab.core.data import Dataset, Split
from lab.core.models import ViT, ViTConfig, accuracy, per_class_accuracy
from lab.core.routes import without
from lab.core.train import TrainConfig, train
from lab.ops import search, selection
from lab.ops.recover import RecoveryConfig, recover

SMALL = dict(depth=3, width=16, heads=2, mlp_ratio=2)


def small_vit(seed: int = 0, **kw) -> ViT:
    torch.manual_seed(seed)
    m = ViT(ViTConfig(**{**SMALL, **kw}))
    with torch.no_grad():  # the default init is near-identity; spread the weights so blocks really differ
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def images(n: int = 12, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, 64, generator=torch.Generator().manual_seed(seed))


def tiny_digits(n: int = 48) -> Dataset:
    g = torch.Generator().manual_seed(0)
    split = lambda: Split(torch.rand(n, 64, generator=g), torch.randint(0, 10, (n,), generator=g))  # noqa: E731
    return Dataset("tiny", split(), split(), split(), 64, 10)


def reference_block(blk, h: torch.Tensor, heads: int) -> torch.Tensor:
    """The same pre-norm block written with torch's own MultiheadAttention (an independent implementation)."""
    w = h.shape[-1]
    mha = torch.nn.MultiheadAttention(w, heads, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(blk.qkv.weight)
        mha.in_proj_bias.copy_(blk.qkv.bias)
        mha.out_proj.weight.copy_(blk.proj.weight)
        mha.out_proj.bias.copy_(blk.proj.bias)
    a = F.layer_norm(h, (w,), blk.ln1.weight, blk.ln1.bias)
    h = h + mha(a, a, a, need_weights=False)[0]
    b = F.layer_norm(h, (w,), blk.ln2.weight, blk.ln2.bias)
    return h + blk.fc2(F.gelu(blk.fc1(b)))


def reference_logits(m: ViT, x: torch.Tensor, route: tuple[int, ...]) -> torch.Tensor:
    """The small ViT's logits along `route` (plain order, no slot embedding), written without the model's forward."""
    # patches by plain reshaping (not unfold): 2x2 patches in row-major order
    img = x.reshape(-1, 4, 2, 4, 2).permute(0, 1, 3, 2, 4).reshape(-1, 16, 4)
    h = torch.cat([m.stem.cls.expand(len(x), -1, -1), m.stem.proj(img)], 1) + m.stem.pos
    for b in route:
        h = reference_block(m.blocks[b], h, 2)
    with torch.no_grad():
        return m.head.fc(F.layer_norm(h[:, 0], (16,), m.head.norm.weight, m.head.norm.bias))


def reference_accuracy(m: ViT, x: torch.Tensor, y: torch.Tensor, route: tuple[int, ...]) -> float:
    return float((reference_logits(m, x, route).argmax(1) == y).float().mean())


def test_forward_matches_an_independent_reference():
    m = small_vit()
    x = images()
    with torch.no_grad():
        assert torch.allclose(m(x), reference_logits(m, x, (0, 1, 2)), atol=1e-5)


def test_identity_route_equals_plain_forward_and_routes_matter():
    m = small_vit()
    x = images()
    with torch.no_grad():
        plain = m(x)
        assert torch.equal(m(x, (0, 1, 2)), plain)
        assert torch.equal(m(x, None), plain)
        assert not torch.allclose(m(x, (2, 1, 0)), plain, atol=1e-4)  # order really changes the function
        logits, states = m.states(x, (1, 0))
        assert len(states) == 3 and torch.allclose(logits, m(x, (1, 0)))


def test_parameter_names_are_prefixed_by_layer():
    for mode in ("none", "position", "predict"):
        names = [n for n, _ in ViT(ViTConfig(slot_mode=mode, **SMALL)).named_parameters()]
        assert all(n.split(".")[0] in ("stem", "blocks", "head") for n in names), names
        assert {n.split(".")[1] for n in names if n.startswith("blocks.")} == {"0", "1", "2"}
        assert any(n.startswith("head.norm") for n in names) and any(n.startswith("stem.pos") for n in names)


def test_position_mode_is_the_official_shared_depth_embedding():
    """One depth table shared by all blocks (stem.depth_embed, 32-d), concatenated with the stream and passed
    through the block's own LayerNorm -> Linear -> GELU, added back before the block runs (matfrei/layershuffle)."""
    m = small_vit(slot_mode="position")
    names = [n for n, _ in m.named_parameters()]
    assert "stem.depth_embed" in names and m.stem.depth_embed.shape == (3, 32)
    assert not any("slot_embed" in n for n in names)
    plain = small_vit(slot_mode="none")
    plain.load_state_dict({k: v for k, v in m.state_dict().items() if "slot_proj" not in k and "depth" not in k})
    x = images()
    with torch.no_grad():
        m.stem.depth_embed.normal_()  # trained values, so slots differ
        h = m.embed(x)
        e = m.stem.depth_embed[2].expand(*h.shape[:-1], 32)
        p = m.blocks[1].slot_proj
        ln = F.layer_norm(torch.cat([h, e], -1), (48,), p[0].weight, p[0].bias)
        want = plain.run_block(h + F.gelu(ln @ p[1].weight.T + p[1].bias), 1, 2)
        assert torch.allclose(m.run_block(h, 1, 2), want, atol=1e-5)
        # the table is shared: changing row 0 changes every route's first block, whatever the block
        before = {r: m(x, r) for r in [(1, 0, 2), (0, 1, 2)]}
        m.stem.depth_embed[0] += torch.randn(32)
        assert not torch.allclose(m(x, (1, 0, 2)), before[(1, 0, 2)], atol=1e-5)
        assert not torch.allclose(m(x, (0, 1, 2)), before[(0, 1, 2)], atol=1e-5)


def test_depth_embedding_starts_at_zero():
    torch.manual_seed(0)
    m = ViT(ViTConfig(slot_mode="position", **SMALL))
    assert float(m.stem.depth_embed.detach().abs().max()) == 0.0
    assert all(float(b.slot_proj[0].weight.detach().min()) == 1.0 for b in m.blocks)  # unit LayerNorms


def test_predict_head_target_is_the_slot():
    m = small_vit(slot_mode="predict")
    x, y = images(), torch.randint(0, 10, (12,))
    route = (2, 0, 1)
    with torch.no_grad():
        logits, states = m.states(x, route)

        def expected(target_of):
            aux = [F.cross_entropy(m.blocks[b].slot_head(states[s + 1].mean(1)), torch.full((12,), target_of(s, b)))
                   for s, b in enumerate(route)]
            return F.cross_entropy(logits, y) + sum(aux) / len(aux)

        got = m.loss(x, y, route)
        assert torch.allclose(got, expected(lambda s, b: s), atol=1e-6)
        assert not torch.allclose(got, expected(lambda s, b: b), atol=1e-3)
        assert got > F.cross_entropy(logits, y)  # the auxiliary term is really added


@pytest.mark.parametrize("mode,expect_shuffle", [("shuffle", True), ("sequential", False)])
def test_training_really_runs_the_routes_of_its_mode(mode, expect_shuffle):
    """Guard against the official LayerShuffle bug of a shuffle that silently never ran: record every route."""
    seen: list[tuple[int, ...]] = []

    class Recording(ViT):
        def loss(self, x, y, route=None):
            seen.append(tuple(route))
            return super().loss(x, y, route)

    torch.manual_seed(0)
    m = Recording(ViTConfig(depth=4, width=16, heads=2))
    d = tiny_digits(96)
    train(m, d.train, TrainConfig(epochs=2, batch=8, seed=0, mode=mode, checkpoints=()))
    assert len(seen) == 24
    assert all(sorted(r) == [0, 1, 2, 3] for r in seen)
    if expect_shuffle:
        assert len(set(seen)) >= 12  # 24 draws from 24 orders: a working shuffle gives many distinct ones
        assert len({r[0] for r in seen}) == 4  # every block has run first
    else:
        assert set(seen) == {(0, 1, 2, 3)}


def test_every_delete_route_tool_runs_on_the_vit():
    m = small_vit()
    d = tiny_digits()
    x, y = d.probe.x, d.probe.y
    for method in selection.METHODS:
        dropped = selection.to_drop(method, m, 1, x, y, seed=0)
        assert len(dropped) == 1 and 0 <= dropped[0] < 3
        kept = tuple(b for b in range(3) if b not in dropped)
        assert search.route_accuracy(m, d.test.x, d.test.y, dropped) == pytest.approx(
            reference_accuracy(m, d.test.x, d.test.y, kept), abs=1e-9)
    bi = search.block_influence(m, x)
    assert len(bi) == 3 and all(b == b for b in bi)
    assert len(per_class_accuracy(m, x, y, 10, without(3, [1]))) == 10
    route = without(3, [0])
    for method in ("ce", "kd"):
        student = small_vit()
        log = recover(student, route, d, RecoveryConfig(method=method, steps=4, batch=16, eval_every=2), teacher=m)
        assert log.steps == [0, 2, 4] and len(log.test_acc) == 3
    # even the empty route runs: stem straight into the head, as the hand-written forward does it
    assert accuracy(m, x, y, ()) == pytest.approx(reference_accuracy(m, x, y, ()), abs=1e-9)


def test_vit_trains_with_layerdrop_and_on_mlp_routes():
    torch.manual_seed(0)
    m = ViT(ViTConfig(depth=3, width=16, heads=2))
    d = tiny_digits()
    log = train(m, d.train, TrainConfig(epochs=1, batch=16, mode="layerdrop", drop_p=0.5, checkpoints=()))
    assert len(log.loss) == 1 and log.loss[0] == log.loss[0]


def test_all_permutations_are_distinct_functions():
    m = small_vit()
    x = images()
    with torch.no_grad():
        outs = [m(x, p) for p in itertools.permutations(range(3))]
    for a, b in itertools.combinations(outs, 2):
        assert not torch.allclose(a, b, atol=1e-5)


# -- the ViT recipe (lab.core.recipes) and the training options it uses ------------------------------------------
def test_recipe_training_is_seeded_bitwise():
    """Same seed -> bitwise the same weights (fused AdamW, warm-up, shuffled routes); another seed differs."""
    from dataclasses import replace

    from lab.core import recipes
    from lab.core.zoo import build

    d = tiny_digits(64)
    cfg = replace(recipes.vit_model_config("shuffle"), **SMALL)

    def fit(seed: int) -> dict:
        m = build(cfg, seed)
        train(m, d.train, replace(recipes.vit_train_config("shuffle", seed, epochs=2), batch=16, checkpoints=()))
        return m.state_dict()

    a, b, c = fit(0), fit(0), fit(1)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)


def test_keeping_checkpoints_leaves_the_trained_weights_unchanged():
    """Snapshots only copy: a run that keeps every epoch ends bitwise where one that keeps none does. That is why
    Re-initialise may read the very ViT the other pages train (one training for both)."""
    from dataclasses import replace

    from lab.core import model_registry, page_models, recipes
    from lab.core.zoo import build

    d = tiny_digits(64)
    cfg = replace(recipes.vit_model_config("sequential"), **SMALL)

    def fit(checkpoints: tuple) -> tuple:
        m = build(cfg, 0)
        log = train(m, d.train, replace(recipes.vit_train_config("sequential", 0, epochs=3), batch=16,
                                        checkpoints=checkpoints))
        return m.state_dict(), log

    (a, _), (b, log) = fit(()), fit((0, 1, 2, 3))
    assert sorted(log.checkpoints) == [0, 1, 2, 3]
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(log.checkpoints[1][k], b[k]) for k in b)  # the snapshots are of other epochs
    assert page_models.reinit_spec("vit", 5) == model_registry.model("vit-sequential").spec(5)


def test_each_epoch_reports_the_held_out_accuracy_it_logged():
    """A waiting page shows the model's held-out accuracy after every epoch: the number in the message is the one
    the log keeps (and none is claimed without a held-out split)."""
    import re
    from dataclasses import replace

    from lab.core import recipes
    from lab.core.zoo import build

    d = tiny_digits(64)
    cfg = replace(recipes.vit_model_config("sequential"), **SMALL)
    tc = replace(recipes.vit_train_config("sequential", 0, epochs=3), batch=16, checkpoints=())
    said: list[str] = []
    log = train(build(cfg, 0), d.train, tc, d.test, progress=lambda f, m: said.append(m))
    shown = [float(re.search(r"held-out accuracy ([0-9.]+) %", m).group(1)) for m in said]
    assert shown == [round(100 * a, 1) for a in log.test_acc] and len(shown) == 3
    quiet: list[str] = []
    train(build(cfg, 0), d.train, tc, progress=lambda f, m: quiet.append(m))
    assert len(quiet) == 3 and not any("held-out" in m for m in quiet)


def test_default_train_config_is_the_original_adam_cosine_loop():
    """Defaults must train exactly as the loop did before the recipe options existed (an explicit copy of it)."""
    from lab.core.train import cosine

    d = tiny_digits(64)
    cfg = TrainConfig(epochs=2, batch=16, lr=2e-3, weight_decay=1e-3, seed=3, checkpoints=())
    torch.manual_seed(0)
    m = ViT(ViTConfig(**SMALL))
    ref = ViT(ViTConfig(**SMALL))
    ref.load_state_dict(m.state_dict())
    train(m, d.train, cfg)
    opt = torch.optim.Adam(ref.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    total = cfg.epochs * 4
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine(s, total))
    gen = torch.Generator().manual_seed(cfg.seed * 7919 + 1)
    ref.train()
    for _ in range(cfg.epochs):
        order = torch.randperm(64, generator=gen)
        for s in range(4):
            idx = order[s * 16 : (s + 1) * 16]
            loss = ref.loss(d.train.x[idx], d.train.y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    assert all(torch.equal(v, ref.state_dict()[k]) for k, v in m.state_dict().items())


def test_warmup_then_cosine_schedule():
    from lab.core.train import cosine, lr_factor

    total, warm = 100, 10
    f = [lr_factor(s, total, warm) for s in range(total + 1)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)  # linear up, never 0
    assert all(a < b for a, b in zip(f[:9], f[1:10], strict=True))
    assert f[10] == 1.0 and f[-1] == pytest.approx(0.0, abs=1e-12)  # then a full cosine down to 0
    assert all(a >= b for a, b in zip(f[10:-1], f[11:], strict=True))
    assert [lr_factor(s, total, 0) for s in range(total)] == [cosine(s, total) for s in range(total)]


def test_adamw_decays_weight_matrices_only():
    from lab.core.train import make_optimizer

    m = ViT(ViTConfig(**SMALL))
    opt = make_optimizer(m, TrainConfig(optimizer="adamw", weight_decay=0.05))
    decay = {id(p) for g in opt.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    names = {n for n, p in m.named_parameters() if id(p) in decay}
    assert "blocks.0.qkv.weight" in names and "head.fc.weight" in names and "stem.proj.weight" in names
    assert not any(n.endswith("bias") or ".ln" in n or "norm" in n or n in ("stem.cls", "stem.pos") for n in names)
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(m.parameters()))
    with pytest.raises(ValueError):
        TrainConfig(optimizer="sgd")
    with pytest.raises(ValueError):
        TrainConfig(warmup=1.0)


def test_stem_scale_scales_only_the_stem():
    torch.manual_seed(0)
    a = ViT(ViTConfig(**SMALL))
    torch.manual_seed(0)
    b = ViT(ViTConfig(stem_scale=0.05, **SMALL))
    for (n, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        if n in ("stem.cls", "stem.pos", "stem.proj.weight"):
            assert torch.allclose(q, 0.05 * p)
        else:
            assert torch.equal(p, q), n
