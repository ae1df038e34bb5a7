"""A tiny experiment descriptor for the warm tests: two presets sharing one of their results with the default view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.catalog.descriptor import Descriptor, config_from, controls, defaults
from lab.catalog.presets import Need, preset
from lab.experiment import check, entry, param
from lab.runtime.progress import Progress


@dataclass(frozen=True)
class SquareConfig:
    x: int = param(2, "the number to square", lo=0, hi=9)

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class SquarePage:
    colour: str = param("slot", "a view control", choices=("slot", "block"))


@entry("warm-test-square")
def square(cfg: SquareConfig, progress: Progress) -> dict[str, Any]:
    return {"x": cfg.x, "square": cfg.x * cfg.x}


CONTROLS = controls(SquareConfig, SquarePage, names=("x", "colour"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (preset(DEFAULTS, "three", "Three", "x = 3", x=3),
           preset(DEFAULTS, "recolour", "Recolour", "same x, another colour", colour="block"))


def config_of(settings: dict[str, Any]) -> SquareConfig:
    return config_from(SquareConfig, settings, CONTROLS)


def plan(settings: dict[str, Any]) -> list[Need]:
    return [Need("the square", square, config_of(settings))]


DESCRIPTOR = Descriptor(name="fake", order=999, title="Fake", icon=":material/science:", summary="A test page.",
                        about="a test page", config=SquareConfig, controls=CONTROLS, presets=PRESETS, plan=plan,
                        config_of=config_of, run=square, cli_help="square a number", cli_summary=str,
                        page_controls=SquarePage)
