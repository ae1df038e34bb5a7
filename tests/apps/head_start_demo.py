"""A view whose page asks for only its first call (tests/test_head_start.py): `View.head_start` must have started
the plan's other calls and the calls beside it, through the real job runner, without the page asking again."""

import os

from app import jobs
from lab.catalog.presets import Need
from tests.head_start_lab import Step, step

run = os.environ["HEAD_START_RUN"]
log = os.environ["HEAD_START_LOG"]


def need(name: str, optional: bool = False) -> Need:
    return Need(f"step {name}", step, Step(run, name, log), key=name, optional=optional)


view = jobs.View([need("first"), need("second"), need("third"), need("asked-for", optional=True)])
view.head_start([need("seed1-a"), need("seed1-b")])
view.run("first")
