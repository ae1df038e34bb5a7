"""Selection methods: greedy against a hand-made example, the optimum against greedy, influence against its formula."""

import itertools
import math

import numpy as np
import torch

from lab.core.models import MLP, MLPConfig
from lab.ops import search, selection

from .helpers import small_data, small_mlp

# Hand-made probe accuracies of each deleted set on a 4-block model: block 0 is the best single deletion,
# but the best pair is {1, 2}. Greedy must take 0 first, then the best partner of 0 (that is 3).
TABLE = {(): 0.9, (0,): 0.8, (1,): 0.7, (2,): 0.6, (3,): 0.5,
         (0, 1): 0.3, (0, 2): 0.35, (0, 3): 0.4, (1, 2): 0.75, (1, 3): 0.2, (2, 3): 0.1}


def fake_score(model, x, y, dropped):
    return TABLE[tuple(sorted(dropped))], 0.0


def test_greedy_takes_the_best_candidate_at_each_step(monkeypatch):
    monkeypatch.setattr(search, "route_score", fake_score)
    model = MLP(MLPConfig(blocks=4, width=4))  # 4 blocks; weights unused by the fake score
    assert search.greedy(model, 1, None, None) == [0]
    assert search.greedy(model, 2, None, None) == [0, 3]
    assert search.optimal(model, 2, None, None) == [1, 2]  # the short-sightedness greedy is known for


def test_ties_in_probe_accuracy_are_broken_by_the_probe_loss_not_the_block_index(monkeypatch):
    """Every single deletion keeps 100 % on the probe (as the digits' probe does): greedy must take the one whose
    loss rises least (block 2 here), not block 0; the optimum likewise."""
    loss = {(0,): 0.9, (1,): 0.5, (2,): 0.1, (3,): 0.7}
    monkeypatch.setattr(search, "route_score", lambda m, x, y, d: (1.0, -loss.get(tuple(sorted(d)), 1.0)))
    model = MLP(MLPConfig(blocks=4, width=4))
    assert search.greedy(model, 1, None, None) == [2]
    assert search.optimal(model, 1, None, None) == [2]


def test_route_score_is_accuracy_and_minus_the_cross_entropy():
    m = small_mlp("residual")
    d = small_data()
    acc, neg_loss = search.route_score(m, d.probe.x, d.probe.y, [1])
    with torch.no_grad():
        logits = m(d.probe.x, [0] + list(range(2, m.n_blocks)))
    ref = torch.nn.functional.cross_entropy(logits, d.probe.y)
    assert acc == search.route_accuracy(m, d.probe.x, d.probe.y, [1])
    assert abs(neg_loss + float(ref)) < 1e-5


def test_random_selection_outcomes_average_every_subset_exactly():
    m = small_mlp("residual")
    d = small_data()
    k = 2
    r = selection.outcomes(m, d, "random", k, seed=0)
    subsets = list(itertools.combinations(range(m.n_blocks), k))
    assert r["exact"] and r["draws"] == len(subsets) == math.comb(m.n_blocks, k)
    with torch.no_grad():
        brute = np.mean([(m(d.test.x, [b for b in range(m.n_blocks) if b not in s]).argmax(1) == d.test.y).numpy()
                         for s in subsets], axis=0)
    assert np.allclose(selection.scores(r["outcomes"]), brute)
    each = [search.route_accuracy(m, d.test.x, d.test.y, s) for s in subsets]
    assert abs(r["test_acc"] - sum(each) / len(each)) < 1e-6
    g = selection.outcomes(m, d, "greedy", k, seed=0)
    g_acc = search.route_accuracy(m, d.test.x, d.test.y, g["dropped"])
    assert abs(selection.scores(g["outcomes"]).mean() - g_acc) < 1e-6
    assert g["draws"] == 1 and "draw_accs" not in g and "draw_accs" not in r


def test_optimum_is_never_worse_than_greedy_on_the_probe():
    m = small_mlp("residual")
    d = small_data()
    for k in range(m.n_blocks + 1):
        g = search.route_accuracy(m, d.probe.x, d.probe.y, search.greedy(m, k, d.probe.x, d.probe.y))
        o = search.route_accuracy(m, d.probe.x, d.probe.y, search.optimal(m, k, d.probe.x, d.probe.y))
        assert o >= g - 1e-9


def test_optimum_is_the_best_subset_by_brute_force():
    m = small_mlp("plain")
    d = small_data()
    k = 2
    best = max(itertools.combinations(range(m.n_blocks), k),
               key=lambda s: search.route_accuracy(m, d.probe.x, d.probe.y, s))
    o = search.optimal(m, k, d.probe.x, d.probe.y)
    assert search.route_accuracy(m, d.probe.x, d.probe.y, o) == search.route_accuracy(m, d.probe.x, d.probe.y, best)


def test_block_influence_matches_its_formula():
    m = small_mlp("residual")
    x = small_data().probe.x[:256]
    bi = search.block_influence(m, x)
    with torch.no_grad():
        h = torch.relu(m.stem(x))
        for i, blk in enumerate(m.blocks):
            out = h + torch.relu(blk(h))
            cos = (h * out).sum(1) / (h.norm(dim=1) * out.norm(dim=1)).clamp_min(1e-8)
            assert abs(bi[i] - float(1 - cos.mean())) < 1e-4
            h = out


def test_every_selection_returns_k_distinct_original_indices():
    m = small_mlp("residual")
    d = small_data()
    for method in selection.METHODS:
        for k in (0, 1, 3):
            picks = selection.to_drop(method, m, k, d.probe.x, d.probe.y, seed=1)
            assert len(picks) == k == len(set(picks)) and all(0 <= i < m.n_blocks for i in picks)


def test_random_selection_is_seeded_and_varies_with_the_seed():
    draws = {tuple(selection.random_subset(7, 3, s)) for s in range(20)}
    assert selection.random_subset(7, 3, 5) == selection.random_subset(7, 3, 5)
    assert len(draws) > 5
