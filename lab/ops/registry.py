"""The registry of surgeries: every operation a page, the matrix or the CLI applies to a trained model, by name.

Each surgery is declared once, in the module of its kind (lab/ops/surgeries.py gives the record): the route
surgeries in lab/ops/route_ops.py, the weight surgeries in lab/ops/weight_ops.py. This module lists those modules;
it imports nothing for its side effects, and nothing a trained model's key covers imports it (lab/core/train.py
reads lab/core/routes.py only), so a new surgery re-keys no stored model (tests/test_ops_registry.py).
"""

from __future__ import annotations

from typing import Sequence

from lab.ops import route_ops, weight_ops
from lab.ops.surgeries import Surgery

# Where surgeries are declared: a new kind of surgery adds its module here.
DECLARED_IN = (route_ops, weight_ops)


def surgeries() -> dict[str, Surgery]:
    """{name: surgery} of every declared surgery, in the declaring modules' order."""
    out: dict[str, Surgery] = {}
    for module in DECLARED_IN:
        for s in module.SURGERIES:
            if s.name in out:
                raise ValueError(f"two surgeries are named {s.name!r} ({module.__name__} and another): name them apart")
            out[s.name] = s
    return out


def get(name: str) -> Surgery:
    """One surgery by its name or a page's word for it; ValueError naming the known ones."""
    found = surgeries()
    if name in found:
        return found[name]
    if name in route_ops.ALIASES:
        return found[route_ops.ALIASES[name][0]]
    raise ValueError(f"unknown surgery {name!r}; choose one of {', '.join(found)}")


def labels(names: Sequence[str]) -> dict[str, str]:
    """{name: label} of some surgeries, in their order (a page word keeps its own label)."""
    return {n: route_ops.ALIASES[n][1] if n in route_ops.ALIASES else get(n).label for n in names}


def table() -> list[dict[str, str]]:
    """Every surgery as a row: name, label, what it acts on, the parameters it takes, the words pages say for it."""
    return [{"name": s.name, "label": s.label, "acts on": s.acts_on, "parameters": ", ".join(s.params) or "none",
             "page words": ", ".join(w for w, _ in s.aliases)} for s in surgeries().values()]
