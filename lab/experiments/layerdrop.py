"""LayerDrop (Fan et al. 2019): train with random block skipping at rate p, then prune to r of N blocks.

`profile(ProfileConfig)` is the unit of work: train one model at one p (through the zoo) and measure held-out
accuracy for every pruning strategy at every depth r = 0..N. Pages and tables combine several profiles, and a
profile depends only on (model, p, seed), so a page that adds one p trains one model, never more.
`run(LayerDropConfig)` answers one question (this p, this r, this strategy), optionally with KD recovery.
Everything goes through the store, so a repeated call is a file read.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

from .. import presets, prune, search, selection
from ..experiment import SEED_MAX, Pool, check, entry, param, seed_param, serial
from ..models import RoutedModel, accuracy
from ..progress import Progress, silent, span
from ..recipes import LAYERDROP_MODELS, layerdrop_blocks, layerdrop_spec
from ..recover import RecoveryConfig, recover
from ..zoo import ModelSpec, Trained, trained

MODELS = LAYERDROP_MODELS
MODEL_LABELS = {"residual": "residual MLP", "vit": "ViT"}
STRATEGIES = prune.STRATEGIES
P_MAX = 0.7  # beyond this the expected training depth N(1 - p) is under a third of the model
P_GRID = (0.0, 0.2, 0.5)  # the reference rates of the table and of the page's first figure
RANDOM_DRAWS = 8  # random pruning: accuracy is the mean over this many draws
model_spec = layerdrop_spec
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
    prof = profile(cfg.profile_cfg, span(progress, 0.0, 0.7))
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
        "strategies": {s: prof["strategies"][s][cfg.keep] for s in prune.STRATEGIES},
        "train_seconds": prof["train_seconds"],
        "eval_seconds": prof["eval_seconds"],
    }
    if cfg.recovery == "kd" and cfg.keep < n:
        out.update(_recover(t, here["kept"], cfg, span(progress, 0.7, 1.0)))
    return out


TABLE_KEEP = (1.0, 0.75, 0.5, 0.25)  # fractions of N in the summary table


def table(model: str, seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Every-other accuracy for p in P_GRID x kept in N, 3N/4, N/2, N/4, per seed (from the profiles, computed by
    `pool`)."""
    n = n_blocks(model)
    keeps = [round(f * n) for f in TABLE_KEEP]
    rows: dict[float, list[list[float]]] = {}
    seconds: dict[str, list[float]] = {"train": [], "eval": []}
    jobs = [(p, s) for p in P_GRID for s in seeds]
    profs = pool([(profile, ProfileConfig(model, p, s)) for p, s in jobs], progress)
    for (p, _), prof in zip(jobs, profs, strict=True):
        rows.setdefault(p, []).append([prof["strategies"]["every-other"][r]["test_acc"] for r in keeps])
        seconds["train"].append(prof["train_seconds"])
        seconds["eval"].append(prof["eval_seconds"])
    return {"model": model, "n_blocks": n, "keeps": keeps, "seeds": seeds, "rows": rows, "seconds": seconds}


# -- the page's complete settings: its controls, presets, and what a setting needs (lab/presets.py) -----------
CONTROLS = {"model": "residual", "p": 0.5, "keep": 4, "strategy": "every-other", "recovery": "none", "seed": 0}
PRESETS = (
    presets.preset(CONTROLS, "half", "Half depth, ordinary model", "p = 0 pruned to 4 of 8 blocks by every other: "
                   "pin it, then set p = 0.5 and compare.", keep=4, strategy="every-other", p=0.0),
    presets.preset(CONTROLS, "quarter", "Quarter depth, p = 0.7", "The rule says p* = 0.75 for a quarter of the "
                   "blocks: does the largest p here win?", keep=2, p=0.7, strategy="every-other"),
    presets.preset(CONTROLS, "first", "Contiguous cuts", "The first 4 blocks removed: then switch to last and every "
                   "other. Which blocks can the model not lose?", strategy="first", keep=4),
    presets.preset(CONTROLS, "kd", "Prune, then distil", "An ordinary model (p = 0) cut to 2 blocks and distilled: "
                   "compare with LayerDrop's result without it.", recovery="kd", keep=2, p=0.0),
)

_TRAIN_SECONDS = {"residual": 20, "vit": 90}  # rough, one model, classroom machine


def config_of(settings: dict[str, Any]) -> LayerDropConfig:
    """The experiment config of a complete page setting."""
    return LayerDropConfig(**{k: settings[k] for k in ("model", "p", "keep", "strategy", "recovery", "seed")})


def needs(settings: dict[str, Any]) -> list[presets.Need]:
    """This run and the reference models of the comparison (one trained model per rate)."""
    cfg = config_of(settings)
    train = _TRAIN_SECONDS[cfg.model]
    ps = CompareConfig(cfg.model, cfg.p, cfg.seed).ps
    return ([presets.Need("this run", run, cfg, 5 + (30 if cfg.recovery == "kd" else 0))]
            + [presets.Need(f"the model at p = {q:g}", profile, ProfileConfig(cfg.model, q, cfg.seed), train + 10)
               for q in ps])
