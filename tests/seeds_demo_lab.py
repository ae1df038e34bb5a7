"""The stand-in experiment of tests/apps/seeds_demo.py: one cheap stored result per (run, seed), the "trained
model" its claims at that seed rest on, so that a view can find a seed stored or not (a warmed course, or one that
never computed it); `run` keeps each test's results apart in the suite's shared store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.experiment import entry
from lab.runtime.progress import Progress


@dataclass(frozen=True)
class DemoConfig:
    run: str = ""
    seed: int = 0


@entry("seeds-demo-model")
def demo_model(cfg: DemoConfig, progress: Progress) -> dict[str, Any]:
    return {"seed": cfg.seed}
