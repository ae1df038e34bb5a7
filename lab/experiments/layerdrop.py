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

from .. import prune, quick, search
from ..models import MLPConfig, RoutedModel, ViTConfig, accuracy
from ..progress import Progress, silent, span
from ..recover import RecoveryConfig, recover
from ..routes import without
from ..store import Store, default_store
from ..train import TrainConfig
from ..zoo import ModelSpec, Trained, trained

MODELS = ("residual", "vit")
P_MAX = 0.7  # beyond this the expected training depth N(1 - p) is under a third of the model
P_GRID = (0.0, 0.2, 0.5)  # the reference rates of the table and of the page's first figure
RANDOM_DRAWS = 8  # random pruning: accuracy is the mean over this many draws
MLP_DEPTH = 9  # hidden layers: stem + 8 blocks, so N/4, N/2 and 3N/4 are whole numbers
VIT_DEPTH = 8  # transformer blocks, for the same reason


def model_spec(model: str, p: float, seed: int) -> ModelSpec:
    """The trained model of the LayerDrop experiments. p = 0 is the ordinary (sequential) recipe itself."""
    # The trainer draws LayerDrop routes from a generator of its own, so p = 0 would give the same weights as
    # sequential training (tests/test_layerdrop.py checks it); naming it sequential lets other pages share it.
    mode = dict(mode="layerdrop", drop_p=p) if p > 0 else {}
    if model == "residual":
        return ModelSpec(MLPConfig(arch="residual", depth=MLP_DEPTH), TrainConfig(epochs=12, seed=seed, **mode))
    if model == "vit":
        # batch 32, lr 1e-3: at lr 3e-3 the 8-block ViT reached only 71 % on digits (seed 0, p = 0)
        return ModelSpec(ViTConfig(depth=VIT_DEPTH), TrainConfig(epochs=20, batch=32, lr=1e-3, seed=seed, **mode),
                         task="digits")
    raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")


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
        if not 0 <= self.seed <= 2**31 - 1:
            raise ValueError("the seed must be a non-negative integer")

    @property
    def spec(self) -> ModelSpec:
        return model_spec(self.model, self.p, self.seed)


@dataclass(frozen=True)
class _Entry:
    """A config as the store's key: the quick-mode flag in it (one-epoch smoke-test runs must never share an entry
    with a real run), and a type defined here, so the key's code version covers this module and its imports."""

    cfg: Any
    quick: bool


def _entry(cfg: Any) -> _Entry:
    return _Entry(cfg, quick.quick())


def prune_eval(t: Trained, strategy: str, keep: int, seed: int, dropped: list[int] | None = None) -> dict[str, Any]:
    """Held-out (and probe) accuracy of one strategy at one depth; random is the mean over RANDOM_DRAWS draws.

    `dropped`, when given, is the strategy's answer computed elsewhere (the greedy order's prefix, see _profile).
    """
    d, m = t.data, t.model
    draws = RANDOM_DRAWS if strategy == "random" and 0 < keep < m.n_blocks else 1
    picks, test, probe = [], [], []
    for j in range(draws):
        if dropped is None or j > 0:
            dropped = prune.to_drop(strategy, m, keep, d.probe.x, d.probe.y, seed=seed * 1000 + j)
        route = without(m.n_blocks, dropped)
        picks.append(dropped)
        test.append(accuracy(m, d.test.x, d.test.y, route))
        probe.append(accuracy(m, d.probe.x, d.probe.y, route))
    return {"dropped": picks[0], "kept": prune.kept(m.n_blocks, picks[0]), "test_acc": sum(test) / draws,
            "probe_acc": sum(probe) / draws, "test_min": min(test), "test_max": max(test), "draws": draws}


def _profile(cfg: ProfileConfig, progress: Progress) -> dict[str, Any]:
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
        strategies[s] = [prune_eval(t, s, r, cfg.seed, sorted(order[: n - r]) if s == "greedy" else None)
                         for r in range(n + 1)]
    return {
        "config": cfg,
        "n_blocks": n,
        "full_acc": accuracy(m, d.test.x, d.test.y),
        "chance": d.chance,
        "strategies": strategies,  # strategy -> one entry per r = 0..N (blocks kept)
        "train_test_acc": t.info["test_acc"],  # full-route held-out accuracy after every epoch
        "train_seconds": t.info["seconds"],
        "eval_seconds": time.perf_counter() - t0,
    }


def profile(cfg: ProfileConfig, progress: Progress = silent, store: Store | None = None) -> dict[str, Any]:
    """Accuracy of every strategy at every depth for one trained model (cached)."""
    store = store or default_store()
    return store.json("layerdrop-profile", _entry(cfg), lambda: _profile(cfg, progress))


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

    model: str = "residual"
    p: float = 0.5
    keep: int = 4
    strategy: str = "every-other"
    seed: int = 0
    recovery: str = "none"  # none | kd (distil the pruned model from its own full route)
    steps: int = 500

    def __post_init__(self) -> None:
        ProfileConfig(self.model, self.p, self.seed)  # validates model, p and seed
        object.__setattr__(self, "p", check_p(self.p))
        if self.strategy not in prune.STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; choose one of {', '.join(prune.STRATEGIES)}")
        n = n_blocks(self.model)
        if not 1 <= self.keep <= n:
            raise ValueError(f"keep={self.keep} is out of range: the {self.model} model has {n} blocks, "
                             f"so keep 1..{n}")
        if self.recovery not in ("none", "kd"):
            raise ValueError(f"unknown recovery {self.recovery!r}; choose none or kd")
        RecoveryConfig(method=self.recovery, steps=self.steps)  # validates steps

    @property
    def profile_cfg(self) -> ProfileConfig:
        return ProfileConfig(self.model, self.p, self.seed)


def n_blocks(model: str) -> int:
    """Blocks of the experiment's model, without building it."""
    return MLP_DEPTH - 1 if model == "residual" else VIT_DEPTH


def _recover(t: Trained, kept: list[int], cfg: LayerDropConfig, progress: Progress) -> dict[str, Any]:
    student: RoutedModel = copy.deepcopy(t.model)  # never change the shared trained model
    t0 = time.perf_counter()
    rc = RecoveryConfig(method="kd", steps=cfg.steps, seed=cfg.seed)
    log = recover(student, kept, t.data, rc, teacher=t.model, progress=progress)
    return {"recovered_acc": log.test_acc[-1], "curve_steps": log.steps, "curve_acc": log.test_acc,
            "recovery_seconds": time.perf_counter() - t0}


def _run(cfg: LayerDropConfig, progress: Progress) -> dict[str, Any]:
    prof = profile(cfg.profile_cfg, span(progress, 0.0, 0.7))
    t = trained(cfg.profile_cfg.spec)  # already built by the profile: a memo or file read
    n = prof["n_blocks"]
    here = prof["strategies"][cfg.strategy][cfg.keep]
    out = {
        "config": cfg,
        "n_blocks": n,
        "full_acc": prof["full_acc"],
        "pruned_acc": here["test_acc"],
        "pruned_probe_acc": here["probe_acc"],
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
    progress(1.0, "done")
    return out


def run(cfg: LayerDropConfig, progress: Progress = silent, store: Store | None = None) -> dict[str, Any]:
    """One LayerDrop question (cached). Accuracies are held-out unless their name says probe."""
    store = store or default_store()
    return store.json("layerdrop", _entry(cfg), lambda: _run(cfg, progress))


TABLE_KEEP = (1.0, 0.75, 0.5, 0.25)  # fractions of N in the summary table


def table(model: str, seeds: list[int], progress: Progress = silent) -> dict[str, Any]:
    """Every-other accuracy for p in P_GRID x kept in N, 3N/4, N/2, N/4, per seed (from the profiles)."""
    n = n_blocks(model)
    keeps = [round(f * n) for f in TABLE_KEEP]
    rows: dict[float, list[list[float]]] = {}
    seconds: dict[str, list[float]] = {"train": [], "eval": []}
    jobs = [(p, s) for p in P_GRID for s in seeds]
    for i, (p, s) in enumerate(jobs):
        prof = profile(ProfileConfig(model, p, s), span(progress, i / len(jobs), (i + 1) / len(jobs)))
        rows.setdefault(p, []).append([prof["strategies"]["every-other"][r]["test_acc"] for r in keeps])
        seconds["train"].append(prof["train_seconds"])
        seconds["eval"].append(prof["eval_seconds"])
    return {"model": model, "n_blocks": n, "keeps": keeps, "seeds": seeds, "rows": rows, "seconds": seconds}
