"""A study: one claim of a page, one knob, a grid of values fixed before anything runs, k training seeds per value.

The knob is any field the page's descriptor declares: one of its controls, or a field of its config that no control
offers (the teacher's `blocks`, the training `epochs`; lab/catalog/descriptor.config_from passes those on). Every
cell (value, seed) is the page's own setting at that value and seed, so what a cell computes is the very stored
result the page's view at that setting reads: a study and a page never compute the same thing twice.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from lab.catalog import descriptors
from lab.catalog.descriptor import Descriptor
from lab.claims import MIN_SEEDS
from lab.experiment import meta

DEFAULT_SEEDS = (0, 1, 2, 3, 4)
MAX_CELLS = 400  # a study beyond this many (value, seed) cells is refused: split it


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

    @property
    def descriptor(self) -> Descriptor:
        return descriptors()[self.page]

    def settings(self, value: Any, seed: int) -> dict[str, Any]:
        """The page's complete setting at one cell."""
        return {**self.descriptor.defaults, **dict(self.base), self.knob: value, "seed": int(seed)}

    def cells(self) -> list[tuple[Any, int]]:
        return [(v, s) for v in self.values for s in self.seeds]

    def ident(self) -> str:
        """A stable name of the whole study (its grid, seeds and setting), for the store's records of it."""
        return json.dumps({"page": self.page, "claim": self.claim, "subject": self.subject, "knob": self.knob,
                           "values": list(self.values), "seeds": list(self.seeds), "base": [list(b) for b in self.base],
                           "margin": self.margin}, sort_keys=True, default=str)


def knobs(page: str) -> dict[str, dict[str, Any]]:
    """The fields a study of `page` may vary: {name: its declaration (help, lo, hi, choices)}; the seed is not a
    knob (every cell has its own seeds)."""
    d = descriptors()[page]
    out: dict[str, dict[str, Any]] = {}
    for c in d.controls:
        if c.name != "seed":
            out[c.name] = {**c.meta, "lo": c.bounds[0], "hi": c.bounds[1], "choices": c.choices}
    for f in dataclasses.fields(d.config):
        if f.name not in out and f.name != "seed" and f.name not in {c.field for c in d.controls}:
            out[f.name] = dict(meta(d.config, f.name) or {})
    return out


def _coerce(value: Any, like: Any) -> Any:
    """A value given as text on the command line, read as the type of the field's default."""
    if not isinstance(value, str) or isinstance(like, str):
        return value
    if isinstance(like, bool):
        if value.lower() in ("true", "1", "yes", "on"):
            return True
        if value.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"{value!r} is not true or false")
    if isinstance(like, int):
        return int(value)
    if isinstance(like, float):
        return float(value)
    try:
        return json.loads(value)
    except ValueError:
        return value


def make(page: str, knob: str, values: list[Any], claim: Optional[str] = None, seeds: Optional[list[int]] = None,
         base: Optional[Mapping[str, Any]] = None, subject: str = "", margin: Optional[float] = None) -> Study:
    """A study from what a user typed, checked: a page with claims, a knob it declares, at least two distinct grid
    values each making a valid config, at least MIN_SEEDS distinct seeds, a bounded number of cells. A claim left
    out is the page's shipped study's (lab/study/shipped.py) when the knob is the same, else the page's first."""
    from lab.study import shipped

    if page not in descriptors():
        raise ValueError(f"no page {page!r}: choose one of {', '.join(descriptors())}")
    d = descriptors()[page]
    if d.claims is None:
        raise ValueError(f"{page} has no claims to study")
    known = knobs(page)
    if knob not in known:
        raise ValueError(f"{page} has no field {knob!r} to vary: choose one of {', '.join(sorted(known))}")
    ship = shipped.of_page(page)
    like = ship[0] if ship else None
    base_d = dict(base or {})
    default = {**d.defaults, **dict(like.base if like and like.knob == knob else ())}.get(knob)
    if default is None:
        default = next((f.default for f in dataclasses.fields(d.config) if f.name == knob), None)
    try:
        grid = tuple(_coerce(v, default) for v in values)
    except ValueError as e:
        raise ValueError(f"--values for {knob}: {e}") from None
    if len(set(map(str, grid))) != len(grid) or len(grid) < 2:
        raise ValueError(f"give at least two distinct values of {knob}, not {' '.join(map(str, values))}")
    seeds_t = tuple(sorted(set(int(s) for s in (seeds if seeds is not None else DEFAULT_SEEDS))))
    if len(seeds_t) < MIN_SEEDS or any(not 0 <= s <= 99 for s in seeds_t):
        raise ValueError(f"give at least {MIN_SEEDS} distinct seeds between 0 and 99 (a study is over training "
                         f"seeds), not {' '.join(map(str, seeds_t))}")
    if len(grid) * len(seeds_t) > MAX_CELLS:
        raise ValueError(f"{len(grid)} values x {len(seeds_t)} seeds is {len(grid) * len(seeds_t)} cells, more than "
                         f"{MAX_CELLS}: split the study")
    chosen = claim or (like.claim if like and like.knob == knob else "")
    study = Study(page=page, claim=chosen, knob=knob, values=grid, seeds=seeds_t,
                  base=tuple(sorted(base_d.items())) if base_d else (like.base if like and like.knob == knob else ()),
                  subject=subject or (like.subject if like and chosen == like.claim else ""),
                  margin=float(margin if margin is not None else (like.margin if like else 0.02)))
    for v in grid:
        try:
            d.config_of(study.settings(v, seeds_t[0]))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{knob} = {v!r} is not a valid setting of {page}: {e}") from None
    return study
