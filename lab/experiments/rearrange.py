"""Rearrange layers on a frozen trained model: the operations of "Transformer Layers as Painters" (Sun et al. 2024)
and "The Remarkable Robustness of LLMs" (Lad et al. 2024), on the lab's own models.

Every operation is a route of steps (`models.base`): ints, and `Parallel` groups for blocks run side by side.
The operations act on the *middle* of the model; with `ends="keep"` the first and last blocks stay where they are
(the papers' setting), with `ends="include"` the middle is every block (a control):
  identity       the trained order
  skip           leave out one block                          swap     swap blocks b and b + 1
  reverse        the middle in reverse order                  random   a random order of the middle (mean of draws)
  repeat         block b run in place of every middle block   skip-middle  no middle at all (the floor)
  loop           the middle run twice                         parallel the middle as one parallel group
  parallel-loop  the parallel group run twice
Cost is counted in block runs (`base.block_runs`); `depth` counts sequential steps (a parallel group is one).

Caching follows what each piece depends on: `profile(ModelConfig)` trains (or loads) one model and evaluates every
operation with every argument, plus the layer-similarity maps; it is cheap once the model exists (evaluations
only) and one entry per (model, seed) serves every control of the page. `run(RearrangeConfig)` reads the chosen
operation from it. `claims` turns profiles into the papers' claims, each with its numbers and a verdict.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from .. import presets, streams
from ..experiment import Pool, check, entry, param, seed_param, serial
from ..models import RoutedModel, accuracy
from ..models.base import REDUCES, Parallel, StepLike, block_runs
from ..progress import Progress, silent, span
from ..recipes import MLP_DEPTH, mlp_spec, vit_spec
from ..routes import random_permutation
from ..zoo import ModelSpec, trained

MODELS = ("residual", "vit-sequential", "vit-shuffle")
MODEL_LABELS = {"residual": "residual MLP", "vit-sequential": "ViT, trained in order",
                "vit-shuffle": "ViT, trained with LayerShuffle"}
VIT_DEPTH = 6  # the Shuffle page's ViT, so the two pages share the trained models
OPS = ("identity", "skip", "swap", "reverse", "random", "repeat", "skip-middle", "loop", "parallel", "parallel-loop")
OP_LABELS = {"identity": "trained order", "skip": "skip block b", "swap": "swap blocks b and b+1",
             "reverse": "reverse the middle", "random": "random order of the middle", "repeat": "repeat block b "
             "in place of the middle", "skip-middle": "skip the whole middle", "loop": "loop the middle (twice)",
             "parallel": "middle in parallel", "parallel-loop": "middle in parallel, looped twice"}
BLOCK_OPS = ("skip", "swap", "repeat")  # operations that take the block argument
REDUCE_OPS = ("parallel", "parallel-loop")  # operations that take the reduce argument
ENDS = ("keep", "include")
ENDS_LABELS = {"keep": "keep the first and last blocks", "include": "include them in the middle"}
RANDOM_DRAWS = 20  # random orders of the middle; the accuracy is their mean
SIM_INPUTS = 1000  # held-out inputs of the similarity maps (the digits have 397, the synthetic task 4,000)


def n_blocks(model: str) -> int:
    """Blocks of a model, without building it."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    return MLP_DEPTH - 1 if model == "residual" else VIT_DEPTH


def model_spec(model: str, seed: int) -> ModelSpec:
    """The Delete page's residual MLP or the Shuffle page's 6-block ViTs: the same recipes, the same stored weights."""
    n_blocks(model)
    return mlp_spec("residual", seed) if model == "residual" else vit_spec(model.split("-")[1], VIT_DEPTH, seed)


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


def route_of(op: str, n: int, block: int = 1, reduce: str = "mean", ends: str = "keep") -> tuple[StepLike, ...]:
    """The route of one operation on an n-block model (random: use `random_routes`)."""
    if op not in OPS or op == "random":
        raise ValueError(f"no single route for {op!r}; choose one of {', '.join(o for o in OPS if o != 'random')}")
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
    body = {"reverse": mid[::-1], "repeat": (block,) * len(mid), "skip-middle": (), "loop": mid + mid,
            "parallel": group, "parallel-loop": group + group}[op]
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
def steps_accuracy(model: RoutedModel, h0: torch.Tensor, y: torch.Tensor, steps: Sequence[StepLike]) -> float:
    """Held-out accuracy of a route of steps from precomputed stem outputs `h0` (the stem is the same for all)."""
    return float((model.readout(model.run_steps(h0, steps)).argmax(1) == y).float().mean())


# -- layer similarity ---------------------------------------------------------------------------------------
def linear_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    """Linear CKA (Kornblith et al. 2019) of two representations of the same inputs, rows = inputs.

    Computed from the centred Gram matrices, <K, L> / (|K| |L|), so it works for any width; 1 for the same
    representation, invariant to rotations and to scaling of either.
    """
    x = x.reshape(len(x), -1).double()
    y = y.reshape(len(y), -1).double()
    x, y = x - x.mean(0), y - y.mean(0)
    k, m = x @ x.T, y @ y.T
    return float((k * m).sum() / (k.norm() * m.norm()).clamp_min(1e-30))


def mean_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean cosine similarity of two hidden states, per input (and per token for the ViT)."""
    return float(torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1).mean())


@torch.no_grad()
def similarity(model: RoutedModel, x: torch.Tensor) -> dict[str, Any]:
    """Cosine and linear-CKA similarity of the hidden state after the stem and after every block (trained order)."""
    _, states = model.states(x)
    k = len(states)
    cos = [[mean_cosine(states[i], states[j]) for j in range(k)] for i in range(k)]
    cka = [[1.0 if i == j else linear_cka(states[i], states[j]) for j in range(k)] for i in range(k)]
    return {"labels": ["stem"] + [f"after {b}" for b in range(k - 1)], "cosine": cos, "cka": cka}


# -- the per-model table --------------------------------------------------------------------------------------
def row_key(op: str, block: Optional[int] = None, reduce: Optional[str] = None, ends: str = "keep") -> str:
    """The key of one operation in a profile: arguments the operation does not take are left out."""
    b = str(block) if op in BLOCK_OPS else ""
    r = reduce if op in REDUCE_OPS else ""
    return f"{op}|{b}|{r}|{ends}"


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

    def add(key: str, steps: Sequence[StepLike], **extra: Any) -> None:
        ops[key] = {"acc": steps_accuracy(m, h0, y, steps), "block_runs": block_runs(steps), "depth": len(steps),
                    "route": label(steps), "steps": plain_steps(steps), **extra}

    for ends in ENDS:
        for op in OPS:
            if op in BLOCK_OPS:
                for b in valid_blocks(op, n, ends):
                    add(row_key(op, b, None, ends), route_of(op, n, b, ends=ends), op=op, block=b, ends=ends)
            elif op in REDUCE_OPS:
                for red in REDUCES:
                    add(row_key(op, None, red, ends), route_of(op, n, reduce=red, ends=ends), op=op, reduce=red,
                        ends=ends)
            elif op == "random":
                routes = random_routes(n, ends, cfg.seed)
                accs = [steps_accuracy(m, h0, y, r) for r in routes]
                ops[row_key(op, ends=ends)] = {
                    "acc": statistics.mean(accs), "acc_min": min(accs), "acc_max": max(accs), "accs": accs,
                    "draws": len(accs), "block_runs": n, "depth": n, "route": label(routes[0]),
                    "steps": plain_steps(routes[0]), "op": op, "ends": ends}
            else:
                add(row_key(op, ends=ends), route_of(op, n, ends=ends), op=op, ends=ends)
    progress(0.97, "layer similarity")
    sim = similarity(m, x[:SIM_INPUTS])
    return {"config": cfg, "model": cfg.model, "n_blocks": n, "base_acc": accuracy(m, x, y), "chance": d.chance,
            "ops": ops, "similarity": sim, "train_seconds": t.info["seconds"], "train_curve": t.info["test_acc"],
            "eval_seconds": time.perf_counter() - t0}


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
                       label="Block b", lo=0, hi=MLP_DEPTH - 2)
    reduce: str = param("mean", "How a parallel group combines its blocks' updates: their mean (the papers') or "
                        "their sum (what the blocks would add if each did not depend on the others).",
                        label="Parallel: combine updates by", choices=REDUCES)
    ends: str = param("keep", "keep: the first and last blocks stay in place (the papers' setting); include: the "
                      "operation acts on every block (a control).", label="First and last blocks", choices=ENDS,
                      labels=ENDS_LABELS)
    seed: int = seed_param("Fixes the trained model (the same seeds as the other pages) and the random orders.")

    def __post_init__(self) -> None:
        check(self)
        check_args(self.op, n_blocks(self.model), self.block, self.ends)

    @property
    def model_cfg(self) -> ModelConfig:
        return ModelConfig(self.model, self.seed)


@entry("rearrange")
def run(cfg: RearrangeConfig, progress: Progress) -> dict[str, Any]:
    """One operation's accuracy and cost, read from the model's profile."""
    prof = profile(cfg.model_cfg, progress)
    row = prof["ops"][row_key(cfg.op, cfg.block, cfg.reduce, cfg.ends)]
    return {"config": cfg, "n_blocks": prof["n_blocks"], "base_acc": prof["base_acc"], "acc": row["acc"],
            "block_runs": row["block_runs"], "depth": row["depth"], "route": row["route"], "steps": row["steps"],
            "draws": row.get("draws", 1), "chance": prof["chance"], "middle": list(middle(prof["n_blocks"], cfg.ends))}


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
    ("skip-middle", "skip the whole middle"), ("loop", "loop the middle"), ("parallel", "parallel middle (mean)"),
    ("parallel-sum", "parallel middle (sum)"), ("parallel-loop", "parallel, looped (mean)"))


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


TOLERATE = 0.9  # "tolerates": keeps at least 90 % of the trained accuracy
MUCH_WORSE = 0.10  # "much worse": at least 10 points lower
GRACEFUL = 0.5  # "degrades gracefully": keeps at least half of the trained model's margin over chance
FAR_BETTER = 0.10  # "far better": at least 10 points more of its trained accuracy kept, on average


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def model_claims(prof: dict[str, Any]) -> list[dict[str, Any]]:
    """The four per-model claims, each with a verdict and the numbers behind it."""
    n, ops, base, chance = prof["n_blocks"], prof["ops"], prof["base_acc"], prof["chance"]
    who = MODEL_LABELS[prof["model"]]
    skips = [ops[row_key("skip", b, ends="include")]["acc"] for b in range(n)]
    inner = skips[1:-1]
    ends_worst = skips[0] < min(inner) and skips[-1] < min(inner)
    s = summary(prof)
    verdict = {(True, True): "both ends are below every middle block",
               (True, False): "the first block is below every middle block, the last is not",
               (False, True): "the last block is below every middle block, the first is not",
               (False, False): "neither end is below every middle block"}[(skips[0] < min(inner),
                                                                           skips[-1] < min(inner))]
    out = [{"claim": "first and last layers are the most sensitive", "model": prof["model"], "holds": ends_worst,
            "detail": f"{who}: skipping the first block leaves {_pct(skips[0])}, the last {_pct(skips[-1])}; "
                      f"skipping a middle block leaves {_pct(min(inner))} to {_pct(max(inner))} "
                      f"(trained: {_pct(base)}): {verdict}."}]
    skip_r, swap_r = s["skip"]["acc"] / base, s["swap"]["acc"] / base
    out.append({"claim": "middle layers tolerate skipping and swapping", "model": prof["model"],
                "holds": skip_r >= TOLERATE and swap_r >= TOLERATE,
                "detail": f"{who}: skipping one middle block keeps {_pct(skip_r)} of the trained accuracy on average "
                          f"({_pct(s['skip']['acc'])}), swapping two neighbours {_pct(swap_r)} "
                          f"({_pct(s['swap']['acc'])}); the bar is {_pct(TOLERATE)}."})
    gap = s["skip"]["acc"] - s["repeat"]["acc"]
    out.append({"claim": "repeating one middle layer is much worse than skipping it", "model": prof["model"],
                "holds": gap >= MUCH_WORSE,
                "detail": f"{who}: repeating a middle block in place of the middle gives {_pct(s['repeat']['acc'])} "
                          f"(mean over b), skipping that block {_pct(s['skip']['acc'])}: {100 * gap:+.1f} points in "
                          f"favour of skipping (the bar is {100 * MUCH_WORSE:.0f}); skipping the whole middle "
                          f"gives {_pct(s['skip-middle']['acc'])}."})
    par = s["parallel"]["acc"]
    kept = (par - chance) / max(base - chance, 1e-9)
    out.append({"claim": "running the middle in parallel degrades gracefully", "model": prof["model"],
                "holds": kept >= GRACEFUL,
                "detail": f"{who}: the middle in parallel (mean of updates) gives {_pct(par)}, keeping {_pct(kept)} of "
                          f"the trained model's margin over chance (the bar is {_pct(GRACEFUL)}); by sum "
                          f"{_pct(s['parallel-sum']['acc'])}; looped {_pct(s['parallel-loop']['acc'])}; for "
                          f"comparison skipping the middle gives {_pct(s['skip-middle']['acc'])}."})
    return out


def shuffle_claim(seq: dict[str, Any], shu: dict[str, Any]) -> dict[str, Any]:
    """LayerShuffle against sequential training: the share of trained accuracy each keeps, operation by operation."""
    a, b = summary(seq), summary(shu)
    names = [n for n, _ in SUMMARY if n != "identity"]
    gaps = {n: b[n]["acc"] / shu["base_acc"] - a[n]["acc"] / seq["base_acc"] for n in names}
    worst = min(gaps, key=gaps.get)
    mean_gap = statistics.mean(gaps.values())
    return {"claim": "a LayerShuffle-trained ViT tolerates every operation far better than the sequential one",
            "model": "vit", "holds": gaps[worst] >= 0 and mean_gap >= FAR_BETTER, "gaps": gaps,
            "detail": f"Share of the trained accuracy kept, LayerShuffle minus sequential: {100 * mean_gap:+.1f} "
                      f"points on average over {len(names)} operations (the bar is {100 * FAR_BETTER:.0f}); the "
                      f"smallest difference is {100 * gaps[worst]:+.1f} points ({worst}). Trained accuracy: "
                      f"sequential {_pct(seq['base_acc'])}, LayerShuffle {_pct(shu['base_acc'])}."}


def claims(profiles: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every claim the given profiles can test (the last one needs both ViTs)."""
    out = [c for mo in MODELS if mo in profiles for c in model_claims(profiles[mo])]
    if "vit-sequential" in profiles and "vit-shuffle" in profiles:
        out.append(shuffle_claim(profiles["vit-sequential"], profiles["vit-shuffle"]))
    return out


def table(seeds: list[int], progress: Progress = silent, pool: Pool = serial) -> dict[str, Any]:
    """Models x SUMMARY operations, mean over seeds, with the claims on the means (profiles computed by `pool`)."""
    jobs = [(mo, s) for mo in MODELS for s in seeds]
    per: dict[str, list[dict[str, Any]]] = {}
    profs = pool([(profile, ModelConfig(mo, s)) for mo, s in jobs], progress)
    for (mo, _), prof in zip(jobs, profs, strict=True):
        per.setdefault(mo, []).append(prof)
    means = {mo: mean_profiles(ps) for mo, ps in per.items()}
    return {"seeds": seeds, "rows": {mo: summary(p) for mo, p in means.items()},
            "base_acc": {mo: p["base_acc"] for mo, p in means.items()},
            "chance": {mo: p["chance"] for mo, p in means.items()},
            "n_blocks": {mo: p["n_blocks"] for mo, p in means.items()}, "claims": claims(means),
            "seconds": {mo: [p["train_seconds"] for p in ps] for mo, ps in per.items()}}


# -- the page's controls and presets (lab/presets.py; no Streamlit) ------------------------------------------
CONTROLS = {"model": "vit-sequential", "op": "skip", "block": 2, "reduce": "mean", "ends": "keep", "seed": 0}
PRESETS = (
    presets.preset(CONTROLS, "repeat", "Repeat vs skip", "One middle block run in place of the whole middle; then "
                   "set the operation to skip and compare.", op="repeat", block=2, ends="keep"),
    presets.preset(CONTROLS, "parallel", "Parallel, by sum", "The middle blocks side by side with their updates "
                   "summed; then switch to the mean.", op="parallel", reduce="sum", ends="keep"),
    presets.preset(CONTROLS, "shuffle", "LayerShuffle, random orders", "Every block in a random order, on the model "
                   "trained for it; then the sequential ViT.", model="vit-shuffle", op="random", ends="include"),
    presets.preset(CONTROLS, "first", "Skip the first block", "How much does the first block matter? Then try the "
                   "last one.", op="skip", block=0, ends="include"),
)

# Rough seconds on the classroom machine: training one model, then profiling every operation on it.
_TRAIN_SECONDS = {"residual": 10, "vit-sequential": 25, "vit-shuffle": 25}
_PROFILE_SECONDS = 5


def config_of(settings: dict[str, Any]) -> RearrangeConfig:
    """The experiment config of a complete page setting."""
    return RearrangeConfig(**{k: settings[k] for k in ("model", "op", "block", "reduce", "ends", "seed")})


def needs(settings: dict[str, Any]) -> list[presets.Need]:
    """What the page computes for a setting: the chosen operation (read from its model's profile) and the profile
    of every model at the seed (the comparison figure and the claims)."""
    cfg = config_of(settings)
    return ([presets.Need("this operation", run, cfg, 1)]
            + [presets.Need(f"the {MODEL_LABELS[mo]}, every operation", profile, ModelConfig(mo, cfg.seed),
                            _TRAIN_SECONDS[mo] + _PROFILE_SECONDS) for mo in MODELS])
