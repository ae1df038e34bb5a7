"""Rearrange layers on a frozen trained model: the operations of "Transformer Layers as Painters" (Sun et al. 2024)
and "The Remarkable Robustness of LLMs" (Lad et al. 2024), on the lab's own models.

Every operation is a route of steps (`models.base`): ints, and `Parallel` groups for blocks run side by side.
The operations act on the *middle* of the model; with `ends="keep"` the first and last blocks stay where they are
(the papers' setting), with `ends="include"` the middle is every block (a control):
  identity       the trained order
  skip           leave out one block                          swap     swap blocks b and b + 1
  reverse        the middle in reverse order                  random   a random order of the middle (mean of draws)
  repeat         block b run in place of every middle block   skip-middle  no middle at all (the floor)
  loop           the middle run K times (`loops`)             parallel the middle as one parallel group
  parallel-loop  the parallel group run K times (Sun et al.'s loop_parallel)
Cost is counted in block runs (`base.block_runs`); `depth` counts sequential steps (a parallel group is one).

Caching follows what each piece depends on: `profile(ModelConfig)` trains (or loads) one model and evaluates every
operation with every argument, plus the layer-similarity maps; it is cheap once the model exists (evaluations
only) and one entry per (model, seed) serves every control of the page. `run(RearrangeConfig)` reads the chosen
operation from it. `claims` turns profiles (one or several seeds of a model) into the papers' claims
(`lab.claims` records), each with its numbers, its rule and a noise-aware verdict.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import torch

from lab import estimates
from lab.claims import claim, noise_words, pct, pts, test
from lab.claims import pool as pool_claims
from lab.core import metrics, streams
from lab.core.models import RoutedModel, accuracy
from lab.core.models.base import REDUCES, Parallel, StepLike, block_runs
from lab.core.recipes import MLP_BLOCKS, shared_blocks, shared_spec
from lab.core.routes import random_permutation
from lab.core.zoo import ModelSpec, trained
from lab.experiment import Pool, check, entry, param, seed_param, serial
from lab.ops import selection
from lab.runtime.progress import Progress, silent, span

MODELS = ("residual", "vit-sequential", "vit-shuffle")
MODEL_LABELS = {"residual": "residual MLP", "vit-sequential": "ViT, trained in order",
                "vit-shuffle": "ViT, trained with LayerShuffle"}
OPS = ("identity", "skip", "swap", "reverse", "random", "repeat", "skip-middle", "loop", "parallel", "parallel-loop")
OP_LABELS = {"identity": "trained order", "skip": "skip block b", "swap": "swap blocks b and b+1",
             "reverse": "reverse the middle", "random": "random order of the middle", "repeat": "repeat block b "
             "in place of the middle", "skip-middle": "skip the whole middle", "loop": "loop the middle (K times)",
             "parallel": "middle in parallel", "parallel-loop": "middle in parallel, looped K times"}
BLOCK_OPS = ("skip", "swap", "repeat")  # operations that take the block argument
REDUCE_OPS = ("parallel", "parallel-loop")  # operations that take the reduce argument
LOOP_OPS = ("loop", "parallel-loop")  # operations that take the loop count
MAX_LOOPS = 8  # the profile holds K = 1..MAX_LOOPS for both looped operations
LOOPS = 2  # the default K: the smallest count that repeats the middle
SPAN_OPS = ("skip", "reverse", "repeat", "parallel", "parallel-loop")  # operations a span restricts to a window
ENDS = ("keep", "include")
ENDS_LABELS = {"keep": "keep the first and last blocks", "include": "include them in the middle"}
RANDOM_DRAWS = 20  # random orders of the middle; the accuracy is their mean
SIM_INPUTS = 1000  # held-out inputs of the similarity maps (the digits have 397, the synthetic task 4,000)


def n_blocks(model: str) -> int:
    """Blocks of a model, without building it."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    return shared_blocks(model)


def model_spec(model: str, seed: int) -> ModelSpec:
    """The Delete page's residual MLP or the Shuffle page's 6-block ViTs: the same recipes, the same stored weights."""
    n_blocks(model)
    return shared_spec(model, seed)


# -- routes ------------------------------------------------------------------------------------------------
def middle(n: int, ends: str) -> tuple[int, ...]:
    """The blocks the operations act on: all but the first and last (keep), or all of them (include)."""
    return tuple(range(1, n - 1)) if ends == "keep" else tuple(range(n))


def valid_blocks(op: str, n: int, ends: str) -> tuple[int, ...]:
    """The block arguments an operation accepts (swap takes b and b + 1, both in the middle)."""
    mid = middle(n, ends)
    return mid[:-1] if op == "swap" else mid


def check_args(op: str, n: int, block: int, ends: str) -> None:
    """ValueError, saying what is allowed, for a block argument the operation cannot take."""
    if op not in BLOCK_OPS:
        return
    ok = valid_blocks(op, n, ends)
    if block in ok:
        return
    where = "the middle blocks" if ends == "keep" else "the blocks"
    what = "b and b+1 must both be among" if op == "swap" else "b must be one of"
    allowed = f"choose b from {ok[0]} to {ok[-1]}" if ok else "this model has no such block"
    raise ValueError(f"block {block} is out of range for {op}: {what} {where} of this {n}-block model; {allowed}"
                     + (" (or include the ends)" if ends == "keep" and block in range(n) else ""))


def windows(n: int, ends: str, span: int) -> tuple[tuple[int, ...], ...]:
    """Every window of `span` consecutive middle blocks (as Sun et al.'s [start, end)), by its first block."""
    mid = middle(n, ends)
    return tuple(tuple(range(b, b + span)) for b in mid[:len(mid) - span + 1]) if span >= 1 else ()


def check_span(op: str, n: int, block: int, span: int, ends: str) -> None:
    """ValueError, saying what is allowed, for a span the operation cannot take from block b (0: no span)."""
    if span == 0 or op not in SPAN_OPS:
        return
    if ends != "keep":
        raise ValueError("a span counts middle blocks, with the first and last kept: set the ends to keep, or the "
                         "span to 0")
    mid = middle(n, ends)
    where = "middle " if ends == "keep" else ""
    if not 1 <= span <= len(mid):
        raise ValueError(f"span {span} is out of range: this {n}-block model has {len(mid)} {where}blocks, so "
                         f"choose a span of 1 to {len(mid)} (0: the operation's usual extent)")
    starts = [w[0] for w in windows(n, ends, span)]
    if block not in starts:
        raise ValueError(f"a span of {span} from block {block} does not fit in the {where}blocks {mid[0]} to "
                         f"{mid[-1]}: choose b from {starts[0]} to {starts[-1]}, or a smaller span")


def route_of(op: str, n: int, block: int = 1, reduce: str = "mean", ends: str = "keep",
             loops: int = LOOPS, span: int = 0) -> tuple[StepLike, ...]:
    """The route of one operation on an n-block model (random: use `random_routes`); loop and parallel-loop run the
    middle (or its parallel group) `loops` times. With span s > 0, skip / reverse / repeat / parallel(-loop) act on
    the window of s blocks from block b instead (repeat: block b in each of the window's slots)."""
    if op not in OPS or op == "random":
        raise ValueError(f"no single route for {op!r}; choose one of {', '.join(o for o in OPS if o != 'random')}")
    if not 1 <= loops <= MAX_LOOPS:
        raise ValueError(f"loops={loops} is out of range: choose 1 to {MAX_LOOPS}")
    if span and op in SPAN_OPS:
        check_span(op, n, block, span, ends)
        win = tuple(range(block, block + span))
        body = {"skip": (), "reverse": win[::-1], "repeat": (block,) * span,
                "parallel": (Parallel(win, reduce),), "parallel-loop": (Parallel(win, reduce),) * loops}[op]
        return tuple(range(block)) + body + tuple(range(block + span, n))
    check_args(op, n, block, ends)
    mid = middle(n, ends)
    head, tail = tuple(range(mid[0])) if mid else tuple(range(n)), tuple(range(mid[-1] + 1, n)) if mid else ()
    group = (Parallel(mid, reduce),) if mid else ()
    if op == "identity":
        return tuple(range(n))
    if op == "skip":
        return tuple(b for b in range(n) if b != block)
    if op == "swap":
        r = list(range(n))
        r[block], r[block + 1] = r[block + 1], r[block]
        return tuple(r)
    body = {"reverse": mid[::-1], "repeat": (block,) * len(mid), "skip-middle": (), "loop": mid * loops,
            "parallel": group, "parallel-loop": group * loops}[op]
    return head + body + tail


def random_routes(n: int, ends: str, seed: int, draws: int = RANDOM_DRAWS) -> list[tuple[int, ...]]:
    """`draws` random orders of the middle, the ends in place; the same for every model of a depth and seed."""
    mid = middle(n, ends)
    gen = streams.generator("rearrange.random", seed, n, ENDS.index(ends))
    head, tail = tuple(range(mid[0])), tuple(range(mid[-1] + 1, n))
    return [head + tuple(mid[i] for i in random_permutation(len(mid), gen)) + tail for _ in range(draws)]


def label(steps: Sequence[StepLike]) -> str:
    """A route as text: `0 → [1 | 2 | 3] mean → 4`."""
    def one(st: StepLike) -> str:
        if isinstance(st, Parallel):
            return "[" + " | ".join(map(str, st.blocks)) + f"] {st.reduce}"
        return str(st)

    return " → ".join(one(s) for s in steps) if steps else "(no blocks)"


def plain_steps(steps: Sequence[StepLike]) -> list[Any]:
    """JSON-friendly steps: a block index, or {"parallel": [blocks], "reduce": ...} for a group."""
    return [{"parallel": list(s.blocks), "reduce": s.reduce} if isinstance(s, Parallel) else int(s) for s in steps]


@torch.no_grad()
def steps_correct(model: RoutedModel, h0: torch.Tensor, y: torch.Tensor, steps: Sequence[StepLike]) -> torch.Tensor:
    """Per-input held-out right/wrong of a route of steps from precomputed stem outputs `h0` (the same stem for
    all)."""
    return metrics.correct(model.readout(model.run_steps(h0, steps)), y)


@torch.no_grad()
def correct_from(model: RoutedModel, h: torch.Tensor, y: torch.Tensor, steps: Sequence[StepLike],
                 slot0: int) -> torch.Tensor:
    """Per-input right/wrong of the rest of a route, `steps` run from state `h` at slots slot0, slot0 + 1, ... (the
    same computation as `run_steps` on the whole route, when `h` is the state its first slot0 steps leave)."""
    for slot, st in enumerate(steps, slot0):
        h = model.run_parallel(h, st, slot) if isinstance(st, Parallel) else model.run_block(h, int(st), slot)
    return metrics.correct(model.readout(h), y)


@torch.no_grad()
def looped_correct(model: RoutedModel, states: Sequence[torch.Tensor], y: torch.Tensor, start: int,
                   body: Sequence[StepLike], tail: Sequence[StepLike]) -> list[torch.Tensor]:
    """Per-input right/wrong of head + body x K + tail for K = 1..MAX_LOOPS, where the head is the trained order's
    first `start` blocks (its state is `states[start]`): each K continues from the state K - 1 passes left."""
    h, slot, out = states[start], start, []
    for _ in range(MAX_LOOPS):
        for st in body:
            h = model.run_parallel(h, st, slot) if isinstance(st, Parallel) else model.run_block(h, int(st), slot)
            slot += 1
        out.append(correct_from(model, h, y, tail, slot))
    return out


# -- layer similarity ---------------------------------------------------------------------------------------
@torch.no_grad()
def similarity(model: RoutedModel, x: torch.Tensor) -> dict[str, Any]:
    """Cosine and debiased linear-CKA similarity of the hidden state after the stem and after every block (trained
    order); the biased CKA under `cka_biased`, for comparison."""
    _, states = model.states(x)
    k = len(states)
    cos = [[float(metrics.cosine(states[i], states[j]).mean()) for j in range(k)] for i in range(k)]
    grams = [metrics.gram(h) for h in states]  # once per state: the pairs below only combine them
    cka = [[1.0 if i == j else metrics.debiased_cka_of_grams(grams[i], grams[j]) for j in range(k)]
           for i in range(k)]
    biased = [[1.0 if i == j else metrics.cka_of_grams(grams[i], grams[j]) for j in range(k)] for i in range(k)]
    return {"labels": ["stem"] + [f"after {b}" for b in range(k - 1)], "cosine": cos, "cka": cka,
            "cka_biased": biased, "inputs": len(x), "features": int(states[0][0].numel())}


# -- the per-model table --------------------------------------------------------------------------------------
def row_key(op: str, block: Optional[int] = None, reduce: Optional[str] = None, ends: str = "keep",
            loops: int = LOOPS, span: int = 0) -> str:
    """The key of one operation in a profile: arguments the operation does not take are left out."""
    spanned = bool(span) and op in SPAN_OPS
    b = str(block) if op in BLOCK_OPS or spanned else ""
    r = reduce if op in REDUCE_OPS else ""
    k = f"|x{loops}" if op in LOOP_OPS else ""
    return f"{op}|{b}|{r}|{ends}{k}" + (f"|s{span}" if spanned else "")


@dataclass(frozen=True)
class ModelConfig:
    """One trained model: what the table of every operation and the similarity maps depend on."""

    model: str = "residual"
    seed: int = 0

    def __post_init__(self) -> None:
        n_blocks(self.model)

    @property
    def spec(self) -> ModelSpec:
        return model_spec(self.model, self.seed)


@entry("rearrange-profile")
def profile(cfg: ModelConfig, progress: Progress) -> dict[str, Any]:
    """Held-out accuracy and cost of every operation with every argument, and the similarity maps (cached)."""
    t = trained(cfg.spec, span(progress, 0.0, 0.9))
    m, d = t.model, t.data
    m.eval()
    n = m.n_blocks
    progress(0.9, "running every rearrangement")
    t0 = time.perf_counter()
    x, y = d.test.x, d.test.y
    with torch.no_grad():
        h0 = m.embed(x)
    ops: dict[str, dict[str, Any]] = {}

    with torch.no_grad():
        _, states = m.states(x)  # states[b]: after the first b blocks of the trained order, shared by many routes

    outcomes: dict[str, str] = {}  # per-input held-out right/wrong of every row (paired comparisons)

    def add(key: str, steps: Sequence[StepLike], right: Optional[torch.Tensor] = None, **extra: Any) -> None:
        right = steps_correct(m, h0, y, steps) if right is None else right
        outcomes[key] = estimates.pack(right)
        ops[key] = {"acc": float(right.float().mean()), "block_runs": block_runs(steps), "depth": len(steps),
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
                    rights = looped_correct(m, states, y, mid[0], body, tuple(range(mid[-1] + 1, n)))
                    for kk, right in enumerate(rights, 1):
                        add(row_key(op, None, red, ends, kk), route_of(op, n, reduce=red, ends=ends, loops=kk),
                            right, op=op, reduce=red if op == "parallel-loop" else None, ends=ends, loops=kk)
            elif op == "random":
                routes = random_routes(n, ends, cfg.seed)
                rights = [steps_correct(m, h0, y, r) for r in routes]
                accs = [float(r.float().mean()) for r in rights]
                key = row_key(op, ends=ends)
                outcomes[key] = selection.pack_counts(torch.stack(rights).sum(0).numpy(), len(routes))
                ops[key] = {
                    "acc": statistics.mean(accs), "acc_min": min(accs), "acc_max": max(accs), "accs": accs,
                    "draws": len(accs), "block_runs": n, "depth": n, "route": label(routes[0]),
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
                add(row_key(op, b, None, "keep", LOOPS, sp), r, correct_from(m, states[b], y, r[b:], b), op=op,
                    block=b, ends="keep", span=sp)
            for red in REDUCES:
                rights = looped_correct(m, states, y, b, (Parallel(win, red),), tail)
                add(row_key("parallel", b, red, "keep", LOOPS, sp), route_of("parallel", n, b, red, span=sp),
                    rights[0], op="parallel", block=b, reduce=red, ends="keep", span=sp)
                for kk, right in enumerate(rights, 1):
                    add(row_key("parallel-loop", b, red, "keep", kk, sp),
                        route_of("parallel-loop", n, b, red, loops=kk, span=sp), right, op="parallel-loop", block=b,
                        reduce=red, ends="keep", loops=kk, span=sp)
    progress(0.97, "layer similarity")
    sim = similarity(m, x[:SIM_INPUTS])
    return {"config": cfg, "model": cfg.model, "n_blocks": n, "n_test": len(y), "base_acc": accuracy(m, x, y),
            "chance": d.chance,
            "ops": ops, "outcomes": outcomes, "similarity": sim, "train_seconds": t.info["seconds"],
            "train_curve": t.info["test_acc"], "eval_seconds": time.perf_counter() - t0}


# -- one question -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RearrangeConfig:
    """One operation on one frozen trained model."""

    model: str = param("vit-sequential", "The frozen trained model: the Delete page's residual MLP (synthetic task, "
                       "7 blocks) or the Shuffle page's 6-block ViT on 8x8 digits, trained in order or with "
                       "LayerShuffle (a random block order at every step).", label="Model", choices=MODELS,
                       labels=MODEL_LABELS)
    op: str = param("skip", "What to do to the middle blocks.", label="Operation", choices=OPS, labels=OP_LABELS)
    block: int = param(2, "Block b of skip, swap (b and b+1) and repeat, in the original numbering from 0.",
                       label="Block b", lo=0, hi=MLP_BLOCKS - 1)
    reduce: str = param("mean", "How a parallel group combines its blocks' updates: their mean (the papers') or "
                        "their sum (what the blocks would add if each did not depend on the others).",
                        label="Parallel: combine updates by", choices=REDUCES)
    loops: int = param(LOOPS, "How many times loop and parallel-loop run the middle (Sun et al. loop a parallel "
                       "group and report that the best count grows with how many layers run in parallel).",
                       label="Loops K", lo=1, hi=MAX_LOOPS)
    span: int = param(0, "How many consecutive blocks, from block b, skip, reverse, repeat, parallel and parallel-loop "
                      "act on (Sun et al.'s span [start, end)); 0: their usual extent (skip: block b alone; the "
                      "others: the whole middle).", label="Span", lo=0, hi=MLP_BLOCKS)
    ends: str = param("keep", "keep: the first and last blocks stay in place (the papers' setting); include: the "
                      "operation acts on every block (a control).", label="First and last blocks", choices=ENDS,
                      labels=ENDS_LABELS)
    seed: int = seed_param("Fixes the trained model (the same seeds as the other pages) and the random orders.")

    def __post_init__(self) -> None:
        check(self)
        if self.span and self.op in SPAN_OPS:
            check_span(self.op, n_blocks(self.model), self.block, self.span, self.ends)
        else:
            check_args(self.op, n_blocks(self.model), self.block, self.ends)

    @property
    def model_cfg(self) -> ModelConfig:
        return ModelConfig(self.model, self.seed)


@entry("rearrange")
def run(cfg: RearrangeConfig, progress: Progress) -> dict[str, Any]:
    """One operation's accuracy and cost, read from the model's profile."""
    prof = profile(cfg.model_cfg, progress)
    row = prof["ops"][row_key(cfg.op, cfg.block, cfg.reduce, cfg.ends, cfg.loops, cfg.span)]
    return {"config": cfg, "n_blocks": prof["n_blocks"], "base_acc": prof["base_acc"], "acc": row["acc"],
            "block_runs": row["block_runs"], "depth": row["depth"], "route": row["route"], "steps": row["steps"],
            "draws": row.get("draws", 1), "chance": prof["chance"], "n_test": prof["n_test"],
            "middle": list(middle(prof["n_blocks"], cfg.ends)), "span_sweep": span_sweep(prof),
            "claims": model_claims([prof])}


@dataclass(frozen=True)
class SeedConfig:
    """Every model at one seed (the page's comparison)."""

    seed: int = 0


def all_models(cfg: SeedConfig, progress: Progress = silent) -> dict[str, dict[str, Any]]:
    """The profile of every model at one seed (each cached on its own)."""
    return {mo: profile(ModelConfig(mo, cfg.seed), span(progress, i / len(MODELS), (i + 1) / len(MODELS)))
            for i, mo in enumerate(MODELS)}


# -- summaries and claims -------------------------------------------------------------------------------------
SUMMARY = (  # (name, label): the table's and the figure's operations, ends kept, parallel by mean
    ("identity", "trained order"), ("skip", "skip one middle block (mean over b)"), ("skip-first", "skip the first"),
    ("skip-last", "skip the last"), ("swap", "swap two middle neighbours (mean)"), ("reverse", "reverse middle"),
    ("random", "random middle order (mean)"), ("repeat", "repeat one middle block (mean over b)"),
    ("skip-middle", "skip the whole middle"), ("loop", "loop the middle (twice)"),
    ("parallel", "parallel middle (mean)"),
    ("parallel-sum", "parallel middle (sum)"), ("parallel-loop", "parallel, looped twice (mean)"))


def summary(prof: dict[str, Any]) -> dict[str, dict[str, float]]:
    """One accuracy and cost per SUMMARY operation (a block operation: the mean over the middle blocks)."""
    n, ops = prof["n_blocks"], prof["ops"]

    def mean_of(op: str) -> dict[str, float]:
        rows = [ops[row_key(op, b)] for b in valid_blocks(op, n, "keep")]
        return {"acc": statistics.mean(r["acc"] for r in rows), "block_runs": rows[0]["block_runs"]}

    def one(key: str) -> dict[str, float]:
        return {"acc": ops[key]["acc"], "block_runs": ops[key]["block_runs"]}

    out = {}
    for name, _ in SUMMARY:
        if name in BLOCK_OPS:
            out[name] = mean_of(name)
        elif name == "skip-first":
            out[name] = one(row_key("skip", 0, ends="include"))
        elif name == "skip-last":
            out[name] = one(row_key("skip", n - 1, ends="include"))
        elif name == "parallel-sum":
            out[name] = one(row_key("parallel", reduce="sum"))
        else:
            out[name] = one(row_key(name, reduce="mean"))
    return out


def mean_profiles(profiles: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The mean over seeds of profiles of one model: every accuracy averaged, the rest from the first."""
    first = profiles[0]
    ops = {k: {**row, "acc": statistics.mean(p["ops"][k]["acc"] for p in profiles)} for k, row in first["ops"].items()}
    return {**first, "ops": ops, "base_acc": statistics.mean(p["base_acc"] for p in profiles),
            "seeds": [p["config"]["seed"] for p in profiles]}


TOLERATE = 0.9  # "tolerates": keeps at least 90 % of the trained accuracy (the lab's bar; Lad et al.: 72-95 %)
GRACEFUL = 0.5  # "degrades gracefully": keeps at least half of the trained model's margin over chance
FAR_BETTER = 0.10  # "far better": at least 10 points more of its trained accuracy kept, on average
SCALE = ("here a 6-block ViT on 8x8 digits or a 7-block residual MLP on a synthetic task, scored on held-out "
         "inputs, where the papers used language models of 24-80 layers and benchmark scores")


def _mean(vals: Sequence[float]) -> float:
    return statistics.fmean(vals)


# Per-input held-out scores of a profile's rows (the outcomes every claim pairs: the same inputs for every row).
def _o(prof: dict[str, Any], key: str) -> np.ndarray:
    return selection.scores(prof["outcomes"][key])


def _mid(prof: dict[str, Any], op: str) -> np.ndarray:
    """Per-input share of the middle blocks b for which a block operation (ends kept) gets the input right: the
    exact average over every b."""
    return np.mean([_o(prof, row_key(op, b)) for b in valid_blocks(op, prof["n_blocks"], "keep")], axis=0)


def _skip(prof: dict[str, Any], b: int) -> np.ndarray:
    return _o(prof, row_key("skip", b, ends="include"))


def _base(prof: dict[str, Any]) -> np.ndarray:
    return _o(prof, row_key("identity"))


def _over_windows(prof: dict[str, Any], op: str, sp: int, kk: int = LOOPS, reduce: str = "mean") -> np.ndarray:
    """Per-input share over every window of span `sp` (ends kept) of a spanned operation."""
    n = prof["n_blocks"]
    red = reduce if op in REDUCE_OPS else None
    return np.mean([_o(prof, row_key(op, w[0], red, "keep", kk, sp)) for w in windows(n, "keep", sp)], axis=0)


def _pooled(per_seed: Sequence[list[dict[str, Any]]], profs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One seed's claims as they are; several seeds' pooled (each test's estimate over the seeds' spread)."""
    if len(per_seed) == 1:
        return list(per_seed[0])
    return pool_claims(per_seed, [p["config"]["seed"] for p in profs])


def model_claims(profs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-model claims of Lad et al. and Sun et al. (one profile per seed; several seeds are pooled: their
    spread is the noise), each a `lab.claims` record decided by paired tests on the same held-out inputs."""
    return _pooled([_model_claims(p) + _sweep_claims(p) for p in profs], profs)


def _model_claims(p: dict[str, Any]) -> list[dict[str, Any]]:
    mo, n = p["model"], p["n_blocks"]
    who = MODEL_LABELS[mo]
    base = _base(p)
    b_mean = float(base.mean())
    chance = p["chance"]
    out = []

    # 1. The ends are the most sensitive: skipping either end costs more than skipping any middle block.
    inner = {b: float(_skip(p, b).mean()) for b in range(1, n - 1)}
    worst_mid = min(inner, key=inner.get)
    first, last, mid = _skip(p, 0), _skip(p, n - 1), _skip(p, worst_mid)
    e_first, e_last = estimates.paired(mid, first), estimates.paired(mid, last)
    out.append(claim(
        f"rearrange.{mo}.ends-most-sensitive", "the first and last layers are the most sensitive to skipping",
        "Lad et al. 2024 (deleting one layer at a time), and Sun et al. 2024; " + SCALE,
        {"skip_first_acc": float(first.mean()), "skip_last_acc": float(last.mean()),
         "worst_middle_skip_acc": float(mid.mean()), "worst_middle_block": worst_mid, "base_acc": b_mean,
         "se_first": e_first.se, "se_last": e_last.se},
        "skipping the most harmful middle block minus skipping the first, and minus skipping the last (paired on "
        f"the same held-out inputs), are each above 0, {noise_words(max(e_first.se, e_last.se), kind='paired')}",
        [test("worst middle skip - first skip", e_first, ">=", 0.0),
         test("worst middle skip - last skip", e_last, ">=", 0.0)],
        f"Skipping the first block leaves {pct(first.mean())}, the last {pct(last.mean())}; the most harmful "
        f"middle skip (block {worst_mid}) leaves {pct(mid.mean())}; trained {pct(b_mean)}.", who))

    # 2. Middle layers tolerate skipping and swapping: each keeps at least 90 % of the trained accuracy.
    skips, swaps = _mid(p, "skip"), _mid(p, "swap")
    e_sk, e_sw = estimates.paired(skips, TOLERATE * base), estimates.paired(swaps, TOLERATE * base)
    sk, sw = float(skips.mean()), float(swaps.mean())
    out.append(claim(
        f"rearrange.{mo}.middle-tolerates-skip-swap", "middle layers tolerate skipping one or swapping two neighbours",
        "Lad et al. 2024 (one deleted or two adjacent swapped layers keep 72-95 % of accuracy); the 90 % "
        "bar is this lab's; " + SCALE,
        {"skip_acc": sk, "swap_acc": sw, "base_acc": b_mean, "skip_share": sk / b_mean, "swap_share": sw / b_mean,
         "se_skip": e_sk.se, "se_swap": e_sw.se},
        f"skipping one middle block and swapping two middle neighbours (each averaged exactly over the middle) minus "
        f"{TOLERATE:.0%} of the trained model (paired on the same held-out inputs) are each above 0, "
        f"{noise_words(max(e_sk.se, e_sw.se), kind='paired')}",
        [test(f"skip - {TOLERATE:g} x trained", e_sk, ">=", 0.0),
         test(f"swap - {TOLERATE:g} x trained", e_sw, ">=", 0.0)],
        f"Skipping keeps {pct(sk / b_mean)} of the trained accuracy ({pct(sk)}), swapping {pct(sw / b_mean)} "
        f"({pct(sw)}); trained {pct(b_mean)}.", who))

    # 3. Swapping two neighbours costs less than deleting one.
    e = estimates.paired(swaps, skips)
    out.append(claim(
        f"rearrange.{mo}.swap-cheaper-than-skip", "swapping two adjacent middle layers costs less than skipping one",
        "Lad et al. 2024 apply both interventions to every layer; comparing them is this lab's; " + SCALE,
        {"swap_acc": sw, "skip_acc": sk, "difference": e.value},
        f"the mean accuracy after a swap minus after a skip (both over the middle, paired on the same held-out "
        f"inputs) is above 0, {noise_words(e.se, kind='paired')}",
        [test("swap - skip", e, ">=", 0.0)],
        f"Swapping two middle neighbours leaves {pct(sw)} on average, skipping one middle block {pct(sk)}: "
        f"{pts(e.value)}.", who))

    # 4. Repeating one middle layer over a span is worse than skipping that same span (Sun et al.'s comparison).
    reps, gone = _mid(p, "repeat"), _o(p, row_key("skip-middle"))
    e = estimates.paired(gone, reps)
    rep_each = [float(_o(p, row_key("repeat", b)).mean()) for b in middle(n, "keep")]
    out.append(claim(
        f"rearrange.{mo}.repeat-worse-than-skip", "repeating one middle layer over a span is worse than skipping "
        "that span",
        "Sun et al. 2024 (middle_repeat against skip over the same layers [start, end)); here the span is "
        "the whole middle (every block but the first and last) and the repeated block b is averaged over the "
        "middle; " + SCALE,
        {"repeat_acc": float(reps.mean()), "skip_span_acc": float(gone.mean()), "repeat_min": min(rep_each),
         "repeat_max": max(rep_each), "difference": e.value},
        f"skipping the middle minus running one middle block in each of its slots (mean over b, paired on the same "
        f"held-out inputs) is above 0, {noise_words(e.se, kind='paired')}",
        [test("skip middle - repeat", e, ">=", 0.0)],
        f"Repeating one middle block in place of the middle leaves {pct(reps.mean())} (mean over b; "
        f"{pct(min(rep_each))} to {pct(max(rep_each))}), skipping that same middle {pct(gone.mean())}: "
        f"{pts(e.value)} in favour of skipping.", who))

    # 5. Running the middle in parallel degrades gracefully: at least half the margin over chance kept.
    par = _o(p, row_key("parallel", reduce="mean"))
    e = estimates.paired(par, GRACEFUL * base + (1 - GRACEFUL) * chance)
    margin = max(b_mean - chance, 1e-9)
    kept = (float(par.mean()) - chance) / margin
    out.append(claim(
        f"rearrange.{mo}.parallel-graceful", "running the middle layers in parallel degrades gracefully",
        "Sun et al. 2024 (the middle layers' outputs averaged; the mean of updates here is the same for "
        "residual blocks); 'gracefully' as at least half the margin over chance kept is this lab's bar; " + SCALE,
        {"parallel_acc": float(par.mean()), "base_acc": b_mean, "chance": chance, "margin_kept": kept},
        f"the middle in parallel (mean of updates) minus (chance + {GRACEFUL:.0%} of the trained model's margin over "
        f"chance), paired on the same held-out inputs, is above 0, {noise_words(e.se, kind='paired')}",
        [test("parallel - (chance + half the margin)", e, ">=", 0.0)],
        f"The middle in parallel gives {pct(par.mean())}, {pct(kept)} of the margin over chance ({pct(chance)}) of "
        f"the trained {pct(b_mean)}; skipping the middle gives {pct(gone.mean())}.", who))
    return out


SWEEP_OPS = ("skip", "reverse", "repeat", "parallel")  # the span figure's lines (parallel: by the chosen reduce)


def span_sweep(prof: dict[str, Any], ends: str = "keep", reduce: str = "mean") -> dict[str, Any]:
    """How far each operation reaches, read from a profile: for every span, the mean accuracy over every window of
    that span (`curves[op][i]` for `spans[i]`), and parallel-loop's accuracy against K (`loop_curves[str(span)]`)."""
    n, ops = prof["n_blocks"], prof["ops"]
    spans = list(range(1, len(middle(n, ends)) + 1))
    ks = list(range(1, MAX_LOOPS + 1))

    def mean_acc(op: str, sp: int, kk: int = LOOPS) -> float:
        red = reduce if op in REDUCE_OPS else None
        return _mean([ops[row_key(op, w[0], red, ends, kk, sp)]["acc"] for w in windows(n, ends, sp)])

    loops = {str(sp): [mean_acc("parallel-loop", sp, kk) for kk in ks] for sp in spans}
    return {"spans": spans, "ends": ends, "reduce": reduce, "loops": ks,
            "curves": {op: [mean_acc(op, sp) for sp in spans] for op in SWEEP_OPS}, "loop_curves": loops,
            "best_loops": {k: 1 + max(range(len(ks)), key=v.__getitem__) for k, v in loops.items()}}


def sweep_claims(profs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sun et al.'s claims over the span sweep of one model (one profile per seed, pooled; ends kept, parallel by
    mean)."""
    return _pooled([_sweep_claims(p) for p in profs], profs)


def loops_decision(lo: Sequence[np.ndarray], hi: Sequence[np.ndarray], hi_span: int = 0
                   ) -> tuple[dict[str, Any], int, int, int]:
    """The test of "the best K grows with the span" from per-input scores at K = 1..len(lo) of a short span (`lo`)
    and a long one (`hi`): (test, best K short, best K long, the K the long span's best is compared with).

    The best K of each span is chosen on the even-numbered inputs and the test is made on the odd-numbered ones, so
    the choice of the argmaxes does not bias the test (choosing and testing on the same inputs passes flat curves
    about 5 % of the time). The test pairs two loop counts at the long span on the same inputs, so a verdict needs
    the argmaxes separated: best K larger at the long span: acc(K_long) - acc(K_short) clearly above 0 holds; best K
    smaller there: acc(K_short) - acc(K_long) clearly below 0 fails; the same best K: acc(the best larger K) -
    acc(K) clearly below 0 fails (K did not grow); at the largest K tried, nothing larger: cannot tell."""
    pick = np.arange(len(hi[0])) % 2 == 0
    k_max = len(hi)
    c_lo, c_hi = [float(r[pick].mean()) for r in lo], [float(r[pick].mean()) for r in hi]
    k_lo, k_hi = 1 + int(np.argmax(c_lo)), 1 + int(np.argmax(c_hi))
    if k_hi != k_lo:
        big, small = max(k_lo, k_hi), min(k_lo, k_hi)
    elif k_hi < k_max:
        big, small = k_hi + 1 + int(np.argmax(c_hi[k_hi:])), k_hi
    else:
        big = small = k_hi
    e = estimates.paired(hi[big - 1][~pick], hi[small - 1][~pick])
    name = f"span {hi_span}: acc at the larger K - at the smaller (odd inputs)"
    return test(name, e, ">=", 0.0), k_lo, k_hi, big + small - k_hi


def loops_test(prof: dict[str, Any], lo: int, hi: int) -> tuple[dict[str, Any], int, int, int]:
    """`loops_decision` on a profile's parallel-loop rows (mean of updates, each span averaged over its windows)."""
    rows = {sp: [_over_windows(prof, "parallel-loop", sp, kk) for kk in range(1, MAX_LOOPS + 1)] for sp in (lo, hi)}
    return loops_decision(rows[lo], rows[hi], hi)


def _sweep_claims(p: dict[str, Any]) -> list[dict[str, Any]]:
    mo = p["model"]
    who = MODEL_LABELS[mo]
    sw = span_sweep(p)
    spans = sw["spans"]
    out = []

    # Repeating block b over a window is worse than skipping that window, at every span of two blocks or more.
    tests, parts = [], []
    for i, sp in enumerate(spans):
        if sp < 2:
            continue  # a span of one: repeating b in its own slot is the trained model
        e = estimates.paired(_over_windows(p, "skip", sp), _over_windows(p, "repeat", sp))
        tests.append(test(f"span {sp}: skip - repeat", e, ">=", 0.0))
        parts.append(f"span {sp}: skip {pct(sw['curves']['skip'][i])}, repeat {pct(sw['curves']['repeat'][i])}")
    if tests:
        se = max(t["se"] for t in tests)
        out.append(claim(
            f"rearrange.{mo}.repeat-worse-than-skip-every-span", "at every span, repeating one layer over it is worse "
            "than skipping it",
            "Sun et al. 2024 (middle_repeat against skip over the same [start, end)); here block b is run "
            "in each slot of the window of s blocks from b, averaged exactly over every window of the middle; "
            + SCALE,
            {"spans": [sp for sp in spans if sp >= 2]},
            f"for every span of 2 blocks or more, skipping the window minus repeating its first block in it (paired "
            f"on the same held-out inputs) is above 0, {noise_words(se, kind='paired')} (the largest error)",
            tests, "; ".join(parts) + ".", who))

    # The best number of loop iterations grows with how many layers run in parallel.
    lo, hi = next((sp for sp in spans if sp >= 2), None), spans[-1]
    if lo is not None and lo != hi:
        t, k_lo, k_hi, other = loops_test(p, lo, hi)
        diff = t["value"] if other <= k_hi else -t["value"]  # K_long minus the other K, on the odd inputs
        curves = sw["loop_curves"]
        out.append(claim(
            f"rearrange.{mo}.best-loops-grow-with-span", "the best number of loop iterations grows with how many "
            "layers run in parallel",
            f"Sun et al. 2024 (loop_parallel over [start, end), K iterations); here the window of s "
            f"middle blocks from b run in parallel (mean of updates) K = 1..{MAX_LOOPS} times, averaged over every "
            "window; " + SCALE,
            {"span_short": lo, "span_long": hi, "best_k_short": k_lo, "best_k_long": k_hi, "compared_k": other,
             "difference": t["value"]},
            "decided only where the best loop counts are separated: each span's best K chosen on the even-numbered "
            f"held-out inputs, then on the odd-numbered ones, at the longest span ({hi}), the accuracy at the larger "
            f"of the two spans' best K minus at the smaller (paired) is above 0 "
            f"({noise_words(t['se'], kind='paired')}) when the longer span's best K is the larger, and fails when "
            "it is clearly below 0 (the longer span's best K is the smaller one, or the same and the best larger K "
            f"tried, up to {MAX_LOOPS}, clearly worse)",
            [t],
            f"Best K on the even-numbered inputs for a span of {lo}: {k_lo}; for a span of {hi}: {k_hi}; at span "
            f"{hi} on the odd-numbered inputs, K = {k_hi} against K = {other}: {pts(diff)}"
            f" (all inputs: K = {k_hi} {pct(curves[str(hi)][k_hi - 1])}, K = {other} "
            f"{pct(curves[str(hi)][other - 1])}); best K per span on all inputs: "
            + ", ".join(f"{k}: {v}" for k, v in sw["best_loops"].items()) + ".", who))
    return out


def _shares(prof: dict[str, Any]) -> dict[str, np.ndarray]:
    """Per-input scores of every SUMMARY operation (block operations: the exact mean over the middle blocks),
    divided by the model's trained accuracy: each input's contribution to the share of accuracy kept."""
    n = prof["n_blocks"]
    b = float(_base(prof).mean())
    out = {}
    for name, _ in SUMMARY:
        if name == "identity":
            continue
        if name in BLOCK_OPS:
            s = _mid(prof, name)
        elif name == "skip-first":
            s = _skip(prof, 0)
        elif name == "skip-last":
            s = _skip(prof, n - 1)
        elif name == "parallel-sum":
            s = _o(prof, row_key("parallel", reduce="sum"))
        else:
            s = _o(prof, row_key(name, reduce="mean"))
        out[name] = s / b
    return out


def _random_var(prof: dict[str, Any]) -> float:
    """The draw variance of the random-order operation's mean accuracy, as a share of the trained accuracy."""
    accs = prof["ops"][row_key("random")]["accs"]
    b = float(_base(prof).mean())
    return statistics.variance(accs) / len(accs) / (b * b) if len(accs) > 1 else 0.0


def _plus(e: estimates.Estimate, var: float, words: str) -> estimates.Estimate:
    return estimates.Estimate(e.value, math.sqrt(e.se * e.se + var), e.se_kind, e.n, e.how + words)


def _shuffle_claim(seq: dict[str, Any], shu: dict[str, Any]) -> dict[str, Any]:
    a, b = _shares(seq), _shares(shu)
    names = list(a)
    w = 1.0 / len(names)
    mean_a, mean_b = np.mean([a[k] for k in names], axis=0), np.mean([b[k] for k in names], axis=0)
    draws = (_random_var(seq) + _random_var(shu))
    e_m = _plus(estimates.paired(mean_b, mean_a), w * w * draws, ", plus the random orders' draw variance")
    gaps = {k: float(b[k].mean() - a[k].mean()) for k in names}
    worst = min(names, key=gaps.get)
    e_w = estimates.paired(b[worst], a[worst])
    if worst == "random":
        e_w = _plus(e_w, draws, ", plus the random orders' draw variance")
    base_a, base_b = float(_base(seq).mean()), float(_base(shu).mean())
    return claim(
        "rearrange.vit.layershuffle-tolerates-every-operation",
        "a LayerShuffle-trained ViT tolerates every operation far better than the sequential one",
        "Freiberger et al. 2024 (LayerShuffle) test random orders and pruning; the comparison over the Painters' "
        "operations and the 10-point bar are this lab's; 6-block ViTs on 8x8 digits, both scored on the same "
        "held-out images",
        {"mean_share_gap": e_m.value, "se_mean": e_m.se, "worst_operation": worst, "worst_share_gap": e_w.value,
         "se_worst": e_w.se, "base_acc_sequential": base_a, "base_acc_shuffle": base_b,
         **{f"gap_{k}": v for k, v in gaps.items()}},
        f"the share of trained accuracy kept, LayerShuffle minus sequential (paired on the same held-out images), "
        f"is at least {100 * FAR_BETTER:.0f} points on average over the {len(names)} operations, "
        f"{noise_words(e_m.se, kind='paired')}, and above 0 for the operation where it is smallest, "
        f"{noise_words(e_w.se, kind='paired')}",
        [test("mean share gap", e_m, ">=", FAR_BETTER), test(f"share gap, {worst}", e_w, ">=", 0.0)],
        f"LayerShuffle keeps {pts(e_m.value)} more of its trained accuracy on average over {len(names)} operations; "
        f"the smallest difference is {pts(e_w.value)} ({worst}); trained accuracy: sequential {pct(base_a)}, "
        f"LayerShuffle {pct(base_b)}.", "ViT")


def shuffle_claim(seqs: Sequence[dict[str, Any]], shus: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """LayerShuffle against sequential training (profiles of both ViTs, one per seed, pooled over seeds): the share
    of its trained accuracy each keeps, operation by operation."""
    return _pooled([[_shuffle_claim(a, b)] for a, b in zip(seqs, shus, strict=True)], seqs)[0]


def claims(profiles: dict[str, Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every claim the given profiles can test: {model: [profile per seed]} (the last claim needs both ViTs)."""
    out = [c for mo in MODELS if mo in profiles for c in model_claims(profiles[mo])]
    if "vit-sequential" in profiles and "vit-shuffle" in profiles:
        out.append(shuffle_claim(profiles["vit-sequential"], profiles["vit-shuffle"]))
    return out


def compare(cfg: SeedConfig, progress: Progress = silent) -> dict[str, Any]:
    """Every model's profile at one seed and the claims they test (the page's comparison; each profile cached)."""
    profs = all_models(cfg, progress)
    return {"seed": cfg.seed, "profiles": profs, "claims": claims({mo: [p] for mo, p in profs.items()})}


def table(seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Models x SUMMARY operations, mean over seeds, with the claims on all seeds (profiles computed by `pool`)."""
    jobs = [(mo, s) for mo in MODELS for s in seeds]
    per: dict[str, list[dict[str, Any]]] = {}
    profs = pool([(profile, ModelConfig(mo, s)) for mo, s in jobs], progress)
    for (mo, _), prof in zip(jobs, profs, strict=True):
        per.setdefault(mo, []).append(prof)
    means = {mo: mean_profiles(ps) for mo, ps in per.items()}
    return {"seeds": seeds, "rows": {mo: summary(p) for mo, p in means.items()},
            "base_acc": {mo: p["base_acc"] for mo, p in means.items()},
            "chance": {mo: p["chance"] for mo, p in means.items()},
            "n_blocks": {mo: p["n_blocks"] for mo, p in means.items()}, "claims": claims(per),
            "seconds": {mo: [p["train_seconds"] for p in ps] for mo, ps in per.items()}}
