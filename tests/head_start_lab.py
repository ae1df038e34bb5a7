"""The stand-in entry point of tests/apps/head_start_demo.py: each call appends its name to a log as it starts
(how often and which calls ran), takes a moment, and is stored like any result."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from lab.experiment import entry
from lab.runtime.progress import Progress


@dataclass(frozen=True)
class Step:
    run: str = ""
    name: str = ""
    log: str = ""


@entry("head-start-step")
def step(cfg: Step, progress: Progress) -> dict[str, Any]:
    with open(cfg.log, "a") as fh:
        fh.write(cfg.name + "\n")
    time.sleep(0.2)
    return {"name": cfg.name}
