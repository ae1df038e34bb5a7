"""A surgery's record: what the registry (lab/ops/registry.py) holds of one operation on a trained model.

Each surgery names itself once: its name (the word a config, a link and the CLI use), its label (what a page's menu
says), what it acts on (the route a model runs, the weights of a layer), the parameters it takes, the words a page
says for it (`aliases`), the phrase a page writes after it ran (`done`) and `apply`, how it changes what it acts on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

ACTS_ON = ("route", "sub-layer", "weights")  # the route's order; one block's sub-layers; one layer's weights
PARAMS = ("block", "reduce", "loops", "span", "layer", "checkpoint", "redraw")


@dataclass(frozen=True)
class Surgery:
    """One operation (see the module docstring). A route surgery's `apply(steps, block, reduce, ends, loops, span,
    gen)` returns the new route, its arguments already checked; a weights surgery's `apply(trained, checkpoint,
    redraw_seed)` returns the state dict a layer takes its values from."""

    name: str
    label: str
    acts_on: str
    params: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()
    done: str = ""
    apply: Optional[Callable[..., Any]] = None

    def __post_init__(self) -> None:
        if self.acts_on not in ACTS_ON:
            raise ValueError(f"surgery {self.name!r} acts on {self.acts_on!r}; choose one of {', '.join(ACTS_ON)}")
        unknown = [p for p in self.params if p not in PARAMS]
        if unknown:
            raise ValueError(f"surgery {self.name!r} takes unknown parameters {unknown}; known: {', '.join(PARAMS)}")

    def takes(self, param: str) -> bool:
        """Whether the surgery takes a parameter (`PARAMS`)."""
        return param in self.params
