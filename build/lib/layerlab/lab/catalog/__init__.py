"""The catalog: one descriptor per experiment (lab/experiments/NAME/descriptor.py, each defining `DESCRIPTOR`), found
by walking lab/experiments, so adding an experiment names it nowhere else (see lab/catalog/descriptor.py)."""

from __future__ import annotations

import importlib
import pkgutil
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab.catalog.descriptor import Descriptor

# Plumbing: finds descriptors, computes nothing (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

_LOCK = threading.Lock()
_FOUND: dict[str, "Descriptor"] = {}


def descriptors() -> dict[str, "Descriptor"]:
    """{name: descriptor} of every experiment, in navigation order (imported once per process)."""
    with _LOCK:
        if not _FOUND:
            found = []
            import lab.experiments

            for info in pkgutil.iter_modules(lab.experiments.__path__):
                if not info.ispkg or info.name.startswith("_"):
                    continue
                where = f"lab/experiments/{info.name}/descriptor.py"
                try:
                    mod = importlib.import_module(f"lab.experiments.{info.name}.descriptor")
                except ModuleNotFoundError as e:
                    if e.name != f"lab.experiments.{info.name}.descriptor":
                        raise
                    raise RuntimeError(f"{where} is missing: every experiment folder has a descriptor") from None
                d = getattr(mod, "DESCRIPTOR", None)
                if d is None:
                    raise RuntimeError(f"{where} defines no DESCRIPTOR")
                if d.name != info.name:
                    raise RuntimeError(f"{where} describes {d.name!r}: name them alike")
                found.append(d)
            _FOUND.update((d.name, d) for d in sorted(found, key=lambda d: (d.order, d.name)))
        return dict(_FOUND)


def get(name: str) -> "Descriptor":
    """One experiment's descriptor; ValueError naming the known ones for an unknown name."""
    all_ = descriptors()
    if name not in all_:
        raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(all_)}")
    return all_[name]


def config_modules() -> list[str]:
    """The modules of every experiment's config, sorted: what a compute worker imports as it starts, so that its
    first job does not wait for them."""
    return sorted({d.config.__module__ for d in descriptors().values()})
