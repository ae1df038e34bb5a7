"""LayerDrop (Fan et al. 2019): train with random block skipping at rate p, then prune to r of N blocks.

`profile(ProfileConfig)` is the unit of work: train one model at one p (through the zoo) and measure held-out
accuracy for every pruning strategy at every depth r = 0..N. Pages and tables combine several profiles, and a
profile depends only on (model, p, seed), so a page that adds one p trains one model, never more.
`run(LayerDropConfig)` answers one question (this p, this r, this strategy), optionally with KD recovery.
Everything goes through the store, so a repeated call is a file read.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Optional

from lab.claims import all_of, at_least, at_most, binomial_se, claim, diff_se, mean_se, noise_words, pct, pts
from lab.core.models import RoutedModel, accuracy
from lab.core.recipes import LAYERDROP_MODELS, layerdrop_blocks, layerdrop_scratch_spec, layerdrop_spec
from lab.core.zoo import ModelSpec, Trained, trained
from lab.experiment import SEED_MAX, Pool, check, entry, param, seed_param, serial
from lab.ops import prune, search, selection
from lab.ops.recover import RecoveryConfig, recover
from lab.runtime.progress import Progress, silent, span

MODELS = LAYERDROP_MODELS
MODEL_LABELS = {"residual": "residual MLP", "vit": "ViT"}
STRATEGIES = prune.STRATEGIES
P_MAX = 0.7  # beyond this the expected training depth N(1 - p) is under a third of the model
P_GRID = (0.0, 0.2, 0.5)  # the reference rates of the table and of the page's first figure
RANDOM_DRAWS = 8  # random pruning: accuracy is the mean over this many draws
model_spec = layerdrop_spec
scratch_spec = layerdrop_scratch_spec
n_blocks = layerdrop_blocks


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


@entry("layerdrop-profile")
def profile(cfg: ProfileConfig, progress: Progress) -> dict[str, Any]:
    """Accuracy of every strategy at every depth for one trained model (cached)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.9))
    d, m = t.data, t.model
    n = m.n_blocks
    t0 = time.perf_counter()
    strategies: dict[str, list[dict[str, Any]]] = {}
    # Greedy deletion is deterministic, so its answer for k deletions is the first k picks of the full order:
    # one search of N rounds serves every depth (N^2/2 trial cuts instead of N^3/6).
    order = search.greedy(m, n, d.probe.x, d.probe.y)
    for i, s in enumerate(prune.STRATEGIES):
        progress(0.9 + 0.1 * i / len(prune.STRATEGIES), f"pruning p={cfg.p}: {s}")
        strategies[s] = [selection.evaluate(m, d, s, n - r, cfg.seed,
                                            RANDOM_DRAWS if s == "random" and 0 < r < n else 1,
                                            sorted(order[: n - r]) if s == "greedy" else None)
                         for r in range(n + 1)]
    return {
        "config": cfg,
        "n_blocks": n,
        "base_acc": accuracy(m, d.test.x, d.test.y),
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
        "p_star": prune.p_star(cfg.keep, n),
        "chance": prof["chance"],
        "n_test": prof["n_test"],
        "strategies": {s: prof["strategies"][s][cfg.keep] for s in prune.STRATEGIES},
        "train_seconds": prof["train_seconds"],
        "eval_seconds": prof["eval_seconds"],
    }
    out["scratch_acc"] = out["distilled_acc"] = None
    if cfg.keep < n:  # the paper's two baselines at this kept depth (each cached on its own)
        base = BaselineConfig(cfg.model, cfg.keep, cfg.seed)
        out["scratch_acc"] = scratch(base, span(progress, 0.7, 0.8))["scratch_acc"]
        out["distilled_acc"] = distil(base, span(progress, 0.8, 0.9))["distilled_acc"]
    if cfg.recovery == "kd" and cfg.keep < n:
        out.update(_recover(t, here["kept"], cfg, span(progress, 0.9, 1.0)))
    out["claims"] = claims(by_p, cfg.keep, cfg.p, out["scratch_acc"], out["distilled_acc"])
    return out


# -- claims (lab/claims.py): the paper's statements checked against this run's profiles, noise included ---------
SOURCE = ("Fan, Grave, Joulin, Reducing Transformer Depth on Demand with Structured Dropout (ICLR 2020, seeds/002): "
          "16-layer Transformers on language tasks, p = 0.2 or 0.5. Here: an 8-block residual MLP on a synthetic "
          "20-class task or an 8-block ViT on 8x8 digits, one trained model per rate and seed, pruned with no "
          "fine-tuning")
NEAR = 0.1  # a trained rate "near" p* is within this distance of it
SIMILAR = 0.02  # "about as good as": within 2 points


def _acc(prof: dict[str, Any], strategy: str, keep: int) -> float:
    return prof["strategies"][strategy][keep]["test_acc"]


def _p_of(prof: dict[str, Any]) -> float:
    c = prof["config"]
    return c["p"] if isinstance(c, dict) else c.p


def half_depth_claim(acc5: float, acc0: float, se5: float, se0: float, keep: int, nb: int, n: int,
                     seeds: str = "") -> dict[str, Any]:
    """p = 0.5 against p = 0, every other block kept (r = N/2); se5 / se0: each accuracy's standard error (binomial
    for one seed, `mean_se` over seeds in a table)."""
    se = math.hypot(se5, se0)
    return claim(
        "layerdrop.p05-beats-p0-half-depth", "A model trained with LayerDrop p = 0.5 keeps more accuracy than an "
        "ordinary one (p = 0) when pruned to half its depth by keeping every other block", SOURCE,
        {"acc_p05": acc5, "acc_p0": acc0, "keep": keep, "se": se, "n_test": n},
        f"held-out accuracy at r = {keep} of {nb} (every other) is higher at p = 0.5, {noise_words(se)}",
        at_least(acc5 - acc0, 0.0, se),
        f"pruned to {keep} of {nb}{seeds}: p = 0.5 {pct(acc5)}, p = 0 {pct(acc0)} ({pts(acc5 - acc0)}).")


def p_star_claim(accs: dict[float, float], ses: dict[float, float], keep: int, nb: int, n: int,
                 seeds: str = "") -> dict[str, Any]:
    """The best trained rate near p* = 1 - r/N against the best rate farther from it (every other pruning);
    accs / ses: accuracy at r and its standard error, by trained rate."""
    ps = prune.p_star(keep, nb)
    accs = dict(sorted(accs.items()))
    near = {p: a for p, a in accs.items() if abs(p - ps) <= NEAR + 1e-9}
    far = {p: a for p, a in accs.items() if abs(p - ps) > NEAR + 1e-9}
    listing = ", ".join(f"p = {p:g} {pct(a)}" for p, a in accs.items())
    measured: dict[str, Any] = {"p_star": ps, "keep": keep, "rates": list(accs), "accs": list(accs.values()),
                                "n_test": n}
    if not near or not far:
        holds, se = None, 0.0
        detail = (f"p* = {ps:.2f} for r = {keep} of {nb}{seeds}, and " + ("no trained rate is within "
                  f"{NEAR:g} of it (train one)" if not near else "every trained rate is near it") + f": {listing}.")
    else:
        pn, pf = max(near, key=near.get), max(far, key=far.get)
        se = math.hypot(ses[pn], ses[pf])
        holds = at_least(near[pn] - far[pf], 0.0, se)
        measured.update(best_near_p=pn, best_far_p=pf, se=se)
        detail = (f"r = {keep} of {nb}, p* = {ps:.2f}{seeds}: the best rate near it, p = {pn:g}, {pct(near[pn])}; the "
                  f"best farther away, p = {pf:g}, {pct(far[pf])} ({pts(near[pn] - far[pf])}). All: {listing}.")
    return claim(
        "layerdrop.p-star-rule", "To keep r of N blocks, train with p* = 1 − r/N: the best training rate for a kept "
        "depth lies near p*", SOURCE + "; only the rates trained here (0, 0.2, 0.5 and the page's p) compete",
        measured, f"the best trained rate within {NEAR:g} of p* beats every rate farther from it (every other "
        f"pruning, r = {keep}), {noise_words(se)}; none near or none far: cannot tell", holds, detail,
        subject=f"keep {keep} of {nb}")


def contiguous_claim(prof: dict[str, Any]) -> dict[str, Any]:
    """Every other block kept against removing the first or the last half, on the p = 0.5 model."""
    n, nb = prof["n_test"], prof["n_blocks"]
    r = nb // 2
    eo, first, last = (_acc(prof, s, r) for s in ("every-other", "first", "last"))
    se1, se2 = diff_se(eo, first, n), diff_se(eo, last, n)
    return claim(
        "layerdrop.every-other-beats-contiguous", "Keeping every other block beats removing a contiguous run of "
        "blocks (the first half or the last half)", SOURCE + "; the paper compared these on its LayerDrop model, "
        "here the model trained at p = 0.5",
        {"every_other_acc": eo, "first_half_removed_acc": first, "last_half_removed_acc": last, "keep": r,
         "se_first": se1, "se_last": se2, "n_test": n},
        f"every other beats both contiguous cuts at r = {r}, each {noise_words(max(se1, se2))}",
        all_of([at_least(eo - first, 0.0, se1), at_least(eo - last, 0.0, se2)]),
        f"p = 0.5 pruned to {r} of {nb}: every other {pct(eo)}, first half removed {pct(first)} ({pts(eo - first)}), "
        f"last half removed {pct(last)} ({pts(eo - last)}).", subject="trained at p = 0.5")


def one_block_claim(prof: dict[str, Any]) -> dict[str, Any]:
    """Veit et al.: one block of an ordinary residual net can go (random block, mean of draws, r = N - 1)."""
    n, nb, base, chance = prof["n_test"], prof["n_blocks"], prof["base_acc"], prof["chance"]
    cut = _acc(prof, "random", nb - 1)
    allowed = 0.1 * (base - chance)
    se = diff_se(base, cut, n)
    return claim(
        "layerdrop.one-block-costs-little", "An ordinary residual network (no LayerDrop) loses little when one block "
        "is removed", "Veit, Wilber, Belongie (2016), residual nets behave like ensembles; here the p = 0 model, one "
        f"block drawn at random ({RANDOM_DRAWS} draws averaged), no fine-tuning",
        {"base_acc": base, "one_removed_acc": cut, "allowed_loss": allowed, "se": se, "n_test": n},
        f"removing one random block costs at most 10 % of the above-chance accuracy ({pts(allowed)}), "
        + noise_words(se), at_most(base - cut, allowed, se),
        f"p = 0: full {pct(base)}, one random block removed {pct(cut)} ({pts(cut - base)}; chance {pct(chance)}).",
        subject="trained at p = 0")


def first_block_claim(prof: dict[str, Any]) -> dict[str, Any]:
    """Blocks are not interchangeable: removing block 0 against removing a random block, r = N - 1."""
    n, nb = prof["n_test"], prof["n_blocks"]
    first, rand = _acc(prof, "first", nb - 1), _acc(prof, "random", nb - 1)
    se = diff_se(rand, first, n)
    p = _p_of(prof)
    return claim(
        "layerdrop.first-block-not-interchangeable", "Blocks are not interchangeable: the first block costs more "
        "to remove than a block drawn at random", "Sun et al. (2024) and Lad et al. (2024): the first layers of a "
        f"deep network are distinct from the middle ones; here one block of {nb}, random = mean of {RANDOM_DRAWS} "
        "draws", {"first_removed_acc": first, "random_removed_acc": rand, "se": se, "n_test": n},
        f"accuracy without block 0 is below the mean without one random block, {noise_words(se)}",
        at_least(rand - first, 0.0, se),
        f"trained at p = {p:g}, one block removed: block 0 {pct(first)}, a random block {pct(rand)} "
        f"({pts(first - rand)}).", subject=f"trained at p = {p:g}")


def claims(by_p: dict[float, dict[str, Any]], keep: int, p: float, scratch_acc: Optional[float] = None,
           distilled_acc: Optional[float] = None) -> list[dict[str, Any]]:
    """Every claim one seed's profiles (p = 0, 0.2, 0.5 and the setting's p) and the baselines at r (None when
    r = N: nothing is pruned) can test at the setting's r and p."""
    nb, n = by_p[0.0]["n_blocks"], by_p[0.0]["n_test"]
    half = nb // 2
    acc5, acc0 = _acc(by_p[0.5], "every-other", half), _acc(by_p[0.0], "every-other", half)
    at_r = {q: _acc(prof, "every-other", keep) for q, prof in by_p.items()}
    out = [half_depth_claim(acc5, acc0, binomial_se(acc5, n), binomial_se(acc0, n), half, nb, n),
           p_star_claim(at_r, {q: binomial_se(a, n) for q, a in at_r.items()}, keep, nb, n),
           contiguous_claim(by_p[0.5]), one_block_claim(by_p[0.0]), first_block_claim(by_p[p])]
    pruned = at_r[p]
    if scratch_acc is not None:
        out.append(beats_scratch_claim(pruned, scratch_acc, binomial_se(pruned, n), binomial_se(scratch_acc, n),
                                       keep, nb, p, n))
    if distilled_acc is not None:
        out.append(distillation_claim(pruned, distilled_acc, binomial_se(pruned, n), binomial_se(distilled_acc, n),
                                      keep, nb, p, n))
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
    return {"config": cfg, "n_blocks": t.model.n_blocks, "scratch_acc": accuracy(t.model, d.test.x, d.test.y),
            "n_test": len(d.test), "train_seconds": t.info["seconds"]}


def distil_steps(spec: ModelSpec, n_train: int, batch: int) -> int:
    """Distillation steps that show the student as many training inputs as the recipe's training run."""
    return math.ceil(spec.train.epochs * n_train / batch)


@entry("layerdrop-distil")
def distil(cfg: BaselineConfig, progress: Progress) -> dict[str, Any]:
    """Depth r distilled from the full ordinary (p = 0) model (cached): the student starts from the teacher's every
    other blocks (DistilBERT's initialisation) and learns by KD on that route, for as many inputs as training saw."""
    t = trained(model_spec(cfg.model, 0.0, cfg.seed), span(progress, 0.0, 0.3))
    d = t.data
    kept = prune.kept(t.model.n_blocks, prune.every_other(t.model.n_blocks, cfg.keep))
    rc = RecoveryConfig(method="kd", seed=cfg.seed)
    rc = replace(rc, steps=distil_steps(t.spec, len(d.train), rc.batch))
    student: RoutedModel = copy.deepcopy(t.model)  # never change the shared trained model
    t0 = time.perf_counter()
    log = recover(student, kept, d, rc, teacher=t.model, progress=span(progress, 0.3, 1.0))
    return {"config": cfg, "kept": kept, "distilled_acc": log.test_acc[-1], "start_acc": log.test_acc[0],
            "steps": rc.steps, "n_test": len(d.test), "distil_seconds": time.perf_counter() - t0}


def beats_scratch_claim(pruned: float, scratch_acc: float, se_pruned: float, se_scratch: float, keep: int, nb: int,
                        p: float, n: int, seeds: str = "") -> dict[str, Any]:
    """The pruned LayerDrop model against a depth-r model trained from scratch."""
    se = math.hypot(se_pruned, se_scratch)
    holds = None if p == 0 else at_least(pruned - scratch_acc, 0.0, se)
    why = " (p = 0 is no LayerDrop model: choose p > 0)" if p == 0 else ""
    return claim(
        "layerdrop.beats-scratch", "A LayerDrop model pruned to depth r is better than a model of depth r trained "
        "from scratch with the same recipe", SOURCE + "; the scratch model here has the same recipe and epochs",
        {"pruned_acc": pruned, "scratch_acc": scratch_acc, "p": p, "keep": keep, "se": se, "n_test": n},
        f"every-other pruning of the model trained at p > 0 beats the depth-{keep} model from scratch, "
        + noise_words(se), holds,
        f"r = {keep} of {nb}{seeds}: trained at p = {p:g} and pruned {pct(pruned)}, from scratch {pct(scratch_acc)} "
        f"({pts(pruned - scratch_acc)}){why}.", subject=f"p = {p:g}, keep {keep} of {nb}")


def distillation_claim(pruned: float, distilled: float, se_pruned: float, se_distilled: float, keep: int, nb: int,
                       p: float, n: int, seeds: str = "") -> dict[str, Any]:
    """The pruned LayerDrop model against depth r distilled from the full ordinary model: at most SIMILAR worse."""
    se = math.hypot(se_pruned, se_distilled)
    holds = None if p == 0 else at_most(distilled - pruned, SIMILAR, se)
    why = " (p = 0 is no LayerDrop model: choose p > 0)" if p == 0 else ""
    return claim(
        "layerdrop.about-as-good-as-distillation", "A LayerDrop model pruned to depth r is about as good as "
        "distilling the full model into depth r", SOURCE + "; the paper compares with DistilBERT, here the p = 0 "
        "model's every other blocks distilled by KD (lab/ops/recover.py) for as many inputs as training saw",
        {"pruned_acc": pruned, "distilled_acc": distilled, "p": p, "keep": keep, "allowed_gap": SIMILAR, "se": se,
         "n_test": n},
        f"distillation is not ahead of the pruned model by more than {100 * SIMILAR:g} pts, {noise_words(se)}", holds,
        f"r = {keep} of {nb}{seeds}: trained at p = {p:g} and pruned {pct(pruned)}, distilled {pct(distilled)} "
        f"({pts(pruned - distilled)}){why}.", subject=f"p = {p:g}, keep {keep} of {nb}")


TABLE_KEEP = (1.0, 0.75, 0.5, 0.25)  # fractions of N in the summary table


def rule_rate(keep: int, n: int) -> float:
    """The reference rate (P_GRID) nearest the rule's p* = 1 - r/N, the larger one on a tie."""
    ps = prune.p_star(keep, n)
    return min(P_GRID, key=lambda p: (abs(p - ps), -p))


def table(model: str, seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Every-other accuracy for p in P_GRID x kept in N, 3N/4, N/2, N/4, per seed, and the two baselines (from
    scratch, distilled) at every kept depth below N (all computed by `pool`), with the claims on the seeds' means
    (their error: `mean_se`, the seeds' spread when it is larger)."""
    n = n_blocks(model)
    keeps = [round(f * n) for f in TABLE_KEEP]
    rows: dict[float, list[list[float]]] = {}
    seconds: dict[str, list[float]] = {"train": [], "eval": []}
    jobs = [(p, s) for p in P_GRID for s in seeds]
    cut = [r for r in keeps if r < n]
    base_jobs = [(fn, BaselineConfig(model, r, s)) for r in cut for s in seeds for fn in (scratch, distil)]
    done = pool([(profile, ProfileConfig(model, p, s)) for p, s in jobs] + base_jobs, progress)
    profs, bases = done[:len(jobs)], done[len(jobs):]
    for (p, _), prof in zip(jobs, profs, strict=True):
        rows.setdefault(p, []).append([prof["strategies"]["every-other"][r]["test_acc"] for r in keeps])
        seconds["train"].append(prof["train_seconds"])
        seconds["eval"].append(prof["eval_seconds"])
    baselines: dict[str, dict[int, list[float]]] = {"scratch": {}, "distilled": {}}
    for (fn, c), b in zip(base_jobs, bases, strict=True):
        name = "scratch" if fn is scratch else "distilled"
        baselines[name].setdefault(c.keep, []).append(b[f"{name}_acc"])
    out = {"model": model, "n_blocks": n, "keeps": keeps, "seeds": seeds, "rows": rows, "seconds": seconds,
           "baselines": baselines, "n_test": profs[0]["n_test"]}
    return {**out, "claims": table_claims(out)}


def table_claims(t: dict[str, Any]) -> list[dict[str, Any]]:
    """The half-depth claim, the p* rule at every kept depth and (when the table has them) the baselines at every
    kept depth below N against the rule's rate, on means over seeds (error: `mean_se`)."""
    n, nb, keeps = t["n_test"], t["n_blocks"], t["keeps"]
    seeds = f", mean of {len(t['seeds'])} seed(s)"

    def mean_and_se(vals: list[float]) -> tuple[float, float]:
        return sum(vals) / len(vals), mean_se(vals, n)

    def at(p: float, j: int) -> tuple[float, float]:
        return mean_and_se([row[j] for row in t["rows"][p]])

    out = []
    if nb // 2 in keeps:
        j = keeps.index(nb // 2)
        (a5, s5), (a0, s0) = at(0.5, j), at(0.0, j)
        out.append(half_depth_claim(a5, a0, s5, s0, nb // 2, nb, n, seeds))
    for j, r in enumerate(keeps):
        ms = {p: at(p, j) for p in t["rows"]}
        out.append(p_star_claim({p: m for p, (m, _) in ms.items()}, {p: e for p, (_, e) in ms.items()}, r, nb, n,
                                seeds))
    for j, r in enumerate(keeps):
        if r not in t.get("baselines", {}).get("scratch", {}):
            continue
        p = rule_rate(r, nb)
        pruned, se_p = at(p, j)
        (sc, se_s), (di, se_d) = mean_and_se(t["baselines"]["scratch"][r]), mean_and_se(t["baselines"]["distilled"][r])
        out.append(beats_scratch_claim(pruned, sc, se_p, se_s, r, nb, p, n, seeds))
        out.append(distillation_claim(pruned, di, se_p, se_d, r, nb, p, n, seeds))
    return out
