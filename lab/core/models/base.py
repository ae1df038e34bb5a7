"""What every model in the lab shares: a stem, a bank of interchangeable blocks, a head, and routes.

A *route* is a sequence of block indices saying which blocks run and in what order: the full model is
`range(n_blocks)`, a deletion omits some, a shuffle permutes them. Every surgery, search and analysis in the
lab works through `forward(x, route)` and `states(x, route)`, so it works on every model unchanged.

A *step* generalises one entry of a route without changing what a route is: `Step(block, variant)` runs a block
in a named variant of its computation (the ViT's "mlp_first" runs its MLP before its attention). A plain int is
the block in its standard form, so every route is already a sequence of steps; `run_steps` runs either.
Rearrangements extend the step, not the route, so routes stay plain data: a repeated or looped block is a
route that names it twice, and `Parallel(blocks, reduce)` is one step that runs several blocks side by side on the
same input and adds their combined update once (Sun et al. 2024's "parallel" layers). `block_runs` counts what a
route costs.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

import torch
from torch import nn

from lab.core import metrics

Route = Sequence[int]


@dataclass(frozen=True)
class Step:
    """One step of a route: `block` run in `variant` ("" = its standard computation, the same as a plain int)."""

    block: int
    variant: str = ""


REDUCES = ("mean", "sum")


@dataclass(frozen=True)
class Parallel:
    """A parallel group: every block in `blocks` reads the same input h, and h + reduce_b(run_block(h, b) - h)
    comes out, reduce = "mean" or "sum" of the blocks' updates.

    For residual and pre-norm models a block's *update* is what it adds to the stream, run_block(h) - h; "mean"
    keeps the stream's scale when the group is large, "sum" is what the blocks would add if their inputs did not
    depend on each other. A group of one block is exactly that block.
    """

    blocks: tuple[int, ...]
    reduce: str = "mean"

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(int(b) for b in self.blocks))
        if not self.blocks:
            raise ValueError("a parallel group needs at least one block")
        if self.reduce not in REDUCES:
            raise ValueError(f"unknown reduce {self.reduce!r}; choose one of {', '.join(REDUCES)}")


StepLike = Union[int, Step, Parallel]


def block_runs(steps: Sequence[StepLike]) -> int:
    """Block evaluations a route of steps costs (a parallel group costs one per block, in one sequential step)."""
    return sum(len(st.blocks) if isinstance(st, Parallel) else 1 for st in steps)


class RoutedModel(nn.Module):
    """Base class: subclasses define `embed`, `run_block` and `readout` and hold `blocks`."""

    blocks: nn.ModuleList

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    @property
    def full_route(self) -> tuple[int, ...]:
        return tuple(range(self.n_blocks))

    def check_route(self, route: Optional[Route]) -> tuple[int, ...]:
        """The route as a tuple, the full route when None; rejects unknown block indices."""
        if route is None:
            return self.full_route
        r = tuple(int(i) for i in route)
        bad = [i for i in r if not 0 <= i < self.n_blocks]
        if bad:
            raise ValueError(f"route {r} names blocks {bad}; this model has blocks 0..{self.n_blocks - 1}")
        return r

    # -- to be provided by subclasses -------------------------------------------------------------
    def embed(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def run_block(self, h: torch.Tensor, block: int, slot: int) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def readout(self, h: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def run_variant(self, h: torch.Tensor, block: int, slot: int, variant: str) -> torch.Tensor:
        """A block in a non-standard variant; models that have variants override this."""
        raise ValueError(f"{type(self).__name__} has no block variant {variant!r}")

    # -- shared ------------------------------------------------------------------------------------
    def run_parallel(self, h: torch.Tensor, group: Parallel, slot: int) -> torch.Tensor:
        """One parallel group at one slot (every block is told the same slot: they run side by side)."""
        bad = [b for b in group.blocks if not 0 <= b < self.n_blocks]
        if bad:
            raise ValueError(f"parallel group {group.blocks} names blocks {bad}; this model has blocks "
                             f"0..{self.n_blocks - 1}")
        if len(group.blocks) == 1:  # exactly the block: h + (f(h) - h) would differ from f(h) by rounding
            return self.run_block(h, group.blocks[0], slot)
        update = torch.stack([self.run_block(h, b, slot) - h for b in group.blocks]).sum(0)
        return h + (update / len(group.blocks) if group.reduce == "mean" else update)

    def run_steps(self, h: torch.Tensor, steps: Sequence[StepLike], slot0: int = 0) -> torch.Tensor:
        """Run a route of steps (ints, `Step`s or `Parallel` groups) from state `h` at slots slot0, slot0 + 1, ...;
        returns the last hidden state. From a stem output with slot0 = 0 this is the whole route; from the state the
        first slot0 steps of a route leave, it is the rest of that route (the same computation, bit for bit)."""
        for slot, st in enumerate(steps, slot0):
            if isinstance(st, Parallel):
                h = self.run_parallel(h, st, slot)
                continue
            block, variant = (st.block, st.variant) if isinstance(st, Step) else (int(st), "")
            if not 0 <= block < self.n_blocks:
                raise ValueError(f"step {st} names block {block}; this model has blocks 0..{self.n_blocks - 1}")
            h = self.run_block(h, block, slot) if variant == "" else self.run_variant(h, block, slot, variant)
        return h

    def forward(self, x: torch.Tensor, route: Optional[Route] = None) -> torch.Tensor:
        h = self.embed(x)
        for slot, b in enumerate(self.check_route(route)):
            h = self.run_block(h, b, slot)
        return self.readout(h)

    def states(self, x: torch.Tensor, route: Optional[Route] = None) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits and the hidden state after the stem and after every slot of the route (len(route) + 1)."""
        h = self.embed(x)
        out = [h]
        for slot, b in enumerate(self.check_route(route)):
            h = self.run_block(h, b, slot)
            out.append(h)
        return self.readout(h), out

    def loss(self, x: torch.Tensor, y: torch.Tensor, route: Optional[Route] = None) -> torch.Tensor:
        """The training loss of one batch on one route (models with auxiliary heads extend it)."""
        return nn.functional.cross_entropy(self(x, route), y)


@contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """The model in evaluation mode inside the `with` block, and back in its own mode (training or not) after it,
    whatever happens inside: a measurement never leaves a model that was training in eval mode, or the reverse."""
    was = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was)


@torch.no_grad()
def logits_of(model: RoutedModel, x: torch.Tensor, route: Optional[Route] = None, batch: int = 4096) -> torch.Tensor:
    """Logits in evaluation mode, in batches (no gradients)."""
    with evaluating(model):
        return torch.cat([model(x[i : i + batch], route) for i in range(0, len(x), batch)])


def correct(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, route: Optional[Route] = None) -> torch.Tensor:
    """Per-input right/wrong (bool) of the model on `route`: what a paired comparison of two accuracies needs."""
    return metrics.correct(logits_of(model, x, route), y)


def accuracy(model: RoutedModel, x: torch.Tensor, y: torch.Tensor, route: Optional[Route] = None) -> float:
    """Fraction of inputs whose arg-max logit is the label."""
    return metrics.accuracy(logits_of(model, x, route), y)


def per_class_accuracy(
    model: RoutedModel, x: torch.Tensor, y: torch.Tensor, n_classes: int, route: Optional[Route] = None
) -> list[float]:
    """Accuracy within each true class (NaN for a class absent from y)."""
    hit = metrics.correct(logits_of(model, x, route), y).float()
    out = []
    for c in range(n_classes):
        m = y == c
        out.append(float(hit[m].mean()) if m.any() else float("nan"))
    return out
