"""Layer surgery on weights: name a model's layers, and swap one layer's parameters for other values.

A *layer* is a named group of entries of the state dict, found from the names alone, so the same code serves
every model: `blocks.<i>.*` is layer `blocks.<i>`, and any other top-level module or parameter (`stem`,
`head`, a ViT's `embed` or final `norm`) is a layer of its own. The two operations of "Are all layers created
equal?" (Zhang, Bengio, Singer) are then one function each:

- re-initialise: the layer's entries from a checkpoint's state dict (t = 0 is the initial draw);
- re-randomise: the layer's entries from a freshly built model of the same config (`lab.core.zoo.build`), which is
  a new draw from the layer's own initialisation distribution, biases and norms included, whatever the model.

Nothing here modifies the model it is given: `with_layer` returns a copy, and `swapped` works in place only
on a model the caller owns (it restores the original values on exit).
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Iterator, Mapping, Sequence

import torch
from torch import nn

StateDict = Mapping[str, torch.Tensor]


def layer_of(key: str) -> str:
    """The layer a state-dict entry belongs to: `blocks.3.attn.qkv.weight` -> `blocks.3`, `stem.weight` -> `stem`."""
    parts = key.split(".")
    if parts[0] == "blocks" and len(parts) > 2:
        return f"{parts[0]}.{parts[1]}"
    return parts[0] if len(parts) > 1 else key


def layers(model: nn.Module) -> dict[str, list[str]]:
    """Layer name -> its state-dict keys, in the model's own order (stem first, head last for lab models)."""
    out: dict[str, list[str]] = {}
    for key in model.state_dict():
        out.setdefault(layer_of(key), []).append(key)
    return out


def _check(model: nn.Module, layer: str, source: StateDict) -> list[str]:
    groups = layers(model)
    if layer not in groups:
        raise ValueError(f"unknown layer {layer!r}; this model has {', '.join(groups)}")
    keys = groups[layer]
    missing = [k for k in keys if k not in source]
    if missing:
        raise ValueError(f"the source weights lack {missing} of layer {layer!r}")
    return keys


@contextmanager
def swapped(model: nn.Module, layer: str, source: StateDict) -> Iterator[nn.Module]:
    """Inside the block, `model`'s `layer` holds `source`'s values; on exit its own values come back.

    In place, for speed (a heatmap swaps dozens of times): use it only on a model nobody else shares.
    """
    keys = _check(model, layer, source)
    own = model.state_dict()  # references to the live tensors, so copy_ writes into the model
    saved = {k: own[k].detach().clone() for k in keys}
    try:
        with torch.no_grad():
            for k in keys:
                own[k].copy_(source[k])
        yield model
    finally:
        with torch.no_grad():
            for k in keys:
                own[k].copy_(saved[k])


def with_layer(model: nn.Module, layer: str, source: StateDict) -> nn.Module:
    """A copy of `model` whose `layer` holds `source`'s values; every other entry is unchanged."""
    keys = _check(model, layer, source)
    out = copy.deepcopy(model)
    own = out.state_dict()
    with torch.no_grad():
        for k in keys:
            own[k].copy_(source[k])
    return out


def with_layers(model: nn.Module, names: Sequence[str], source: StateDict) -> nn.Module:
    """A copy of `model` whose layers `names` all hold `source`'s values (a group changed together)."""
    keys = [k for name in names for k in _check(model, name, source)]
    out = copy.deepcopy(model)
    own = out.state_dict()
    with torch.no_grad():
        for k in keys:
            own[k].copy_(source[k])
    return out


def distance_from_init(final: StateDict, initial: StateDict, keys: list[str]) -> tuple[float | None, float]:
    """(||theta_T - theta_0||_2 / ||theta_0||_2, ||theta_T - theta_0||_inf) of one layer's entries together.

    The relative 2-norm is None when the layer started at exactly zero (nothing to be relative to).
    """
    t = torch.cat([final[k].detach().flatten().double() for k in keys])
    z = torch.cat([initial[k].detach().flatten().double() for k in keys])
    d = t - z
    base = float(z.norm())
    rel = float(d.norm()) / base if base > 0 else None
    return rel, float(d.abs().max()) if d.numel() else 0.0
