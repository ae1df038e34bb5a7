"""Routes: which blocks run, in which order. Helpers to build and sample them, the one registry of route operations
(`OPS`: skip, swap, reverse, random, repeat, loop, parallel, ... with their validation and labels, built by
`route_of`), and `PrefixStates`, the hidden states of the trained order's prefixes from which the rest of a route
runs without running its shared head again.

Every operation acts on the *middle* of the model: with `ends="keep"` the first and last blocks stay where they
are (the setting of Sun et al. 2024 and Lad et al. 2024), with `ends="include"` the middle is every block. A route is
a sequence of steps (`models.base`): ints, and `Parallel` groups for blocks run side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from lab.core.models.base import Parallel, Route, RoutedModel, StepLike


def without(n_blocks: int, dropped: Sequence[int]) -> tuple[int, ...]:
    """The full route minus the dropped blocks; indices always refer to the original numbering."""
    gone = set(int(i) for i in dropped)
    bad = [i for i in gone if not 0 <= i < n_blocks]
    if bad:
        raise ValueError(f"cannot drop blocks {sorted(bad)}: the model has blocks 0..{n_blocks - 1}")
    return tuple(i for i in range(n_blocks) if i not in gone)


def evenly_spaced(n_blocks: int, k: int) -> tuple[int, ...]:
    """k of n block indices spread evenly (every other block when k is about n/2), sorted."""
    if not 0 <= k <= n_blocks:
        raise ValueError(f"cannot pick {k} of {n_blocks} blocks")
    return tuple(sorted({min(n_blocks - 1, round((j + 0.5) * n_blocks / k - 0.5)) for j in range(k)}))


def random_permutation(n_blocks: int, gen: torch.Generator) -> tuple[int, ...]:
    """A uniformly random order of all blocks."""
    return tuple(int(i) for i in torch.randperm(n_blocks, generator=gen))


def layerdrop_route(n_blocks: int, p: float, gen: torch.Generator) -> tuple[int, ...]:
    """Each block skipped independently with probability p (one draw per block for the whole batch)."""
    keep = torch.rand(n_blocks, generator=gen) >= p
    return tuple(int(i) for i in torch.nonzero(keep).flatten())


def sample_route(mode: str, n_blocks: int, gen: torch.Generator, p: float = 0.0) -> Route:
    """The route of one training step under a training mode."""
    if mode == "sequential":
        return tuple(range(n_blocks))
    if mode == "shuffle":
        return random_permutation(n_blocks, gen)
    if mode == "layerdrop":
        return layerdrop_route(n_blocks, p, gen)
    raise ValueError(f"unknown training mode {mode!r}")


# -- route operations: one registry ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    """A route operation: its name, its label, and which arguments it takes (block b, how a parallel group
    combines, a loop count K, a span of consecutive blocks from b)."""

    name: str
    label: str
    block: bool = False
    reduce: bool = False
    loops: bool = False
    span: bool = False


OPS: dict[str, Op] = {o.name: o for o in (
    Op("identity", "trained order"),
    Op("skip", "skip block b", block=True, span=True),
    Op("swap", "swap blocks b and b+1", block=True),
    Op("reverse", "reverse the middle", span=True),
    Op("random", "random order of the middle"),
    Op("repeat", "repeat block b in place of the middle", block=True, span=True),
    Op("skip-middle", "skip the whole middle"),
    Op("loop", "loop the middle (K times)", loops=True),
    Op("parallel", "middle in parallel", reduce=True, span=True),
    Op("parallel-loop", "middle in parallel, looped K times", reduce=True, loops=True, span=True),
)}
BLOCK_OPS = tuple(o for o in OPS if OPS[o].block)
REDUCE_OPS = tuple(o for o in OPS if OPS[o].reduce)
LOOP_OPS = tuple(o for o in OPS if OPS[o].loops)
SPAN_OPS = tuple(o for o in OPS if OPS[o].span)
MAX_LOOPS = 8  # the largest loop count K an operation accepts
LOOPS = 2  # the default K: the smallest count that repeats the middle
ENDS = ("keep", "include")
ENDS_LABELS = {"keep": "keep the first and last blocks", "include": "include them in the middle"}


def op_labels(names: Sequence[str]) -> dict[str, str]:
    """{name: label} of some operations (a page's choices), in their order."""
    for name in names:
        op(name)
    return {name: OPS[name].label for name in names}


def op(name: str) -> Op:
    """The operation of a name; ValueError naming the known ones."""
    if name not in OPS:
        raise ValueError(f"unknown route operation {name!r}; choose one of {', '.join(OPS)}")
    return OPS[name]


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


def check_op(op_name: str, n: int, block: int, ends: str = "keep", span: int = 0) -> None:
    """ValueError, saying what is allowed, for arguments an operation cannot take (a span, else block b)."""
    op(op_name)
    if span and op_name in SPAN_OPS:
        check_span(op_name, n, block, span, ends)
    else:
        check_args(op_name, n, block, ends)


def route_of(op: str, n: int, block: int = 1, reduce: str = "mean", ends: str = "keep",
             loops: int = LOOPS, span: int = 0) -> tuple[StepLike, ...]:
    """The route of one operation on an n-block model (random: `random_order`); loop and parallel-loop run the
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


def random_order(n: int, ends: str, gen: torch.Generator) -> tuple[int, ...]:
    """The random operation's route: a random order of the middle drawn from `gen`, the ends in place (with the
    ends included, exactly `random_permutation(n, gen)`)."""
    mid = middle(n, ends)
    head, tail = tuple(range(mid[0])), tuple(range(mid[-1] + 1, n))
    return head + tuple(mid[i] for i in random_permutation(len(mid), gen)) + tail


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
