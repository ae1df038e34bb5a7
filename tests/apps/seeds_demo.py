"""A page with one claim that cannot tell at seed 0, from a stand-in experiment whose claims at each seed are cheap
(tests/test_app_seeds.py): drives claims_view's 'Run N more seeds' through the real job runner."""

import dataclasses

from app import claims_view
from lab import catalog
from lab import claims as C
from lab.estimates import Estimate

EFFECTS = {0: 0.012, 1: 0.016, 2: 0.014, 3: 0.018, 4: 0.013, 5: 0.015}  # each 1.2-1.8 se above 0 at se 0.01


def claims_of(settings: dict) -> list:
    v = EFFECTS[settings["seed"] % len(EFFECTS)]
    t = C.test("gain", Estimate(v, 0.01, "paired", 4000, "paired over 4,000 inputs"), ">=", 0.0)
    return [C.claim("demo.gain", "the change helps", "a stand-in", {"gain": v}, "gain above 0 by 2 se", [t],
                    f"gain {100 * v:.1f} pts at seed {settings['seed']}")]


class FakePage:
    name = "seedsdemo"
    student = False

    def settings(self) -> dict:
        return {"seed": 0, "k": 2}


base = next(iter(catalog.descriptors().values()))
catalog._FOUND["seedsdemo"] = dataclasses.replace(base, name="seedsdemo", claims=claims_of, plan=lambda s: [])
claims_view.show(claims_of({"seed": 0, "k": 2}), page=FakePage())
