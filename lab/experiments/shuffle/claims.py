"""Shuffle's claims (Freiberger et al. 2024, LayerShuffle), as declarations on top of lab/claims.py and
lab/estimates.py: pure functions of the pieces of `experiment.py` (a run of one mode and the comparison modes'
pieces it reads), computed when a result is read (`result_claims`), never stored in it."""

from __future__ import annotations

import itertools
import math
from dataclasses import fields
from typing import Any, Optional, Sequence

import numpy as np

from lab import estimates as E
from lab.claims import Claim, claim, noise_words, pct, pts, reads, test
from lab.core.recipes import VIT_MODE_LABELS
from lab.core.task_facts import config_task, task_clause, task_words
from lab.experiments.shuffle.experiment import ShuffleResult

OWN_TASK = "digits"  # the task the configs default to (ShuffleConfig.task): the recipe was chosen on it
PAPER = "Freiberger et al. 2024 (LayerShuffle), on ImageNet/CIFAR-100 ViTs"
RECIPE_CHOICE = ("the lab's recipe (stem drawn at 0.1 of unit scale, no weight decay) was chosen on a validation "
                 "split among settings in which LayerShuffle trains, partly because it lowers the sequential model's "
                 "accuracy in random orders (47 % on validation, against 68-71 % with a unit-scale stem; "
                 "lab/core/recipes.py): the baseline's fall is partly a choice of recipe")
# On another task the numbers above are not this task's: the recipe was chosen on its own task, not this one.
RECIPE_ELSEWHERE = ("the lab's recipe (stem drawn at 0.1 of unit scale, no weight decay) was chosen on a validation "
                    "split of its own task, not this one, among settings in which LayerShuffle trains, partly because "
                    "it lowers the sequential model's accuracy in random orders (lab/core/recipes.py): the baseline's "
                    "fall is partly a choice of recipe")


def data(task: str = OWN_TASK) -> str:
    """The data a run's models read, as a source names it: 8x8 digits (as it always read) or the task's label."""
    return task_words(task, OWN_TASK, "8x8 digits")


def source(task: str = OWN_TASK) -> str:
    """The paper and this lab's setting on `task`."""
    return PAPER + f"; here a 6-block ViT on {data(task)}"


def recipe_choice(task: str = OWN_TASK) -> str:
    """How the recipe was chosen, in words true of `task`."""
    return RECIPE_CHOICE if task == OWN_TASK else RECIPE_ELSEWHERE


def inputs(task: str = OWN_TASK, plural: str = "images") -> str:
    """What one held-out input is, in a rule or a detail: `plural` of the digits ("images", "digits"), else
    "inputs" (an MNIST-1D signal is no image and no digit)."""
    return plural if task == OWN_TASK else "inputs"


def task_of(runs: dict[str, dict[str, Any]]) -> str:
    """The task of a run's pieces (every piece of one run reads the same task): the first config a piece carries
    (ModelSummary's, or the run's own), else the own task (pieces written by hand)."""
    for r in runs.values():
        task = config_task(r.get("config"))
        if task is not None:
            return task
    return OWN_TASK


def seeds_of(runs: dict[str, dict[str, Any]]) -> list[int]:
    """The training seed of a run's pieces, as the list a claim over seeds names (every piece of one run shares its
    seed): the first config that carries one, else seed 0 (pieces written by hand)."""
    for r in runs.values():
        cfg = r.get("config")
        seed = cfg.get("seed") if isinstance(cfg, dict) else getattr(cfg, "seed", None)
        if seed is not None:
            return [int(seed)]
    return [0]


RETAIN_ANY = 0.9  # "works in any order": the mean over orders keeps 90 % of the trained order's margin
RETAIN_WORST = 0.5  # ... and the worst order keeps half of it
NEAR_CHANCE = 0.10  # "falls to near chance": the mean over orders within 10 points of chance
PRUNE_KEEP = 0.5  # "prunes gracefully": with half the blocks removed, half of the margin above chance is kept
# "About 20 % lower" (the paper's figure for arbitrary orders against the sequential baseline), read as a band of half
# the figure either side: a relative drop from 10 % to 30 % of the sequential model's accuracy. Narrower would ask
# more than "about" says of one paper's number across its models; wider would let a drop of a third, or of a
# twentieth, count as the paper's.
COST_BAND = (0.10, 0.30)


def _draws_note(exact: bool, count: int) -> str:
    return f"every one of the {count} orders (exact over orders)" if exact else f"{count} random orders"


def orders_scores(r: dict[str, Any]) -> dict[str, Any]:
    """A model's accuracy over orders, per input: every order when the table of all orders is there (the average is
    then exact over orders), else the random sample (its draws' variance joins the error). `scores` is the share of
    orders that get each input right, `worst` the right/wrong of the worst order, `draws` the sample's per-order
    accuracies (None when exact)."""
    a = r.get("all_orders")
    src, exact = (a, True) if a and a.get("outcomes") else (r["random_orders"], False)
    mat = np.stack([E.unpack(t) for t in src["outcomes"]]).astype(np.float64)
    accs = list(src["accs"])
    return {"scores": mat.mean(0), "worst": mat[int(np.argmin(accs))], "draws": None if exact else accs,
            "count": len(accs), "exact": exact, "mean": float(mat.mean()), "min": float(min(accs))}


def _base(r: dict[str, Any]) -> np.ndarray:
    return E.as_scores(r["outcomes"]["base"])


def _of_scores(scores: np.ndarray, draws: Optional[Sequence[float]]) -> E.Estimate:
    """The mean of per-input scores on held-out inputs (binomial error, an upper bound for averaged outcomes), plus
    the variance of the random draws it averages, if it is a sample."""
    est = E.accuracy(scores)
    if not draws or len(draws) < 2:
        return est
    var = float(np.var(draws, ddof=1)) / len(draws)
    return E.Estimate(est.value, math.sqrt(est.se ** 2 + var), est.se_kind, est.n,
                      est.how + f", plus the variance of {len(draws)} random draws")


def claim_falls_to_chance(seq: dict[str, Any], task: str = OWN_TASK) -> Claim:
    """A sequential model run in other orders falls to near chance: its mean over orders is within NEAR_CHANCE of
    chance."""
    o, n = orders_scores(seq), seq["n_test"]
    bar = seq["chance"] + NEAR_CHANCE
    est = _of_scores(o["scores"], o["draws"])
    t = test("mean over orders", est, "<=", bar)
    return claim("seq_random_chance", "A sequentially trained ViT run in random block orders falls to near chance",
                 source(task) + "; " + recipe_choice(task),
                 {"sequential_acc": seq["base_acc"], "random_mean": o["mean"], "random_min": o["min"],
                  "orders": o["count"], "exact_over_orders": o["exact"], "chance": seq["chance"], "bar": bar,
                  "n_test": n},
                 f"the mean accuracy over {_draws_note(o['exact'], o['count'])} is within {100 * NEAR_CHANCE:.0f} "
                 f"points of chance (at most {pct(bar)}), {noise_words(est.se, kind=est.se_kind)}", [t],
                 f"trained order {pct(seq['base_acc'])}, mean over {_draws_note(o['exact'], o['count'])} "
                 f"{pct(o['mean'])} (worst {pct(o['min'])}), chance {pct(seq['chance'])}; {n} held-out inputs",
                 subject="sequential", over="inputs")


def claim_any_order(shu: dict[str, Any], label: str, task: str = OWN_TASK) -> Claim:
    """A LayerShuffle model works in any order: the mean over orders keeps RETAIN_ANY of the trained order's margin
    above chance, and the worst order keeps RETAIN_WORST of it. mean - chance >= r (base - chance) is
    mean - r base >= (1 - r) chance: a paired difference on the same inputs."""
    o, n, ch = orders_scores(shu), shu["n_test"], shu["chance"]
    base = _base(shu)
    t_mean = test("mean over orders - 0.9 x trained order", E.paired(o["scores"], RETAIN_ANY * base, o["draws"]),
                  ">=", (1 - RETAIN_ANY) * ch)
    t_worst = test("worst order - 0.5 x trained order", E.paired(o["worst"], RETAIN_WORST * base), ">=",
                   (1 - RETAIN_WORST) * ch)
    margin = shu["base_acc"] - ch
    return claim("shuffle_any_order", "A LayerShuffle-trained ViT works in any block order", source(task),
                 {"trained_order_acc": shu["base_acc"], "random_mean": o["mean"], "random_min": o["min"],
                  "orders": o["count"], "exact_over_orders": o["exact"], "chance": ch,
                  "threshold_mean": ch + RETAIN_ANY * margin, "threshold_worst": ch + RETAIN_WORST * margin,
                  "n_test": n},
                 f"over {_draws_note(o['exact'], o['count'])}, the mean keeps {RETAIN_ANY:.0%} of the trained "
                 f"order's margin above chance and the worst order keeps {RETAIN_WORST:.0%} of it, each by more than "
                 f"2 standard errors (paired on the same {n} {inputs(task)}: {100 * t_mean['se']:.1f} and "
                 f"{100 * t_worst['se']:.1f} pts)", [t_mean, t_worst],
                 f"trained order {pct(shu['base_acc'])}, mean over {_draws_note(o['exact'], o['count'])} "
                 f"{pct(o['mean'])} (needs {pct(ch + RETAIN_ANY * margin)}), worst {pct(o['min'])} (needs "
                 f"{pct(ch + RETAIN_WORST * margin)}), chance {pct(ch)}; {n} held-out inputs", subject=label,
                 over="inputs")


def claim_costs_accuracy(seq: dict[str, Any], shu: dict[str, Any], label: str, task: str = OWN_TASK,
                         seeds: Sequence[int] = (0,)) -> Claim:
    """LayerShuffle pays for order robustness about as much as the paper says: its mean over orders lies 10 % to
    30 % (COST_BAND, relative) below the sequential model in its trained order (the paper's "about 20 %" compares
    arbitrary orders with the sequential baseline). An intersection-union test of the two bounds, each linear in
    the per-input scores: drop >= lo x seq is (1 - lo) seq - shuffle >= 0, drop <= hi x seq is (1 - hi) seq -
    shuffle <= 0, paired on the images. Two separately trained models: a claim over seeds."""
    n = seq["n_test"]
    o = orders_scores(shu)
    lo, hi = COST_BAND
    lo_w, hi_w = f"{100 * lo:.0f} %", f"{100 * hi:.0f} %"
    base = _base(seq)
    est = E.paired(base, o["scores"], o["draws"])
    t_lo = test(f"drop - {lo_w} of sequential", E.paired((1 - lo) * base, o["scores"], o["draws"]), ">=", 0.0)
    t_hi = test(f"drop - {hi_w} of sequential", E.paired((1 - hi) * base, o["scores"], o["draws"]), "<=", 0.0)
    gap = est.value
    rel = gap / seq["base_acc"] if seq["base_acc"] > 0 else float("nan")
    orders_w = _draws_note(o["exact"], o["count"])
    return claim("shuffle_costs_accuracy", "A LayerShuffle model in arbitrary orders is less accurate than the "
                 "sequential baseline (the paper: about 20 % lower)",
                 source(task) + "; compared here: LayerShuffle's mean over orders against the sequential model in its "
                 f"trained order; \"about 20 %\" read as a relative drop of {lo_w} to {hi_w}",
                 {"sequential_acc": seq["base_acc"], "random_mean": o["mean"], "gap": gap, "relative_drop": rel,
                  "band_low": lo, "band_high": hi, "shuffle_trained_order_acc": shu["base_acc"], "n_test": n},
                 f"LayerShuffle's mean over {orders_w} lies {lo_w} to {hi_w} (relative) below the sequential model "
                 f"in its trained order: the drop is above {lo_w} of the sequential accuracy and below {hi_w} of it, "
                 f"each by more than 2 standard errors (paired on the same {n} {inputs(task)}: "
                 f"{100 * t_lo['se']:.1f} and {100 * t_hi['se']:.1f} pts); two separately trained models, so the "
                 "training seeds are the unit", [t_lo, t_hi],
                 f"sequential (trained order) {pct(seq['base_acc'])}, {label} over {orders_w} {pct(o['mean'])}: "
                 f"{pts(-gap)} (relative {100 * -rel:+.0f} %; the paper: about -20 %, band -{lo_w} to -{hi_w}); "
                 f"{label} in its own trained order {pct(shu['base_acc'])}", subject=label, seeds=list(seeds),
                 over="seeds")


def probe_matrix(probe: dict[str, Any], kind: str = "unit") -> np.ndarray:
    """The probe's test rows as [order, input] accuracy over slots: the clusters of its error."""
    o, s, i = probe["shape"]
    return E.unpack(probe["outcomes"][kind]).reshape(o, s, i).mean(1).astype(np.float64)


def claim_slot_decodable(r: dict[str, Any], shu: dict[str, Any], label: str, task: str = OWN_TASK,
                         seeds: Sequence[int] = (0,)) -> Claim:
    """-position / -predict: the slot is decodable from what the blocks wrote, above chance and above plain
    LayerShuffle's probe on the same test orders and digits. The -position model adds a slot embedding into the
    stream by construction (its blocks' `slot_proj`), which a probe would read whatever the blocks do: the probe
    that decides reads the unit-length features with the model's own added slot vectors removed (the control;
    -predict adds none, so for it they are its features). Errors from a two-way bootstrap over test orders and
    digits (the rows of one order or one digit are not independent). Two separately trained models (this variant
    against plain LayerShuffle): a claim over seeds."""
    p, q = r["probe"], shu["probe"]
    mine = probe_matrix(p, "unit_without_slot")
    est_c = E.cluster_bootstrap(mine)
    est_d = E.cluster_bootstrap(mine - probe_matrix(q))
    with_slot = p["acc_direction"]
    o, _, i = p["shape"]
    what = inputs(task, "digits")
    rows = (f"a logistic-regression probe trained on {p['n_train']:,} rows (10 random orders x 100 held-out {what} x "
            f"{round(1 / p['chance'])} slots) and tested on {p['n_test']:,} rows of {o} other orders and {i} other "
            f"{what}")
    return claim("slot_decodable", "Blocks of a LayerShuffle model told (or asked for) their position leave it "
                 "readable in their outputs", "Freiberger et al. 2024 show outputs clustering by position in UMAP; "
                 "this lab tests it with a linear probe on the unit-length CLS token after each slot (the raw token's "
                 "norm alone tells how many blocks have run), with the model's own added slot vectors removed (the "
                 "-position model adds its slot embedding into the stream, which a probe would read by construction), "
                 "with the lab's split sizes; -predict's stem starts at 0.2, the others at 0.1 (lab/core/recipes.py)"
                 + task_clause(task, OWN_TASK),
                 {"probe_acc_without_slot": p["acc_without_slot"], "probe_acc_unit": with_slot,
                  "probe_acc_raw": p["acc"], "chance": p["chance"],
                  "shuffle_probe_acc_unit": q["acc_direction"], "shuffle_probe_acc_raw": q["acc"],
                  "n_train_rows": p["n_train"], "n_test_rows": p["n_test"]},
                 "the probe on unit-length features with the model's own added slot vectors removed (the control: what "
                 "the blocks wrote, not the embedding added by construction) beats chance (1/slots) and plain "
                 "LayerShuffle's probe on the same rows, each by more than 2 standard errors (two-way bootstrap over "
                 f"{o} test orders x {i} {what}: {100 * est_c.se:.1f} and {100 * est_d.se:.1f} pts); two separately "
                 "trained models, so the training seeds are the unit",
                 [test("probe without the added slot vectors", est_c, ">=", p["chance"]),
                  test("probe without the added slot vectors - LayerShuffle's", est_d, ">=", 0.0)],
                 f"{rows}: with the added slot vectors removed {pct(p['acc_without_slot'])} against chance "
                 f"{pct(p['chance'])} and plain LayerShuffle's {pct(q['acc_direction'])} ({pts(est_d.value)}); with "
                 f"them (unit length) {pct(with_slot)}; raw features (norm included) {pct(p['acc'])}, LayerShuffle's "
                 f"{pct(q['acc'])}", subject=label, seeds=list(seeds), over="seeds")


SPREAD_MIN = 0.02  # "contribute according to position": a block's accuracy varies by 2+ points across its slots


def cell_scores(r: dict[str, Any]) -> np.ndarray:
    """Per-input accuracy of block b in slot s, averaged over every order that puts it there: [block, slot, input]."""
    mat = np.stack([E.unpack(t) for t in r["all_orders"]["outcomes"]]).astype(np.float64)
    depth = len(r["all_orders"]["block_slot"]["acc"])
    perms = np.array(list(itertools.permutations(range(depth))))
    return np.stack([np.stack([mat[perms[:, s] == b].mean(0) for s in range(depth)]) for b in range(depth)])


def held_out_spread(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per held-out input of the odd half, the mean over blocks of the accuracy in the block's best and in its worst
    slot, each slot chosen on the even half of the inputs: choosing and measuring on the same inputs would find a
    spread in noise alone. (Swapping the halves and pooling both measurements makes them depend on each other:
    measured, 7.5 % false "holds" at a 2-standard-error bar instead of 2.3 %.)"""
    even = np.arange(cells.shape[2]) % 2 == 0
    means = cells[:, :, even].mean(2)  # [block, slot] on the even half
    b = np.arange(cells.shape[0])
    return cells[b, means.argmax(1)][:, ~even].mean(0), cells[b, means.argmin(1)][:, ~even].mean(0)


def claim_position_matters(r: dict[str, Any], seq: Optional[dict[str, Any]], label: str, task: str = OWN_TASK
                           ) -> Claim:
    """Blocks contribute according to their position: from the block x slot map (every order), the mean over blocks
    of (best slot - worst slot), slots chosen on one half of the images and measured on the other (choosing and
    measuring on the same images would find a spread in noise alone), paired over those images, against
    SPREAD_MIN."""
    bs = r["all_orders"]["block_slot"]
    acc = np.asarray(bs["acc"])
    seen = [float(v) for v in acc.max(1) - acc.min(1)]
    hi, lo = held_out_spread(cell_scores(r))
    est = E.paired(hi, lo)
    measured = {"held_out_spread": est.value, "in_sample_spreads": seen, "orders_per_cell": bs["count"]}
    more = ""
    if seq is not None and seq.get("all_orders") and seq["all_orders"].get("outcomes"):
        sh, sl = held_out_spread(cell_scores(seq))
        measured["sequential_held_out_spread"] = float((sh - sl).mean())
        more = f"; the sequential model's: {100 * measured['sequential_held_out_spread']:.1f} pts"
    return claim("blocks_by_position", "Blocks of a LayerShuffle model contribute according to their position",
                 "Freiberger et al. 2024 (layers 'learn to contribute differently based on their position', from "
                 "per-layer analyses); here: held-out accuracy of every order, averaged over the orders that put a "
                 "block in a slot" + task_clause(task, OWN_TASK, "; on "), measured,
                 f"a block's accuracy in its best slot exceeds that in its worst by more than {100 * SPREAD_MIN:.0f} "
                 f"points on average over blocks (best and worst slot chosen on half of the {inputs(task)}, measured "
                 f"on the other half), "
                 f"{noise_words(est.se, kind='paired')}",
                 [test("best - worst slot (held-out half)", est, ">=", SPREAD_MIN)],
                 f"best minus worst slot per block as seen: {', '.join(f'{100 * d:.1f}' for d in seen)} pts; "
                 f"held-out half: mean {100 * est.value:.1f} pts ({bs['count']} orders per cell){more}", subject=label,
                 over="inputs")


def _prune_scores(r: dict[str, Any], k: int, key: str) -> tuple[np.ndarray, dict[str, Any]]:
    row = r["pruning"][k][key]
    return np.asarray(row["right"], dtype=np.float64) / len(row["accs"]), row


def claim_prunes_gracefully(shu: dict[str, Any], seq: dict[str, Any], label: str, task: str = OWN_TASK,
                            seeds: Sequence[int] = (0,)) -> Claim:
    """A LayerShuffle model degrades gracefully when blocks are removed: with half of them removed (kept blocks in
    random order) it keeps PRUNE_KEEP of its margin above chance, and it beats the sequential model with the same
    blocks removed (kept in their trained order, that model's best case), paired on the same images. Against a
    separately trained model: a claim over seeds."""
    depth, n, ch = shu["n_blocks"], shu["n_test"], shu["chance"]
    k = depth // 2
    s_scores, s_row = _prune_scores(shu, k, "random_order")
    q_scores, q_row = _prune_scores(seq, k, "trained_order")
    s_draws = None if s_row["exact"] else s_row["accs"]
    t_keep = test(f"{k} removed - {PRUNE_KEEP:g} x trained order",
                  E.paired(s_scores, PRUNE_KEEP * _base(shu), s_draws), ">=", (1 - PRUNE_KEEP) * ch)
    if not s_row["exact"] and not q_row["exact"]:  # the same random subsets for both models: their draws pair
        draws = [a - b for a, b in zip(s_row["accs"], q_row["accs"], strict=True)]
    else:
        draws = s_draws or (None if q_row["exact"] else q_row["accs"])
    t_vs = test(f"LayerShuffle - sequential, {k} removed", E.paired(s_scores, q_scores, draws), ">=", 0.0)
    kept = (s_row["mean"] - ch) / (shu["base_acc"] - ch) if shu["base_acc"] > ch else float("nan")
    how = "every subset in every order" if s_row["exact"] else f"{len(s_row['accs'])} random subsets"
    return claim("prune_graceful", "A LayerShuffle model degrades gracefully when blocks are removed at test time, "
                 "unlike the sequential model",
                 "Freiberger et al. 2024 (pruning at test time: LayerShuffle models keep most of their accuracy as "
                 f"layers are removed); here with half the blocks removed, on {data(task)}",
                 {"removed": k, "pruned_acc": s_row["mean"], "trained_order_acc": shu["base_acc"],
                  "sequential_pruned_acc": q_row["mean"], "share_kept": kept, "chance": ch,
                  "exact": bool(s_row["exact"]), "n_test": n},
                 f"with {k} of {depth} blocks removed ({how}, the rest in random order), {label} keeps at least "
                 f"{PRUNE_KEEP:.0%} of its trained order's margin above chance, and beats the sequential model with "
                 f"the same blocks removed (the rest in their trained order), each by more than 2 standard errors "
                 f"(paired on the same {n} {inputs(task)}); against a separately trained model, so the training seeds "
                 "are the unit", [t_keep, t_vs],
                 f"{k} removed: {label} {pct(s_row['mean'])} ({kept:.0%} of its margin above chance kept; trained "
                 f"order {pct(shu['base_acc'])}), sequential {pct(q_row['mean'])}; chance {pct(ch)}", subject=label,
                 seeds=list(seeds), over="seeds")


def claims(runs: dict[str, dict[str, Any]], mode: str) -> list[Claim]:
    """The claims a run of `mode` tests, from the pieces of the modes in `claim_modes(mode)` (any piece that is
    missing leaves its claims out): each with its numbers, rule and three-way verdict."""
    out: list[Claim] = []
    task = task_of(runs)
    seeds = seeds_of(runs)
    seq = runs.get("sequential")
    if seq is not None and seq.get("random_orders") is not None:
        out.append(claim_falls_to_chance(seq, task))
    subject = "shuffle" if mode == "sequential" else mode
    shu = runs.get(subject)
    if shu is not None and shu.get("random_orders") is not None:
        label = VIT_MODE_LABELS[subject]
        out.append(claim_any_order(shu, label, task))
        if seq is not None:
            out.append(claim_costs_accuracy(seq, shu, label, task, seeds))
        if shu.get("all_orders") and shu["all_orders"].get("outcomes"):
            out.append(claim_position_matters(shu, seq, label, task))
        if seq is not None and shu.get("pruning") and seq.get("pruning") and shu["n_blocks"] >= 2:
            out.append(claim_prunes_gracefully(shu, seq, label, task, seeds))
    r, ref = runs.get(mode), runs.get("shuffle")
    if (mode in ("position", "predict") and r is not None and r.get("probe") is not None and ref is not None
            and ref.get("probe") is not None and "unit_without_slot" in r["probe"]["outcomes"]):
        out.append(claim_slot_decodable(r, ref, VIT_MODE_LABELS[mode], task, seeds))
    return out


def runs_of(r: ShuffleResult) -> dict[str, dict[str, Any]]:
    """The pieces `claims` reads, from a run's result: the run's own model (its fields) and the comparison models'
    pieces, which share its depth."""
    mine = {f.name: getattr(r, f.name) for f in fields(r)}
    return {r.mode: mine, **{mo: {**piece, "n_blocks": r.n_blocks} for mo, piece in r.comparison.items()}}


@reads(ShuffleResult)
def result_claims(r: ShuffleResult) -> list[Claim]:
    """The claims of a run's result, computed when it is read (`lab.claims.of`)."""
    return claims(runs_of(r), r.mode)


def trained_order_difference(a: dict[str, Any], b: dict[str, Any]) -> E.Estimate:
    """a's accuracy in its trained order minus b's, paired on the same held-out inputs (reported, not judged)."""
    return E.paired(_base(a), _base(b))
