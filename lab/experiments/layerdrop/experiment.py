"""LayerDrop (Fan et al. 2019): train with random block skipping at rate p, then prune to r of N blocks.

`profile(ProfileConfig)` is the unit of work: train one model at one p (through the zoo) and measure held-out
accuracy for every pruning strategy at every depth r = 0..N. Pages and tables combine several profiles, and a
profile depends only on (model, p, seed), so a page that adds one p trains one model, never more.
`run(LayerDropConfig)` answers one question (this p, this r, this strategy), optionally with KD recovery.
Everything goes through the store, so a repeated call is a file read.

Every cut keeps its per-input held-out outcomes (packed bit vectors), so the claims compare accuracies on the same
inputs paired; random pruning averages every subset of the dropped size when there are at most EXACT_SUBSETS
(one block: all N), else RANDOM_DRAWS distinct subsets, and keeps each subset's outcomes.
"""

from __future__ import annotations

import copy
import itertools
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np
import torch

from lab import claims as C
from lab import estimates as E
from lab.claims import noise_words, pct, pts
from lab.core import streams
from lab.core.data import Dataset
from lab.core.models import RoutedModel, accuracy, correct
from lab.core.recipes import LAYERDROP_MODELS, layerdrop_blocks, layerdrop_scratch_spec, layerdrop_spec
from lab.core.routes import without
from lab.core.zoo import ModelSpec, Trained, trained
from lab.experiment import SEED_MAX, Pool, check, entry, param, seed_param, serial
from lab.ops import search, selection
from lab.ops.recover import RecoveryConfig, recover
from lab.runtime.progress import Progress, silent, span

MODELS = LAYERDROP_MODELS
MODEL_LABELS = {"residual": "residual MLP", "vit": "ViT"}
STRATEGIES = ("every-other", "greedy", "influence", "first", "last", "random")  # of selection.METHODS
P_MAX = 0.7  # beyond this the expected training depth N(1 - p) is under a third of the model
P_GRID = (0.0, 0.2, 0.5)  # the reference rates of the table and of the page's first figure
EXACT_SUBSETS = 35  # random pruning averages every subset when there are at most this many (C(8, k) for k != 3..5)
RANDOM_DRAWS = 8  # otherwise this many distinct subsets, drawn without replacement (their spread joins the error)
model_spec = layerdrop_spec
scratch_spec = layerdrop_scratch_spec
n_blocks = layerdrop_blocks


def p_star(keep: int, n_blocks: int) -> float:
    """The paper's rule of thumb: train with p* = 1 - r/N to prune to r of N blocks (N(1 - p) run on average)."""
    if not 0 <= keep <= n_blocks:
        raise ValueError(f"cannot keep {keep} blocks: the model has {n_blocks} (choose 0..{n_blocks})")
    return 1.0 - keep / n_blocks


def check_p(p: float) -> float:
    """A training rate rounded to the 0.01 grid (so 0.1 + 0.2 and 0.3 name the same model), or ValueError."""
    if not 0.0 <= p <= P_MAX + 1e-9:
        raise ValueError(f"LayerDrop rate p={p} is out of range: choose p between 0 and {P_MAX}")
    return round(p, 2)


@dataclass(frozen=True)
class ProfileConfig:
    """One trained model (model family, LayerDrop rate, seed) and its pruning profile."""

    model: str = "residual"
    p: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        object.__setattr__(self, "p", check_p(self.p))
        if not 0 <= self.seed <= SEED_MAX:
            raise ValueError(f"the seed must be a whole number from 0 to {SEED_MAX}")

    @property
    def spec(self) -> ModelSpec:
        return model_spec(self.model, self.p, self.seed)


def random_subsets(n: int, k: int, seed: int) -> tuple[list[list[int]], bool]:
    """The subsets random pruning averages over: every k-subset of the n blocks when there are at most
    EXACT_SUBSETS (exact: no draw noise), else RANDOM_DRAWS distinct ones drawn without replacement."""
    every = [list(c) for c in itertools.combinations(range(n), k)]
    if len(every) <= EXACT_SUBSETS:
        return every, True
    gen = streams.generator("layerdrop.random-subsets", seed, k)
    pick = sorted(int(i) for i in torch.randperm(len(every), generator=gen)[:RANDOM_DRAWS])
    return [every[i] for i in pick], False


def _cut(m: RoutedModel, d: Dataset, dropped: list[int]) -> tuple[dict[str, Any], torch.Tensor]:
    route = without(m.n_blocks, dropped)
    ok = correct(m, d.test.x, d.test.y, route)
    return ({"dropped": list(dropped), "kept": selection.kept(m.n_blocks, dropped), "test_acc": E.accuracy(ok).value,
             "probe_acc": accuracy(m, d.probe.x, d.probe.y, route), "draws": 1}, ok)


def _random_cut(m: RoutedModel, d: Dataset, k: int, seed: int) -> dict[str, Any]:
    """Random pruning of k blocks: the mean over `random_subsets`, each subset's held-out outcomes kept (packed)."""
    subsets, exact = random_subsets(m.n_blocks, k, seed)
    cuts = [_cut(m, d, s) for s in subsets]
    test = [c["test_acc"] for c, _ in cuts]
    return {**cuts[0][0], "test_acc": sum(test) / len(test),
            "probe_acc": sum(c["probe_acc"] for c, _ in cuts) / len(cuts), "test_min": min(test),
            "test_max": max(test), "draws": len(cuts), "exact": exact, "subsets": subsets, "subset_accs": test,
            "subset_outcomes": [E.pack(ok) for _, ok in cuts]}


@entry("layerdrop-profile")
def profile(cfg: ProfileConfig, progress: Progress) -> dict[str, Any]:
    """Accuracy of every strategy at every depth for one trained model, with every cut's per-input held-out
    outcomes (packed bit vectors, for paired comparisons) (cached)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.9))
    d, m = t.data, t.model
    n = m.n_blocks
    t0 = time.perf_counter()
    strategies: dict[str, list[dict[str, Any]]] = {}
    # Greedy deletion is deterministic, so its answer for k deletions is the first k picks of the full order:
    # one search of N rounds serves every depth (N^2/2 trial cuts instead of N^3/6).
    order = search.greedy(m, n, d.probe.x, d.probe.y)
    for i, s in enumerate(STRATEGIES):
        progress(0.9 + 0.1 * i / len(STRATEGIES), f"pruning p={cfg.p}: {s}")
        rows = []
        for r in range(n + 1):
            if s == "random":
                rows.append(_random_cut(m, d, n - r, cfg.seed))
                continue
            dropped = (sorted(order[: n - r]) if s == "greedy" else
                       selection.to_drop(s, m, n - r, d.probe.x, d.probe.y, seed=cfg.seed))
            row, ok = _cut(m, d, dropped)
            rows.append({**row, "outcomes": E.pack(ok)})
        strategies[s] = rows
    base_ok = correct(m, d.test.x, d.test.y)
    return {
        "config": cfg,
        "n_blocks": n,
        "base_acc": E.accuracy(base_ok).value,
        "base_outcomes": E.pack(base_ok),
        "chance": d.chance,
        "n_test": len(d.test),
        "strategies": strategies,  # strategy -> one entry per r = 0..N (blocks kept)
        "train_curve": t.info["test_acc"],  # full-route held-out accuracy after every epoch
        "train_seconds": t.info["seconds"],
        "eval_seconds": time.perf_counter() - t0,
    }


def profiles(model: str, ps: list[float], seed: int, progress: Progress = silent) -> dict[float, dict[str, Any]]:
    """Profiles for several rates, one model each; progress advances evenly over the models."""
    ps = sorted({check_p(p) for p in ps})
    out = {}
    for i, p in enumerate(ps):
        out[p] = profile(ProfileConfig(model, p, seed), span(progress, i / len(ps), (i + 1) / len(ps)))
    return out


@dataclass(frozen=True)
class CompareConfig:
    """The page's comparison: the reference rates P_GRID plus the student's p, one model each."""

    model: str = "residual"
    p: float = 0.5
    seed: int = 0

    @property
    def ps(self) -> list[float]:
        return sorted({*P_GRID, check_p(self.p)})


def compare(cfg: CompareConfig, progress: Progress = silent) -> list[dict[str, Any]]:
    """Profiles of every rate in cfg.ps, ascending p (each one cached on its own)."""
    return list(profiles(cfg.model, cfg.ps, cfg.seed, progress).values())


@dataclass(frozen=True)
class LayerDropConfig:
    """One question: train at p, prune to `keep` blocks by `strategy`, optionally recover by KD."""

    model: str = param("residual", "The network trained with LayerDrop: a residual MLP (synthetic task, seconds) or "
                       "a small ViT (8x8 digits, about a minute).", label="Model", choices=MODELS,
                       labels=MODEL_LABELS)
    p: float = param(0.5, "LayerDrop rate: each block is skipped with this probability at every training step.",
                     label="LayerDrop rate p", lo=0.0, hi=P_MAX)
    keep: int = param(4, "Blocks kept after pruning, r of N.", label="Blocks kept", lo=1, hi=8)
    strategy: str = param("every-other", "Which blocks to keep: every other (the paper's rule), greedy or lowest "
                          "influence (scored on a probe split), the first or last blocks removed, or random.",
                          label="Pruning strategy", choices=STRATEGIES, labels=selection.LABELS)
    seed: int = seed_param()
    recovery: str = param("none", "Distil the pruned model from its own full route afterwards.", label="Recovery",
                          choices=("none", "kd"), labels={"none": "none", "kd": "distil (KD)"})
    steps: int = param(500, "Recovery steps.", label="Recovery steps", lo=0, hi=20_000)

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", check_p(self.p))
        check(self)
        n = n_blocks(self.model)
        if not 1 <= self.keep <= n:
            raise ValueError(f"keep={self.keep} is out of range: the {self.model} model has {n} blocks, "
                             f"so keep 1..{n}")
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates steps

    @property
    def profile_cfg(self) -> ProfileConfig:
        return ProfileConfig(self.model, self.p, self.seed)


def _recover(t: Trained, kept: list[int], cfg: LayerDropConfig, progress: Progress) -> dict[str, Any]:
    student: RoutedModel = copy.deepcopy(t.model)  # never change the shared trained model
    t0 = time.perf_counter()
    rc = RecoveryConfig(method="kd", steps=cfg.steps, seed=cfg.seed)
    log = recover(student, kept, t.data, rc, teacher=t.model, progress=progress)
    return {"recovered_acc": log.test_acc[-1], "curve_steps": log.steps, "curve_acc": log.test_acc,
            "recovery_seconds": time.perf_counter() - t0}


@entry("layerdrop")
def run(cfg: LayerDropConfig, progress: Progress) -> dict[str, Any]:
    """One LayerDrop question (cached). Accuracies are held-out unless their name says probe."""
    # every reference rate too: the claims compare them (each profile is cached on its own, as the page needs them)
    by_p = profiles(cfg.model, CompareConfig(cfg.model, cfg.p, cfg.seed).ps, cfg.seed, span(progress, 0.0, 0.7))
    prof = by_p[cfg.p]
    t = trained(cfg.profile_cfg.spec)  # already built by the profile: a memo or file read
    n = prof["n_blocks"]
    here = prof["strategies"][cfg.strategy][cfg.keep]
    out = {
        "config": cfg,
        "n_blocks": n,
        "base_acc": prof["base_acc"],
        "cut_acc": here["test_acc"],
        "cut_probe_acc": here["probe_acc"],
        "kept": here["kept"],
        "dropped": here["dropped"],
        "draws": here["draws"],
        "p_star": p_star(cfg.keep, n),
        "chance": prof["chance"],
        "n_test": prof["n_test"],
        "strategies": {s: prof["strategies"][s][cfg.keep] for s in STRATEGIES},
        "train_seconds": prof["train_seconds"],
        "eval_seconds": prof["eval_seconds"],
        # the run's strategy at every reference rate: what its figure draws (app/figures_layerdrop.versus_p_of_run)
        "by_p": [{"config": {"p": q}, "n_blocks": by_p[q]["n_blocks"], "chance": by_p[q]["chance"],
                  "strategies": {cfg.strategy: [{"test_acc": row["test_acc"], "kept": row["kept"]}
                                                for row in by_p[q]["strategies"][cfg.strategy]]}}
                 for q in sorted(by_p)],
    }
    out["scratch_acc"] = out["distilled_acc"] = None
    sc = di = None
    if cfg.keep < n:  # the paper's two baselines at this kept depth (each cached on its own)
        base = BaselineConfig(cfg.model, cfg.keep, cfg.seed)
        sc = scratch(base, span(progress, 0.7, 0.8))
        di = distil(base, span(progress, 0.8, 0.9))
        out["scratch_acc"], out["distilled_acc"] = sc["scratch_acc"], di["distilled_acc"]
    if cfg.recovery == "kd" and cfg.keep < n:
        out.update(_recover(t, here["kept"], cfg, span(progress, 0.9, 1.0)))
    out["claims"] = claims(by_p, cfg.keep, cfg.p, sc, di)
    return out


# -- claims (lab/claims.py): the paper's statements checked against this run's profiles, noise included ---------
# Every accuracy compared here is measured on the same held-out inputs, so every comparison is paired
# (lab/estimates.paired: the spread of the per-input differences, McNemar's error for right/wrong outcomes).
SOURCE = ("Fan, Grave, Joulin, Reducing Transformer Depth on Demand with Structured Dropout (ICLR 2020): 16-layer "
          "Transformers on language tasks, p = 0.2 or 0.5. Here: an 8-block residual MLP on a synthetic 20-class "
          "task or an 8-block ViT on 8x8 digits, one trained model per rate and seed, pruned with no fine-tuning")
NEAR = 0.1  # a trained rate "near" p* is within this distance of it
SIMILAR = 0.02  # "about as good as": within 2 points (the non-inferiority margin)
ONE_BLOCK_LOSS = 0.1  # "loses little": at most this share of the above-chance accuracy


def scores(prof: dict[str, Any], strategy: str, keep: int) -> np.ndarray:
    """Per-input held-out scores of one cut: right/wrong, or for random pruning the per-input mean over its
    subsets (every subset when the space is small)."""
    row = prof["strategies"][strategy][keep]
    if "subset_outcomes" in row:
        return np.mean([E.as_scores(o) for o in row["subset_outcomes"]], axis=0)
    return E.as_scores(row["outcomes"])


def _acc(prof: dict[str, Any], strategy: str, keep: int) -> float:
    return prof["strategies"][strategy][keep]["test_acc"]


def _p_of(prof: dict[str, Any]) -> float:
    c = prof["config"]
    return c["p"] if isinstance(c, dict) else c.p


def untested(why: str) -> E.Estimate:
    """No measurement: an estimate sitting on its threshold with no error, so its test cannot tell."""
    return E.exact(0.0, why)


def half_depth_claim(prof5: dict[str, Any], prof0: dict[str, Any], seeds: str = "") -> dict[str, Any]:
    """p = 0.5 against p = 0, every other block kept (r = N/2), paired over the held-out inputs."""
    nb = prof0["n_blocks"]
    keep = nb // 2
    acc5, acc0 = _acc(prof5, "every-other", keep), _acc(prof0, "every-other", keep)
    est = E.paired(scores(prof5, "every-other", keep), scores(prof0, "every-other", keep))
    return C.claim(
        "layerdrop.p05-beats-p0-half-depth", "A model trained with LayerDrop p = 0.5 keeps more accuracy than an "
        "ordinary one (p = 0) when pruned to half its depth by keeping every other block", SOURCE,
        {"acc_p05": acc5, "acc_p0": acc0, "keep": keep, "n_test": prof0["n_test"]},
        f"held-out accuracy at r = {keep} of {nb} (every other) is higher at p = 0.5, {noise_words(est.se)} "
        "(paired over the same inputs)", [C.test("p = 0.5 minus p = 0", est, ">=", 0.0)],
        f"pruned to {keep} of {nb}{seeds}: p = 0.5 {pct(acc5)}, p = 0 {pct(acc0)} ({pts(acc5 - acc0)}, se "
        f"{100 * est.se:.2f} pts).")


def p_star_claim(by_p: dict[float, dict[str, Any]], keep: int, seeds: str = "") -> dict[str, Any]:
    """The best trained rate near p* = 1 - r/N against the best rate farther from it (every other pruning),
    paired: an argmax claim decided only when the two argmaxes are separated."""
    nb, n = next(iter(by_p.values()))["n_blocks"], next(iter(by_p.values()))["n_test"]
    ps = p_star(keep, nb)
    accs = {p: _acc(prof, "every-other", keep) for p, prof in sorted(by_p.items())}
    near = {p: a for p, a in accs.items() if abs(p - ps) <= NEAR + 1e-9}
    far = {p: a for p, a in accs.items() if abs(p - ps) > NEAR + 1e-9}
    listing = ", ".join(f"p = {p:g} {pct(a)}" for p, a in accs.items())
    measured: dict[str, Any] = {"p_star": ps, "keep": keep, "rates": list(accs), "accs": list(accs.values()),
                                "n_test": n}
    if not near or not far:
        est = untested("no trained rate near p*" if not near else "every trained rate is near p*")
        detail = (f"p* = {ps:.2f} for r = {keep} of {nb}{seeds}, and " + ("no trained rate is within "
                  f"{NEAR:g} of it (train one)" if not near else "every trained rate is near it") + f": {listing}.")
    else:
        pn, pf = max(near, key=near.get), max(far, key=far.get)
        est = E.paired(scores(by_p[pn], "every-other", keep), scores(by_p[pf], "every-other", keep))
        measured.update(best_near_p=pn, best_far_p=pf)
        detail = (f"r = {keep} of {nb}, p* = {ps:.2f}{seeds}: the best rate near it, p = {pn:g}, {pct(near[pn])}; the "
                  f"best farther away, p = {pf:g}, {pct(far[pf])} ({pts(near[pn] - far[pf])}, se {100 * est.se:.2f} "
                  f"pts). All: {listing}.")
    return C.claim(
        "layerdrop.p-star-rule", "To keep r of N blocks, train with p* = 1 − r/N: the best training rate for a kept "
        "depth lies near p*", SOURCE + "; only the rates trained here (0, 0.2, 0.5 and the page's p) compete",
        measured, f"the best trained rate within {NEAR:g} of p* beats the best rate farther from it (every other "
        f"pruning, r = {keep}), paired over the same inputs, by more than {C.Z:g} standard errors; none near or none "
        "far: cannot tell", [C.test("best near p* minus best far", est, ">=", 0.0)], detail,
        subject=f"keep {keep} of {nb}")


def contiguous_claim(prof: dict[str, Any]) -> dict[str, Any]:
    """Every other block kept against removing the first or the last half, on the p = 0.5 model (paired)."""
    n, nb = prof["n_test"], prof["n_blocks"]
    r = nb // 2
    eo, first, last = (_acc(prof, s, r) for s in ("every-other", "first", "last"))
    e1 = E.paired(scores(prof, "every-other", r), scores(prof, "first", r))
    e2 = E.paired(scores(prof, "every-other", r), scores(prof, "last", r))
    return C.claim(
        "layerdrop.every-other-beats-contiguous", "Keeping every other block beats removing a contiguous run of "
        "blocks (the first half or the last half)", SOURCE + "; the paper compared these on its LayerDrop model, "
        "here the model trained at p = 0.5",
        {"every_other_acc": eo, "first_half_removed_acc": first, "last_half_removed_acc": last, "keep": r,
         "n_test": n},
        f"every other beats both contiguous cuts at r = {r}, each paired over the same inputs by more than {C.Z:g} "
        "standard errors", [C.test("every other minus first half removed", e1, ">=", 0.0),
                            C.test("every other minus last half removed", e2, ">=", 0.0)],
        f"p = 0.5 pruned to {r} of {nb}: every other {pct(eo)}, first half removed {pct(first)} ({pts(eo - first)}), "
        f"last half removed {pct(last)} ({pts(eo - last)}).", subject="trained at p = 0.5")


def _singles(prof: dict[str, Any]) -> tuple[list[list[int]], list[np.ndarray]]:
    """Every single-block deletion (random pruning at r = N - 1 averages all N of them): subsets and outcomes."""
    row = prof["strategies"]["random"][prof["n_blocks"] - 1]
    return row["subsets"], [E.as_scores(o) for o in row["subset_outcomes"]]


def one_block_claim(prof: dict[str, Any]) -> dict[str, Any]:
    """Veit et al.: one block of an ordinary residual net can go. The mean over every single deletion (exact) keeps
    at least 90 % of the above-chance accuracy: cut - 0.9 base >= 0.1 chance, paired."""
    n, nb, base, chance = prof["n_test"], prof["n_blocks"], prof["base_acc"], prof["chance"]
    _, outs = _singles(prof)
    cut_scores = np.mean(outs, axis=0)
    cut = float(cut_scores.mean())
    keep = 1 - ONE_BLOCK_LOSS
    est = E.paired(cut_scores, keep * E.as_scores(prof["base_outcomes"]))
    allowed = ONE_BLOCK_LOSS * (base - chance)
    return C.claim(
        "layerdrop.one-block-costs-little", "An ordinary residual network (no LayerDrop) loses little when one block "
        "is removed", "Veit, Wilber, Belongie (2016), Residual Networks Behave Like Ensembles of Relatively Shallow "
        f"Networks, Sec. 4: ResNets on CIFAR-10/ImageNet. Here: the p = 0 model, the mean over each of its {nb} "
        "blocks removed alone (exact), no fine-tuning",
        {"base_acc": base, "one_removed_acc": cut, "allowed_loss": allowed, "n_test": n},
        f"removing one block (mean over every block) costs at most {ONE_BLOCK_LOSS:.0%} of the above-chance "
        f"accuracy ({pts(allowed)}): one-removed − {keep:g} × full ≥ {ONE_BLOCK_LOSS:g} × chance, paired over the "
        f"same inputs, by more than {C.Z:g} standard errors",
        [C.test(f"one removed minus {keep:g} x full", est, ">=", ONE_BLOCK_LOSS * chance)],
        f"p = 0: full {pct(base)}, one block removed (mean of all {nb}) {pct(cut)} ({pts(cut - base)}; allowed "
        f"{pts(-allowed)}, chance {pct(chance)}).", subject="trained at p = 0")


def first_block_claim(prof: dict[str, Any]) -> dict[str, Any]:
    """Blocks are not interchangeable: removing block 0 against the mean over removing each other block (exact;
    block 0 is not in its own comparator), paired."""
    n, nb = prof["n_test"], prof["n_blocks"]
    subsets, outs = _singles(prof)
    others = np.mean([o for s, o in zip(subsets, outs, strict=True) if s != [0]], axis=0)
    first_scores = scores(prof, "first", nb - 1)
    first, rand = float(first_scores.mean()), float(others.mean())
    est = E.paired(others, first_scores)
    p = _p_of(prof)
    return C.claim(
        "layerdrop.first-block-not-interchangeable", "Blocks are not interchangeable: the first block costs more "
        "to remove than another block", "Sun et al. (2024), Transformer Layers as Painters, and Lad et al. (2024), "
        "The Remarkable Robustness of LLMs: the first layers of a deep network are distinct from the middle ones. "
        f"Here: one block of {nb} removed, block 0 against the mean over each of blocks 1..{nb - 1} removed alone "
        "(exact)", {"first_removed_acc": first, "other_removed_acc": rand, "n_test": n},
        f"accuracy without block 0 is below the mean without one of the other blocks, paired over the same inputs, "
        f"by more than {C.Z:g} standard errors", [C.test("other block removed minus block 0 removed", est, ">=", 0.0)],
        f"trained at p = {p:g}, one block removed: block 0 {pct(first)}, another block (mean of {nb - 1}) {pct(rand)} "
        f"({pts(first - rand)}).", subject=f"trained at p = {p:g}")


def claims(by_p: dict[float, dict[str, Any]], keep: int, p: float, scratch_r: Optional[dict[str, Any]] = None,
           distil_r: Optional[dict[str, Any]] = None, seeds: str = "") -> list[dict[str, Any]]:
    """Every claim one seed's profiles (p = 0, 0.2, 0.5 and the setting's p) and the baselines at r (`scratch` and
    `distil` results; None when r = N: nothing is pruned) can test at the setting's r and p."""
    out = [half_depth_claim(by_p[0.5], by_p[0.0], seeds), p_star_claim(by_p, keep, seeds),
           contiguous_claim(by_p[0.5]), one_block_claim(by_p[0.0]), first_block_claim(by_p[p])]
    pruned = scores(by_p[p], "every-other", keep)
    if scratch_r is not None:
        out.append(beats_scratch_claim(pruned, E.as_scores(scratch_r["outcomes"]), keep, by_p[p]["n_blocks"], p,
                                       seeds))
    if distil_r is not None:
        out.append(distillation_claim(pruned, E.as_scores(distil_r["outcomes"]), keep, by_p[p]["n_blocks"], p,
                                      seeds))
    return out


# -- the paper's baselines at the kept depth r: a depth-r model from scratch, and depth r distilled ---------------
@dataclass(frozen=True)
class BaselineConfig:
    """A kept depth r of one model family and seed: the baselines LayerDrop's pruned model is compared with."""

    model: str = "residual"
    keep: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        n = n_blocks(self.model)
        if not 1 <= self.keep < n:
            raise ValueError(f"a baseline needs 1 <= keep < {n} (the {self.model} model has {n} blocks)")
        if not 0 <= self.seed <= SEED_MAX:
            raise ValueError(f"the seed must be a whole number from 0 to {SEED_MAX}")


@entry("layerdrop-scratch")
def scratch(cfg: BaselineConfig, progress: Progress) -> dict[str, Any]:
    """A model of depth r trained from scratch with the ordinary (p = 0) recipe, same epochs (cached)."""
    t = trained(scratch_spec(cfg.model, cfg.keep, cfg.seed), progress)
    d = t.data
    ok = correct(t.model, d.test.x, d.test.y)
    return {"config": cfg, "n_blocks": t.model.n_blocks, "scratch_acc": E.accuracy(ok).value,
            "outcomes": E.pack(ok), "n_test": len(d.test), "train_seconds": t.info["seconds"]}


def distil_steps(spec: ModelSpec, n_train: int, batch: int) -> int:
    """Distillation steps that show the student as many training inputs as the recipe's training run."""
    return math.ceil(spec.train.epochs * n_train / batch)


@entry("layerdrop-distil")
def distil(cfg: BaselineConfig, progress: Progress) -> dict[str, Any]:
    """Depth r distilled from the full ordinary (p = 0) model (cached): the student starts from the teacher's every
    other blocks (DistilBERT's initialisation) and learns by KD on that route, for as many inputs as training saw."""
    t = trained(model_spec(cfg.model, 0.0, cfg.seed), span(progress, 0.0, 0.3))
    d = t.data
    kept = selection.kept(t.model.n_blocks, selection.every_other(t.model.n_blocks, cfg.keep))
    rc = RecoveryConfig(method="kd", seed=cfg.seed)
    rc = replace(rc, steps=distil_steps(t.spec, len(d.train), rc.batch))
    student: RoutedModel = copy.deepcopy(t.model)  # never change the shared trained model
    t0 = time.perf_counter()
    log = recover(student, kept, d, rc, teacher=t.model, progress=span(progress, 0.3, 1.0))
    ok = correct(student, d.test.x, d.test.y, tuple(kept))
    return {"config": cfg, "kept": kept, "distilled_acc": log.test_acc[-1], "outcomes": E.pack(ok),
            "start_acc": log.test_acc[0], "steps": rc.steps, "n_test": len(d.test),
            "distil_seconds": time.perf_counter() - t0}


def beats_scratch_claim(pruned: Any, scratch_scores: Any, keep: int, nb: int, p: float,
                        seeds: str = "") -> dict[str, Any]:
    """The pruned LayerDrop model against a depth-r model trained from scratch: per-input outcomes on the same
    held-out inputs, paired."""
    a, b = E.as_scores(pruned), E.as_scores(scratch_scores)
    pa, sa = float(a.mean()), float(b.mean())
    est = untested("p = 0 is no LayerDrop model") if p == 0 else E.paired(a, b)
    why = " (p = 0 is no LayerDrop model: choose p > 0)" if p == 0 else ""
    return C.claim(
        "layerdrop.beats-scratch", "A LayerDrop model pruned to depth r is better than a model of depth r trained "
        "from scratch with the same recipe", SOURCE + "; the scratch model here has the same recipe and epochs",
        {"pruned_acc": pa, "scratch_acc": sa, "p": p, "keep": keep, "n_test": int(a.size)},
        f"every-other pruning of the model trained at p > 0 beats the depth-{keep} model from scratch, paired over "
        f"the same inputs by more than {C.Z:g} standard errors", [C.test("pruned minus scratch", est, ">=", 0.0)],
        f"r = {keep} of {nb}{seeds}: trained at p = {p:g} and pruned {pct(pa)}, from scratch {pct(sa)} "
        f"({pts(pa - sa)}){why}.", subject=f"p = {p:g}, keep {keep} of {nb}")


def distillation_claim(pruned: Any, distilled_scores: Any, keep: int, nb: int, p: float,
                       seeds: str = "") -> dict[str, Any]:
    """The pruned LayerDrop model against depth r distilled from the full ordinary model: non-inferiority with a
    margin of SIMILAR (distillation ahead by at most 2 points), paired."""
    a, b = E.as_scores(pruned), E.as_scores(distilled_scores)
    pa, da = float(a.mean()), float(b.mean())
    est = untested("p = 0 is no LayerDrop model") if p == 0 else E.paired(b, a)
    why = " (p = 0 is no LayerDrop model: choose p > 0)" if p == 0 else ""
    return C.claim(
        "layerdrop.about-as-good-as-distillation", "A LayerDrop model pruned to depth r is about as good as "
        "distilling the full model into depth r", SOURCE + "; the paper compares with DistilBERT (Sanh et al. "
        "2019), here the p = 0 model's every other blocks distilled by KD for as many inputs as training saw",
        {"pruned_acc": pa, "distilled_acc": da, "p": p, "keep": keep, "allowed_gap": SIMILAR, "n_test": int(a.size)},
        f"non-inferiority with a margin of {100 * SIMILAR:g} pts: distilled minus pruned is below {100 * SIMILAR:g} "
        f"pts by more than {C.Z:g} standard errors (paired over the same inputs); above it by as much: does not hold",
        [C.test("distilled minus pruned", est, "<=", SIMILAR)],
        f"r = {keep} of {nb}{seeds}: trained at p = {p:g} and pruned {pct(pa)}, distilled {pct(da)} "
        f"({pts(pa - da)}){why}.", subject=f"p = {p:g}, keep {keep} of {nb}")


TABLE_KEEP = (1.0, 0.75, 0.5, 0.25)  # fractions of N in the summary table


def rule_rate(keep: int, n: int) -> float:
    """The reference rate (P_GRID) nearest the rule's p* = 1 - r/N, the larger one on a tie."""
    ps = p_star(keep, n)
    return min(P_GRID, key=lambda p: (abs(p - ps), -p))


def table(model: str, seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Every-other accuracy for p in P_GRID x kept in N, 3N/4, N/2, N/4, per seed, and the two baselines (from
    scratch, distilled) at every kept depth below N (all computed by `pool`), with the claims measured at every
    seed (paired) and pooled over the seeds (lab/claims.pool: the seeds' spread is the error)."""
    n = n_blocks(model)
    keeps = [round(f * n) for f in TABLE_KEEP]
    rows: dict[float, list[list[float]]] = {}
    seconds: dict[str, list[float]] = {"train": [], "eval": []}
    jobs = [(p, s) for p in P_GRID for s in seeds]
    cut = [r for r in keeps if r < n]
    base_jobs = [(fn, BaselineConfig(model, r, s)) for r in cut for s in seeds for fn in (scratch, distil)]
    done = pool([(profile, ProfileConfig(model, p, s)) for p, s in jobs] + base_jobs, progress)
    profs, bases = done[:len(jobs)], done[len(jobs):]
    by_seed: dict[int, dict[float, dict[str, Any]]] = {s: {} for s in seeds}
    for (p, s), prof in zip(jobs, profs, strict=True):
        by_seed[s][p] = prof
        rows.setdefault(p, []).append([prof["strategies"]["every-other"][r]["test_acc"] for r in keeps])
        seconds["train"].append(prof["train_seconds"])
        seconds["eval"].append(prof["eval_seconds"])
    baselines: dict[str, dict[int, list[float]]] = {"scratch": {}, "distilled": {}}
    base_by_seed: dict[int, dict[tuple[str, int], dict[str, Any]]] = {s: {} for s in seeds}
    for (fn, c), b in zip(base_jobs, bases, strict=True):
        name = "scratch" if fn is scratch else "distilled"
        baselines[name].setdefault(c.keep, []).append(b[f"{name}_acc"])
        base_by_seed[c.seed][(name, c.keep)] = b
    out = {"model": model, "n_blocks": n, "keeps": keeps, "seeds": seeds, "rows": rows, "seconds": seconds,
           "baselines": baselines, "n_test": profs[0]["n_test"]}
    per_seed = [seed_table_claims(by_seed[s], base_by_seed[s], keeps) for s in seeds]
    return {**out, "claims": C.pool(per_seed, seeds)}


def seed_table_claims(by_p: dict[float, dict[str, Any]], bases: dict[tuple[str, int], dict[str, Any]],
                      keeps: list[int]) -> list[dict[str, Any]]:
    """One seed's table claims: the half-depth claim, the p* rule at every kept depth and, where the baselines are
    there, both baselines at every kept depth below N against the rule's rate (`bases`: (name, r) -> result)."""
    nb = by_p[0.0]["n_blocks"]
    out = [half_depth_claim(by_p[0.5], by_p[0.0])] if nb // 2 in keeps else []
    out += [p_star_claim(by_p, r) for r in keeps]
    for r in keeps:
        if ("scratch", r) not in bases:
            continue
        p = rule_rate(r, nb)
        pruned = scores(by_p[p], "every-other", r)
        out.append(beats_scratch_claim(pruned, bases[("scratch", r)]["outcomes"], r, nb, p))
        out.append(distillation_claim(pruned, bases[("distilled", r)]["outcomes"], r, nb, p))
    return out
