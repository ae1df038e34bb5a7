"""Simulated studies through the lab's own code: per-seed claims made by lab.claims from per-input scores, pooled by
lab.claims.pool, read by lab/study/stats.py. A study's per-input paired score at value j, seed s, input i:

    mu_j + draw_s + model_js + input_ji + noise_jsi

draw_s: the seed's data draw, shared by all its cells; model_js: that training's own part; input_ji: which held-out
inputs were drawn, repeating at every seed of a cell; noise: the rest. Each part's scale may differ per cell (deeper
nets are noisier)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.stats import beta

from lab import claims as C
from lab import estimates as E
from lab.study import stats

N_INPUTS = 120


def upper(count: int, n: int) -> float:
    """Clopper-Pearson 95 % upper bound of a rate."""
    return 1.0 if count >= n else float(beta.ppf(0.975, count + 1, n - count))


def lower(count: int, n: int) -> float:
    return 0.0 if count <= 0 else float(beta.ppf(0.025, count, n - count + 1))


def cells(rng: np.random.Generator, mu: Sequence[float], k: int = 5, draw: float = 0.02,
          model: Sequence[float] | float = 0.02, inputs: Sequence[float] | float = 0.02, noise: float = 0.3,
          margin: float = 0.02) -> list[stats.Cell]:
    """One simulated study: J = len(mu) cells of k seeds, each pooled by the lab's rule."""
    J = len(mu)
    seeds = list(range(k))
    m_sd = np.broadcast_to(np.asarray(model, dtype=float), (J,))
    i_sd = np.broadcast_to(np.asarray(inputs, dtype=float), (J,))
    d = rng.normal(0.0, draw, k)
    out = []
    for j in range(J):
        u = rng.normal(0.0, i_sd[j], N_INPUTS)
        per_seed = []
        for s in seeds:
            scores = mu[j] + d[s] + rng.normal(0.0, m_sd[j]) + u + rng.normal(0.0, noise, N_INPUTS)
            est = E.Estimate(float(scores.mean()), float(scores.std(ddof=1) / np.sqrt(N_INPUTS)), "paired",
                             N_INPUTS, "simulated", scores=scores)
            t = C.test("gap", est, ">=", 0.0)
            per_seed.append([C.claim("sim", "simulated", "none", {}, "gap >= 0", [t], "simulated", over="seeds",
                                     seeds=[s])])
        pooled = C.pool(per_seed, seeds)[0]
        out.append(stats.cell_of(j, pooled, margin))
    return out
