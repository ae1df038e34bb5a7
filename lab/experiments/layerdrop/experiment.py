"""LayerDrop (Fan et al. 2019): train with random block skipping at rate p, then prune to r of N blocks.

`profile(ProfileConfig)` is the unit of work: train one model at one p (through the zoo) and measure held-out
accuracy for every pruning strategy at every depth r = 0..N. Pages and tables combine several profiles, and a
profile depends only on (model, p, seed), so a page that adds one p trains one model, never more.
`run(LayerDropConfig)` answers one question (this p, this r, this strategy), optionally with KD recovery.
Everything goes through the store, so a repeated call is a file read.

Every cut keeps its per-input held-out outcomes (packed bit vectors), so the claims compare accuracies on the same
inputs paired; random pruning averages every subset of the dropped size when there are at most EXACT_SUBSETS
(one block: all N), else RANDOM_DRAWS distinct subsets, and keeps each subset's outcomes. The claims are declared in
claims.py and computed when a result is read (this module does not import it: rewording a claim recomputes nothing).
"""

from __future__ import annotations

import copy
import itertools
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Optional

import torch

from lab import estimates as E
from lab.core import model_registry, page_words, streams
from lab.core.data import Dataset
from lab.core.models import RoutedModel, accuracy, correct
from lab.core.page_models import layerdrop_blocks, layerdrop_scratch_spec, layerdrop_spec
from lab.core.page_words import LAYERDROP_MODELS
from lab.core.routes import without
from lab.core.task_fit import on_task, task_or_own
from lab.core.zoo import ModelSpec, Trained, trained
from lab.experiment import SEED_MAX, Pool, check, entry, param, seed_param, serial, task_param
from lab.ops import search, selection
from lab.ops.recover import RecoveryConfig, recover
from lab.runtime.progress import Progress, silent, span

MODELS = LAYERDROP_MODELS
ENTRIES = {m: model_registry.model(page_words.layerdrop_name(m, 0.0)) for m in MODELS}  # the ordinary (p = 0) models
MODEL_LABELS = {m: e.kind for m, e in ENTRIES.items()}
STRATEGIES = ("every-other", "greedy", "influence", "first", "last", "random")  # of selection.METHODS
P_MAX = 0.7  # beyond this the expected training depth N(1 - p) is under a third of the model
P_GRID = (0.0, 0.2, 0.5)  # the reference rates of the table and of the page's first figure
EXACT_SUBSETS = 35  # random pruning averages every subset when there are at most this many (C(8, k) for k != 3..5)
RANDOM_DRAWS = 8  # otherwise this many distinct subsets, drawn without replacement (their spread joins the error)
model_spec = layerdrop_spec


def own_task(model: str, task: Optional[str]) -> Optional[str]:
    """The task a config names: None for the model's own (so both spellings share one result), else checked."""
    return task_or_own(task, model_spec(model, 0.0, 0).task, "vit" if model == "vit" else "mlp")


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
    task: Optional[str] = None  # None: the model's own task

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        object.__setattr__(self, "p", check_p(self.p))
        if not 0 <= self.seed <= SEED_MAX:
            raise ValueError(f"the seed must be a whole number from 0 to {SEED_MAX}")
        object.__setattr__(self, "task", own_task(self.model, self.task))

    @property
    def spec(self) -> ModelSpec:
        return on_task(model_spec(self.model, self.p, self.seed), self.task)


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


@dataclass(frozen=True)
class LayerDropProfile:
    """`profile`'s answer: one trained model's accuracy for every strategy at every depth, with every cut's per-input
    held-out outcomes (packed bit vectors)."""

    config: ProfileConfig
    n_blocks: int
    base_acc: float
    base_outcomes: str
    chance: float
    n_test: int
    strategies: dict[str, list[dict[str, Any]]]  # strategy -> one row per r = 0..N (blocks kept)
    train_curve: list[float]  # full-route held-out accuracy after every epoch
    train_seconds: float
    eval_seconds: float


@entry("layerdrop-profile", result=LayerDropProfile)
def profile(cfg: ProfileConfig, progress: Progress) -> LayerDropProfile:
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
    return LayerDropProfile(config=cfg, n_blocks=n, base_acc=E.accuracy(base_ok).value, base_outcomes=E.pack(base_ok),
                            chance=d.chance, n_test=len(d.test), strategies=strategies,
                            train_curve=t.info["test_acc"], train_seconds=t.info["seconds"],
                            eval_seconds=time.perf_counter() - t0)


def profiles(model: str, ps: list[float], seed: int, progress: Progress = silent,
             task: Optional[str] = None) -> dict[float, LayerDropProfile]:
    """Profiles for several rates, one model each; progress advances evenly over the models."""
    ps = sorted({check_p(p) for p in ps})
    out = {}
    for i, p in enumerate(ps):
        out[p] = profile(ProfileConfig(model, p, seed, task), span(progress, i / len(ps), (i + 1) / len(ps)))
    return out


@dataclass(frozen=True)
class CompareConfig:
    """The page's comparison: the reference rates P_GRID plus the student's p, one model each."""

    model: str = "residual"
    p: float = 0.5
    seed: int = 0
    task: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", own_task(self.model, self.task))

    @property
    def ps(self) -> list[float]:
        return sorted({*P_GRID, check_p(self.p)})


def compare(cfg: CompareConfig, progress: Progress = silent) -> list[LayerDropProfile]:
    """Profiles of every rate in cfg.ps, ascending p (each one cached on its own)."""
    return list(profiles(cfg.model, cfg.ps, cfg.seed, progress, cfg.task).values())


@dataclass(frozen=True)
class LayerDropConfig:
    """One question: train at p, prune to `keep` blocks by `strategy`, optionally recover by KD."""

    model: str = param("residual", f"The network trained with LayerDrop: the {ENTRIES['residual'].title} "
                       f"({ENTRIES['residual'].data_words}, seconds) or the {ENTRIES['vit'].title} "
                       f"({ENTRIES['vit'].data_words}, about a minute).", label="Model", choices=MODELS,
                       labels=MODEL_LABELS)
    p: float = param(0.5, "LayerDrop rate: each block is skipped with this probability at every training step.",
                     label="LayerDrop rate p", lo=0.0, hi=P_MAX)
    keep: int = param(4, "Blocks kept after pruning, r of N.", label="Blocks kept", lo=1,
                      hi=max(e.blocks for e in ENTRIES.values()))
    strategy: str = param("every-other", "Which blocks to keep: every other (the paper's rule), greedy or lowest "
                          "influence (scored on a probe split), the first or last blocks removed, or random.",
                          label="Pruning strategy", choices=STRATEGIES, labels=selection.LABELS)
    seed: int = seed_param()
    recovery: str = param("none", "Distil the pruned model from its own full route afterwards.", label="Recovery",
                          choices=("none", "kd"), labels={"none": "none", "kd": "distil (KD)"})
    steps: int = param(500, "Recovery steps.", label="Recovery steps", lo=0, hi=20_000)
    task: Optional[str] = task_param()

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", check_p(self.p))
        check(self)
        object.__setattr__(self, "task", own_task(self.model, self.task))
        n = n_blocks(self.model)
        if not 1 <= self.keep <= n:
            raise ValueError(f"keep={self.keep} is out of range: the {self.model} model has {n} blocks, "
                             f"so keep 1..{n}")
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates steps

    @property
    def profile_cfg(self) -> ProfileConfig:
        return ProfileConfig(self.model, self.p, self.seed, self.task)


def _recover(t: Trained, kept: list[int], cfg: LayerDropConfig, progress: Progress) -> dict[str, Any]:
    student: RoutedModel = copy.deepcopy(t.model)  # never change the shared trained model
    t0 = time.perf_counter()
    rc = RecoveryConfig(method="kd", steps=cfg.steps, seed=cfg.seed)
    log = recover(student, kept, t.data, rc, teacher=t.model, progress=progress)
    return {"recovered_acc": log.test_acc[-1], "curve_steps": log.steps, "curve_acc": log.test_acc,
            "recovery_seconds": time.perf_counter() - t0}


@dataclass(frozen=True)
class LayerDropResult:
    """`run`'s answer: one LayerDrop question (this p, this r, this strategy), with the depth-r baselines, the
    optional KD recovery. Accuracies are held-out unless their name says probe."""

    config: LayerDropConfig
    n_blocks: int
    base_acc: float
    cut_acc: float
    cut_probe_acc: float
    kept: list[int]
    dropped: list[int]
    draws: int  # random subsets averaged (1 for every other strategy)
    p_star: float
    chance: float
    n_test: int
    strategies: dict[str, dict[str, Any]]  # strategy -> the profile's row at this kept depth
    train_seconds: float
    eval_seconds: float
    # the run's strategy at every reference rate: what its figure draws (app/figures_layerdrop.versus_p_of_run)
    by_p: list[dict[str, Any]]
    scratch_acc: Optional[float]  # the depth-r baselines; None when nothing is pruned (r = N)
    distilled_acc: Optional[float]
    # KD recovery of the pruned model (`recovery="kd"` and r < N), else None
    recovered_acc: Optional[float] = None
    curve_steps: Optional[list[int]] = None
    curve_acc: Optional[list[float]] = None
    recovery_seconds: Optional[float] = None


@entry("layerdrop", result=LayerDropResult)
def run(cfg: LayerDropConfig, progress: Progress) -> LayerDropResult:
    """One LayerDrop question (cached). Accuracies are held-out unless their name says probe."""
    # every reference rate too: the claims compare them (each profile is cached on its own, as the page needs them)
    ps = CompareConfig(cfg.model, cfg.p, cfg.seed, cfg.task).ps
    by_p = profiles(cfg.model, ps, cfg.seed, span(progress, 0.0, 0.7), cfg.task)
    prof = by_p[cfg.p]
    t = trained(cfg.profile_cfg.spec)  # already built by the profile: a memo or file read
    n = prof.n_blocks
    here = prof.strategies[cfg.strategy][cfg.keep]
    sc = di = None
    if cfg.keep < n:  # the paper's two baselines at this kept depth (each cached on its own)
        base = BaselineConfig(cfg.model, cfg.keep, cfg.seed, cfg.task)
        sc = scratch(base, span(progress, 0.7, 0.8))
        di = distil(base, span(progress, 0.8, 0.9))
    rec: dict[str, Any] = {}
    if cfg.recovery == "kd" and cfg.keep < n:
        rec = _recover(t, here["kept"], cfg, span(progress, 0.9, 1.0))
    return LayerDropResult(
        config=cfg, n_blocks=n, base_acc=prof.base_acc, cut_acc=here["test_acc"], cut_probe_acc=here["probe_acc"],
        kept=here["kept"], dropped=here["dropped"], draws=here["draws"], p_star=p_star(cfg.keep, n),
        chance=prof.chance, n_test=prof.n_test,
        strategies={s: prof.strategies[s][cfg.keep] for s in STRATEGIES},
        train_seconds=prof.train_seconds, eval_seconds=prof.eval_seconds,
        by_p=[{"config": {"p": q}, "n_blocks": by_p[q].n_blocks, "chance": by_p[q].chance,
               "strategies": {cfg.strategy: [{"test_acc": row["test_acc"], "kept": row["kept"]}
                                             for row in by_p[q].strategies[cfg.strategy]]}}
              for q in sorted(by_p)],
        scratch_acc=None if sc is None else sc.scratch_acc,
        distilled_acc=None if di is None else di.distilled_acc,
        **rec)


# -- the paper's baselines at the kept depth r: a depth-r model from scratch, and depth r distilled ---------------
@dataclass(frozen=True)
class BaselineConfig:
    """A kept depth r of one model family and seed: the baselines LayerDrop's pruned model is compared with."""

    model: str = "residual"
    keep: int = 4
    seed: int = 0
    task: Optional[str] = None

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        object.__setattr__(self, "task", own_task(self.model, self.task))
        n = n_blocks(self.model)
        if not 1 <= self.keep < n:
            raise ValueError(f"a baseline needs 1 <= keep < {n} (the {self.model} model has {n} blocks)")
        if not 0 <= self.seed <= SEED_MAX:
            raise ValueError(f"the seed must be a whole number from 0 to {SEED_MAX}")


@dataclass(frozen=True)
class ScratchResult:
    """`scratch`'s answer: a depth-r model trained from scratch, its held-out accuracy and per-input outcomes."""

    config: BaselineConfig
    n_blocks: int
    scratch_acc: float
    outcomes: str  # packed per-input held-out outcomes (lab.estimates.pack)
    n_test: int
    train_seconds: float


@entry("layerdrop-scratch", result=ScratchResult)
def scratch(cfg: BaselineConfig, progress: Progress) -> ScratchResult:
    """A model of depth r trained from scratch with the ordinary (p = 0) recipe, same epochs (cached)."""
    t = trained(on_task(scratch_spec(cfg.model, cfg.keep, cfg.seed), cfg.task), progress)
    d = t.data
    ok = correct(t.model, d.test.x, d.test.y)
    return ScratchResult(config=cfg, n_blocks=t.model.n_blocks, scratch_acc=E.accuracy(ok).value,
                         outcomes=E.pack(ok), n_test=len(d.test), train_seconds=t.info["seconds"])


def distil_steps(spec: ModelSpec, n_train: int, batch: int) -> int:
    """Distillation steps that show the student as many training inputs as the recipe's training run."""
    return math.ceil(spec.train.epochs * n_train / batch)


@dataclass(frozen=True)
class DistilResult:
    """`distil`'s answer: depth r distilled from the full p = 0 model, its held-out accuracy and per-input
    outcomes."""

    config: BaselineConfig
    kept: list[int]
    distilled_acc: float
    outcomes: str  # packed per-input held-out outcomes (lab.estimates.pack)
    start_acc: float
    steps: int
    n_test: int
    distil_seconds: float


@entry("layerdrop-distil", result=DistilResult)
def distil(cfg: BaselineConfig, progress: Progress) -> DistilResult:
    """Depth r distilled from the full ordinary (p = 0) model (cached): the student starts from the teacher's every
    other blocks (DistilBERT's initialisation) and learns by KD on that route, for as many inputs as training saw."""
    t = trained(on_task(model_spec(cfg.model, 0.0, cfg.seed), cfg.task), span(progress, 0.0, 0.3))
    d = t.data
    kept = selection.kept(t.model.n_blocks, selection.every_other(t.model.n_blocks, cfg.keep))
    rc = RecoveryConfig(method="kd", seed=cfg.seed)
    rc = replace(rc, steps=distil_steps(t.spec, len(d.train), rc.batch))
    student: RoutedModel = copy.deepcopy(t.model)  # never change the shared trained model
    t0 = time.perf_counter()
    log = recover(student, kept, d, rc, teacher=t.model, progress=span(progress, 0.3, 1.0))
    ok = correct(student, d.test.x, d.test.y, tuple(kept))
    return DistilResult(config=cfg, kept=kept, distilled_acc=log.test_acc[-1], outcomes=E.pack(ok),
                        start_acc=log.test_acc[0], steps=rc.steps, n_test=len(d.test),
                        distil_seconds=time.perf_counter() - t0)


TABLE_KEEP = (1.0, 0.75, 0.5, 0.25)  # fractions of N in the summary table


def p_star(keep: int, n_blocks: int) -> float:
    """The paper's rule of thumb: train with p* = 1 - r/N to prune to r of N blocks (N(1 - p) run on average)."""
    if not 0 <= keep <= n_blocks:
        raise ValueError(f"cannot keep {keep} blocks: the model has {n_blocks} (choose 0..{n_blocks})")
    return 1.0 - keep / n_blocks


def table_keeps(n: int) -> list[int]:
    """The kept depths of the summary table for a model of n blocks."""
    return [round(f * n) for f in TABLE_KEEP]


def rule_rate(keep: int, n: int) -> float:
    """The reference rate (P_GRID) nearest the rule's p* = 1 - r/N, the larger one on a tie."""
    ps = p_star(keep, n)
    return min(P_GRID, key=lambda p: (abs(p - ps), -p))


def table(model: str, seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Every-other accuracy for p in P_GRID x kept in N, 3N/4, N/2, N/4, per seed, and the two baselines (from
    scratch, distilled) at every kept depth below N (all computed by `pool`; claims.py: `table_claims` reads its
    claims from the same stored results)."""
    n = n_blocks(model)
    keeps = table_keeps(n)
    rows: dict[float, list[list[float]]] = {}
    seconds: dict[str, list[float]] = {"train": [], "eval": []}
    jobs = [(p, s) for p in P_GRID for s in seeds]
    cut = [r for r in keeps if r < n]
    base_jobs = [(fn, BaselineConfig(model, r, s)) for r in cut for s in seeds for fn in (scratch, distil)]
    done = pool([(profile, ProfileConfig(model, p, s)) for p, s in jobs] + base_jobs, progress)
    profs, bases = done[:len(jobs)], done[len(jobs):]
    for (p, _), prof in zip(jobs, profs, strict=True):
        rows.setdefault(p, []).append([prof.strategies["every-other"][r]["test_acc"] for r in keeps])
        seconds["train"].append(prof.train_seconds)
        seconds["eval"].append(prof.eval_seconds)
    baselines: dict[str, dict[int, list[float]]] = {"scratch": {}, "distilled": {}}
    for (fn, c), b in zip(base_jobs, bases, strict=True):
        name = "scratch" if fn is scratch else "distilled"
        baselines[name].setdefault(c.keep, []).append(b.scratch_acc if fn is scratch else b.distilled_acc)
    return {"model": model, "n_blocks": n, "keeps": keeps, "seeds": seeds, "rows": rows, "seconds": seconds,
            "baselines": baselines, "n_test": profs[0].n_test}
