"""Weight surgeries: the operations that give one layer of a trained model other values, declared once here with
their labels, parameters and `apply` (lab/ops/surgeries.py), the two of "Are all layers created equal?" (Zhang,
Bengio, Singer): re-initialise a layer to its values at a checkpoint (t = 0 is the initial draw), or re-randomise
it (a fresh draw from its own initialisation). `apply(trained, checkpoint, redraw_seed)` returns the state dict the
layer takes its values from (lab/ops/surgery.py: with_layer puts them in)."""

from __future__ import annotations

from typing import Any

import torch

from lab.core.zoo import build
from lab.ops.surgeries import Surgery


def _checkpoint(t: Any, checkpoint: int, redraw_seed: int) -> dict[str, torch.Tensor]:
    if checkpoint not in t.checkpoints:
        raise ValueError(f"no checkpoint at epoch {checkpoint}; this model kept epochs {sorted(t.checkpoints)}")
    return t.checkpoints[checkpoint]


def _fresh(t: Any, checkpoint: int, redraw_seed: int) -> dict[str, torch.Tensor]:
    return build(t.spec.model, redraw_seed).state_dict()


SURGERIES: tuple[Surgery, ...] = (
    Surgery("reinit", "re-initialise to a checkpoint", "weights", ("layer", "checkpoint"), done="re-initialised",
            apply=_checkpoint),
    Surgery("rerand", "re-randomise", "weights", ("layer", "redraw"), done="re-randomised", apply=_fresh),
)
_ALL = {s.name: s for s in SURGERIES}
OPS = tuple(_ALL)


def op(name: str) -> Surgery:
    """The weight surgery of a name; ValueError naming the known ones."""
    if name not in _ALL:
        raise ValueError(f"unknown operation {name!r}; choose {' or '.join(_ALL)}")
    return _ALL[name]


def done(name: str, checkpoint: int, at: str = "t = ") -> str:
    """What a page writes after the surgery ran: "re-randomised", "re-initialised to t = 0" (`at`: how the
    checkpoint is named, "t = " or "epoch ")."""
    s = op(name)
    return f"{s.done} to {at}{checkpoint}" if s.takes("checkpoint") else s.done


def source_weights(t: Any, name: str, checkpoint: int, redraw_seed: int) -> dict[str, torch.Tensor]:
    """The weights a weight surgery copies from: the checkpoint at epoch `checkpoint`, or a fresh draw."""
    apply = op(name).apply
    assert apply is not None
    return apply(t, checkpoint, redraw_seed)
