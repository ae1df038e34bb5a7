"""A study: one claim of a page, one knob, a grid of values fixed before anything runs, k training seeds per value.

The knob is any field the page's descriptor declares: one of its controls, or a field of its config that no control
offers (the teacher's `blocks`, the training `epochs`; lab/catalog/descriptor.config_from passes those on). Every
cell (value, seed) is the page's own setting at that value and seed, so what a cell computes is the very stored
result the page's view at that setting reads: a study and a page never compute the same thing twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lab.catalog import descriptors
from lab.catalog.descriptor import Descriptor

DEFAULT_SEEDS = (0, 1, 2, 3, 4)


@dataclass(frozen=True)
class Study:
    """What a study computes and reads (see the module's docstring). `base`: settings beyond the page's defaults
    that hold at every value (LayerShuffle's mode, the task); `margin`: the effect below which the claim counts as
    absent ("does not appear up to X" needs the effect shown below it); `subject`: the claim's model where the page
    makes the claim of several."""

    page: str
    claim: str
    knob: str
    values: tuple[Any, ...]
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    base: tuple[tuple[str, Any], ...] = ()
    subject: str = ""
    margin: float = 0.02
    name: str = ""
    title: str = ""
    question: str = ""  # the lesson step's question: where does the effect begin?
    # settings that move with the knob, per value (LayerDrop's rate p = 1 - r/N at each kept r): (value, settings)
    tied: tuple[tuple[Any, tuple[tuple[str, Any], ...]], ...] = ()

    @property
    def descriptor(self) -> Descriptor:
        return descriptors()[self.page]

    def settings(self, value: Any, seed: int) -> dict[str, Any]:
        """The page's complete setting at one cell."""
        moved = dict(dict(self.tied).get(value, ()))
        return {**self.descriptor.defaults, **dict(self.base), **moved, self.knob: value, "seed": int(seed)}

    def cells(self) -> list[tuple[Any, int]]:
        return [(v, s) for v in self.values for s in self.seeds]

    def ident(self) -> str:
        """A stable name of the whole study (its grid, seeds and setting), for the store's records of it."""
        return json.dumps({"page": self.page, "claim": self.claim, "subject": self.subject, "knob": self.knob,
                           "values": list(self.values), "seeds": list(self.seeds), "base": [list(b) for b in self.base],
                           "margin": self.margin, "tied": [[v, [list(x) for x in t]] for v, t in self.tied]},
                          sort_keys=True, default=str)
