"""A study a user asks for, checked before anything runs: a page with claims, a knob it declares, a grid of valid
settings, enough seeds, a bounded number of cells (what `python -m lab study` builds from its arguments)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Optional

from lab.catalog import descriptors
from lab.claims import MIN_SEEDS
from lab.experiment import meta
from lab.study import shipped
from lab.study.spec import DEFAULT_SEEDS, Study

MAX_CELLS = 400  # a study beyond this many (value, seed) cells is refused: split it


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
         base: Optional[Mapping[str, Any]] = None, subject: str = "", margin: Optional[float] = None,
         tied: tuple[tuple[Any, tuple[tuple[str, Any], ...]], ...] = ()) -> Study:
    """A study from what a user typed, checked: a page with claims, a knob it declares, at least two distinct grid
    values each making a valid config, at least MIN_SEEDS distinct seeds, a bounded number of cells. A claim left
    out is the page's shipped study's (lab/study/shipped.py) when the knob is the same, else the page's first."""
    if page not in descriptors():
        raise ValueError(f"no page {page!r}: choose one of {', '.join(descriptors())}")
    d = descriptors()[page]
    if d.claims is None:
        raise ValueError(f"{page} has no claims to study")
    known = knobs(page)
    if knob not in known:
        raise ValueError(f"{page} has no field {knob!r} to vary: choose one of {', '.join(sorted(known))}")
    ship = shipped.of_page(page)
    like = next((x for x in ship if x.knob == knob), ship[0] if ship else None)
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
                  margin=float(margin if margin is not None else (like.margin if like else 0.02)), tied=tied)
    for v in grid:
        try:
            d.config_of(study.settings(v, seeds_t[0]))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{knob} = {v!r} is not a valid setting of {page}: {e}") from None
    return study
