"""Routes: which blocks run, in which order. What a route is and how to read it (its steps, blocks, middle and
label); the one registry of training samplers (`SAMPLERS`: the route of every training step, a random order or a
LayerDrop mask); and `PrefixStates`, the hidden states of the trained order's prefixes from which the rest of a route
runs without running its shared head again. The operations that change a route (skip, swap, reverse, random, ...)
are surgeries, in lab/ops/route_ops.py: trained models depend on this module, never on the list of surgeries.

A route is a sequence of steps (`models.base`): ints, `Step`s (a block in a variant) and `Parallel` groups for blocks
run side by side. Wherever a route is taken, an int n stands for the plain order 0..n-1 of an n-block model. A route
is read by *slot* (its s-th step); in the plain order slot b runs block b, so an operation's "block b" is both, and
on a looped route (0, 1, 2, 0, 1, 2) they part: skip names a block and removes every run of it, swap, repeat and a
span name slots.

The middle of a route (`middle`): with `ends="keep"` every slot but the first and last (the setting of Sun et al.
2024 and Lad et al. 2024), with `ends="include"` every slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

import torch

from lab.core import streams
from lab.core.models.base import Parallel, RoutedModel, Step, StepLike

Steps = tuple[StepLike, ...]
RouteLike = Union[int, Sequence[StepLike]]  # a route, or n for the plain order 0..n-1 of an n-block model


def steps_of(route: RouteLike) -> Steps:
    """A route as a tuple of steps; an int n is the plain order 0..n-1."""
    return tuple(range(route)) if isinstance(route, int) else tuple(route)


def step_blocks(step: StepLike) -> tuple[int, ...]:
    """The blocks one step runs (a parallel group runs several)."""
    if isinstance(step, Parallel):
        return step.blocks
    return (step.block,) if isinstance(step, Step) else (int(step),)


def blocks_of(route: RouteLike) -> list[int]:
    """The distinct blocks of a route, in order of first run."""
    return list(dict.fromkeys(b for st in steps_of(route) for b in step_blocks(st)))


def is_plain(route: RouteLike) -> bool:
    """Whether a route is the plain order 0..n-1 (its slots are its blocks)."""
    s = steps_of(route)
    return s == tuple(range(len(s)))


def without(n_blocks: int, dropped: Sequence[int]) -> tuple[int, ...]:
    """The full route minus the dropped blocks; indices always refer to the original numbering."""
    gone = set(int(i) for i in dropped)
    bad = [i for i in gone if not 0 <= i < n_blocks]
    if bad:
        raise ValueError(f"cannot drop blocks {sorted(bad)}: the model has blocks 0..{n_blocks - 1}")
    return tuple(i for i in range(n_blocks) if i not in gone)


def without_block(route: RouteLike, block: int) -> Steps:
    """The route with every run of `block` removed (from a parallel group too; a group left empty goes)."""
    out: list[StepLike] = []
    for st in steps_of(route):
        if isinstance(st, Parallel):
            kept = tuple(b for b in st.blocks if b != block)
            if kept:
                out.append(st if len(kept) == len(st.blocks) else Parallel(kept, st.reduce))
        elif step_blocks(st) != (block,):
            out.append(st)
    return tuple(out)


def without_slots(route: RouteLike, slots: Sequence[int]) -> Steps:
    """The route with the steps at `slots` removed."""
    gone = set(int(s) for s in slots)
    return tuple(st for s, st in enumerate(steps_of(route)) if s not in gone)


def looped(n_blocks: int, loops: int) -> tuple[int, ...]:
    """The route of a looped model (Saunshi et al. 2025): its blocks in order, `loops` times; the loop operation on
    every block of the plain order (`route_of("loop", n_blocks, ends="include", loops=loops)`), with the training
    loop's own bound on `loops` (lab/core/train.py)."""
    return tuple(range(n_blocks)) * loops


def evenly_spaced(n_blocks: int, k: int) -> tuple[int, ...]:
    """k of n block indices spread evenly (every other block when k is about n/2), sorted."""
    if not 0 <= k <= n_blocks:
        raise ValueError(f"cannot pick {k} of {n_blocks} blocks")
    return tuple(sorted({min(n_blocks - 1, round((j + 0.5) * n_blocks / k - 0.5)) for j in range(k)}))


def random_permutation(n_blocks: int, gen: torch.Generator) -> tuple[int, ...]:
    """A uniformly random order of n items (every draw of an order in the lab is this one)."""
    return tuple(int(i) for i in torch.randperm(n_blocks, generator=gen))


def random_order(route: RouteLike, ends: str, gen: torch.Generator) -> Steps:
    """The random operation: the steps of the route's middle in a random order drawn from `gen`, the ends in place
    (on the plain order with the ends included, exactly `random_permutation(n, gen)`)."""
    s = steps_of(route)
    lo, hi = bounds(len(s), ends)
    mid = s[lo:hi]
    return s[:lo] + tuple(mid[i] for i in random_permutation(len(mid), gen)) + s[hi:]


def random_orders(route: RouteLike, draws: int, stream: str, seed: int, *salt: int,
                  ends: str = "include") -> list[Steps]:
    """`draws` random orders of a route's middle, drawn in turn from the named stream (`lab/core/streams.py:
    generator(stream, seed, *salt)`): the same orders wherever the same stream is asked for."""
    gen = streams.generator(stream, seed, *salt)
    return [random_order(route, ends, gen) for _ in range(draws)]


def layerdrop_route(route: RouteLike, p: float, gen: torch.Generator) -> Steps:
    """Each step skipped independently with probability p (one draw per step for the whole batch)."""
    s = steps_of(route)
    keep = torch.rand(len(s), generator=gen) >= p
    return tuple(s[int(i)] for i in torch.nonzero(keep).flatten())


# -- training samplers: one registry --------------------------------------------------------------------------
@dataclass(frozen=True)
class Sampler:
    """A training mode: `draw(route, gen, p)` turns the trained route into the route of one training step, drawing
    only from `gen` (the loop's own `train.routes` stream), so a mode that draws nothing trains exactly like the
    plain loop; p is the LayerDrop rate."""

    name: str
    label: str
    draw: Callable[[Steps, torch.Generator, float], Steps]


SAMPLERS: dict[str, Sampler] = {s.name: s for s in (
    Sampler("sequential", "the trained order at every step", lambda r, gen, p: r),
    Sampler("looped", "the blocks in order, looped, at every step", lambda r, gen, p: r),
    Sampler("shuffle", "a fresh random order of every block at every step (LayerShuffle)",
            lambda r, gen, p: random_order(r, "include", gen)),
    Sampler("layerdrop", "each block skipped with probability p at every step (LayerDrop)",
            lambda r, gen, p: layerdrop_route(r, p, gen)),
)}


def sample_route(mode: str, route: RouteLike, gen: torch.Generator, p: float = 0.0) -> Steps:
    """The route of one training step under a training mode (`SAMPLERS`), from the trained route."""
    if mode not in SAMPLERS:
        raise ValueError(f"unknown training mode {mode!r}; choose one of {', '.join(SAMPLERS)}")
    return SAMPLERS[mode].draw(steps_of(route), gen, p)


# -- the middle of a route: what the route surgeries act on (lab/ops/route_ops.py) ----------------------------
def bounds(n_slots: int, ends: str) -> tuple[int, int]:
    """The middle of a route of n slots as a slice [lo, hi): all but the first and last (keep), or every slot."""
    return (min(1, n_slots), max(min(1, n_slots), n_slots - 1)) if ends == "keep" else (0, n_slots)


def middle(route: RouteLike, ends: str) -> tuple[int, ...]:
    """The slots the operations act on: all but the first and last (keep), or all of them (include); in the plain
    order of n blocks (route = n) these are the middle blocks."""
    lo, hi = bounds(len(steps_of(route)), ends)
    return tuple(range(lo, hi))


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


# -- the rest of a route from a stored state ------------------------------------------------------------------
class PrefixStates:
    """The hidden states the trained order's prefixes leave on inputs x (`states[b]`: after the stem and blocks
    0..b-1; what TransformerLens calls an activation cache). A route whose first b steps are blocks 0..b-1 is that
    state plus the rest of the route, bit for bit (`RoutedModel.run_steps` from slot b), so many routes that share
    a head run it once."""

    def __init__(self, model: RoutedModel, x: torch.Tensor) -> None:
        self.model = model
        with torch.no_grad():
            _, self.states = model.states(x)

    @torch.no_grad()
    def rest(self, steps: Sequence[StepLike], slot0: int = 0) -> torch.Tensor:
        """The last hidden state of the route blocks 0..slot0-1, then `steps` (at slots slot0, slot0 + 1, ...)."""
        return self.model.run_steps(self.states[slot0], steps, slot0)

    @torch.no_grad()
    def looped(self, start: int, body: Sequence[StepLike], tail: Sequence[StepLike],
               times: int) -> list[torch.Tensor]:
        """The last hidden states of head + body x K + tail for K = 1..times, where the head is blocks 0..start-1:
        each K continues from the state K - 1 passes of the body left."""
        h, slot, out = self.states[start], start, []
        for _ in range(times):
            h = self.model.run_steps(h, body, slot)
            slot += len(body)
            out.append(self.model.run_steps(h, tail, slot))
        return out
