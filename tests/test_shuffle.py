"""The Shuffle-layers experiment: its evaluation helpers against brute force, the probe, the views, the CLI."""

import itertools
import json

import numpy as np
import pytest
import torch

from lab import cli
from lab import estimates as E
from lab.claims import check
from lab.core import recipes
from lab.core.data_digits import digits
from lab.core.models import ViT, ViTConfig, accuracy
from lab.experiments.shuffle import claims as shuffle_claims
from lab.experiments.shuffle import experiment as shuffle
from lab.ops import embed

TINY = shuffle.ShuffleConfig(mode="predict", depth=3, orders=6, seed=0, epochs=1)


def small_vit(seed: int = 0) -> ViT:
    torch.manual_seed(seed)
    m = ViT(ViTConfig(depth=3, width=16, heads=2))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def test_digits_split_is_fixed_stratified_and_disjoint():
    d = digits()
    assert (len(d.train), len(d.test), len(d.probe)) == (1100, 397, 300)
    counts = torch.bincount(d.test.y, minlength=10)
    assert int(counts.min()) >= 38 and int(counts.max()) <= 41  # stratified: about 39.7 per class
    train_rows = {tuple(r) for r in d.train.x.numpy().round(4).tolist()}
    probe_rows = {tuple(r) for r in d.probe.x.numpy().round(4).tolist()}
    test_rows = {tuple(r) for r in d.test.x.numpy().round(4).tolist()}
    # held out of training and of the test split (the raw set repeats a few images: at most 1 % shared)
    assert len(probe_rows & train_rows) <= 3 and len(probe_rows & test_rows) <= 3
    assert 0.0 <= float(d.train.x.min()) and float(d.train.x.max()) <= 1.0


def test_modes_map_to_training_and_slot_modes():
    for mode in shuffle.MODES:
        spec = shuffle.vit_spec(mode, depth=4)
        assert spec.train.mode == ("sequential" if mode == "sequential" else "shuffle")
        assert spec.model.slot_mode == recipes.SLOT_MODE[mode] and spec.task == "digits"
    with pytest.raises(ValueError):
        shuffle.ShuffleConfig(mode="sideways")
    with pytest.raises(ValueError):
        shuffle.ShuffleConfig(depth=shuffle.MAX_DEPTH + 1)


def test_all_orders_walk_matches_brute_force():
    m = small_vit()
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(40, 64, generator=g), torch.randint(0, 10, (40,), generator=g)
    walk = shuffle.all_orders_accuracy(m, x, y)
    brute = [accuracy(m, x, y, p) for p in itertools.permutations(range(3))]
    assert walk == pytest.approx(brute, abs=1e-9)


def test_random_orders_are_permutations_shared_across_modes():
    a = shuffle.random_orders(5, 30, seed=3)
    assert a == shuffle.random_orders(5, 30, seed=3) and a != shuffle.random_orders(5, 30, seed=4)
    assert all(sorted(r) == list(range(5)) for r in a) and len(set(a)) > 20


def test_linear_probe_finds_planted_signal_and_not_noise():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 800)
    noise = rng.normal(size=(800, 10))
    signal = noise.copy()
    signal[:, 0] += 3.0 * y
    assert embed.linear_probe_correct(signal[:400], y[:400], signal[400:], y[400:]).mean() > 0.9
    assert embed.linear_probe_correct(noise[:400], y[:400], noise[400:], y[400:]).mean() < 0.4


def test_pca_matches_sklearn_up_to_sign():
    from sklearn.decomposition import PCA

    x = np.random.default_rng(0).normal(size=(200, 6)) * np.array([5, 3, 1, 1, 1, 1])
    ours, ref = embed.pca_2d(x), PCA(2).fit_transform(x)
    for j in range(2):
        assert min(np.abs(ours[:, j] - ref[:, j]).max(), np.abs(ours[:, j] + ref[:, j]).max()) < 1e-3


def test_run_on_a_tiny_config():
    r = shuffle.run(TINY)
    n = 3
    assert r.n_blocks == n and r.all_orders["n"] == 6
    ro = r.random_orders
    assert len(ro["accs"]) == 6 and ro["min"] <= ro["mean"] <= ro["max"]
    assert all(a in r.all_orders["accs"] for a in ro["accs"])  # every random order is one of all orders
    assert len(r.pruning) == n and r.pruning[0]["removed"] == 0
    assert all(len(route) == n - p["removed"] for p in r.pruning for route in p["routes"])
    assert r.probe["chance"] == pytest.approx(1 / 3) and 0.0 <= r.probe["acc"] <= 1.0
    # per-input outcomes travel with the result: they are the accuracies they pair
    assert [E.unpack(t).mean() for t in r.all_orders["outcomes"]] == pytest.approx(r.all_orders["accs"])
    assert E.unpack(r.outcomes["base"]).mean() == pytest.approx(r.base_acc)
    p3 = r.pruning[1]["random_order"]  # every kept pair in both orders: 3 x 2 routes
    assert p3["exact"] and len(p3["accs"]) == 6 and sum(p3["right"]) / (6 * r.n_test) == pytest.approx(p3["mean"])
    probe_rows = E.unpack(r.probe["outcomes"]["unit"])
    assert probe_rows.size == r.probe["n_test"] and probe_rows.mean() == pytest.approx(r.probe["acc_direction"])
    # -predict adds no slot vector: its control probe is its unit-length probe
    assert r.probe["acc_without_slot"] == r.probe["acc_direction"]
    check(shuffle_claims.result_claims(r))
    v = r.view
    npts = shuffle.VIEW_ORDERS * n * shuffle.VIEW_INPUTS
    assert len(v["pca"]) == len(v["slot"]) == len(v["block"]) == len(v["cls"]) == npts
    assert set(v["slot"]) == set(range(n)) and set(v["block"]) == set(range(n))
    assert shuffle.run(TINY) == r  # cached: read back from plain data, the same typed result


def test_cli_prints_the_promised_json(capsys, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")  # one epoch: this checks the interface, not the science
    rc = cli.main(["shuffle", "--mode", "shuffle", "--depth", "3", "--orders", "5", "--seed", "0", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)["result"]  # the whole result, as the page has it
    assert set(out["random_orders"]) >= {"mean", "min", "max", "accs"} and len(out["random_orders"]["accs"]) == 5
    for acc in (out["base_acc"], out["probe"]["acc"], out["chance"]):
        assert 0.0 <= acc <= 1.0
    assert out["probe"]["chance"] == pytest.approx(1 / 3) and out["chance"] < 0.2  # probe: 1/depth; classes: 10
    assert len(out["position_contribution"]["shuffle"]) == 3  # the block x slot map the page draws


def test_cli_rejects_a_bad_depth_in_one_line(capsys):
    assert cli.main(["shuffle", "--depth", str(shuffle.MAX_DEPTH + 1)]) == 2
    err = capsys.readouterr().err
    assert "depth" in err and err.count("\n") == 1


# -- caching by exactly what a result depends on -------------------------------------------------------------
def test_a_control_that_needs_no_training_trains_and_walks_nothing(tmp_path, monkeypatch):
    """After one run, asking for more random orders reads the model's table of all orders: no training, no walk."""
    from lab.core import zoo
    from lab.runtime.store import Store

    store = Store(tmp_path / "s")
    cfg = shuffle.ShuffleConfig(mode="shuffle", depth=3, orders=5, seed=2, epochs=1)
    first = shuffle.run(cfg, store=store)
    calls = {"train": 0, "walk": 0}
    real_train, real_walk = zoo.train, shuffle.orders_walk

    def count(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(zoo, "train", count("train", real_train))
    monkeypatch.setattr(shuffle, "orders_walk", count("walk", real_walk))
    zoo._memo.clear()  # a fresh process: the model must come from the store, not from memory
    more = shuffle.run(shuffle.ShuffleConfig(mode="shuffle", depth=3, orders=40, seed=2, epochs=1), store=store)
    assert calls == {"train": 0, "walk": 0}
    assert more.base_acc == first.base_acc and more.pruning == first.pruning
    assert len(more.random_orders["accs"]) == 40


def test_random_orders_read_from_the_table_equal_a_recomputation(tmp_path):
    from lab.core.zoo import trained
    from lab.runtime.store import Store

    store = Store(tmp_path / "s")
    cfg = shuffle.ShuffleConfig(mode="sequential", depth=3, orders=12, seed=1, epochs=1)
    stats = shuffle.random_order_stats(cfg, store=store)
    table = shuffle.orders_table(shuffle.ModelConfig.of(cfg), store=store)  # now a read
    t = trained(cfg.spec, store=store)
    x, y = t.data.test.x, t.data.test.y
    assert isinstance(table, shuffle.OrdersTable) and isinstance(stats, shuffle.RandomOrders)
    assert table.accs == shuffle.all_orders_accuracy(t.model, x, y)  # stored table == recomputed
    direct = [accuracy(t.model, x, y, r) for r in shuffle.random_orders(3, 12, 1)]
    assert stats.accs == direct  # looked up == evaluated order by order
    m = shuffle.ModelConfig.of(cfg)
    rows = shuffle.pruning(m, store=store)
    assert isinstance(rows[0], shuffle.PruneRow) and isinstance(rows[0].random_order, shuffle.OverRoutes)
    assert shuffle.pruning(m, store=store) == rows  # read back typed, the same rows
    # read from the table's shorter orders == the curve's own routes walked on the model (every k, both orders)
    assert rows == shuffle.pruning_curve(t.model, x, y, shuffle.PRUNE_DRAWS, m.seed)
    assert len(table.prefixes) == 3 + 3 * 2  # every ordered choice of 1 or 2 of the 3 blocks
    assert isinstance(shuffle.model_summary(m, store=store), shuffle.ModelSummary)
    pv = shuffle.probe_and_view(m, store=store)
    assert isinstance(pv, shuffle.ProbeView) and pv.probe["chance"] == 1 / 3


def test_added_slot_vectors_are_what_the_position_model_adds_and_none_elsewhere():
    """The -position probe's control: the vectors the model's slot embedding added into the CLS stream up to each
    slot, against those captured from the blocks' `slot_proj` during the model's own forward pass; a model without
    a slot embedding adds none (its control probe is its unit-length probe)."""
    torch.manual_seed(1)
    m = ViT(ViTConfig(depth=3, width=16, heads=2, slot_mode="position"))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))  # the depth embedding starts at zero: make it say something
    m.eval()
    x = torch.randn(5, 1, 8, 8)
    orders = [(0, 1, 2), (2, 0, 1)]
    f = shuffle.slot_features(m, x, orders)
    got = shuffle.added_slot_vectors(m, x, f, orders)
    seen: list[torch.Tensor] = []
    hooks = [b.slot_proj.register_forward_hook(lambda _m, _i, out: seen.append(out[:, 0].detach()))
             for b in m.blocks]
    with torch.no_grad():
        for route in orders:
            m.states(x, route)
    for h in hooks:
        h.remove()
    want = np.stack([np.cumsum(np.stack([s.numpy() for s in seen[3 * o:3 * o + 3]]), axis=0) for o in range(2)])
    assert np.abs(got - want).max() < 1e-5 and np.abs(want).max() > 1e-3
    plain = small_vit()
    assert not shuffle.added_slot_vectors(plain, x, shuffle.slot_features(plain, x, orders), orders).any()



def test_one_walk_serves_the_table_the_random_orders_and_the_pruning_curve(tmp_path, monkeypatch):
    """The pruning curve's routes are orders and shorter orders of the blocks: the table's one walk passes through
    every one of them, so a model's pieces walk once between them (the curve used to walk its routes again)."""
    from lab.ops import walk
    from lab.runtime.store import Store

    store = Store(tmp_path / "s")
    walks = []
    real = walk.route_outcomes
    monkeypatch.setattr(walk, "route_outcomes", lambda m, x, y, routes, *a: walks.append(len(routes)) or
                        real(m, x, y, routes, *a))
    cfg = shuffle.ShuffleConfig(mode="shuffle", depth=3, orders=5, seed=4, epochs=1)
    m = shuffle.ModelConfig.of(cfg)
    rows = shuffle.pruning(m, store=store)
    shuffle.random_order_stats(cfg, store=store)
    shuffle.orders_table(m, store=store)
    assert walks == [6 + 3 + 6] and len(rows) == 3  # one walk: 6 orders, 3 single blocks, 6 ordered pairs
