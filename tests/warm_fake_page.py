"""A tiny page description for the warm tests: two presets sharing one of their results with the default view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.catalog import presets
from lab.experiment import entry
from lab.runtime.progress import Progress


@dataclass(frozen=True)
class SquareConfig:
    x: int = 2


@entry("warm-test-square")
def square(cfg: SquareConfig, progress: Progress) -> dict[str, Any]:
    return {"x": cfg.x, "square": cfg.x * cfg.x}


CONTROLS = {"x": 2, "colour": "slot"}
PRESETS = (presets.preset(CONTROLS, "three", "Three", "x = 3", x=3),
           presets.preset(CONTROLS, "recolour", "Recolour", "same x, another colour", colour="block"))


def needs(settings: dict[str, Any]) -> list[presets.Need]:
    return [presets.Need("the square", square, SquareConfig(settings["x"]), 1.0)]
