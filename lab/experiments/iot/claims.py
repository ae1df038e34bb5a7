"""IOT's claims (Zhu et al. 2021), as declarations on top of lab/claims.py and lab/estimates.py: pure functions of
a joined run (and its twin with the exploration term switched), and of a sweep over M; computed when a joined run or
a sweep is read (`run_claims`, `sweep_result_claims`), never stored."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from lab import estimates as E
from lab.claims import Claim, claim, noise_words, pct, pts, reads, test
from lab.core.task_facts import task_clause
from lab.experiments.iot.experiment import IOTConfig, JoinedRun, SweepOfM, run, sweep_configs
from lab.runtime.plain import from_plain

SOURCE = "Zhu et al. 2021 (IOT, ICLR 2021), on translation (IWSLT14 De-En, decoder sub-layer orders)"
SPACE_SOURCES = {"blocks": "; here over block orders (the paper reorders sub-layers; the same router applies)",
                 "shared": "; here the paper's space, one sub-layer order for every block, which a two-sub-layer ViT "
                           "block reduces to 2 orders",
                 "sublayers": "; here over per-block sub-layer orders (2^D: the lab's extension, not the paper's "
                              "space, which shares one order across blocks)"}
PAPER_WEIGHTS = (0.1, 0.01)  # the paper's exploration / exploitation loss weights
ALIKE = 0.03  # "about the same on average": every two orders trained alone within 3 points
GAP_MIN = 0.01  # "inputs prefer different orders": the oracle beats the best fixed order by at least 1 point
CHARGE = 0.5  # the preference test charges the orders half of each input they lose against the control (see below)
COLLAPSE = 0.9  # "the choice collapses": the most chosen order takes at least 90 % of the held-out inputs


def seeds_of(r: dict[str, Any]) -> list[int]:
    """The training seed of a joined run, as the list a claim over seeds names (seed 0 for a run written by hand)."""
    return [int(r["config"].get("seed", 0))]


SEEDS_UNIT = ("separately trained models, so the training seeds are the unit (at one seed it cannot tell; pooled "
              "over seeds, the error has the spread between seeds)")


def _source(r: dict[str, Any]) -> str:
    """The paper, the lab's space of orders and, off the model's own task (config task None), the task it ran on."""
    return SOURCE + SPACE_SOURCES[r["config"]["space"]] + task_clause(r["config"].get("task"), lead="; on ")


def _training_source(r: dict[str, Any]) -> str:
    """The source of a claim on IOT training: where the lab's training departs from the paper's and the official
    code's."""
    c = r["config"]
    weights = f"loss weights {c['explore']:g} (exploration) and {c['exploit']:g} (exploitation) where the paper " \
              f"uses {PAPER_WEIGHTS[0]:g} and {PAPER_WEIGHTS[1]:g}"
    noise = "Gumbel-softmax at a temperature fixed at 1 (the official code anneals it)" if c.get("gumbel", True) \
        else "plain softmax weights (Gumbel noise off; the official code samples with an annealed temperature)"
    return _source(r) + f"; departures in training: {noise}, {weights}, no clamp on the choice probabilities"


def fixed_gap(r: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per input, (right in any order trained alone, right in the best fixed order chosen on the probe split)."""
    o = np.stack([E.as_scores(t) for t in r["fixed_outcomes"]])
    return o.max(0), o[r["best_fixed_order"]]


def seed_gap(r: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per input, (right in any of the control's M seeds, right in its best seed chosen on the probe split)."""
    c = r["seed_control"]
    o = np.stack([E.as_scores(t) for t in c["outcomes"]])
    return o.max(0), o[c["best"]]


def gap_scores(right: np.ndarray, best: Any) -> np.ndarray:
    """Per input, the oracle gap of M models with the charge of the preference test: right in any of them, minus
    right in the best one (chosen on the probe split), plus CHARGE x the number of them right. `right` is
    [..., M, N] (any leading dimensions: one run, or simulations x seeds), `best` the index of the best model per
    leading position; the answer is [..., N]."""
    o = np.asarray(right, dtype=np.float64)
    b = np.asarray(best)[..., None, None]
    chosen = np.take_along_axis(o, np.broadcast_to(b, o.shape[:-2] + (1, o.shape[-1])), axis=-2)[..., 0, :]
    return o.max(-2) - chosen + CHARGE * o.sum(-2)


def preference_scores(r: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per held-out input, (the orders' `gap_scores`, the seed control's): their paired difference is the
    preference test of `claim_inputs_prefer`."""
    fx = np.stack([E.as_scores(t) for t in r["fixed_outcomes"]])
    sc = r["seed_control"]
    sd = np.stack([E.as_scores(t) for t in sc["outcomes"]])
    return gap_scores(fx, r["best_fixed_order"]), gap_scores(sd, sc["best"])


def claim_orders_alike(r: dict[str, Any]) -> Claim:
    """Models trained alone in the M orders score about the same: every two within ALIKE, paired on the same held-out
    inputs. An equivalence over every ordered pair (an intersection-union test: it holds only when each difference
    is clearly below the margin), so no pair is picked by its test accuracy (the best and the worst picked on the
    same inputs would favour "does not hold"; picked on other inputs they would favour "holds")."""
    acc, n = r["fixed_acc"], r["n_test"]
    out = [E.as_scores(t) for t in r["fixed_outcomes"]]
    pairs = [(i, j) for i in range(len(out)) for j in range(len(out)) if i != j]
    tests = [test(f"order {i} - order {j}", E.paired(out[i], out[j]), "<=", ALIKE) for i, j in pairs]
    spread = max(acc) - min(acc)
    worst = max(tests, key=lambda t: t["value"] + 2 * t["se"])
    return claim("orders_alike", "Models that differ only in layer order score about the same on average",
                 _source(r) + "; the paper (Section 1, Table 1): BLEU 34.60-34.78 over six orders",
                 {"fixed_acc": acc, "spread": spread, "margin": ALIKE, "n_test": n},
                 f"every two of the {len(acc)} orders (each trained alone) differ by less than the margin of "
                 f"{100 * ALIKE:.0f} points, each of the {len(tests)} ordered differences by more than 2 standard "
                 f"errors (paired; the largest error {100 * max(t['se'] for t in tests):.1f} pts); " + SEEDS_UNIT,
                 tests,
                 f"orders trained alone: {', '.join(pct(a) for a in acc)}; spread {100 * spread:.1f} pts on {n} "
                 f"held-out inputs (closest to the margin: {worst['name']}, {100 * worst['value']:+.1f} pts)",
                 seeds=seeds_of(r), over="seeds")


def claim_inputs_prefer(r: dict[str, Any]) -> Claim:
    """Single inputs prefer different orders: the oracle over the orders trained alone beats the best fixed order
    (chosen on the probe split) by at least GAP_MIN, and by more than independent repeats of one order already do.

    The control: the same oracle over M models of the trained order that differ only in their seed, trained at the
    orders' own seeds (experiment.py: order j at the control's seed j), so that without a preference the orders and
    the control are exchangeable and the test below is centred at 0. The preference test compares, input by input
    (paired), the orders' oracle gap with the control's, charged CHARGE x the inputs the orders lose against the
    control model for model. Why the charge: with one model per order, an order whose training is only noisier (its
    errors fall on more inputs, at random) opens a larger oracle gap than the control without any preference: each
    input it gets right by chance where every other model is wrong adds one to the oracle. Noise takes more than it
    gives, though: it turns a right input wrong at least as often as a wrong one right, so an order that is only
    noisier loses accuracy against its control model faster than it adds to the oracle wherever an order's accuracy
    minus 1/2 exceeds the share of inputs the other orders all miss (every model here), and the charged difference
    falls below 0. An order that is right on other inputs at the same accuracy (a preference) is charged nothing.
    Simulated nulls (shared-seed errors, noisier orders) and power: tests/test_claims_shuffle_iot_seeds.py. The
    orders and the control are separately trained models whose disagreement varies from one training to the next:
    the training seeds are the unit (at one seed it cannot tell; pooled over seeds the error has the spread between
    seeds)."""
    n = r["n_test"]
    o_any, o_best = fixed_gap(r)
    gap = E.paired(o_any, o_best)
    o_score, c_score = preference_scores(r)
    excess = E.paired(o_score, c_score)
    sc = r["seed_control"]
    seed_gap_ = sc["oracle_acc"] - sc["best_acc"]
    shortfall = float(np.mean(sc["acc"]) - np.mean(r["fixed_acc"]))
    return claim("inputs_prefer_orders", "Single inputs prefer different orders: choosing the best order per input "
                 "beats the best fixed order, by more than choosing the best of as many seeds does",
                 _source(r) + "; the paper (Section 1, Table 1): each order is the best one for 14-18 % of "
                 "sentences; the seed control (M models of the trained order at the orders' own seeds, differing "
                 "only in the order) and the charge for the accuracy the orders lose are the lab's",
                 {"fixed_oracle_acc": r["fixed_oracle_acc"], "best_fixed_acc": r["best_fixed_acc"], "gap": gap.value,
                  "seed_oracle_acc": sc["oracle_acc"], "seed_best_acc": sc["best_acc"], "seed_gap": seed_gap_,
                  "accuracy_shortfall": shortfall, "charge": CHARGE, "excess": excess.value,
                  "best_share": r["fixed_best_share"], "n_test": n},
                 f"the oracle (right when any order trained alone is right) beats the best fixed order by at least "
                 f"{100 * GAP_MIN:.0f} point ({noise_words(gap.se, kind='paired')}), and its gap exceeds the seed "
                 f"control's (the same oracle over M models of the trained order at the orders' seeds), charged "
                 f"{CHARGE:g} of each input the M orders lose against the M control models, so that orders that "
                 f"are only noisier than the control do not pass ({noise_words(excess.se, kind='paired')}); the best "
                 "order and the best seed chosen on the probe split; " + SEEDS_UNIT,
                 [test("order oracle - best fixed order", gap, ">=", GAP_MIN),
                  test("order gap - seed gap - charge", excess, ">=", 0.0)],
                 f"oracle {pct(r['fixed_oracle_acc'])}, best fixed order {pct(r['best_fixed_acc'])}: gap "
                 f"{pts(gap.value)}; {len(sc['seeds'])} seeds of the trained order: oracle {pct(sc['oracle_acc'])}, "
                 f"best {pct(sc['best_acc'])}: seed gap {pts(seed_gap_)}; the orders score {pts(-shortfall)} against "
                 f"the control on average; beyond the control, charged: {pts(excess.value)}; each order is the "
                 f"lowest-loss one for {', '.join(f'{x:.0%}' for x in r['fixed_best_share'])} of the {n} held-out "
                 "inputs", seeds=seeds_of(r), over="seeds")


def claim_router_closes_gap(r: dict[str, Any]) -> Claim:
    """The predictor closes part of the shared weights' oracle gap: IOT above the same weights' best single order,
    paired on the held-out inputs."""
    n = r["n_test"]
    oc = r["outcomes"]
    est = E.paired(E.as_scores(oc["iot"]), E.as_scores(oc["orders"][r["shared_best_order"]]))
    gain = est.value
    room = r["oracle_acc"] - r["shared_best_acc"]
    share = gain / room if room > 0 else float("nan")
    return claim("router_closes_gap", "A light predictor recovers part of the gap between the best single order and "
                 "the best order per input", _training_source(r),
                 {"iot_acc": r["iot_acc"], "shared_best_acc": r["shared_best_acc"], "oracle_acc": r["oracle_acc"],
                  "gain": gain, "gap_share": share, "n_test": n},
                 f"IOT (each input in its predicted order) beats the same weights in their best single order (chosen "
                 f"on the probe split) {noise_words(est.se, kind='paired')}",
                 [test("IOT - best single order", est, ">=", 0.0)],
                 f"IOT {pct(r['iot_acc'])}, best single order {pct(r['shared_best_acc'])}, oracle "
                 f"{pct(r['oracle_acc'])}: {pts(gain)} of a {100 * room:.1f}-point gap ({share:.0%})" if room > 0
                 else f"IOT {pct(r['iot_acc'])}, best single order {pct(r['shared_best_acc'])}: no gap to close "
                 f"(oracle {pct(r['oracle_acc'])})", over="inputs")


def claim_iot_beats_baselines(r: dict[str, Any]) -> Claim:
    """IOT beats the better of the sequential model and the other orders trained alone (the paper's headline),
    paired. The better one is the best fixed order chosen on the probe split (order 0 is the sequential model), not
    on the test inputs: a choice on the inputs it is tested on would bias the test. Separately trained models: a
    claim over seeds."""
    n = r["n_test"]
    j = r["best_fixed_order"]
    est = E.paired(E.as_scores(r["outcomes"]["iot"]), E.as_scores(r["fixed_outcomes"][j]))
    return claim("iot_beats_baselines", "IOT beats the model trained in one fixed order", _training_source(r),
                 {"iot_acc": r["iot_acc"], "sequential_acc": r["sequential_acc"], "best_fixed_acc": r["best_fixed_acc"],
                  "best_fixed_order": j, "gain": est.value, "n_test": n},
                 f"IOT beats the better of the sequential model and the other orders trained alone (the best fixed "
                 f"order, chosen on the probe split; order 0 is the sequential model) "
                 f"{noise_words(est.se, kind='paired')}; " + SEEDS_UNIT,
                 [test("IOT - best fixed order", est, ">=", 0.0)],
                 f"IOT {pct(r['iot_acc'])}, sequential {pct(r['sequential_acc'])}, best fixed order (order {j}, "
                 f"chosen on the probe split) {pct(r['fixed_acc'][j])}: {pts(est.value)} on {n} held-out inputs",
                 seeds=seeds_of(r), over="seeds")


def claim_agreement(r: dict[str, Any]) -> Claim:
    """The predictor picks the input's best order more often than always picking the most common best order, paired
    on the held-out inputs."""
    n = r["n_test"]
    honest = max(r["best_share"])
    agree = r["oracle_agreement"]
    est = E.paired(E.as_scores(r["outcomes"]["agree"]), E.as_scores(r["outcomes"]["common_best"]))
    return claim("predictor_finds_best_order", "The predictor picks each input's best order",
                 _training_source(r) + "; the baseline is always picking the most common best order, not 1/M",
                 {"agreement": agree, "most_common_best_share": honest, "one_over_m": 1 / len(r["best_share"]),
                  "n_test": n},
                 f"the predictor's choice equals the lowest-loss order more often than always choosing the most "
                 f"common lowest-loss order, {noise_words(est.se, kind='paired')}",
                 [test("agreement - most common best order", est, ">=", 0.0)],
                 f"agreement {agree:.0%} against {honest:.0%} for always choosing the most common best order (1/M = "
                 f"{1 / len(r['best_share']):.0%}); {n} held-out inputs", over="inputs")


def first_epoch_at(curve: list[float], level: float) -> Optional[int]:
    """The first epoch (1-based) whose value reaches `level`, or None."""
    return next((i + 1 for i, v in enumerate(curve) if v >= level), None)


def claim_collapse(r: dict[str, Any], twin: dict[str, Any]) -> Claim:
    """Without the exploration loss the choice collapses onto one order, and with it it does not: the share of the
    held-out inputs that choose the most chosen order after the last epoch, off (binomial, against COLLAPSE) and off
    against on (paired on the same inputs). Two separately trained IOT models: a claim over seeds."""
    on, off = (r, twin) if r["config"]["explore"] > 0 else (twin, r)
    n = r["n_test"]
    top_off, top_on = E.as_scores(off["outcomes"]["top_choice"]), E.as_scores(on["outcomes"]["top_choice"])
    est_off = E.accuracy(top_off)
    est = E.paired(top_off, top_on)
    s_off, s_on = est_off.value, float(top_on.mean())
    when = first_epoch_at(off["curves"]["top_share"], COLLAPSE)
    epochs = len(off["curves"]["top_share"])
    return claim("collapse_without_exploration", "Without the exploration loss the choice collapses onto one order",
                 _training_source(on), {"top_share_off": s_off, "top_share_on": s_on, "first_epoch_off": when or 0,
                                        "epochs": epochs, "explore_on": on["config"]["explore"], "n_test": n},
                 f"with exploration weight 0 the most chosen order takes at least {COLLAPSE:.0%} of the held-out "
                 f"inputs after the last epoch ({noise_words(est_off.se, kind='binomial')}), and more than with "
                 f"exploration on ({noise_words(est.se, kind='paired')}); " + SEEDS_UNIT,
                 [test("top share, exploration off", est_off, ">=", COLLAPSE),
                  test("top share, off - on", est, ">=", 0.0)],
                 f"most chosen order after epoch {epochs}: {s_off:.0%} of the inputs with exploration off, "
                 f"{s_on:.0%} with it on (weight {on['config']['explore']:g}); "
                 + (f"off first reached {COLLAPSE:.0%} after epoch {when}" if when else
                    f"off never reached {COLLAPSE:.0%} in {epochs} epochs"), seeds=seeds_of(r), over="seeds")


@reads(JoinedRun)
def run_claims(r: JoinedRun) -> list[Claim]:
    """The claims of a joined run, computed when it is read (with its twin's collapse claim when it has one)."""
    return claims(r, r.get("twin"))


@reads(SweepOfM)
def sweep_result_claims(sw: SweepOfM) -> list[Claim]:
    """The claims of a sweep over M, computed when it is read, from its joined runs (read again from the store)."""
    cfg = from_plain(IOTConfig, sw["config"])
    runs = [run(c, twin=False) for c in sweep_configs(cfg, [row["m"] for row in sw["rows"]])]
    return sweep_claims(cfg.space, runs)


def claims(r: dict[str, Any], twin: Optional[dict[str, Any]] = None) -> list[Claim]:
    """Every claim a joined IOT run tests (the collapse needs the twin training with exploration switched)."""
    out = []
    if len(r["fixed_acc"]) > 1:
        out += [claim_orders_alike(r), claim_inputs_prefer(r), claim_router_closes_gap(r)]
    out += [claim_iot_beats_baselines(r)]
    if len(r["fixed_acc"]) > 1:
        out.append(claim_agreement(r))
    if twin is not None and len(r["fixed_acc"]) > 1:
        out.append(claim_collapse(r, twin))
    return out


def sweep_claims(space: str, runs: Sequence[dict[str, Any]]) -> list[Claim]:
    """Over a sweep of joined runs: the oracle gap of the orders trained alone, beyond the seed control's (charged as
    in `claim_inputs_prefer`), grows with M; the predictor's gain over the best single order grows with M. Compared:
    the smallest M >= 2 against the largest, each a paired per-input score on the same held-out inputs."""
    rs = sorted((r for r in runs if r["config"]["m"] >= 2), key=lambda r: r["config"]["m"])
    if len(rs) < 2:
        return []
    a, b = rs[0], rs[-1]
    ma, mb, n = a["config"]["m"], b["config"]["m"], a["n_test"]
    src = (SOURCE + SPACE_SOURCES[space] + task_clause(a["config"].get("task"), lead="; on ")
           + "; the paper's M is the number of candidate orders")

    def excess(r: dict[str, Any]) -> np.ndarray:  # the preference test's per-input score (claim_inputs_prefer)
        o, c = preference_scores(r)
        return o - c

    grow = E.paired(excess(b), excess(a))

    def gain(r: dict[str, Any]) -> np.ndarray:
        return E.as_scores(r["outcomes"]["iot"]) - E.as_scores(r["outcomes"]["orders"][r["shared_best_order"]])

    gains = E.paired(gain(b), gain(a))

    def gap_line(r: dict[str, Any]) -> str:
        sc = r["seed_control"]
        return (f"M = {r['config']['m']}: orders {100 * (r['fixed_oracle_acc'] - r['best_fixed_acc']):.1f}, seeds "
                f"{100 * (sc['oracle_acc'] - sc['best_acc']):.1f} pts")

    def share(r: dict[str, Any]) -> str:
        room = r["oracle_acc"] - r["shared_best_acc"]
        return f"{(r['iot_acc'] - r['shared_best_acc']) / room:.0%}" if room > 0 else "n/a"

    c_grow = claim("oracle_gap_grows_with_m", "The oracle gap over orders, beyond what as many seeds give, grows with "
                   "the number of candidate orders M", src + "; the seed control is the lab's",
                   {"m_small": ma, "m_large": mb, "excess_small": float(excess(a).mean()),
                    "excess_large": float(excess(b).mean()), "n_test": n},
                   f"the oracle gap of the orders trained alone minus that of as many seeds of the trained order "
                   f"(charged {CHARGE:g} of each input the orders lose against them) is larger at M = {mb} than at "
                   f"M = {ma}, {noise_words(grow.se, kind='paired')}; " + SEEDS_UNIT,
                   [test(f"excess at M = {mb} - at M = {ma}", grow, ">=", 0.0)],
                   "oracle gap over the best fixed choice: " + "; ".join(gap_line(r) for r in rs),
                   seeds=seeds_of(a), over="seeds")
    c_gain = claim("router_gain_grows_with_m", "The predictor turns a larger choice into a larger gain",
                   _training_source(b) + "; the paper's M is the number of candidate orders",
                   {"m_small": ma, "m_large": mb, "gain_small": float(gain(a).mean()),
                    "gain_large": float(gain(b).mean()), "n_test": n},
                   f"IOT's gain over the same weights' best single order is larger at M = {mb} than at M = {ma}, "
                   f"{noise_words(gains.se, kind='paired')}; " + SEEDS_UNIT,
                   [test(f"gain at M = {mb} - at M = {ma}", gains, ">=", 0.0)],
                   "IOT minus best single order (share of the oracle gap) " + ", ".join(
                       f"M = {r['config']['m']}: {100 * (r['iot_acc'] - r['shared_best_acc']):+.1f} pts ({share(r)})"
                       for r in rs), seeds=seeds_of(a), over="seeds")
    return [c_grow, c_gain]
