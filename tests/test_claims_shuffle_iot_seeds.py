"""Shuffle's and IOT's claims over training seeds (issue 46): what each claim generalises over, the one-network
verdict at one seed, pooling at three seeds, and the calibration of IOT's "inputs prefer orders" against its seed
control when every trained model's disagreement rate varies between seeds (the old rule, judged on one seed's
held-out inputs, held falsely 2.4 / 8.4 / 21 / 33 % of the time at 0 / 10 / 20 / 40 % variation)."""

from __future__ import annotations

import numpy as np
import pytest

from lab import claims as C
from lab import estimates as E
from lab.experiments.iot import claims as iot_claims

N, M, K = 4000, 4, 3  # held-out inputs (the MLP's), candidate orders, seeds pooled
BASE, FLIP = 0.93, 0.035  # accuracy of the shared difficulty; a model's disagreement rate with it (~7 % between two)
N_PROBE = 1000  # the probe split on which each seed's best order and best control seed are chosen


def _group(rng: np.random.Generator, easy: np.ndarray, flip: float, cv: float) -> tuple[np.ndarray, np.ndarray]:
    """M models per simulation and seed on the shared inputs: right where the input is easy, flipped at each model's
    own rate, which varies between trainings by `cv` of its mean; and each model's index of the best one on an
    independent probe split. easy: [S, N] -> outcomes [S, K, M, N], best [S, K]."""
    s = easy.shape[0]
    rate = np.clip(flip * (1 + cv * rng.standard_normal((s, K, M))), 0.0, 0.5)
    out = easy[:, None, None, :] ^ (rng.random((s, K, M, N)) < rate[..., None])
    probe = rng.binomial(N_PROBE, np.clip(BASE * (1 - rate) + (1 - BASE) * rate, 0, 1)) / N_PROBE
    return out, probe.argmax(-1)


def _gaps(out: np.ndarray, best: np.ndarray) -> np.ndarray:
    """Per input, right in any of the M models minus right in the best one: [S, K, N]."""
    chosen = np.take_along_axis(out, best[..., None, None], axis=2)[:, :, 0]
    return out.max(2).astype(np.float64) - chosen


def _pooled_holds(d: np.ndarray, threshold: float) -> np.ndarray:
    """The pooled test of lab.estimates.over_design at Z, vectorised over simulations: d [S, K, N] -> holds [S]."""
    s, k, n = d.shape
    rm, cm, m = d.mean(2), d.mean(1), d.mean((1, 2))
    resid = d - rm[:, :, None] - cm[:, None, :] + m[:, None, None]
    ms_e = (resid ** 2).sum((1, 2)) / ((k - 1) * (n - 1))
    varying = rm.var(1, ddof=1)
    repeating = np.maximum(cm.var(1, ddof=1) - ms_e / k, 0.0) / n
    se = np.maximum(np.sqrt(E.t_factor(k - 1) ** 2 * varying / k + repeating), 1 / (n * np.sqrt(k)))
    return m - threshold > E.Z * se


def simulate(sims: int, order_flip: float, cv: float, seed: int) -> dict[str, np.ndarray]:
    """`sims` pooled experiments of K seeds: the orders' and the seed control's outcomes, and the verdicts of the new
    rule (pooled over seeds: both tests hold) and of the old one (seed 0 alone, judged over its inputs)."""
    rng = np.random.default_rng(seed)
    holds, old, kept = [], [], []
    for lo in range(0, sims, 100):  # chunks keep the memory small
        s = min(100, sims - lo)
        easy = rng.random((s, N)) < BASE  # the same held-out inputs at every seed: shared difficulty
        fx, fb = _group(rng, easy, order_flip, cv)
        sd, sb = _group(rng, easy, FLIP, cv)
        gap, excess = _gaps(fx, fb), _gaps(fx, fb) - _gaps(sd, sb)
        holds.append(_pooled_holds(gap, iot_claims.GAP_MIN) & _pooled_holds(excess, 0.0))
        g0, e0 = gap[:, 0], excess[:, 0]
        se0 = np.maximum(e0.std(1) / np.sqrt(N), 1 / N)
        old.append((g0.mean(1) - iot_claims.GAP_MIN > E.Z * np.maximum(g0.std(1) / np.sqrt(N), 1 / N))
                   & (e0.mean(1) > E.Z * se0))
        if lo == 0:
            kept.append((fx[:3], fb[:3], sd[:3], sb[:3]))
    return {"holds": np.concatenate(holds), "old": np.concatenate(old), "first": kept[0]}


def _run(fx: np.ndarray, fb: np.ndarray, sd: np.ndarray, sb: np.ndarray, seed: int) -> dict:
    """One seed's joined run (the pieces claim_inputs_prefer reads) from simulated outcomes."""
    acc = [float(v.mean()) for v in fx]
    return {"config": {"space": "blocks", "explore": 1.0, "exploit": 0.1, "gumbel": True, "m": M, "seed": seed},
            "n_test": N, "fixed_acc": acc, "fixed_outcomes": [E.pack(v) for v in fx], "best_fixed_order": int(fb),
            "best_fixed_acc": acc[int(fb)], "fixed_oracle_acc": float(fx.max(0).mean()),
            "fixed_best_share": [1 / M] * M,
            "seed_control": {"seeds": list(range(M)), "acc": [float(v.mean()) for v in sd], "best": int(sb),
                             "best_acc": float(sd[int(sb)].mean()), "oracle_acc": float(sd.max(0).mean()),
                             "outcomes": [E.pack(v) for v in sd]}}


@pytest.mark.parametrize("cv", [0.0, 0.1, 0.2, 0.4])
def test_calibration_inputs_prefer_orders_over_seeds(cv: float):
    """Orders that differ only by training noise, each model's disagreement rate varying between seeds by `cv` of
    its mean: pooled over 3 seeds, "inputs prefer orders" holds falsely at most 5 % of 2,000 simulations (an upper
    95 % binomial bound on the observed rate, so the test can fail on a rate near 5 %); the old rule on one seed's
    inputs holds falsely far more often where the models vary. The vectorised verdict is the lab's: on the first
    simulations it equals C.pool of the claims of the three seeds."""
    from scipy.stats import beta

    sims = 2000
    out = simulate(sims, FLIP, cv, seed=int(100 * cv) + 1)
    false = int(out["holds"].sum())
    assert beta.ppf(0.95, false + 1, sims - false) <= 0.05
    if cv >= 0.2:
        assert out["old"].mean() > 0.1  # what seeds as the unit mend
    fx, fb, sd, sb = out["first"]
    for j in range(3):
        per_seed = [[iot_claims.claim_inputs_prefer(_run(fx[j, s], fb[j, s], sd[j, s], sb[j, s], s))]
                    for s in range(K)]
        assert all(c[0]["holds"] is None and c[0]["why"] == C.ONE_NETWORK for c in per_seed)
        pooled = C.pool(per_seed, list(range(K)))[0]
        assert pooled["over"] == "seeds" and pooled["seeds"] == [0, 1, 2] and not pooled.get("why")
        assert (pooled["holds"] is True) == bool(out["holds"][j])


def test_inputs_prefer_orders_over_seeds_detects_orders_that_disagree_more():
    """Orders that disagree much more than seeds (12 % flip against 3.5 %, 20 % variation between seeds): pooled
    over 3 seeds the claim holds in most simulations (measured: 85 %)."""
    out = simulate(300, 0.12, 0.2, seed=9)
    assert out["holds"].mean() >= 0.75


def test_simulation_is_fast_enough():
    import time

    t0 = time.perf_counter()
    simulate(2000, FLIP, 0.4, seed=3)
    assert time.perf_counter() - t0 < 10
