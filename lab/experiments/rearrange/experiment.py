"""Rearrange layers on a frozen trained model: the operations of "Transformer Layers as Painters" (Sun et al. 2024)
and "The Remarkable Robustness of LLMs" (Lad et al. 2024), on the lab's own models.

Every operation is a route of steps from the route algebra (`lab.core.routes`: the registry of operations, their
validation and labels): ints, and `Parallel` groups for blocks run side by side.
The operations act on the *middle* of the model; with `ends="keep"` the first and last blocks stay where they are
(the papers' setting), with `ends="include"` the middle is every block (a control):
  identity       the trained order
  skip           leave out one block                          swap     swap blocks b and b + 1
  reverse        the middle in reverse order                  random   a random order of the middle (mean of draws)
  repeat         block b run in place of every middle block   skip-middle  no middle at all (the floor)
  loop           the middle run K times (`loops`)             parallel the middle as one parallel group
  parallel-loop  the parallel group run K times (Sun et al.'s loop_parallel)
Cost is counted in block runs (`base.block_runs`); `sequential_steps` counts the route's steps (a parallel group
is one).

Caching follows what each piece depends on: `profile(ModelSeed)` trains (or loads) one model and evaluates every
operation with every argument, plus the layer-similarity maps; it is cheap once the model exists (evaluations
only) and one entry per (model, seed) serves every control of the page. `run(RearrangeConfig)` reads the chosen
operation from it. claims.py turns profiles (one or several seeds of a model) into the papers' claims
(`lab.claims` records), each with its numbers, its rule and a noise-aware verdict, when a result is read (this
module does not import it: rewording a claim recomputes nothing); rows.py reads a profile's rows.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from lab import estimates
from lab.core import metrics, model_registry, page_models, routes, task_fit
from lab.core.models import RoutedModel, accuracy
from lab.core.models.base import REDUCES, Parallel, StepLike, block_runs
from lab.core.page_models import ModelSeed
from lab.core.routes import PrefixStates, label, middle, plain_steps
from lab.core.zoo import trained
from lab.experiment import Pool, check, entry, param, seed_param, serial, task_param
from lab.experiments.rearrange.rows import mean_profiles, row_key, span_sweep, summary
from lab.ops import route_ops, selection
from lab.ops.route_ops import (
    BLOCK_OPS,
    ENDS,
    ENDS_LABELS,
    LOOP_OPS,
    LOOPS,
    MAX_LOOPS,
    check_op,
    op_labels,
    route_of,
    valid_blocks,
    windows,
)
from lab.runtime.progress import Progress, silent, span

MODELS = ("residual", "vit-sequential", "vit-shuffle")  # a subset of lab.core.model_registry.MODELS
_MLP, _VIT = model_registry.model("residual"), model_registry.model("vit-sequential")  # for the help
MAX_BLOCKS = max(model_registry.model(m).blocks for m in MODELS)
OPS = tuple(route_ops.OPS)  # every operation of the registry, in its order (the profile's rows follow it)
RANDOM_DRAWS = 20  # random orders of the middle; the accuracy is their mean
SIM_INPUTS = 1000  # held-out inputs of the similarity maps (the digits have 397, the synthetic task 4,000)
JACKKNIFE_GROUPS = 10  # groups of those inputs deleted in turn for the error of a CKA contrast (claims.py)


def random_routes(n: int, ends: str, seed: int, draws: int = RANDOM_DRAWS) -> list[tuple[int, ...]]:
    """`draws` random orders of the middle, the ends in place; the same for every model of a block count and seed."""
    return routes.random_orders(n, draws, "rearrange.random", seed, n, ENDS.index(ends), ends=ends)


def _correct(m: RoutedModel, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-input held-out right/wrong from a route's last hidden state."""
    return metrics.correct(m.readout(h), y)


# -- layer similarity ---------------------------------------------------------------------------------------
@torch.no_grad()
def similarity(model: RoutedModel, x: torch.Tensor) -> dict[str, Any]:
    """Cosine and debiased linear-CKA similarity of the hidden state after the stem and after every block (trained
    order); the biased CKA under `cka_biased`, for comparison; and `cka_jackknife`: the debiased CKA matrix again
    with each of JACKKNIFE_GROUPS groups of the inputs left out in turn (every G-th input from g), for the error of
    a claim read from the matrix."""
    _, states = model.states(x)
    k = len(states)
    cos = [[float(metrics.cosine(states[i], states[j]).mean()) for j in range(k)] for i in range(k)]
    grams = [metrics.gram(h) for h in states]  # once per state: the pairs below only combine them
    cka = [[1.0 if i == j else metrics.debiased_cka_of_grams(grams[i], grams[j]) for j in range(k)]
           for i in range(k)]
    biased = [[1.0 if i == j else metrics.cka_of_grams(grams[i], grams[j]) for j in range(k)] for i in range(k)]
    return {"labels": ["stem"] + [f"after {b}" for b in range(k - 1)], "cosine": cos, "cka": cka,
            "cka_biased": biased, "cka_jackknife": _cka_jackknife(grams), "inputs": len(x),
            "features": int(states[0][0].numel())}


def _cka_jackknife(grams: Sequence[torch.Tensor], groups: int = JACKKNIFE_GROUPS) -> list[list[list[float]]]:
    """The debiased CKA matrix of the states whose Gram matrices are `grams`, once per group of inputs left out.
    The unbiased HSIC does not change when the features are shifted, so the rows and columns of the whole sample's
    Grams (features centred on every input) serve for any subset; every pair's HSIC at once (`metrics.unbiased_hsic`
    term by term: the traces of all pairs are one product of the flattened Grams)."""
    n_all = len(grams[0])
    out = []
    for g in range(groups):
        keep = torch.nonzero(torch.arange(n_all) % groups != g).squeeze(1)
        n = len(keep)
        sub = torch.stack([gr[keep][:, keep] for gr in grams])  # k x n x n
        sub = sub * (1.0 - torch.eye(n, dtype=sub.dtype))  # diagonals zeroed
        flat = sub.reshape(len(grams), -1)
        rows = sub.sum(2)  # k x n: K~ 1
        tot = rows.sum(1)  # k: 1'K~1
        hsic = (flat @ flat.T + torch.outer(tot, tot) / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * rows @ rows.T)
        hsic = hsic / (n * (n - 3))
        d = torch.diag(hsic)
        cka = hsic / torch.sqrt(torch.outer(d, d).clamp_min(1e-30))
        cka.fill_diagonal_(1.0)
        out.append(cka.tolist())
    return out


@dataclass(frozen=True)
class RearrangeProfile:
    """`profile`'s answer: every operation with every argument on one trained model (`ops`, keyed by `row_key`),
    each row's per-input held-out outcomes (packed), and the layer-similarity maps."""

    config: ModelSeed
    model: str
    n_blocks: int
    n_test: int
    base_acc: float
    chance: float
    ops: dict[str, dict[str, Any]]  # row_key -> acc, block_runs, sequential_steps, route, steps, op, its arguments
    outcomes: dict[str, str]  # row_key -> packed per-input outcomes (random: packed counts over the draws)
    similarity: dict[str, Any]  # `similarity`
    train_seconds: float
    train_curve: list[float]
    eval_seconds: float


@entry("rearrange-profile", result=RearrangeProfile)
def profile(cfg: ModelSeed, progress: Progress) -> RearrangeProfile:
    """Held-out accuracy and cost of every operation with every argument, and the similarity maps (cached)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.9))
    m, d = t.model, t.data
    m.eval()
    n = m.n_blocks
    progress(0.9, "running every rearrangement")
    t0 = time.perf_counter()
    x, y = d.test.x, d.test.y
    ops: dict[str, dict[str, Any]] = {}
    pre = PrefixStates(m, x)  # after the first b blocks of the trained order: shared by the routes that start so
    outcomes: dict[str, str] = {}  # per-input held-out right/wrong of every row (paired comparisons)

    def add(key: str, steps: Sequence[StepLike], right: Optional[torch.Tensor] = None, **extra: Any) -> None:
        right = _correct(m, pre.rest(steps), y) if right is None else right
        outcomes[key] = estimates.pack(right)
        ops[key] = {"acc": float(right.float().mean()), "block_runs": block_runs(steps), "sequential_steps": len(steps),
                    "route": label(steps), "steps": plain_steps(steps), **extra}

    for ends in ENDS:
        mid = middle(n, ends)
        for op in OPS:
            if op in BLOCK_OPS:
                for b in valid_blocks(op, n, ends):
                    add(row_key(op, b, None, ends), route_of(op, n, b, ends=ends), op=op, block=b, ends=ends)
            elif op == "parallel":
                for red in REDUCES:
                    add(row_key(op, None, red, ends), route_of(op, n, reduce=red, ends=ends), op=op, reduce=red,
                        ends=ends)
            elif op in LOOP_OPS:  # K = 1..MAX_LOOPS, each pass continuing from the previous one
                groups = ((Parallel(mid, red),) for red in REDUCES) if op == "parallel-loop" else (mid,)
                for red, body in zip(REDUCES if op == "parallel-loop" else ("mean",), groups, strict=True):
                    ends_at = pre.looped(mid[0], body, tuple(range(mid[-1] + 1, n)), MAX_LOOPS)
                    for kk, right in enumerate((_correct(m, h, y) for h in ends_at), 1):
                        add(row_key(op, None, red, ends, kk), route_of(op, n, reduce=red, ends=ends, loops=kk),
                            right, op=op, reduce=red if op == "parallel-loop" else None, ends=ends, loops=kk)
            elif op == "random":
                routes = random_routes(n, ends, cfg.seed)
                rights = [_correct(m, pre.rest(r), y) for r in routes]
                accs = [float(r.float().mean()) for r in rights]
                key = row_key(op, ends=ends)
                outcomes[key] = selection.pack_counts(torch.stack(rights).sum(0).numpy(), len(routes))
                ops[key] = {
                    "acc": statistics.mean(accs), "acc_min": min(accs), "acc_max": max(accs), "accs": accs,
                    "draws": len(accs), "block_runs": n, "sequential_steps": n, "route": label(routes[0]),
                    "steps": plain_steps(routes[0]), "op": op, "ends": ends}
            else:
                add(row_key(op, ends=ends), route_of(op, n, ends=ends), op=op, ends=ends)
    # How far each operation reaches: every window of every span of the middle (Sun et al.'s [start, end)), the
    # ends kept; each route starts from the stored state after the blocks before its window (the same numbers).
    for sp in range(1, len(middle(n, "keep")) + 1):
        for win in windows(n, "keep", sp):
            b, tail = win[0], tuple(range(win[-1] + 1, n))
            for op in ("skip", "reverse", "repeat"):
                r = route_of(op, n, b, span=sp)
                add(row_key(op, b, None, "keep", LOOPS, sp), r, _correct(m, pre.rest(r[b:], b), y), op=op,
                    block=b, ends="keep", span=sp)
            for red in REDUCES:
                rights = [_correct(m, h, y) for h in pre.looped(b, (Parallel(win, red),), tail, MAX_LOOPS)]
                add(row_key("parallel", b, red, "keep", LOOPS, sp), route_of("parallel", n, b, red, span=sp),
                    rights[0], op="parallel", block=b, reduce=red, ends="keep", span=sp)
                for kk, right in enumerate(rights, 1):
                    add(row_key("parallel-loop", b, red, "keep", kk, sp),
                        route_of("parallel-loop", n, b, red, loops=kk, span=sp), right, op="parallel-loop", block=b,
                        reduce=red, ends="keep", loops=kk, span=sp)
    progress(0.97, "layer similarity")
    sim = similarity(m, x[:SIM_INPUTS])
    return RearrangeProfile(config=cfg, model=cfg.model, n_blocks=n, n_test=len(y), base_acc=accuracy(m, x, y),
                            chance=d.chance, ops=ops, outcomes=outcomes, similarity=sim,
                            train_seconds=t.info["seconds"], train_curve=t.info["test_acc"],
                            eval_seconds=time.perf_counter() - t0)


# -- one question -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RearrangeConfig:
    """One operation on one frozen trained model."""

    model: str = param("vit-sequential", "The frozen trained model: the Delete page's residual MLP "
                       f"({_MLP.data_words}, {_MLP.blocks} blocks) or the Shuffle page's {_VIT.title} on "
                       f"{_VIT.data_words}, trained in order or with LayerShuffle (a random block order at every "
                       "step).", label="Model", choices=MODELS, labels=model_registry.labels(MODELS))
    op: str = param("skip", "What to do to the middle blocks.", label="Operation", choices=OPS, labels=op_labels(OPS))
    block: int = param(2, "Block b of skip, swap (b and b+1) and repeat, in the original numbering from 0.",
                       label="Block b", lo=0, hi=MAX_BLOCKS - 1)
    reduce: str = param("mean", "How a parallel group combines its blocks' updates: their mean (the papers') or "
                        "their sum (what the blocks would add if each did not depend on the others).",
                        label="Parallel: combine updates by", choices=REDUCES)
    loops: int = param(LOOPS, "How many times loop and parallel-loop run the middle (Sun et al. loop a parallel "
                       "group and report that the best count grows with how many layers run in parallel).",
                       label="Loops K", lo=1, hi=MAX_LOOPS)
    span: int = param(0, "How many consecutive blocks, from block b, skip, reverse, repeat, parallel and parallel-loop "
                      "act on (Sun et al.'s span [start, end)); 0: their usual extent (skip: block b alone; the "
                      "others: the whole middle).", label="Span", lo=0, hi=MAX_BLOCKS)
    ends: str = param("keep", "keep: the first and last blocks stay in place (the papers' setting); include: the "
                      "operation acts on every block (a control).", label="First and last blocks", choices=ENDS,
                      labels=ENDS_LABELS)
    seed: int = seed_param("Fixes the trained model (the same seeds as the other pages) and the random orders.")
    task: Optional[str] = task_param()

    def __post_init__(self) -> None:
        check(self)
        check_op(self.op, model_registry.model(self.model).blocks, self.block, self.ends, self.span)
        object.__setattr__(self, "task", page_models.model_task(self.model, self.task))

    @property
    def model_cfg(self) -> ModelSeed:
        return ModelSeed(self.model, self.seed, self.task)


@dataclass(frozen=True)
class RearrangeResult:
    """`run`'s answer: one operation's held-out accuracy and cost, read from the model's profile, with the profile's
    span sweep (its claims are its model's profile's, computed when it is read)."""

    config: RearrangeConfig
    n_blocks: int
    base_acc: float
    acc: float
    block_runs: int
    sequential_steps: int  # a parallel group is one step
    route: str
    steps: list[Any]  # `plain_steps`: ints, and {"parallel": [...], ...} for a parallel group
    draws: int  # random orders averaged (1 for every other operation)
    chance: float
    n_test: int
    middle: list[int]
    span_sweep: dict[str, Any]  # rows.span_sweep


@entry("rearrange", result=RearrangeResult)
def run(cfg: RearrangeConfig, progress: Progress) -> RearrangeResult:
    """One operation's accuracy and cost, read from the model's profile."""
    prof = profile(cfg.model_cfg, progress)
    row = prof.ops[row_key(cfg.op, cfg.block, cfg.reduce, cfg.ends, cfg.loops, cfg.span)]
    return RearrangeResult(
        config=cfg, n_blocks=prof.n_blocks, base_acc=prof.base_acc, acc=row["acc"],
        block_runs=row["block_runs"], sequential_steps=row["sequential_steps"], route=row["route"], steps=row["steps"],
        draws=row.get("draws", 1), chance=prof.chance, n_test=prof.n_test,
        middle=list(middle(prof.n_blocks, cfg.ends)), span_sweep=span_sweep(prof))


@dataclass(frozen=True)
class SeedConfig:
    """Every model at one seed (the page's comparison), each on `task` where it can read it (else its own)."""

    seed: int = 0
    task: Optional[str] = None

    def model_seed(self, model: str) -> ModelSeed:
        return ModelSeed(model, self.seed, task_fit.readable(self.task, model_registry.model(model).family))


def all_models(cfg: SeedConfig, progress: Progress = silent) -> dict[str, RearrangeProfile]:
    """The profile of every model at one seed (each cached on its own)."""
    return {mo: profile(cfg.model_seed(mo), span(progress, i / len(MODELS), (i + 1) / len(MODELS)))
            for i, mo in enumerate(MODELS)}


def compare(cfg: SeedConfig, progress: Progress = silent) -> dict[str, Any]:
    """Every model's profile at one seed (the page's comparison, and what its claims test; each profile cached)."""
    profs = all_models(cfg, progress)
    return {"seed": cfg.seed, "profiles": profs}


def table(seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Models x SUMMARY operations, mean over seeds (profiles computed by `pool`; claims.py: `table_claims` reads the
    claims on all seeds from the same stored profiles)."""
    jobs = [(mo, s) for mo in MODELS for s in seeds]
    per: dict[str, list[RearrangeProfile]] = {}
    profs = pool([(profile, ModelSeed(mo, s)) for mo, s in jobs], progress)
    for (mo, _), prof in zip(jobs, profs, strict=True):
        per.setdefault(mo, []).append(prof)
    means = {mo: mean_profiles(ps) for mo, ps in per.items()}
    return {"seeds": seeds, "rows": {mo: summary(p) for mo, p in means.items()},
            "base_acc": {mo: p.base_acc for mo, p in means.items()},
            "chance": {mo: p.chance for mo, p in means.items()},
            "n_blocks": {mo: p.n_blocks for mo, p in means.items()},
            "seconds": {mo: [p.train_seconds for p in ps] for mo, ps in per.items()}}
