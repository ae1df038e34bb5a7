"""Re-initialise's claims: the paper's statements checked against a robustness map, noise included (lab/claims.py).

Every accuracy of a map is measured on the same held-out inputs as the trained model's, so comparisons are paired
(lab/estimates.paired on the per-input outcomes the map keeps). Each claim function is a declaration: key,
statement, source, the estimate and the rule. The thresholds of "robust" and "critical" are here too, as the
heatmap's per-layer verdicts use the same ones (declared in experiment.py, which computes those verdicts). The
claims are computed when a result is read (`reads`: a map, a layer in focus, a group), never stored in it.

What a verdict generalises over (`over`, lab/claims.py): a change to one layer of one trained network is about that
network, over its held-out inputs (`over="inputs"`: every map, focus and group claim); a comparison of separately
trained networks (residual against plain, one width against another, one task against another) is about the
architecture or the task, over training seeds (`over="seeds"`, the seed listed: one seed cannot tell, a pool of at
least 3 seeds decides).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import numpy as np

from lab import claims as C
from lab import estimates as E
from lab.claims import Claim, Z, pct, pts, reads
from lab.core import metrics
from lab.core.task_facts import config_task, task_words
from lab.experiments.reinit.experiment import (
    CRITICAL_KEEP,
    MODEL_NAMES,
    MODELS,
    RERAND,
    ROBUST_KEEP,
    FocusResult,
    GroupResult,
    ReinitResult,
    column,
    keeps_estimate,
)
from lab.ops import weight_ops

RERAND_MARGIN = 0.01  # non-inferiority margin of "re-randomising hurts at least as much": 1 point of accuracy
BOOTSTRAP = 1000  # paired bootstrap draws over the held-out inputs (group and width claims)


def keeps_test(name: str, changed: Any, base: Any, share: float, chance: float, side: str) -> dict[str, Any]:
    """The test "the changed model keeps at least (side '>=') / less than (side '<=') `share` of the trained model's
    above-chance accuracy" on per-input outcomes of the same inputs: acc - share x base against (1 - share) x chance,
    paired (the trained model's own noise included)."""
    return C.test(name, keeps_estimate(changed, base, share), side, (1 - share) * chance)


PAPER = ("Zhang, Bengio, Singer, Are All Layers Created Equal? (2019; JMLR 2022), Sec. 3: FCNs on MNIST, ResNets "
         "on CIFAR-10. Here: ")
AFTER = (", one model per seed, one fresh draw per re-randomisation; robust / critical at 90 % / 50 % of the "
         "above-chance accuracy kept are this lab's thresholds (the paper reads its heatmaps by eye)")
OWN_SETTING = {"mlp": "MLPs of 7 blocks on a synthetic 20-class task", "vit": "a 6-block ViT on 8x8 digits"}


def source(model: str, task: Optional[str]) -> str:
    """The source of a claim on `model` ("plain", "residual" or "vit") run on `task` (None: the model's own task):
    that model and the data it ran on, and nothing of the other models (on a table task the page's MLPs read the
    table while its ViT, which cannot, stays on digits)."""
    family = "vit" if model == "vit" else "mlp"
    if task is None:
        return PAPER + OWN_SETTING[family] + AFTER
    what = "a 6-block ViT" if family == "vit" else "MLPs of 7 blocks"
    return PAPER + f"{what} on {task_words(task)}" + AFTER


def _cells(r: Any, label: str) -> list[np.ndarray]:
    """One heatmap column's per-input held-out outcomes, one vector per layer."""
    j = r.checkpoints.index(label)
    return [E.as_scores(row[j]) for row in r.outcomes]


def _threshold(r: Any, share: float) -> float:
    """The accuracy that keeps `share` of the trained model's above-chance accuracy."""
    return r.chance + share * (r.base_acc - r.chance)


def _plain_claims(r: Any) -> list[Claim]:
    """The paper's fully-connected-net claims, on the plain MLP's map."""
    n, layers, base, chance = r.n_test, r.layers, r.base_acc, r.chance
    t0, rr = column(r, "t=0"), column(r, RERAND)
    c0, crr, cb = _cells(r, "t=0"), _cells(r, RERAND), E.as_scores(r.base_outcomes)
    first = layers[0]
    crit = _threshold(r, CRITICAL_KEEP)
    src = source(r.model, config_task(r.config))
    out = [C.claim(
        "reinit.plain-first-layer-critical", "In a fully connected net the first layer is critical: re-initialising "
        "it to its initial draw (t = 0) loses most of what training gave", src,
        {"first_t0_acc": t0[0], "base_acc": base, "chance": chance, "threshold": crit, "n_test": n},
        f"the first layer ({first}) at t = 0 keeps less than {CRITICAL_KEEP:.0%} of the above-chance accuracy "
        f"(below {pct(crit)}): acc − {CRITICAL_KEEP:g} × trained ≤ {1 - CRITICAL_KEEP:g} × chance, paired over the "
        f"same inputs, by more than {Z:g} standard errors",
        [keeps_test(f"{first} at t = 0 keeps < {CRITICAL_KEEP:.0%}", c0[0], cb, CRITICAL_KEEP, chance, "<=")],
        f"{first} re-initialised to t = 0: {pct(t0[0])} (trained {pct(base)}, chance {pct(chance)}, critical below "
        f"{pct(crit)}).", subject=r.model_name)]
    epochs = r.epochs
    late = [e for e in epochs if 0 < e < epochs[-1]]
    if late:
        e = late[-1]
        acc_late = column(r, f"t={e}")[0]
        est = E.paired(_cells(r, f"t={e}")[0], c0[0])
        detail = (f"{first} re-initialised to t = 0: {pct(t0[0])}; to t = {e}: {pct(acc_late)} "
                  f"({pts(acc_late - t0[0])}); every checkpoint: "
                  + ", ".join(f"t = {c} {pct(column(r, f't={c}')[0])}" for c in epochs) + ".")
        measured = {"first_t0_acc": t0[0], "first_late_acc": acc_late, "late_epoch": e, "n_test": n}
    else:  # a 1-epoch model (quick mode) has no checkpoint between its start and its end
        est, measured = E.exact(0.0, "no checkpoint between t = 0 and the end"), {"first_t0_acc": t0[0], "n_test": n}
        detail = f"This model kept no checkpoint between t = 0 and the end (epochs {epochs}): nothing to compare."
    out.append(C.claim(
        "reinit.plain-first-layer-damage-falls", "The first layer's damage falls as the checkpoint t grows: "
        "weights from later in training hurt less", src, measured,
        "accuracy with the first layer from the last checkpoint before the end is above its accuracy at t = 0, "
        f"paired over the same inputs, by more than {Z:g} standard errors; no such checkpoint: cannot tell",
        [C.test("late checkpoint minus t = 0", est, ">=", 0.0)], detail, subject=r.model_name))
    later = list(range(1, len(layers)))
    w = min(later, key=lambda i: t0[i])
    out.append(C.claim(
        "reinit.plain-later-layers-more-robust", "Later layers are more robust to re-initialisation than the first",
        src, {"first_t0_acc": t0[0], "weakest_later_t0_acc": t0[w], "n_test": n},
        f"every later layer, re-initialised to t = 0, keeps more accuracy than the first layer, each paired over the "
        f"same inputs by more than {Z:g} standard errors",
        [C.test(f"{layers[i]} minus {first} at t = 0", E.paired(c0[i], c0[0]), ">=", 0.0) for i in later],
        f"at t = 0: {first} {pct(t0[0])}; the weakest later layer, {layers[w]}, {pct(t0[w])} "
        f"({pts(t0[w] - t0[0])}).", subject=r.model_name))
    tests = [keeps_test(f"{layers[i]} re-randomised keeps < {CRITICAL_KEEP:.0%}", crr[i], cb, CRITICAL_KEEP, chance,
                        "<=") for i in range(len(layers))]
    worst = max(range(len(rr)), key=lambda i: rr[i])
    out.append(C.claim(
        "reinit.plain-rerand-fatal", "Re-randomising any layer of a fully connected net is fatal", src,
        {"rerand_acc": rr, "threshold": crit, "base_acc": base, "chance": chance, "n_test": n},
        f"every layer, re-randomised, keeps less than {CRITICAL_KEEP:.0%} of the above-chance accuracy (below "
        f"{pct(crit)}), each paired with the trained model by more than {Z:g} standard errors", tests,
        f"re-randomised: {sum(t['holds'] is True for t in tests)} of {len(rr)} layers clearly below {pct(crit)}; the "
        f"least damaged is {layers[worst]} at {pct(rr[worst])}.", subject=r.model_name))
    return out


@reads(ReinitResult)
def model_claims(r: ReinitResult) -> list[Claim]:
    """The claims one model's map can test: the fully connected net's (plain MLP), and two for every model."""
    n, layers = r.n_test, r.layers
    out = _plain_claims(r) if r.model == "plain" else []
    c0, crr = _cells(r, "t=0"), _cells(r, RERAND)
    # the mean over every layer (exact: no layer sampled), per input, paired
    est = E.paired(np.mean(c0, axis=0), np.mean(crr, axis=0))
    per_layer = [C.test(name, E.paired(a, b), ">=", -RERAND_MARGIN) for name, a, b in zip(layers, c0, crr,
                                                                                            strict=True)]
    against = [t["name"] for t in per_layer if t["holds"] is False]
    out.append(C.claim(
        f"reinit.{r.model}-rerand-hurts-more", "Re-randomising a layer hurts at least as much as re-initialising "
        "it to its own initial draw", source(r.model, config_task(r.config)) + "; tested on the mean over every layer "
        "of the model",
        {"mean_t0_minus_rerand": est.value, "margin": RERAND_MARGIN, "layers_against": against, "n_test": n},
        f"non-inferiority with a margin of {100 * RERAND_MARGIN:g} pt: the mean over layers of (accuracy at t = 0 "
        f"minus re-randomised) is above −{100 * RERAND_MARGIN:g} pt by more than {Z:g} standard errors (paired over "
        "the same inputs); below it by as much: does not hold",
        [C.test("mean over layers of t = 0 minus re-randomised", est, ">=", -RERAND_MARGIN)],
        f"mean over {len(layers)} layers: t = 0 keeps {pts(est.value)} more than a fresh draw (se "
        f"{100 * est.se:.2f} pts)" + (f"; clearly more than the margin the other way for {', '.join(against)}."
                                     if against else "."), subject=r.model_name))
    out.append(_moved_least_claim(r))
    return out


def _spearman_rows(a: list[float], rows: np.ndarray) -> np.ndarray:
    """`metrics.spearman(a, row)` for every row of `rows` at once (average ranks for ties; NaN where either side has
    no spread). Here, not in lab/core/metrics.py: every trained model's code version reaches that file."""
    from scipy.stats import rankdata

    ra = rankdata(np.asarray(a, float))
    rb = rankdata(np.asarray(rows, float), axis=1)
    ca, cb = ra - ra.mean(), rb - rb.mean(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (cb @ ca) / np.sqrt((ca @ ca) * (cb * cb).sum(1))
    return np.where((ra.std() == 0) | (rb.std(1) == 0), np.nan, out)


def rho_bootstrap(dist: list[float], damage_rows: np.ndarray, draws: int, seed: int) -> float:
    """Standard error of Spearman's rho(distance, mean damage per layer) under resampling the held-out inputs
    (rows of `damage_rows`: inputs x layers)."""
    gen = np.random.default_rng(seed)
    n = damage_rows.shape[0]
    means = np.stack([damage_rows[gen.integers(0, n, n)].mean(0) for _ in range(draws)])  # draws x layers
    # every draw's rho at once (a page computes its claims on each rerun: 200 calls of metrics.spearman cost 0.08 s
    # a model), the same statistic: Pearson's r of average ranks, NaN where a draw's damages have no spread
    vals = _spearman_rows(dist, means)
    vals = vals[~np.isnan(vals)]
    return float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0


PICK, TEST = slice(0, None, 2), slice(1, None, 2)  # a per-seed choice reads the even held-out inputs, its test the odd


def _moved_least_claim(r: Any) -> Claim:
    """Spearman's rho of distance from init and damage at t = 0 above 0: its error the larger of the spread of rho
    over unrelated rankings (1/sqrt(L - 1), exact under no ties) and its bootstrap over the inputs. Whether any layer's
    damage stands out of the noise (else nothing to rank: a placeholder test, exact 0 against 0, which `C.pool`
    refuses to pool with a real one) is decided on the even-indexed held-out inputs; rho and its bootstrap read the
    odd-indexed ones, so the choice does not select the inputs its test reads."""
    n, dist = r.n_test, r.distance["rel2"]
    cb, c0 = E.as_scores(r.base_outcomes), _cells(r, "t=0")
    keep = [i for i, x in enumerate(dist) if x is not None]
    visible = [i for i in keep if E.verdict(*_damage(cb[PICK], c0[i][PICK]), Z) is True]
    damage = [float(np.mean(cb[TEST] - c0[i][TEST])) for i in keep]
    rho = metrics.spearman([dist[i] for i in keep], damage) if len(keep) >= 3 else float("nan")
    if math.isnan(rho) or not visible:
        est = E.exact(0.0, "nothing to rank")
        why = ("no layer's damage stands out of the noise (even-indexed inputs): there is nothing to rank"
               if not visible else "the ranking is undefined (a constant column)")
        detail = f"Spearman ρ {'n/a' if math.isnan(rho) else f'{rho:+.2f}'} over {len(keep)} layers; {why}."
    else:
        rows = np.stack([cb[TEST] - c0[i][TEST] for i in keep], 1)
        boot = rho_bootstrap([dist[i] for i in keep], rows, 200, 0)
        null = 1.0 / math.sqrt(len(keep) - 1)
        est = E.Estimate(rho, max(null, boot), "bootstrap", len(keep),
                         f"the larger of the spread over unrelated rankings of {len(keep)} layers (±{null:.2f}) and "
                         f"a bootstrap over the odd-indexed held-out inputs (±{boot:.2f})")
        detail = (f"Spearman ρ(distance, damage) = {rho:+.2f} over {len(keep)} layers (damage on the odd-indexed "
                  f"inputs; {len(visible)} with damage beyond the noise on the even-indexed); error ±{est.se:.2f} "
                  f"({est.how}).")
    return C.claim(
        f"reinit.{r.model}-moved-least-robust", "The layers that moved least from their initialisation are the "
        "robust ones", source(r.model, config_task(r.config)) + "; the distance is ||θ_T − θ_0||₂ / ||θ_0||₂ per layer",
        {"rho": None if math.isnan(rho) else rho, "n_layers": len(keep), "layers_with_damage": len(visible),
         "n_test": n},
        f"Spearman's ρ of distance and damage at t = 0 (on the odd-indexed held-out inputs) is above 0 by more than "
        f"{Z:g} standard errors (the larger of 1/sqrt(L − 1), its spread over unrelated rankings, and its bootstrap "
        "over those inputs); below by as much: does not hold; no layer with damage beyond the noise on the "
        "even-indexed inputs (chosen there, so the test's inputs are not selected): cannot tell",
        [C.test("Spearman rho", est, ">=", 0.0, unit="")], detail, subject=r.model_name)


def _damage(base: np.ndarray, changed: np.ndarray) -> tuple[float, str, float, float]:
    """(damage, '>=', 0, se): the paired damage of a change, as arguments of lab.estimates.verdict."""
    est = E.paired(base, changed)
    return est.value, ">=", 0.0, est.se


def _compare(a: np.ndarray, b: np.ndarray) -> E.Estimate:
    """mean(a) - mean(b): paired when both are on the same held-out inputs (the MLPs share their task and seed)."""
    if a.size == b.size:
        return E.paired(a, b)
    return E.independent(E.accuracy(a), E.accuracy(b))


def residual_claim(plain: Any, res: Any) -> Claim:
    """Residual blocks keep more accuracy than plain ones, re-initialised (t = 0) and re-randomised alike: the mean
    over every hidden block and both changes, per input, paired."""
    def blocks(r: Any) -> np.ndarray:
        idx = [i for i, layer in enumerate(r.layers) if layer.startswith("blocks.")]
        js = (r.checkpoints.index(RERAND), r.checkpoints.index("t=0"))
        return np.mean([E.as_scores(r.outcomes[i][j]) for i in idx for j in js], axis=0)

    bp, br = blocks(plain), blocks(res)
    est = _compare(br, bp)
    mp, mr = float(bp.mean()), float(br.mean())
    return C.claim(
        "reinit.residual-more-robust", "Residual nets have more robust layers than plain ones",
        source(plain.model, config_task(plain.config))
        + "; both MLPs share their width, depth, recipe and test inputs and differ only in the skip connection",
        {"residual_blocks_mean": mr, "plain_blocks_mean": mp, "n_test": plain.n_test},
        "mean accuracy over the hidden blocks, re-initialised to t = 0 and re-randomised, is higher in the residual "
        f"MLP, paired over the same inputs by more than {Z:g} standard errors; an architecture claim, over training "
        f"seeds (one seed shows one pair of trained networks; {C.MIN_SEEDS} or more pooled seeds decide)",
        [C.test("residual minus plain", est, ">=", 0.0)],
        f"blocks changed one at a time (t = 0 and re-randomised, mean): residual {pct(mr)}, plain {pct(mp)} "
        f"({pts(mr - mp)}, se {100 * est.se:.2f} pts).", over="seeds", seeds=[_seed_of(plain)])


def _seed_of(r: Any) -> int:
    """The training seed of a map (its config is the dataclass in a fresh result, a dict once read back)."""
    return int(_plain_config(r.config)["seed"])


def _plain_config(c: Any) -> dict[str, Any]:
    """A result's config as a dict: the dataclass in a fresh result, a dict once read back from the store."""
    return c if isinstance(c, dict) else dataclasses.asdict(c)


@reads(FocusResult)
def result_focus_claims(f: FocusResult) -> list[Claim]:
    """The claims of a layer in focus, computed when it is read."""
    return focus_claims(f, MODEL_NAMES[f.config.model])


@reads(GroupResult)
def result_group_claims(g: GroupResult) -> list[Claim]:
    """The claims of a group of layers, computed when it is read."""
    return [group_claim({f.name: getattr(g, f.name) for f in dataclasses.fields(g)}, MODEL_NAMES[g.config.model])]


def maps_claims(results: dict[str, ReinitResult]) -> list[Claim]:
    """Every claim the given maps test: each model's own, then plain against residual when both are there."""
    out = [c for m in MODELS if m in results for c in model_claims(results[m])]
    if "plain" in results and "residual" in results:
        out.append(residual_claim(results["plain"], results["residual"]))
    return out


def width_claims(w: dict[str, Any]) -> list[Claim]:
    """The claims of a width sweep (`experiment.width_sweep`): the width claim."""
    return [width_claim(w)]


def focus_claims(f: Any, model_name: str) -> list[Claim]:
    """The layer in focus (a FocusResult of experiment.py, read by attribute; of the model labelled `model_name`),
    against the paper's notion of a robust layer (this lab's 90 % threshold), paired."""
    c, n = f.config, f.n_test
    what = weight_ops.done(c.op, c.checkpoint)
    thr = f.chance + ROBUST_KEEP * (f.base_acc - f.chance)
    return [C.claim(
        "reinit.focus-robust", f"The layer in focus is robust to this change ({what})",
        source(c.model, config_task(c)),
        {"cut_acc": f.cut_acc, "base_acc": f.base_acc, "chance": f.chance, "threshold": thr, "n_test": n},
        f"the changed model keeps at least {ROBUST_KEEP:.0%} of the above-chance accuracy (above {pct(thr)}): "
        f"acc − {ROBUST_KEEP:g} × trained ≥ {1 - ROBUST_KEEP:g} × chance, paired over the same inputs, by more than "
        f"{Z:g} standard errors",
        [keeps_test("keeps >= 90 %", f.outcomes["cut"], f.outcomes["base"], ROBUST_KEEP, f.chance, ">=")],
        f"{c.layer} {what}: {pct(f.cut_acc)} (trained {pct(f.base_acc)}, chance {pct(f.chance)}); "
        f"it keeps {f.kept_share:.0%} of the above-chance accuracy.", subject=f"{model_name}, "
        f"{c.layer}")]


def paired_bootstrap(vectors: list[Any], fn: Any, draws: Optional[int] = None, seed: int = 0) -> float:
    """Standard error of fn(accuracies) when the held-out inputs are resampled, the same inputs for every vector
    (the outcomes stay paired). `fn` takes the vectors' accuracies as rows (one column per resample) and returns one
    value per column; draws: BOOTSTRAP unless given."""
    m = np.stack([E.as_scores(v) for v in vectors])
    n = m.shape[1]
    d = draws or BOOTSTRAP
    idx = np.random.default_rng(seed).integers(0, n, size=(d, n))
    # each resample as how often it draws each input: a product instead of gathering vectors x draws x inputs
    # (128 MB and 0.15 s a claim at 1,000 draws of 4,000 inputs, on every rerun of the page)
    counts = np.bincount((idx + n * np.arange(d)[:, None]).ravel(), minlength=d * n).reshape(d, n)
    return float(np.std(fn((m @ counts.T.astype(float)) / n), ddof=1))


def shares_gap(accs: np.ndarray, chance: float) -> np.ndarray:
    """Independence null minus the group: accs = rows (trained, group, single 1, ..., single k), one column per
    resample (or a vector); a kept share is (acc - chance) / (trained - chance), floored at 0. Positive = the group
    keeps less than the product of its layers' kept shares (what independent damages would leave)."""
    gap = np.maximum(accs[0] - chance, 1e-9)
    share = np.maximum((accs[1:] - chance) / gap, 0.0)
    return np.prod(share[1:], axis=0) - share[0]


def group_claim(g: dict[str, Any], model_name: str) -> Claim:
    """Jointly fragile: the group keeps less of the above-chance accuracy than the product of its layers' kept
    shares (the independence null: each change removing its share of what the others left), paired bootstrap."""
    n, k, chance = g["n_test"], len(g["layers"]), g["chance"]
    o = g["outcomes"]
    vectors = [o["base"], o["group"], *o["single"]]
    accs = np.array([g["base_acc"], g["group_acc"], *g["single_accs"]])
    value = float(shares_gap(accs, chance))
    se = paired_bootstrap(vectors, lambda a: shares_gap(a, chance)) if k > 1 else 0.0
    est = (E.Estimate(value, se, "bootstrap", n, f"paired bootstrap over the {n:,} held-out inputs, {BOOTSTRAP} draws")
           if k > 1 else E.exact(0.0, "a group of one layer is its own single change"))
    gap = max(g["base_acc"] - chance, 1e-9)
    shares = [max((a - chance) / gap, 0.0) for a in g["single_accs"]]
    group_share = max((g["group_acc"] - chance) / gap, 0.0)
    c = _plain_config(g["config"])
    what = weight_ops.done(c["op"], c["checkpoint"])
    return C.claim(
        "reinit.group-jointly-fragile", "Layers can be fragile together: changing a group at once costs more than "
        "independent single damages would", source(c["model"], c.get("task"))
        + "; the group and its layers get the same change; the null is "
        "independence (kept shares multiply), this lab's reading of the paper's joint robustness",
        {"group_kept_share": group_share, "product_of_single_shares": float(np.prod(shares)),
         "single_kept_shares": shares, "group_damage": g["group_damage"], "sum_single_damage": g["sum_single_damage"],
         "n_test": n},
        "the group keeps a smaller share of the above-chance accuracy than the product of its layers' single kept "
        f"shares (independence), by more than {Z:g} standard errors (paired bootstrap over the inputs); a group of "
        "one layer cannot tell", [C.test("product of single shares minus group share", est, ">=", 0.0)],
        f"{', '.join(g['layers'])} {what}: together {pct(g['group_acc'])}, keeping {group_share:.0%} of the "
        f"above-chance accuracy; independent damages would keep {np.prod(shares):.0%} (alone: "
        + ", ".join(f"{name} {pct(a)}" for name, a in zip(g["layers"], g["single_accs"], strict=True)) + ").",
        subject=f"{model_name}, {len(g['layers'])} layers")


def top_layers(layers: list[str]) -> list[int]:
    """The upper half of a model's layers (the head included): the paper's "top layers"."""
    return list(range(len(layers) // 2, len(layers)))


def top_share(accs: np.ndarray, chance: float) -> np.ndarray:
    """accs = rows (trained, top layer 1 at t = 0, ...), one column per resample (or a vector): the mean kept share
    of the above-chance accuracy."""
    return np.mean((accs[1:] - chance) / np.maximum(accs[0] - chance, 1e-9), axis=0)


def width_claim(w: dict[str, Any]) -> Claim:
    """Wider nets have more robust top layers: the mean share of above-chance accuracy the top layers keep at t = 0,
    widest against narrowest (the same held-out inputs: paired bootstrap over them)."""
    n, chance, top = w["n_test"], w["chance"], top_layers(w["layers"])
    last = len(w["widths"]) - 1

    def vecs(j: int) -> list[Any]:
        return [w["base_outcomes"][j]] + [w["t0_outcomes"][j][i] for i in top]

    def accs(j: int) -> np.ndarray:
        return np.array([w["base_acc"][j]] + [w["t0_acc"][j][i] for i in top])

    shares = [float(top_share(accs(j), chance)) for j in range(len(w["widths"]))]
    k = len(top) + 1
    se = paired_bootstrap(vecs(last) + vecs(0), lambda a: top_share(a[:k], chance) - top_share(a[k:], chance))
    est = E.Estimate(shares[last] - shares[0], se, "bootstrap", n,
                     f"paired bootstrap over the {n:,} held-out inputs, {BOOTSTRAP} draws")
    return C.claim(
        f"reinit.{w['model']}-wider-more-robust-top", "Wider networks have more robust top layers",
        source(w["model"], w.get("task")) + f"; here one MLP per width ({', '.join(map(str, w['widths']))}), the "
        "same depth, recipe and seed; top layers = the upper half, head included",
        {"widths": w["widths"], "top_kept_share": shares, "n_test": n},
        f"the top layers, re-initialised to t = 0 one at a time, keep a larger mean share of the above-chance "
        f"accuracy at width {w['widths'][-1]} than at {w['widths'][0]}, by more than {Z:g} standard errors (paired "
        "bootstrap over the same inputs); a claim about width, over training seeds (one seed shows one network per "
        f"width; {C.MIN_SEEDS} or more pooled seeds decide)", [C.test("widest minus narrowest share", est, ">=", 0.0)],
        "mean share kept by the top layers at t = 0: " + ", ".join(
            f"width {x} {s:.0%}" for x, s in zip(w["widths"], shares, strict=True)) + ".",
        subject=w["model_name"], over="seeds", seeds=[int(w["seed"])])


def reach(r: Any) -> float:
    """How hard a map's task is for its model, on the even-indexed held-out inputs (the choice's split): the share
    of the possible above-chance accuracy the trained model reaches, (acc - chance) / (1 - chance)."""
    acc = float(E.as_scores(r.base_outcomes)[PICK].mean())
    return (acc - r.chance) / max(1.0 - r.chance, 1e-9)


def _lost(r: Any) -> tuple[float, float, int]:
    """The mean over every layer of the share of the above-chance accuracy lost when it is re-initialised to t = 0,
    on the odd-indexed held-out inputs (the test's split), with its paired bootstrap error, and how many inputs."""
    vecs = [E.as_scores(r.base_outcomes)[TEST]] + [c[TEST] for c in _cells(r, "t=0")]
    accs = np.array([float(v.mean()) for v in vecs])
    value = 1.0 - float(top_share(accs, r.chance))
    return value, paired_bootstrap(vecs, lambda a: 1.0 - top_share(a, r.chance)), int(vecs[0].size)


def task_claim(maps: list[Any]) -> Optional[Claim]:
    """Critical layers depend on the task: the same model trained on each of several tasks (one map per task), the
    hardest against the easiest. None unless there are two tasks of one model."""
    if len(maps) < 2 or len({m.model for m in maps}) != 1 or len({m.task for m in maps}) != len(maps):
        return None
    hard, easy = min(maps, key=reach), max(maps, key=reach)  # chosen on the even-indexed inputs
    (lh, sh, nh), (le, se, ne) = _lost(hard), _lost(easy)
    est = E.Estimate(lh - le, math.hypot(sh, se), "bootstrap", min(nh, ne),
                     f"two independent paired bootstraps over the odd-indexed held-out inputs of each task "
                     f"({BOOTSTRAP} draws each)")
    crit = {m.task: sum(v == "critical" for v in m.verdict_t0) for m in maps}
    model = hard.model
    return C.claim(
        f"reinit.{model}-harder-task-more-critical", "Which layers are critical depends on the task: on a harder "
        "task more of the layers are critical",
        "Zhang, Bengio, Singer, Are All Layers Created Equal? (2019; JMLR 2022): the same architectures have "
        "different critical layers on different data sets (e.g. FCNs on MNIST against CIFAR-10), this lab's reading "
        "being that harder data make more layers critical. Here: the same " + MODEL_NAMES[model] + " trained once "
        "per task (" + ", ".join(task_words(m.task) for m in maps) + "); a task's difficulty is how much of the "
        "possible above-chance accuracy its trained model reaches, on the even-indexed held-out inputs; the paper "
        "counts critical layers by eye, here the mean share of the above-chance accuracy lost over every layer "
        "re-initialised to t = 0, on the odd-indexed inputs (the critical counts at 50 % kept shown beside)",
        {"harder_task": hard.task, "easier_task": easy.task, "harder_lost_share": lh, "easier_lost_share": le,
         "critical_layers": crit, "n_layers": len(hard.layers), "tasks": len(maps)},
        "the mean share of the above-chance accuracy lost when one layer is re-initialised to t = 0 is larger on the "
        f"harder task (the lower share reached, chosen on the even-indexed inputs), by more than {Z:g} standard "
        "errors (paired bootstraps over the odd-indexed inputs, the tasks independent); smaller by as much: does "
        f"not hold; a claim about tasks, over training seeds (one model per task and seed; {C.MIN_SEEDS} or more "
        "pooled seeds decide)", [C.test("harder task minus easier, mean share lost", est, ">=", 0.0)],
        f"{task_words(hard.task)} (harder: the trained model reaches {reach(hard):.0%} of the possible above-chance "
        f"accuracy) loses {lh:.0%} of it on average per layer re-initialised, {crit[hard.task]} of "
        f"{len(hard.layers)} layers critical; {task_words(easy.task)} (reaches {reach(easy):.0%}) loses {le:.0%}, "
        f"{crit[easy.task]} critical.", subject=hard.model_name, over="seeds", seeds=[_seed_of(hard)])
