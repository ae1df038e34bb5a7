"""Plain and residual MLPs: a stem (inputs -> width), `blocks` width -> width blocks, a linear head.

plain:    h = relu(h W + b)          deleting a block feeds the next one a representation it never saw.
residual: h = h + relu(h W + b)      deleting a block just drops one correction from the running stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Optional

import torch
from torch import nn

from lab.core.models.base import RoutedModel

Arch = Literal["plain", "residual"]


@dataclass(frozen=True)
class MLPConfig:
    """Shape of an MLP: `blocks` interchangeable width -> width blocks between the stem and the head (as for every
    model of the lab, depth is counted in blocks)."""

    arch: Arch = "residual"
    n_in: int = 12
    n_out: int = 20
    width: int = 128
    blocks: int = 7

    def __post_init__(self) -> None:
        if self.arch not in ("plain", "residual"):
            raise ValueError(f"unknown arch {self.arch!r}: use 'plain' or 'residual'")
        if not 1 <= self.blocks <= 63:
            raise ValueError(f"an MLP has 1 to 63 blocks, got {self.blocks}")
        if not 1 <= self.width <= 4096:
            raise ValueError(f"width must be between 1 and 4096, got {self.width}")


def init_linear_(layer: nn.Linear, std: float, generator: Optional[torch.Generator] = None) -> None:
    """Weights ~ N(0, std^2), biases 0: the lab's one initialisation rule, also used to re-randomise a layer."""
    with torch.no_grad():
        layer.weight.normal_(0.0, std, generator=generator)
        layer.bias.zero_()


class MLP(RoutedModel):
    """A routed MLP; see the module docstring."""

    def __init__(self, cfg: MLPConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.residual = cfg.arch == "residual"
        self.stem = nn.Linear(cfg.n_in, cfg.width)
        self.blocks = nn.ModuleList(nn.Linear(cfg.width, cfg.width) for _ in range(cfg.blocks))
        self.head = nn.Linear(cfg.width, cfg.n_out)
        self.reset_parameters()

    def init_std(self, name: str) -> float:
        """He init for ReLU layers; residual blocks get half of it so the stream does not blow up."""
        if name == "head":
            return 1.0 / math.sqrt(self.cfg.width)
        if name == "stem":
            return math.sqrt(2.0 / self.cfg.n_in)
        std = math.sqrt(2.0 / self.cfg.width)
        return std * 0.5 if self.residual else std

    def reset_parameters(self, generator: Optional[torch.Generator] = None) -> None:
        init_linear_(self.stem, self.init_std("stem"), generator)
        for i, blk in enumerate(self.blocks):
            init_linear_(blk, self.init_std(f"blocks.{i}"), generator)
        init_linear_(self.head, self.init_std("head"), generator)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.stem(x))

    def run_block(self, h: torch.Tensor, block: int, slot: int) -> torch.Tensor:
        a = torch.relu(self.blocks[block](h))
        return h + a if self.residual else a

    def readout(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(h)
