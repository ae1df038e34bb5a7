"""Train x take apart: the papers' claims, pure functions of the rows of one seed (experiment.py measures them; a
row is its typed `RowResult`, read by attribute), computed when a result is read (`result_claims`), never stored.

Every row is measured on the same held-out inputs, so two numbers of the matrix are compared paired, input by input
(lab/estimates.py: `paired`, the spread of the per-input differences); a claim that pools rows averages their
per-input scores first. A claim is left out while a row it needs is missing (the page draws rows as they land).

What a verdict generalises over (`over`, lab/claims.py): the rows are separately trained models, so a claim that
compares rows (robust, early_exit, looped, ln_scale: a recipe against another) is about the recipes, over training
seeds (`over="seeds"`, the row's seed listed: one seed cannot tell, `C.pool` over at least 3 seeds decides); a claim
about surgery inside each trained model (u_shape, attention, linear, influence) is about these networks, over their
held-out inputs (`over="inputs"`). tests/test_matrix_nulls.py simulates each rule under its null, the recipe claims
with per-model training variance and shared-input difficulty, pooled over seeds as the table pools them.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from lab import claims as C
from lab import estimates as E
from lab.claims import Claim, Z, pct, pts, reads
from lab.core.task_facts import task_words
from lab.experiments.matrix.experiment import MatrixResult, RowResult
from lab.experiments.matrix.surgery import R2_DRAWS

Rows = dict[str, RowResult]  # recipe -> its row

LINEAR_BAR = 0.95  # "nearly linear": R^2 of the affine fit of a block's update (output - input) at least this
LOOP_MARGIN = 0.05  # "close": the looped model within 5 points of the sequential model's held-out accuracy
# The default view's page-level false rate (the ViT at one seed): under a global null (every claim at the edge of
# its null), how many of PAGE_SIMS simulated pages had SOME claim say "holds" falsely, measured on the same draws for
# all claims (shared inputs, models and runs) by tests/test_matrix_nulls.py::
# test_the_default_views_page_level_false_rate_is_measured_and_stated, which fails if this count leaves its exact 95 %
# interval. Its PAGE_CLAIMS claims about these networks decide; the recipe claims cannot tell at one seed.
PAGE_FALSE_HOLDS, PAGE_SIMS, PAGE_CLAIMS = 179, 2000, 4


def departs(rows: Rows) -> str:
    """How this lab's setting departs from the papers': the model, the task and its held-out size, no retraining."""
    row = next(iter(rows.values()))
    cfg = row.config
    what = ("a 6-block ViT (width 64)" if cfg.model == "vit" else "an 8-block residual MLP (width 128)")
    task = task_words(cfg.task, None, "8x8 digits" if cfg.model == "vit" else "a synthetic 20-class task")
    return (f"Here: {what} on {task}, {row.n_test:,} held-out inputs, not a language model; no retraining after "
            "surgery")


def _slots(rows: Rows) -> int:
    """Block runs of the sequential route (6 for the ViT, 8 for the MLP)."""
    return rows["sequential"].n_slots if "sequential" in rows else next(iter(rows.values())).n_slots


def _v(row: RowResult, name: str) -> np.ndarray:
    return E.as_scores(row.per_input[name])


def _loss(row: RowResult, name: str) -> np.ndarray:
    """Per input: right in the intact model minus the share right after the surgery."""
    return _v(row, "base") - _v(row, name)


def _cost(loss: float) -> str:
    """An accuracy lost, in points (negative: gained)."""
    return f"{100 * loss + 0.0:.1f} pts"


def _noise(est: E.Estimate) -> str:
    return C.noise_words(est.se, Z, est.se_kind)


def _seeds(rows: Rows) -> list[int]:
    """The training seed of the rows (one seed's matrix): what a recipe claim lists as the seeds it rests on."""
    return sorted({int(r.seed) for r in rows.values()})


RECIPE = ("; a claim about the recipe, over training seeds: one seed shows one trained network's effect, "
          f"{C.MIN_SEEDS} or more pooled seeds decide")


def robust(rows: Rows) -> Optional[Claim]:
    if not {"sequential", "layerdrop", "shuffle"} <= set(rows):
        return None
    seq = _loss(rows["sequential"], "delete")
    tests, parts, measured = [], [], {"sequential_loss": float(seq.mean())}
    for r in ("layerdrop", "shuffle"):
        other = _loss(rows[r], "delete")
        est = E.paired(seq, other)
        tests.append(C.test(f"sequential's loss minus {rows[r].label}'s", est, ">=", 0.0))
        measured[f"{r}_loss"] = float(other.mean())
        parts.append(f"{rows[r].label} {_cost(other.mean())} ({pts(est.value)} less, se {100 * est.se:.1f})")
    return C.claim(
        "robust", "LayerDrop and LayerShuffle models lose less to any single deletion than the sequential model",
        "Fan et al. 2019 (LayerDrop) and Freiberger et al. 2024 (LayerShuffle), on transformers for text and images. "
        + departs(rows) + f"; the loss is the mean over the {_slots(rows)} single-block deletions",
        measured, "for both LayerDrop and LayerShuffle, the sequential model's mean loss over single-block deletions "
        "exceeds theirs by more than 2 standard errors (paired over the held-out inputs); either smaller by the "
        "Bonferroni z of the two tests: does not hold; otherwise cannot tell" + RECIPE, tests,
        f"Deleting one block costs the sequential model {_cost(seq.mean())} on average; " + "; ".join(parts) + ".",
        over="seeds", seeds=_seeds(rows))


def u_shape(rows: Rows) -> Optional[Claim]:
    row = rows.get("sequential")
    if row is None or "delete_each" not in row.per_input or row.n_blocks < 3:
        return None
    base = _v(row, "base")
    loss = [base - E.as_scores(p) for p in row.per_input["delete_each"]]
    middle = np.mean(loss[1:-1], 0)
    first, last = E.paired(loss[0], middle), E.paired(loss[-1], middle)
    n = row.n_blocks
    return C.claim(
        "u_shape", "the first and the last block are the most critical to delete (a U-shape)",
        "Lad, Gurnee, Tegmark 2024, The Remarkable Robustness of LLMs: Stages of Inference? (deleting the first or "
        "the last layer of an LLM hurts most, the middle layers little). " + departs(rows)
        + "; on the sequential model, "
        f"block 0 and block {n - 1} against the mean of blocks 1 to {n - 2}",
        {"first_loss": float(loss[0].mean()), "last_loss": float(loss[-1].mean()),
         "middle_loss": float(middle.mean())},
        "deleting the first block, and deleting the last, each cost more than deleting a middle block (their "
        "mean) by more than 2 standard errors, paired over the held-out inputs; either costing less by the "
        "Bonferroni z of the two tests: does not hold; otherwise cannot tell (these trained networks)",
        [C.test("first block's cost minus the middle's", first, ">=", 0.0),
         C.test("last block's cost minus the middle's", last, ">=", 0.0)],
        f"Deleting block 0 costs {_cost(loss[0].mean())}, block {n - 1} {_cost(loss[-1].mean())}, a middle block "
        f"{_cost(middle.mean())} on average.", subject=row.label)


def _above_bar(r2: float, se: float) -> float:
    """How many standard errors an R^2 lies above LINEAR_BAR (at the bar: 0; an exact number off it: +-inf)."""
    gap = r2 - LINEAR_BAR
    if se > 0:
        return gap / se
    return 0.0 if gap == 0 else math.copysign(math.inf, gap)


def linear(rows: Rows) -> Optional[Claim]:
    present = [r for r in rows if rows[r].linear_r2_update and rows[r].linear_r2_update_se]
    if not present:
        return None
    blocks = [(r, b) for r in present for b in range(len(rows[r].linear_r2_update))]
    # "every block's update at least the bar" is an intersection-union test: one test per block at z = 2 (no
    # correction on the "holds" side; the "does not hold" side takes the Bonferroni z of their number, lab/claims.py).
    # The test names are the blocks (the same at every seed), so a pool over seeds pools block with block.
    tests = []
    for r, b in blocks:
        est = E.Estimate(rows[r].linear_r2_update[b], rows[r].linear_r2_update_se[b], "bootstrap", 0,
                         f"{rows[r].label}'s block {b}: R^2 of its update (output - input) over every token of the "
                         f"training inputs, its error a bootstrap over the inputs ({R2_DRAWS:,} draws, the fit held "
                         "fixed)")
        tests.append(C.test(f"{rows[r].label} block {b}: R^2 of the update", est, ">=", LINEAR_BAR, unit=""))
    # the block fewest standard errors above the bar (shown, not chosen: every block is tested)
    r, b = min(blocks, key=lambda rb: _above_bar(rows[rb[0]].linear_r2_update[rb[1]],
                                                  rows[rb[0]].linear_r2_update_se[rb[1]]))
    value, se = rows[r].linear_r2_update[b], rows[r].linear_r2_update_se[b]
    upd = {k: min(rows[k].linear_r2_update) for k in present}
    whole = {k: min(rows[k].linear_r2) for k in present if rows[k].linear_r2}
    low = min(present, key=lambda k: upd[k])
    per = "; ".join(f"{rows[k].label} update {min(rows[k].linear_r2_update):.2f} to "
                    f"{max(rows[k].linear_r2_update):.2f}"
                    + (f" (whole block {min(rows[k].linear_r2):.3f} to {max(rows[k].linear_r2):.3f})"
                       if rows[k].linear_r2 else "") for k in present)
    return C.claim(
        "linear", "every block's map from its input to its output is nearly linear, its update included",
        "Razzhigaev et al. 2024, Your Transformer is Secretly Linear (Procrustes similarity of consecutive LLM "
        "embeddings ~0.99; lower once the residual component is removed). " + departs(rows) + "; linearity = R^2 "
        "of the least-squares affine map of each block (every token of the training inputs), judged on the block's "
        "update (output minus input), as the identity path makes the whole block's R^2 nearly 1 by construction "
        f"(shown beside); 'nearly' = at least {LINEAR_BAR}, over {len(present)} recipes",
        {"min_r2_update": upd[low], "min_r2_whole_block": min(whole.values()) if whole else None,
         "closest_r2_update": value, "closest_block": f"{rows[r].label} {b}", "blocks": len(blocks),
         "recipes": len(present)},
        f"every block's update (output minus input) has an affine-fit R^2 of at least {LINEAR_BAR}, each by more "
        "than 2 of its standard errors (a bootstrap over the training inputs; one test per block, all must hold); "
        "one block below by the Bonferroni z of the tests: does not hold; otherwise cannot tell (these trained "
        "networks)", tests,
        f"R^2 from the least to the most linear block: {per}. The least linear update: {rows[low].label}'s "
        f"({upd[low]:.2f}); replacing one block by its fit keeps {pct(rows[low].acc.get('linear', float('nan')))} "
        f"there. Closest to the bar: {rows[r].label}'s block {b}, R^2 of its update {value:.4f} (se {se:.4f}).")


def attention(rows: Rows) -> Optional[Claim]:
    present = [r for r in rows if "no_attn" in rows[r].per_input]
    if not present:
        return None
    a = np.mean([_v(rows[r], "no_attn") for r in present], 0)
    m = np.mean([_v(rows[r], "no_mlp") for r in present], 0)
    est = E.paired(a, m)
    per = "; ".join(f"{rows[r].label} {pct(rows[r].acc['no_attn'])} vs {pct(rows[r].acc['no_mlp'])}"
                    for r in present)
    return C.claim(
        "attention", "attention sub-layers are more deletable than MLP sub-layers",
        "He et al. 2024, What Matters in Transformers? Not All Attention Is Needed (LLMs, attention layers dropped "
        "by similarity). " + departs(rows)
        + "; each block's sub-layer deleted alone, averaged over the blocks and over "
        f"{len(present)} recipes",
        {"no_attn_acc": float(a.mean()), "no_mlp_acc": float(m.mean()), "recipes": len(present)},
        f"held-out accuracy with one attention sub-layer deleted exceeds that with one MLP sub-layer deleted, "
        f"{_noise(est)}, paired over the held-out inputs; below by as much: does not hold; otherwise cannot tell",
        [C.test("attention deleted minus MLP deleted", est, ">=", 0.0)],
        f"Mean over recipes and blocks: {pct(a.mean())} without an attention sub-layer, {pct(m.mean())} without an "
        f"MLP sub-layer ({pts(est.value)}). Per recipe: {per}.")


def early_exit(rows: Rows) -> Optional[Claim]:
    if not {"sequential", "early-exit"} <= set(rows):
        return None
    ee, seq = rows["early-exit"], rows["sequential"]
    est = E.paired(_v(ee, "exit"), _v(seq, "exit"))
    mid = ee.exit_mid_slot
    return C.claim(
        "early_exit", "early-exit training makes early exits usable",
        "Elhoushi et al. 2024, LayerSkip (an early-exit loss on every layer of an LLM, with layer dropout and "
        "self-speculative decoding). " + departs(rows)
        + f"; the loss at slot s weighted s / {_slots(rows) * (_slots(rows) + 1) // 2}, no layer "
        "dropout",
        {"early_exit_acc": float(_v(ee, "exit").mean()), "sequential_exit_acc": float(_v(seq, "exit").mean()),
         "mid_slot": mid, "early_exit_mid_acc": ee.profiles["exit"][mid],
         "sequential_mid_acc": seq.profiles["exit"][mid]},
        f"the head read after each slot before the last is right more often in the early-exit model than in the "
        f"sequential one, {_noise(est)} (mean over the exits, paired over the held-out inputs); below by as much: "
        "does not hold; otherwise cannot tell" + RECIPE,
        [C.test("early-exit model minus sequential, mean exit", est, ">=", 0.0)],
        f"Mean over the exits after slots 1 to {len(ee.route) - 1}: {pct(_v(ee, 'exit').mean())} against "
        f"{pct(_v(seq, 'exit').mean())}; after {mid} of {len(ee.route)} blocks the early-exit model's head reaches "
        f"{pct(ee.profiles['exit'][mid])} (sequential {pct(seq.profiles['exit'][mid])}; its own final "
        f"{pct(ee.base_acc)}).", over="seeds", seeds=_seeds(rows))


def looped(rows: Rows) -> Optional[Claim]:
    if not {"sequential", "looped"} <= set(rows):
        return None
    lo, seq = rows["looped"], rows["sequential"]
    est = E.paired(_v(lo, "base"), _v(seq, "base"))
    return C.claim(
        "looped", "the looped model is close to the sequential model of the same depth",
        "Saunshi et al. 2025 (ICLR), Reasoning with Latent Thoughts: On the Power of Looped Transformers (a k-layer "
        "block looped L times nearly matches a kL-layer model on reasoning tasks). " + departs(rows) + f"; k = "
        f"{lo.n_blocks} blocks run {lo.n_slots // max(lo.n_blocks, 1)} times against {_slots(rows)} blocks, 'close' = "
        f"within {100 * LOOP_MARGIN:.0f} points",
        {"looped_acc": lo.base_acc, "sequential_acc": seq.base_acc, "margin": LOOP_MARGIN},
        f"the held-out accuracy difference (looped minus sequential) lies inside +-{100 * LOOP_MARGIN:.0f} points, "
        f"each bound cleared {_noise(est)}, paired over the held-out inputs; outside by the Bonferroni z of the two "
        "tests: does not hold; otherwise cannot tell" + RECIPE,
        [C.test("looped minus sequential, above the lower bound", est, ">=", -LOOP_MARGIN),
         C.test("looped minus sequential, below the upper bound", est, "<=", LOOP_MARGIN)],
        f"Looped {pct(lo.base_acc)} against sequential {pct(seq.base_acc)} ({pts(est.value)}, se "
        f"{100 * est.se:.1f}) with half the distinct weights in its blocks.", over="seeds", seeds=_seeds(rows))


def ln_scale(rows: Rows) -> Optional[Claim]:
    if not {"sequential", "ln-scale"} <= set(rows):
        return None
    ln, seq = rows["ln-scale"], rows["sequential"]
    a, b = _loss(ln, "delete_deep"), _loss(seq, "delete_deep")
    est = E.paired(a, b)
    deep = ", ".join(map(str, ln.deep_blocks))
    return C.claim(
        "ln_scale", "LayerNorm scaling makes the deepest blocks matter more",
        "Sun et al. 2025, The Curse of Depth in Large Language Models (pre-LN's deep layers are nearly identities; "
        "scaling each LayerNorm's output by 1/sqrt(layer) makes them contribute). " + departs(rows)
        + "; 'matter' = the "
        f"held-out accuracy lost when one of the deeper half of the blocks ({deep}) is deleted",
        {"ln_scale_deep_loss": float(a.mean()), "sequential_deep_loss": float(b.mean())},
        f"deleting one of the deeper blocks costs the LayerNorm-scaled model more than the sequential one, "
        f"{_noise(est)}, paired over the held-out inputs; less by as much: does not hold; otherwise cannot tell"
        + RECIPE, [C.test("loss with LayerNorm scaling minus without", est, ">=", 0.0)],
        f"Deleting one of blocks {deep} costs the LayerNorm-scaled model {_cost(a.mean())}, the sequential one "
        f"{_cost(b.mean())} "
        f"(difference {pts(est.value)}, se {100 * est.se:.1f}).", over="seeds", seeds=_seeds(rows))


def influence(rows: Rows) -> Optional[Claim]:
    present = [r for r in rows if "influence" in rows[r].per_input]
    if not present:
        return None
    a = np.mean([_v(rows[r], "influence") for r in present], 0)
    b = np.mean([_v(rows[r], "last_quarter") for r in present], 0)
    est = E.paired(a, b)
    same = [rows[r].label for r in present if rows[r].influence_slots == rows[r].last_slots]
    per = "; ".join(f"{rows[r].label} {pct(rows[r].acc['influence'])} vs {pct(rows[r].acc['last_quarter'])}"
                    for r in present)
    q = rows[present[0]].quarter
    return C.claim(
        "influence", "influence-ordered deletion beats the last-quarter baseline",
        "Men et al. 2024 (ShortGPT: delete the layers of lowest block influence); Lu et al. 2024, Reassessing Layer "
        "Pruning in LLMs, found deleting the last layers (reverse order) as good or better. " + departs(rows) +
        f"; {q} of 6 runs deleted, influence measured on the probe split, averaged over {len(present)} recipes",
        {"influence_acc": float(a.mean()), "last_quarter_acc": float(b.mean()), "recipes": len(present),
         "same_choice": len(same)},
        f"held-out accuracy after deleting the {q} runs of lowest influence exceeds that after deleting the last {q}, "
        f"{_noise(est)}, paired over the held-out inputs (mean over recipes); below by as much: does not hold; "
        "otherwise cannot tell", [C.test("influence order minus last quarter", est, ">=", 0.0)],
        f"Mean over recipes: {pct(a.mean())} by influence, {pct(b.mean())} for the last quarter ({pts(est.value)}). "
        f"Per recipe: {per}." + (f" Influence picked the last quarter itself for: {', '.join(same)}." if same else ""))


def page_error_words() -> str:
    """How often the default view says something false somewhere, in words (the page's "how verdicts are made")."""
    from scipy.stats import beta, norm

    rate = PAGE_FALSE_HOLDS / PAGE_SIMS
    bound = float(beta.ppf(0.95, PAGE_FALSE_HOLDS + 1, PAGE_SIMS - PAGE_FALSE_HOLDS))
    return (f"Each verdict is a test at 2 standard errors: one test at the edge of its null says \"holds\" "
            f"{100 * float(norm.sf(Z)):.1f} % of the time, each claim here at most 5 % in simulation. The page's "
            f"verdicts are not corrected jointly: when none of the default view's {PAGE_CLAIMS} claims about these "
            f"trained networks is true, at least one says \"holds\" on {100 * rate:.1f} % of simulated pages "
            f"({PAGE_SIMS:,} simulations with their shared inputs and models; at most {100 * bound:.1f} % at 95 %), "
            "and the recipe claims cannot tell at one seed.")


CLAIMS = (robust, u_shape, attention, linear, early_exit, looped, ln_scale, influence)
KEYS = ("robust", "u_shape", "attention", "linear", "early_exit", "looped", "ln_scale", "influence")


def claims(rows: Rows) -> list[Claim]:
    """The claims the rows present can decide (each a lab/claims.py record)."""
    return [c for c in (f(rows) for f in CLAIMS) if c is not None]


@reads(MatrixResult)
def result_claims(r: MatrixResult) -> list[Claim]:
    """The claims of a seed's matrix, computed when it is read."""
    return claims(r.rows)
