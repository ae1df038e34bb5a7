"""Routes: which blocks run, in which order. The route algebra: the one registry of route operations (`OPS`: skip,
swap, reverse, random, repeat, loop, parallel, ... with their validation, labels and the page words that alias them),
each a transform from any route to a route (`route_of`); the one registry of training samplers (`SAMPLERS`: the
route of every training step, a random order or a LayerDrop mask); and `PrefixStates`, the hidden states of the
trained order's prefixes from which the rest of a route runs without running its shared head again.

A route is a sequence of steps (`models.base`): ints, `Step`s (a block in a variant) and `Parallel` groups for blocks
run side by side. Wherever a route is taken, an int n stands for the plain order 0..n-1 of an n-block model. A route
is read by *slot* (its s-th step); in the plain order slot b runs block b, so an operation's "block b" is both, and
on a looped route (0, 1, 2, 0, 1, 2) they part: skip names a block and removes every run of it, swap, repeat and a
span name slots.

Every operation acts on the *middle* of the route: with `ends="keep"` the first and last slots stay where they are
(the setting of Sun et al. 2024 and Lad et al. 2024), with `ends="include"` the middle is every slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

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
    lo, hi = _bounds(len(s), ends)
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


# -- route operations: one registry ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    """A route operation: its name, its label, which arguments it takes (block b, how a parallel group combines, a
    loop count K, a span of consecutive slots from b), and `aliases`, the words a page says for it with their labels
    (the Lens page's "delete" is skip)."""

    name: str
    label: str
    block: bool = False
    reduce: bool = False
    loops: bool = False
    span: bool = False
    aliases: tuple[tuple[str, str], ...] = ()


OPS: dict[str, Op] = {o.name: o for o in (
    Op("identity", "trained order", aliases=(("none", "intact (trained order)"),)),
    Op("skip", "skip block b", block=True, span=True, aliases=(("delete", "delete block b"),)),
    Op("swap", "swap blocks b and b+1", block=True),
    Op("reverse", "reverse the middle", span=True),
    Op("random", "random order of the middle"),
    Op("repeat", "repeat block b in place of the middle", block=True, span=True),
    Op("skip-middle", "skip the whole middle"),
    Op("loop", "loop the middle (K times)", loops=True),
    Op("parallel", "middle in parallel", reduce=True, span=True),
    Op("parallel-loop", "middle in parallel, looped K times", reduce=True, loops=True, span=True),
)}
ALIASES: dict[str, tuple[str, str]] = {word: (o.name, lab) for o in OPS.values() for word, lab in o.aliases}
BLOCK_OPS = tuple(o for o in OPS if OPS[o].block)
REDUCE_OPS = tuple(o for o in OPS if OPS[o].reduce)
LOOP_OPS = tuple(o for o in OPS if OPS[o].loops)
SPAN_OPS = tuple(o for o in OPS if OPS[o].span)
MAX_LOOPS = 8  # the largest loop count K an operation accepts
LOOPS = 2  # the default K: the smallest count that repeats the middle
ENDS = ("keep", "include")
ENDS_LABELS = {"keep": "keep the first and last blocks", "include": "include them in the middle"}


def op(name: str) -> Op:
    """The operation of a name or of a page's word for it (`Op.aliases`); ValueError naming the known ones."""
    if name in ALIASES:
        return OPS[ALIASES[name][0]]
    if name not in OPS:
        raise ValueError(f"unknown route operation {name!r}; choose one of {', '.join([*OPS, *ALIASES])}")
    return OPS[name]


def canonical(name: str) -> str:
    """The registry's name of an operation named by its name or a page's word for it."""
    return op(name).name


def op_labels(names: Sequence[str]) -> dict[str, str]:
    """{name: label} of some operations (a page's choices, aliases with their own labels), in their order."""
    return {name: ALIASES[name][1] if name in ALIASES else op(name).label for name in names}


def _bounds(n_slots: int, ends: str) -> tuple[int, int]:
    """The middle of a route of n slots as a slice [lo, hi): all but the first and last (keep), or every slot."""
    return (min(1, n_slots), max(min(1, n_slots), n_slots - 1)) if ends == "keep" else (0, n_slots)


def middle(route: RouteLike, ends: str) -> tuple[int, ...]:
    """The slots the operations act on: all but the first and last (keep), or all of them (include); in the plain
    order of n blocks (route = n) these are the middle blocks."""
    lo, hi = _bounds(len(steps_of(route)), ends)
    return tuple(range(lo, hi))


def valid_blocks(op: str, route: RouteLike, ends: str) -> tuple[int, ...]:
    """The block arguments an operation accepts: skip, a block whose every run is in the middle; swap, a slot b with
    b + 1 in the middle too; the others, a middle slot (in the plain order, slots and blocks are the same)."""
    op = canonical(op)
    s = steps_of(route)
    mid = middle(s, ends)
    if op == "swap":
        return mid[:-1]
    if op == "skip" and not is_plain(s):
        inside = {b for slot in mid for b in step_blocks(s[slot])}
        outside = {b for slot in range(len(s)) if slot not in mid for b in step_blocks(s[slot])}
        return tuple(b for b in blocks_of(s) if b in inside and b not in outside)
    return mid


def _where(s: Steps) -> str:
    return f"this {len(s)}-block model" if is_plain(s) else f"the route {label(s)}"


def _choose(ok: Sequence[int]) -> str:
    if not ok:
        return "this model has no such block"
    if tuple(ok) == tuple(range(ok[0], ok[-1] + 1)):
        return f"choose b from {ok[0]} to {ok[-1]}"
    return f"choose b from {', '.join(map(str, ok))}"


def check_args(op: str, route: RouteLike, block: int, ends: str) -> None:
    """ValueError, saying what is allowed, for a block argument the operation cannot take."""
    op = canonical(op)
    if op not in BLOCK_OPS:
        return
    s = steps_of(route)
    ok = valid_blocks(op, s, ends)
    if block in ok:
        return
    where = "the middle blocks" if ends == "keep" else "the blocks"
    what = "b and b+1 must both be among" if op == "swap" else "b must be one of"
    raise ValueError(f"block {block} is out of range for {op}: {what} {where} of {_where(s)}; {_choose(ok)}"
                     + (" (or include the ends)" if ends == "keep" and block in valid_blocks(op, s, "include")
                        else ""))


def windows(route: RouteLike, ends: str, span: int) -> tuple[tuple[int, ...], ...]:
    """Every window of `span` consecutive middle slots (as Sun et al.'s [start, end)), by its first slot."""
    mid = middle(route, ends)
    return tuple(tuple(range(b, b + span)) for b in mid[:len(mid) - span + 1]) if span >= 1 else ()


def check_span(op: str, route: RouteLike, block: int, span: int, ends: str) -> None:
    """ValueError, saying what is allowed, for a span the operation cannot take from slot b (0: no span)."""
    if span == 0 or op not in SPAN_OPS:
        return
    if ends != "keep":
        raise ValueError("a span counts middle blocks, with the first and last kept: set the ends to keep, or the "
                         "span to 0")
    s = steps_of(route)
    mid = middle(s, ends)
    if not 1 <= span <= len(mid):
        raise ValueError(f"span {span} is out of range: {_where(s)} has {len(mid)} middle blocks, so choose a span "
                         f"of 1 to {len(mid)} (0: the operation's usual extent)")
    starts = [w[0] for w in windows(s, ends, span)]
    if block not in starts:
        raise ValueError(f"a span of {span} from block {block} does not fit in the middle blocks {mid[0]} to "
                         f"{mid[-1]}: choose b from {starts[0]} to {starts[-1]}, or a smaller span")


def check_op(op_name: str, route: RouteLike, block: int, ends: str = "keep", span: int = 0) -> None:
    """ValueError, saying what is allowed, for arguments an operation cannot take (a span, else block b)."""
    name = op(op_name).name
    if span and name in SPAN_OPS:
        check_span(name, route, block, span, ends)
    else:
        check_args(name, route, block, ends)


def _group(steps: Steps, reduce: str) -> Steps:
    """Steps run side by side: one parallel group of every block they run (a group among them joins it; none for no
    steps). A block in a variant has no place in a group."""
    if any(isinstance(st, Step) and st.variant for st in steps):
        raise ValueError(f"a parallel group runs blocks in their standard form; these steps are {label(steps)}")
    return (Parallel(tuple(b for st in steps for b in step_blocks(st)), reduce),) if steps else ()


def route_of(op: str, route: RouteLike, block: int = 1, reduce: str = "mean", ends: str = "keep",
             loops: int = LOOPS, span: int = 0, gen: Optional[torch.Generator] = None) -> Steps:
    """One operation (by its name or a page's word for it) applied to a route, or to the plain order of an n-block
    model (route = n): a route again, so operations compose. loop and parallel-loop run the middle (or its parallel
    group) `loops` times; with span s > 0, skip / reverse / repeat / parallel(-loop) act on the window of s slots
    from slot b instead (repeat: the step at b in each of the window's slots). random draws its order from `gen`, a
    generator of a named stream (`random_orders` names it)."""
    name = canonical(op)
    s = steps_of(route)
    if name == "random":
        if gen is None:
            raise ValueError("no single route for 'random': it draws its order from a generator of a named stream "
                             "(pass gen, or use random_orders)")
        return random_order(s, ends, gen)
    if not 1 <= loops <= MAX_LOOPS:
        raise ValueError(f"loops={loops} is out of range: choose 1 to {MAX_LOOPS}")
    if span and name in SPAN_OPS:
        check_span(name, s, block, span, ends)
        win = s[block:block + span]
        body = {"skip": (), "reverse": win[::-1], "repeat": (s[block],) * span, "parallel": _group(win, reduce),
                "parallel-loop": _group(win, reduce) * loops}[name]
        return s[:block] + body + s[block + span:]
    check_args(name, s, block, ends)
    if name == "identity":
        return s
    if name == "skip":
        return without_block(s, block)
    if name == "swap":
        r = list(s)
        r[block], r[block + 1] = r[block + 1], r[block]
        return tuple(r)
    lo, hi = _bounds(len(s), ends)
    mid = s[lo:hi]
    body = {"reverse": lambda: mid[::-1], "repeat": lambda: (s[block],) * len(mid), "skip-middle": lambda: (),
            "loop": lambda: mid * loops, "parallel": lambda: _group(mid, reduce),
            "parallel-loop": lambda: _group(mid, reduce) * loops}[name]()
    return s[:lo] + body + s[hi:]


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
               times: int = MAX_LOOPS) -> list[torch.Tensor]:
        """The last hidden states of head + body x K + tail for K = 1..times, where the head is blocks 0..start-1:
        each K continues from the state K - 1 passes of the body left."""
        h, slot, out = self.states[start], start, []
        for _ in range(times):
            h = self.model.run_steps(h, body, slot)
            slot += len(body)
            out.append(self.model.run_steps(h, tail, slot))
        return out
