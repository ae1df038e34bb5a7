"""Named hook points on any routed model, added from outside it: an activation cache, hooks that read or replace an
activation, and activation patching, on any route (a deleted block, a shuffled order, a block in a variant, a
parallel group, a looped route).

The hook points, in TransformerLens's style of names:

- `hook_embed`: the stem's output (the residual stream before the first block);
- `blocks.{i}.hook_in`: the input of block i;
- `blocks.{i}.hook_attn_out`, `blocks.{i}.hook_mlp_out` (the ViT only): what the block's attention and MLP
  sub-layers add to the stream, before it is added;
- `blocks.{i}.hook_out`: the output of block i (the stream after it; for the MLPs, the block's whole computation);
- `hook_logits`: the head's output.

How: `run` runs the route step by step itself (the stem, each block through the model's own `run_block` /
`run_variant`, the head: exactly the calls of `RoutedModel.forward`, so with no hook the logits are the model's to the
bit), calling the hooks of the embedding, the block inputs and outputs and the logits between the steps; the ViT's
sub-layer outputs are torch forward hooks on its `proj` (attention) and `fc2` (MLP) layers, registered for one run
and removed in a `finally`, whatever happens inside. The model's code is not touched: the trained models' store keys
cover it (lab/runtime/codeversion.py), and a hook point must never make them retrain.

A block that runs more than once in a route (a looped or repeated route) has one hook point per run: the first run
is `blocks.1.hook_out`, the second `blocks.1.hook_out#2`, and so on. A hook named without `#` acts on every run of
that point; with `#k` on the k-th run only. In a parallel group every block reads the group's input (its own
`hook_in`) and the group adds the mean (or sum) of the blocks' updates `hook_out - hook_in`, as `Parallel` says.

A hook is `fn(tensor, name) -> None or tensor`: None keeps the activation, a tensor replaces it (name is the hook
point with its run, as above). No Streamlit, no store: this module works on a model it is given.
"""

from __future__ import annotations

import collections
import threading
from typing import Callable, Iterable, Optional, Sequence, Union

import torch
from torch import nn

from lab.core.models.base import Parallel, RoutedModel, Step, StepLike, evaluating
from lab.core.models.vit import MLP_FIRST, NO_ATTN, NO_MLP, ViT

EMBED = "hook_embed"
LOGITS = "hook_logits"
IN, ATTN, MLP, OUT = "hook_in", "hook_attn_out", "hook_mlp_out", "hook_out"
# The ViT's sub-layer hook points: the layer whose output is the sub-layer's update, and the order in which each
# variant of a block runs them (lab/core/models/vit.py: Block.forward).
VIT_SUBLAYERS = {ATTN: "proj", MLP: "fc2"}
VIT_VARIANT_POINTS = {"": (ATTN, MLP), MLP_FIRST: (MLP, ATTN), NO_ATTN: (MLP,), NO_MLP: (ATTN,)}

HookFn = Callable[[torch.Tensor, str], Optional[torch.Tensor]]
Selector = Union[str, Callable[[str], bool]]  # a hook point's name, or a predicate on it
Names = Union[None, str, Sequence[str], Callable[[str], bool]]


def block_point(block: int, point: str) -> str:
    """The name of one hook point of a block: `blocks.3.hook_out`."""
    return f"blocks.{block}.{point}"


def run_key(name: str, run: int) -> str:
    """The name of the run-th (1-based) run of a hook point: the name itself, then `name#2`, `name#3`, ..."""
    return name if run == 1 else f"{name}#{run}"


def base_name(key: str) -> str:
    """A hook point's name without its run: `blocks.1.hook_out#2` -> `blocks.1.hook_out`."""
    return key.split("#", 1)[0]


def sublayer_points(model: RoutedModel) -> dict[str, str]:
    """{hook point: the block's layer whose output it is} of a model's sub-layers ({} for a model without them)."""
    return dict(VIT_SUBLAYERS) if isinstance(model, ViT) else {}


def _steps(model: RoutedModel, route: Optional[Sequence[StepLike]]) -> tuple[StepLike, ...]:
    """The route as steps, the model's full route when None; a step naming no block of the model is a ValueError."""
    steps = tuple(model.full_route if route is None else route)
    for st in steps:
        blocks = st.blocks if isinstance(st, Parallel) else (st.block if isinstance(st, Step) else int(st),)
        bad = [b for b in blocks if not 0 <= b < model.n_blocks]
        if bad:
            raise ValueError(f"step {st} names blocks {bad}; this model has blocks 0..{model.n_blocks - 1}")
    return steps


def _block_points(model: RoutedModel, variant: str) -> tuple[str, ...]:
    """The hook points one run of a block fires, in order."""
    if not sublayer_points(model):
        return (IN, OUT)
    if variant not in VIT_VARIANT_POINTS:
        raise ValueError(f"{type(model).__name__} has no block variant {variant!r}")
    return (IN, *VIT_VARIANT_POINTS[variant], OUT)


def _route_points(model: RoutedModel, steps: Sequence[StepLike]) -> list[str]:
    """Every hook point a route fires, without runs, in order (a point twice when a block runs twice)."""
    out = [EMBED]
    for st in steps:
        if isinstance(st, Parallel):
            for b in st.blocks:
                out += [block_point(b, p) for p in _block_points(model, "")]
            continue
        b, variant = (st.block, st.variant) if isinstance(st, Step) else (int(st), "")
        out += [block_point(b, p) for p in _block_points(model, variant)]
    return out + [LOGITS]


def _with_runs(points: Iterable[str]) -> list[str]:
    seen: collections.Counter[str] = collections.Counter()
    out = []
    for p in points:
        seen[p] += 1
        out.append(run_key(p, seen[p]))
    return out


def hook_names(model: RoutedModel, route: Optional[Sequence[StepLike]] = None) -> list[str]:
    """The hook points a route fires, in order, each run of a repeated block under its own name (`#2`, ...)."""
    return _with_runs(_route_points(model, _steps(model, route)))


def model_points(model: RoutedModel) -> list[str]:
    """Every hook point of the model's blocks on any route (without runs): embedding, each block's, logits."""
    per_block = (IN, *sublayer_points(model), OUT)
    return [EMBED, *(block_point(b, p) for b in range(model.n_blocks) for p in per_block), LOGITS]


def describe_points(model: RoutedModel) -> str:
    """The model's hook points in one line: `hook_embed, blocks.{0..6}.{hook_in, hook_out}, hook_logits`."""
    per_block = ", ".join((IN, *sublayer_points(model), OUT))
    return f"{EMBED}, blocks.{{0..{model.n_blocks - 1}}}.{{{per_block}}}, {LOGITS}"


def check_name(model: RoutedModel, route: Sequence[StepLike], name: str) -> None:
    """ValueError, saying what is allowed, for a hook point's name that does not run on `route`."""
    keys = hook_names(model, route)
    if name in keys or name in {base_name(k) for k in keys}:
        return
    if base_name(name) in model_points(model):
        raise ValueError(f"hook point {name!r} does not run on the route {list(route)}; its hook points are: "
                         f"{', '.join(keys)}")
    raise ValueError(f"unknown hook point {name!r}; this model's hook points: {describe_points(model)} (a block that "
                     "runs again in a route adds #2, #3, ... to its names)")


def _selects(sel: Selector, key: str) -> bool:
    return sel(key) if callable(sel) else sel == key or sel == base_name(key)


class _Run:
    """One run's hooks and cache: `fire(name, t)` calls the hooks that select this run of the point, caches it when
    asked, and returns the activation the rest of the route reads."""

    def __init__(self, hooks: Sequence[tuple[Selector, HookFn]], cache: Optional[Callable[[str], bool]]) -> None:
        self.hooks = list(hooks)
        self.want = cache
        self.cache: dict[str, torch.Tensor] = {}
        self.runs: collections.Counter[str] = collections.Counter()
        self.fired: list[str] = []
        self.thread = threading.get_ident()

    def fire(self, name: str, t: torch.Tensor) -> torch.Tensor:
        self.runs[name] += 1
        key = run_key(name, self.runs[name])
        self.fired.append(key)
        for sel, fn in self.hooks:
            if _selects(sel, key):
                out = fn(t, key)
                if out is not None:
                    if not isinstance(out, torch.Tensor):
                        raise TypeError(f"the hook on {key} returned {type(out).__name__}; return a tensor or None")
                    t = out
        if self.want is not None and self.want(key):
            self.cache[key] = t.detach().clone()
        return t

    def module_hook(self, name: str) -> Callable[[nn.Module, tuple, torch.Tensor], Optional[torch.Tensor]]:
        """A torch forward hook that fires `name` (only for this run's thread: the zoo's models are shared)."""
        def hook(module: nn.Module, inputs: tuple, output: torch.Tensor) -> Optional[torch.Tensor]:
            if threading.get_ident() != self.thread:
                return None
            return self.fire(name, output)
        return hook


def _names_filter(model: RoutedModel, steps: Sequence[StepLike], names: Names) -> Optional[Callable[[str], bool]]:
    if names is None:
        return lambda key: True
    if callable(names):
        return names
    wanted = [names] if isinstance(names, str) else list(names)
    for n in wanted:
        check_name(model, steps, n)
    return lambda key: any(_selects(n, key) for n in wanted)


def run(model: RoutedModel, x: torch.Tensor, route: Optional[Sequence[StepLike]] = None,
        fwd_hooks: Sequence[tuple[Selector, HookFn]] = (), names: Names = (),
        ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(logits, cache) of `model` on `x` along `route` (None: its full route), in evaluation mode, with the hooks
    `fwd_hooks` [(hook point or predicate, fn)] applied in order; `names`: the hook points to cache (None: every
    one; a predicate; () none). Cached tensors are detached copies of what the rest of the route read."""
    steps = _steps(model, route)
    for sel, _ in fwd_hooks:
        if not callable(sel):
            check_name(model, steps, sel)
    r = _Run(fwd_hooks, _names_filter(model, steps, names) if names != () else None)
    handles = []
    try:
        subs = sublayer_points(model)
        if subs:
            for b in sorted({b for st in steps for b in (st.blocks if isinstance(st, Parallel) else
                                                          (st.block if isinstance(st, Step) else int(st),))}):
                for point, layer in subs.items():
                    handles.append(getattr(model.blocks[b], layer).register_forward_hook(
                        r.module_hook(block_point(b, point))))
        with evaluating(model):
            h = r.fire(EMBED, model.embed(x))
            for slot, st in enumerate(steps):
                h = _step(model, r, h, st, slot)
            logits = r.fire(LOGITS, model.readout(h))
    finally:
        for handle in handles:
            handle.remove()
    expected = hook_names(model, steps)
    if r.fired != expected:  # the model ran its sub-layers otherwise than this module expects of it
        raise RuntimeError(f"hook points fired {r.fired}, expected {expected}")
    return logits, r.cache


def _block(model: RoutedModel, r: _Run, h: torch.Tensor, block: int, slot: int, variant: str) -> torch.Tensor:
    h = r.fire(block_point(block, IN), h)
    out = model.run_block(h, block, slot) if variant == "" else model.run_variant(h, block, slot, variant)
    return r.fire(block_point(block, OUT), out)


def _step(model: RoutedModel, r: _Run, h: torch.Tensor, st: StepLike, slot: int) -> torch.Tensor:
    """One step of a route, as `RoutedModel.run_steps` / `run_parallel` compute it, with the hooks between."""
    if not isinstance(st, Parallel):
        block, variant = (st.block, st.variant) if isinstance(st, Step) else (int(st), "")
        return _block(model, r, h, block, slot, variant)
    if len(st.blocks) == 1:  # exactly the block (lab/core/models/base.py: run_parallel)
        return _block(model, r, h, st.blocks[0], slot, "")
    updates = []
    for b in st.blocks:
        hin = r.fire(block_point(b, IN), h)
        out = r.fire(block_point(b, OUT), model.run_block(hin, b, slot))
        updates.append(out - hin)
    update = torch.stack(updates).sum(0)
    return h + (update / len(st.blocks) if st.reduce == "mean" else update)


def _positions(t: torch.Tensor, positions: Union[None, int, Sequence[int]]) -> Optional[list[int]]:
    if positions is None:
        return None
    if t.dim() < 3:
        raise ValueError(f"positions name tokens, and this activation has shape {tuple(t.shape)} (no token "
                         "dimension: an MLP's state is one vector per input); patch it whole (positions=None)")
    idx = [positions] if isinstance(positions, int) else [int(p) for p in positions]
    bad = [p for p in idx if not -t.shape[1] <= p < t.shape[1]]
    if bad:
        raise ValueError(f"positions {bad} are out of range: this activation has {t.shape[1]} tokens")
    return idx


def _patcher(clean: torch.Tensor, key: str, positions: Union[None, int, Sequence[int]]) -> HookFn:
    def put(t: torch.Tensor, name: str) -> torch.Tensor:
        if t.shape != clean.shape:
            raise ValueError(f"{key}: the clean activation has shape {tuple(clean.shape)}, the corrupted run's "
                             f"{tuple(t.shape)}; give both runs inputs of the same shape")
        idx = _positions(t, positions)
        if idx is None:
            return clean
        out = t.clone()
        out[:, idx] = clean[:, idx]
        return out
    return put


def patch(model: RoutedModel, clean_x: torch.Tensor, corrupt_x: torch.Tensor, name: str,
          route: Optional[Sequence[StepLike]] = None, clean_route: Optional[Sequence[StepLike]] = None,
          positions: Union[None, int, Sequence[int]] = None) -> torch.Tensor:
    """Activation patching: the logits of the corrupted run (`corrupt_x` on `route`) with hook point `name` (one
    run of it: `name` exactly, so `blocks.1.hook_out` is the first run) replaced by its value in the clean run
    (`clean_x` on `clean_route`, default `route`); `positions`: only these tokens (ViT), the rest stays corrupted."""
    clean_steps = _steps(model, route if clean_route is None else clean_route)
    steps = _steps(model, route)
    check_name(model, steps, name)
    _, cache = run(model, clean_x, clean_steps, names=lambda key: key == name)
    if name not in cache:
        raise ValueError(f"hook point {name!r} does not run on the clean route {list(clean_steps)}")
    _positions(cache[name], positions)  # checked before the corrupted run
    logits, _ = run(model, corrupt_x, steps, fwd_hooks=[(lambda key: key == name, _patcher(cache[name], name,
                                                                                            positions))])
    return logits


def patch_scan(model: RoutedModel, clean_x: torch.Tensor, corrupt_x: torch.Tensor,
               metric: Callable[[torch.Tensor], float], names: Names = None,
               route: Optional[Sequence[StepLike]] = None, by_position: bool = False) -> dict[str, object]:
    """{hook point: metric(patched logits)} for every hook point of `route` that `names` selects (None: all but the
    logits), each patched alone from one clean run; `by_position`: a list per hook point, one value per token."""
    steps = _steps(model, route)
    keep = _names_filter(model, steps, names)
    assert keep is not None
    keys = [k for k in hook_names(model, steps) if keep(k) and (names is not None or base_name(k) != LOGITS)]
    _, cache = run(model, clean_x, steps, names=lambda key: key in keys)
    out: dict[str, object] = {}

    def patched(key: str, pos: Optional[int]) -> float:
        put = _patcher(cache[key], key, pos)
        logits, _ = run(model, corrupt_x, steps, fwd_hooks=[(lambda name: name == key, put)])
        return float(metric(logits))

    with torch.no_grad():
        for k in keys:
            if by_position:
                _positions(cache[k], 0)
                out[k] = [patched(k, p) for p in range(cache[k].shape[1])]
            else:
                out[k] = patched(k, None)
    return out
