"""A training seed redraws the data (issue 57, parts 2 and 5): each seed's own bootstrap of the training split, the
probe and test splits fixed and held out from every draw; and the null that shows why a pool over seeds needs it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import beta

from lab import claims as C
from lab import estimates as E
from lab.core import data_draw, tasks
from lab.core.zoo import task

SIMS = 2000
N_INPUTS = 400


def rows_of(x: torch.Tensor) -> set[bytes]:
    return {r.numpy().tobytes() for r in x}


@pytest.mark.parametrize("name", ["digits", "mnist1d", "wine", "synthetic"])
def test_each_seed_draws_its_own_training_set_from_the_training_split_only(name: str):
    base = task(name)
    a, b, again = task(name, seed=3), task(name, seed=4), task(name, seed=3)
    assert a.test is base.test and a.probe is base.probe  # the held-out splits are the task's, at every seed
    assert torch.equal(a.train.x, again.train.x)  # a seed's draw is fixed
    assert not torch.equal(a.train.x, b.train.x)  # another seed draws another set
    assert torch.equal(torch.bincount(a.train.y), torch.bincount(base.train.y))  # class counts kept
    assert rows_of(a.train.x) <= rows_of(base.train.x)  # drawn from the training split, nothing else
    distinct = len(np.unique(data_draw.indices(base.train.y, 3))) / len(a.train)
    assert 0.5 < distinct < 0.75  # a bootstrap: about 1 - 1/e of a draw is distinct


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_the_probe_split_is_held_out_from_training(name: str):
    """Every task's probe split is disjoint from its training split (as rows: the digits hold a few duplicate
    images, so the check is by the loaders' sizes too)."""
    d = task(name)
    assert len(d.train) == tasks.get(name).shape.n_train
    train = rows_of(d.train.x)
    shared = sum(r in train for r in rows_of(d.probe.x))
    assert shared <= 0.01 * len(d.probe), (name, shared)


def test_a_trained_model_says_what_its_seed_redrew_and_trains_on_that_draw():
    from dataclasses import replace

    from lab.core import page_models
    from lab.core.zoo import trained

    spec = page_models.model_spec_on("mlp1-plain", 5, "wine")
    spec = replace(spec, train=replace(spec.train, epochs=1))
    t = trained(spec)
    assert t.info["data_draw"] == data_draw.WORDS
    assert torch.equal(t.data.train.x, task("wine", seed=5).train.x)
    assert not torch.equal(t.data.train.x, task("wine").train.x)


def null_with_data_draws(gen: np.random.Generator, sims: int, k: int, n: int, shared_draw: bool) -> np.ndarray:
    """sims x k seeds x n per-input paired differences (-1, 0, 1) on the same n held-out inputs, mean 0 over seeds,
    data draws and inputs: a share of the inputs differs the same way at every seed (the repeating part, 24 %), the
    rest at rate q shifted by the seed's effect, a training draw plus a data draw of equal variance. `shared_draw`:
    one data draw for all k seeds (every seed trained on one data set: the old design), else one per seed."""
    q, rho = 0.06, 0.24
    f = rho * q / (1 - rho + rho * q)
    sigma = math.sqrt((f + (1 - f) * q) / n)  # a seed's training spread: its own paired error
    stable = gen.random((sims, 1, n)) < f
    sign = np.where(gen.random((sims, 1, n)) < 0.5, 1, -1).astype(np.int8)
    draw = gen.normal(0, sigma, (sims, 1 if shared_draw else k, 1))
    a = np.clip(gen.normal(0, sigma, (sims, k, 1)) + draw, -0.9 * q * (1 - f), 0.9 * q * (1 - f))
    up, down = q / 2 + a / (2 * (1 - f)), q / 2 - a / (2 * (1 - f))
    u = gen.random((sims, k, n))
    d = np.where(u < up, 1, np.where(u < up + down, -1, 0)).astype(np.int8)
    return np.where(stable, sign, d)


def false_holds(d: np.ndarray) -> int:
    return sum(C.test("d", E.over_design(rows), ">=", 0.0)["holds"] is True for rows in d)


@pytest.mark.parametrize("k", [3, 5, 12])
def test_a_pool_over_seeds_that_redraw_the_data_holds_falsely_at_most_5_percent(k: int):
    """Data-draw variance equal to the seeds' training variance. Seeds that each draw their own data: the pool
    (lab.estimates.over_design through claims.test) holds falsely <= 5 % (Clopper-Pearson 95 % upper bound over
    2,000 simulations). The same rule with one data set for every seed (the old design) cannot see the draw's
    variance, which more seeds do not shrink: above 5 % at 5 and 12 seeds (lower bound), 4.8 / 8.1 / 14.1 % in the
    issue's measurement at 3 / 5 / 12."""
    new = false_holds(null_with_data_draws(np.random.default_rng(5700 + k), SIMS, k, N_INPUTS, shared_draw=False))
    old = false_holds(null_with_data_draws(np.random.default_rng(5700 + k), SIMS, k, N_INPUTS, shared_draw=True))
    assert beta.ppf(0.95, new + 1, SIMS - new) <= 0.05, (k, new / SIMS)
    if k >= 5:
        assert beta.ppf(0.05, old, SIMS - old + 1) > 0.05, (k, old / SIMS)
