"""Held-out accuracy of many routes of one model in one walk, bit for bit what `accuracy(model, x, y, route)` gives.

Two savings, neither of which changes a single rounding:
- Routes that share a prefix share its block runs: the routes form a trie walked depth first (all 720 orders of 6
  blocks: 1,956 block runs instead of 4,320).
- The readout of a ViT reads only the CLS token, so a route's last block is run for the CLS token alone from the
  attention's output on: its LayerNorm, qkv projection, attention scores, softmax and attention-weighted values still
  run for every token (the CLS row needs every token's keys and values, and computing these on fewer rows would
  change the matrix kernels' rounding), its output projection and MLP for one row in 17. That costs about half a
  block and gives the same bits (`tests/test_walk.py` checks logits and predictions against the per-route path).

What does not pay, measured on this lab's CPU (bench/bench_walk.py): evaluating many orders per pass (stacking the
test batch over orders and running each block once per slot on the rows that need it). The tiny ViT is not
overhead-bound at the walk's batch of 397 digits x 17 tokens: a block's CPU time per row is flat from 128 digits to
6,352 (16 orders stacked), so bigger batches only add gathers and memory.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Optional, Sequence

import torch

from lab.core import metrics
from lab.core.models import RoutedModel, ViT
from lab.core.models.base import evaluating
from lab.runtime.cores import spread
from lab.runtime.progress import Progress, silent


def _last_block_cls(model: ViT, h: torch.Tensor, block: int, slot: int) -> torch.Tensor:
    """`model.run_block(h, block, slot)[:, :1]`, computed for the CLS row only from the attention's output on.

    Mirrors `lab/core/models/vit.py: Block.forward` (standard variant) op for op on the rows it keeps."""
    blk = model.blocks[block]
    depth_row = model._depth_row(slot)
    if blk.slot_proj is not None and depth_row is not None:
        e = depth_row.expand(*h.shape[:-1], depth_row.shape[-1])
        h = h + blk.slot_proj(torch.cat([h, e], dim=-1))
    b, t, w = h.shape
    q, k, v = blk.qkv(blk.ln1(h)).view(b, t, 3, blk.heads, w // blk.heads).permute(2, 0, 3, 1, 4)
    att = torch.softmax((q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5), dim=-1)
    out = (att @ v)[:, :, 0].reshape(b, w)  # the CLS row of out.transpose(1, 2).reshape(b, t, w)
    c = h[:, 0] + blk.proj(out)
    return (c + blk.mlp(blk.ln2(c)))[:, None]


def _runs_cls_only(model: RoutedModel) -> bool:
    return isinstance(model, ViT) and type(model).readout is ViT.readout and type(model).run_block is ViT.run_block


def _trie(routes: Sequence[tuple[int, ...]]) -> dict[str, Any]:
    root: dict[str, Any] = {"next": {}, "ends": []}
    for i, r in enumerate(routes):
        node = root
        for b in r:
            node = node["next"].setdefault(b, {"next": {}, "ends": []})
        node["ends"].append(i)
    return root


WHOLE_HEIGHT = 3  # a subtree at most this many blocks deep is walked whole by one lane (tenths of a second)


def _measure(node: dict[str, Any]) -> tuple[int, int]:
    """Fill in each node's height (blocks below it) and routes (routes that end in its subtree)."""
    kids = [_measure(c) for c in node["next"].values()]
    node["height"] = 1 + max((k[0] for k in kids), default=-1)
    node["routes"] = len(node["ends"]) + sum(k[1] for k in kids)
    return node["height"], node["routes"]


def route_accuracies(model: RoutedModel, x: torch.Tensor, y: torch.Tensor,
                     routes: Sequence[Sequence[int]], progress: Progress = silent) -> list[float]:
    """Held-out accuracy of every route in `routes` (in that order; repeats allowed), in evaluation mode: the share
    of `route_outcomes`' right answers."""
    return [float(c.float().mean()) for c in route_outcomes(model, x, y, routes, progress)]


def route_outcomes(model: RoutedModel, x: torch.Tensor, y: torch.Tensor,
                   routes: Sequence[Sequence[int]], progress: Progress = silent) -> list[torch.Tensor]:
    """Per-input right/wrong (bool, one vector per route, in the order of `routes`; repeats allowed), in evaluation
    mode: what a paired comparison of two routes' accuracies needs.

    The trie is split as it is reached: a node more than WHOLE_HEIGHT blocks above its deepest leaf runs its
    children's blocks and hands each child's subtree on as a piece of work; a shallower one is walked whole. The
    pieces are shared by lanes (lab/runtime/cores.py: this thread, plus a core nobody else computes on). Every block
    run is the same single-threaded op on the same input wherever it runs, so the bits do not depend on the lanes.
    """
    checked = [model.check_route(r) for r in routes]
    out: list[Optional[torch.Tensor]] = [None] * len(checked)
    cls_only = _runs_cls_only(model)
    lock = threading.Lock()
    walked = [0]

    def score(h: torch.Tensor, ends: list[int]) -> None:
        if ends:
            right = metrics.correct(model.readout(h), y)
            for i in ends:
                out[i] = right

    def step(h: torch.Tensor, b: int, child: dict[str, Any], slot: int) -> Optional[torch.Tensor]:
        """Run block b at `slot` and score the routes that end there; None when nothing continues."""
        if cls_only and not child["next"]:  # a last block: only its CLS row reaches the readout
            score(_last_block_cls(model, h, b, slot), child["ends"])
            return None
        hb = model.run_steps(h, (b,), slot)  # the rest of the route from a stored state, one block at a time
        score(hb, child["ends"])
        return hb if child["next"] else None

    def walk(h: torch.Tensor, node: dict[str, Any], slot: int) -> None:
        for b, child in node["next"].items():
            hb = step(h, b, child, slot)
            if hb is not None:
                walk(hb, child, slot + 1)

    def work(piece: tuple[torch.Tensor, dict[str, Any], int], push: Callable[[Any], None]) -> None:
        h, node, slot = piece
        if node["height"] <= WHOLE_HEIGHT:
            walk(h, node, slot)
            with lock:
                walked[0] += node["routes"] - len(node["ends"])
                done = walked[0]
            progress(done / max(1, len(checked)), f"{done} of {len(checked)} routes walked")
            return
        for b, child in node["next"].items():
            hb = step(h, b, child, slot)
            if hb is not None:
                push((hb, child, slot + 1))

    with evaluating(model), torch.no_grad():
        root = _trie(checked)
        _measure(root)
        h0 = model.embed(x)
        score(h0, root["ends"])
        spread([(h0, root, 0)], work)
    return list(out)  # type: ignore[arg-type]


def all_orders(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, progress: Progress = silent) -> list[float]:
    """Accuracy of every permutation of the blocks, in `itertools.permutations` order."""
    return route_accuracies(model, x, y, list(itertools.permutations(range(model.n_blocks))), progress)
