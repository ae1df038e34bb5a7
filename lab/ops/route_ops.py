"""Route surgeries: the operations that change which blocks a trained model runs, in which order, each a transform
from any route to a route (`route_of`), declared once here with its label, its parameters and its `apply`
(lab/ops/surgeries.py), and read by every page, the matrix and the CLI through lab/ops/registry.py.

Every operation acts on the *middle* of the route (`lab/core/routes.py: middle`): with `ends="keep"` the first and
last slots stay where they are (the setting of Sun et al. 2024 and Lad et al. 2024), with `ends="include"` the middle
is every slot. On a looped route (0, 1, 2, 0, 1, 2) slots and blocks part: skip names a block and removes every run
of it; swap, repeat and a span name slots.

Training never reads this module (lab/core/train.py draws its routes from lab/core/routes.py's samplers), so adding
an operation here re-keys no trained model, only the results that offer it (tests/test_ops_registry.py).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import torch

from lab.core.models.base import Parallel, Step
from lab.core.models.vit import NO_ATTN, NO_MLP
from lab.core.routes import (
    RouteLike,
    Steps,
    blocks_of,
    bounds,
    is_plain,
    label,
    middle,
    random_order,
    step_blocks,
    steps_of,
    without_block,
)
from lab.ops.surgeries import Surgery

MAX_LOOPS = 8  # the largest loop count K an operation accepts
LOOPS = 2  # the default K: the smallest count that repeats the middle
ENDS = ("keep", "include")
ENDS_LABELS = {"keep": "keep the first and last blocks", "include": "include them in the middle"}


def _group(steps: Steps, reduce: str) -> Steps:
    """Steps run side by side: one parallel group of every block they run (a group among them joins it; none for no
    steps). A block in a variant has no place in a group."""
    if any(isinstance(st, Step) and st.variant for st in steps):
        raise ValueError(f"a parallel group runs blocks in their standard form; these steps are {label(steps)}")
    return (Parallel(tuple(b for st in steps for b in step_blocks(st)), reduce),) if steps else ()


# -- each operation's transform: (route, block, reduce, ends, loops, span, gen) -> route, arguments checked -------
Apply = Callable[[Steps, int, str, str, int, int, Optional[torch.Generator]], Steps]


def _middle_body(body: Callable[[Steps, Steps, int, str, int], Steps]) -> Apply:
    """An operation on the middle slots: the route's head and tail stay, `body(route, middle, b, reduce, K)` replaces
    the middle."""
    def apply(s: Steps, block: int, reduce: str, ends: str, loops: int, span: int,
              gen: Optional[torch.Generator]) -> Steps:
        lo, hi = bounds(len(s), ends)
        return s[:lo] + body(s, s[lo:hi], block, reduce, loops) + s[hi:]
    return apply


def _windowed(body: Callable[[Steps, Steps, int, str, int], Steps], whole: Apply) -> Apply:
    """An operation that takes a span: with span s > 0 it acts on the window of s slots from slot b, `body(route,
    window, b, reduce, K)` replacing the window; with span 0, `whole`."""
    def apply(s: Steps, block: int, reduce: str, ends: str, loops: int, span: int,
              gen: Optional[torch.Generator]) -> Steps:
        if not span:
            return whole(s, block, reduce, ends, loops, span, gen)
        return s[:block] + body(s, s[block:block + span], block, reduce, loops) + s[block + span:]
    return apply


def _swap(s: Steps, block: int, *_: Any) -> Steps:
    r = list(s)
    r[block], r[block + 1] = r[block + 1], r[block]
    return tuple(r)


def _random(s: Steps, block: int, reduce: str, ends: str, loops: int, span: int,
            gen: Optional[torch.Generator]) -> Steps:
    if gen is None:
        raise ValueError("no single route for 'random': it draws its order from a generator of a named stream "
                         "(pass gen, or use lab/core/routes.py: random_orders)")
    return random_order(s, ends, gen)


def _variant(variant: str) -> Apply:
    """Every run of block b in a variant of the block (a ViT block without its attention or its MLP sub-layer)."""
    def apply(s: Steps, block: int, *_: Any) -> Steps:
        return tuple(Step(int(st), variant) if not isinstance(st, (Step, Parallel)) and int(st) == block else st
                     for st in s)
    return apply


_REPEAT = _middle_body(lambda s, mid, b, red, k: (s[b],) * len(mid))
_REVERSE = _middle_body(lambda s, mid, b, red, k: mid[::-1])
_PARALLEL = _middle_body(lambda s, mid, b, red, k: _group(mid, red))
_PARALLEL_LOOP = _middle_body(lambda s, mid, b, red, k: _group(mid, red) * k)

SURGERIES: tuple[Surgery, ...] = (
    Surgery("identity", "trained order", "route", aliases=(("none", "intact (trained order)"),),
            apply=lambda s, *_: s),
    Surgery("skip", "skip block b", "route", ("block", "span"), aliases=(("delete", "delete block b"),),
            done="deleted", apply=_windowed(lambda s, win, b, red, k: (), lambda s, b, *_: without_block(s, b))),
    Surgery("swap", "swap blocks b and b+1", "route", ("block",), done="swapped", apply=_swap),
    Surgery("reverse", "reverse the middle", "route", ("span",), done="reversed",
            apply=_windowed(lambda s, win, b, red, k: win[::-1], _REVERSE)),
    Surgery("random", "random order of the middle", "route", ("redraw",), done="shuffled", apply=_random),
    Surgery("repeat", "repeat block b in place of the middle", "route", ("block", "span"), done="repeated",
            apply=_windowed(lambda s, win, b, red, k: (s[b],) * len(win), _REPEAT)),
    Surgery("skip-middle", "skip the whole middle", "route", done="skipped",
            apply=_middle_body(lambda s, mid, b, red, k: ())),
    Surgery("loop", "loop the middle (K times)", "route", ("loops",), done="looped",
            apply=_middle_body(lambda s, mid, b, red, k: mid * k)),
    Surgery("parallel", "middle in parallel", "route", ("reduce", "span"), done="run in parallel",
            apply=_windowed(lambda s, win, b, red, k: _group(win, red), _PARALLEL)),
    Surgery("parallel-loop", "middle in parallel, looped K times", "route", ("reduce", "loops", "span"),
            done="run in parallel, looped", apply=_windowed(lambda s, win, b, red, k: _group(win, red) * k,
                                                          _PARALLEL_LOOP)),
    Surgery("no-attn", "delete one attention sub-layer", "sub-layer", ("block",), done="without its attention",
            apply=_variant(NO_ATTN)),
    Surgery("no-mlp", "delete one MLP sub-layer", "sub-layer", ("block",), done="without its MLP",
            apply=_variant(NO_MLP)),
)
_ALL = {s.name: s for s in SURGERIES}
# The route algebra proper: the operations on the order of whole blocks, every model's (Rearrange's rows follow it).
OPS: dict[str, Surgery] = {n: s for n, s in _ALL.items() if s.acts_on == "route"}
ALIASES: dict[str, tuple[str, str]] = {word: (s.name, lab) for s in SURGERIES for word, lab in s.aliases}
BLOCK_OPS = tuple(o for o in OPS if OPS[o].takes("block"))
REDUCE_OPS = tuple(o for o in OPS if OPS[o].takes("reduce"))
LOOP_OPS = tuple(o for o in OPS if OPS[o].takes("loops"))
SPAN_OPS = tuple(o for o in OPS if OPS[o].takes("span"))


def op(name: str) -> Surgery:
    """The route surgery of a name or of a page's word for it (`Surgery.aliases`); ValueError naming the known
    ones."""
    if name in ALIASES:
        return _ALL[ALIASES[name][0]]
    if name not in _ALL:
        raise ValueError(f"unknown route operation {name!r}; choose one of {', '.join([*_ALL, *ALIASES])}")
    return _ALL[name]


def canonical(name: str) -> str:
    """The registry's name of an operation named by its name or a page's word for it."""
    return op(name).name


def op_labels(names: Sequence[str]) -> dict[str, str]:
    """{name: label} of some operations (a page's choices, aliases with their own labels), in their order."""
    return {name: ALIASES[name][1] if name in ALIASES else op(name).label for name in names}


def valid_blocks(op_name: str, route: RouteLike, ends: str) -> tuple[int, ...]:
    """The block arguments an operation accepts: skip, a block whose every run is in the middle; swap, a slot b with
    b + 1 in the middle too; the others, a middle slot (in the plain order, slots and blocks are the same)."""
    name = canonical(op_name)
    s = steps_of(route)
    mid = middle(s, ends)
    if name == "swap":
        return mid[:-1]
    if name == "skip" and not is_plain(s):
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


def check_args(op_name: str, route: RouteLike, block: int, ends: str) -> None:
    """ValueError, saying what is allowed, for a block argument the operation cannot take."""
    name = canonical(op_name)
    if not op(name).takes("block"):
        return
    s = steps_of(route)
    ok = valid_blocks(name, s, ends)
    if block in ok:
        return
    where = "the middle blocks" if ends == "keep" else "the blocks"
    what = "b and b+1 must both be among" if name == "swap" else "b must be one of"
    raise ValueError(f"block {block} is out of range for {name}: {what} {where} of {_where(s)}; {_choose(ok)}"
                     + (" (or include the ends)" if ends == "keep" and block in valid_blocks(name, s, "include")
                        else ""))


def windows(route: RouteLike, ends: str, span: int) -> tuple[tuple[int, ...], ...]:
    """Every window of `span` consecutive middle slots (as Sun et al.'s [start, end)), by its first slot."""
    mid = middle(route, ends)
    return tuple(tuple(range(b, b + span)) for b in mid[:len(mid) - span + 1]) if span >= 1 else ()


def check_span(op_name: str, route: RouteLike, block: int, span: int, ends: str) -> None:
    """ValueError, saying what is allowed, for a span the operation cannot take from slot b (0: no span)."""
    if span == 0 or op_name not in SPAN_OPS:
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
    name = canonical(op_name)
    if span and name in SPAN_OPS:
        check_span(name, route, block, span, ends)
    else:
        check_args(name, route, block, ends)


def route_of(op_name: str, route: RouteLike, block: int = 1, reduce: str = "mean", ends: str = "keep",
             loops: int = LOOPS, span: int = 0, gen: Optional[torch.Generator] = None) -> Steps:
    """One operation (by its name or a page's word for it) applied to a route, or to the plain order of an n-block
    model (route = n): a route again, so operations compose. loop and parallel-loop run the middle (or its parallel
    group) `loops` times; with span s > 0, skip / reverse / repeat / parallel(-loop) act on the window of s slots
    from slot b instead (repeat: the step at b in each of the window's slots). random draws its order from `gen`, a
    generator of a named stream (lab/core/routes.py: `random_orders` names it)."""
    sg = op(op_name)
    s = steps_of(route)
    if sg.takes("loops") and not 1 <= loops <= MAX_LOOPS:
        raise ValueError(f"loops={loops} is out of range: choose 1 to {MAX_LOOPS}")
    spanned = bool(span) and sg.takes("span")
    if spanned:
        check_span(sg.name, s, block, span, ends)
    else:
        check_args(sg.name, s, block, ends)
    assert sg.apply is not None
    return sg.apply(s, block, reduce, ends, loops, span if spanned else 0, gen)
