"""lab/ops/walk.py: many routes in one walk give exactly what one `accuracy()` per route gives (predictions, not
approximately), for random and trained ViTs of every slot mode, for MLPs (no CLS shortcut) and for mixed routes."""

import itertools
import threading
import time

import pytest
import torch

from lab.core.models import MLP, MLPConfig, ViT, ViTConfig, accuracy, logits_of
from lab.core.page_models import vit_spec
from lab.core.zoo import trained
from lab.experiments.shuffle import experiment as shuffle
from lab.ops import walk


def random_vit(depth: int, slot_mode: str = "none", seed: int = 0) -> ViT:
    torch.manual_seed(seed)
    m = ViT(ViTConfig(depth=depth, width=16, heads=2, slot_mode=slot_mode))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def per_route(model, x, y, routes):
    return [accuracy(model, x, y, r) for r in routes]


def test_last_block_cls_row_is_bitwise_the_full_block():
    for mode in ("none", "position", "predict"):
        m = random_vit(3, mode)
        x = torch.rand(50, 64, generator=torch.Generator().manual_seed(2))
        with torch.no_grad():
            h = m.run_block(m.embed(x), 1, 0)
            for b, slot in ((0, 1), (2, 2)):
                full = m.run_block(h, b, slot)
                cls = walk._last_block_cls(m, h, b, slot)
                assert torch.equal(cls, full[:, :1]), mode
                assert torch.equal(m.readout(cls), m.readout(full)), mode


@pytest.mark.parametrize("depth,mode", [(3, "none"), (4, "none"), (3, "position"), (4, "predict")])
def test_all_orders_equal_per_order_evaluation_random_weights(depth, mode):
    m = random_vit(depth, mode, seed=depth)
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(60, 64, generator=g), torch.randint(0, 10, (60,), generator=g)
    perms = list(itertools.permutations(range(depth)))
    assert walk.all_orders(m, x, y) == per_route(m, x, y, perms)  # exact, not approx
    assert shuffle.all_orders_accuracy(m, x, y) == per_route(m, x, y, perms)


def test_all_orders_equal_per_order_evaluation_trained_vit_predictions_too():
    t = trained(vit_spec("sequential", 3, 0, epochs=5))  # the recipe, short
    m, x, y = t.model, t.data.test.x, t.data.test.y
    perms = list(itertools.permutations(range(3)))
    assert walk.all_orders(m, x, y) == per_route(m, x, y, perms)
    assert len(set(logits_of(m, x).argmax(1).tolist())) >= 5  # trained: predictions spread over the classes
    # the predictions themselves, order by order, through the CLS-only last block
    with torch.no_grad():
        for p in perms:
            h = m.embed(x)
            for slot, b in enumerate(p[:-1]):
                h = m.run_block(h, b, slot)
            fast = m.readout(walk._last_block_cls(m, h, p[-1], len(p) - 1))
            assert torch.equal(fast, logits_of(m, x, p))


def test_mixed_routes_prefixes_repeats_and_an_mlp():
    m = random_vit(4, seed=3)
    g = torch.Generator().manual_seed(4)
    x, y = torch.rand(40, 64, generator=g), torch.randint(0, 10, (40,), generator=g)
    routes = [(0, 1), (0, 1, 2), (3,), (0, 1), (2, 0, 3, 1), (), (1, 1, 2)]
    assert walk.route_accuracies(m, x, y, routes) == per_route(m, x, y, routes)
    torch.manual_seed(0)
    mlp = MLP(MLPConfig(arch="residual", width=16, blocks=3)).eval()
    xm, ym = torch.rand(40, 12, generator=g), torch.randint(0, 20, (40,), generator=g)
    routes = [(0, 1, 2), (2, 1), (0,), (1, 0, 2)]
    assert walk.route_accuracies(mlp, xm, ym, routes) == per_route(mlp, xm, ym, routes)
    with pytest.raises(ValueError):
        walk.route_accuracies(m, x, y, [(0, 9)])


def test_route_outcomes_are_each_route_s_own_right_and_wrong():
    m = random_vit(3, seed=5)
    g = torch.Generator().manual_seed(6)
    x, y = torch.rand(30, 64, generator=g), torch.randint(0, 10, (30,), generator=g)
    routes = [(0, 1, 2), (2, 1), (0, 1), (1, 0, 2), (0, 1, 2)]
    outs = walk.route_outcomes(m, x, y, routes)
    for r, o in zip(routes, outs, strict=True):
        assert torch.equal(o, logits_of(m, x, r).argmax(1) == y)  # the plain forward pass, route by route


def test_walk_leaves_the_training_flag_as_it_was():
    m = random_vit(3)
    m.train()
    walk.all_orders(m, torch.rand(5, 64), torch.zeros(5, dtype=torch.long))
    assert m.training


def test_lanes_change_where_blocks_run_not_the_bits(tmp_path, monkeypatch):
    """With a free core the walk runs subtrees on two threads; accuracies equal the one-thread walk and the
    per-route path exactly."""
    monkeypatch.setenv("LAYERLAB_CORES_DIR", str(tmp_path / "cores"))
    monkeypatch.setenv("LAYERLAB_CORES", "2")
    m = random_vit(5, "position", seed=5)
    g = torch.Generator().manual_seed(3)
    x, y = torch.rand(80, 64, generator=g), torch.randint(0, 10, (80,), generator=g)
    perms = list(itertools.permutations(range(5)))
    threads = set()
    run_block = m.run_block

    def spy(h, b, slot):
        threads.add(threading.current_thread().name)
        time.sleep(0.001)  # let the lane start before this thread has walked everything
        return run_block(h, b, slot)

    monkeypatch.setattr(m, "run_block", spy)
    laned = walk.all_orders(m, x, y)
    assert len(threads) == 2
    monkeypatch.setenv("LAYERLAB_LANES", "0")
    threads.clear()
    assert walk.all_orders(m, x, y) == laned and len(threads) == 1
    monkeypatch.setattr(m, "run_block", run_block)
    assert laned == per_route(m, x, y, perms)
