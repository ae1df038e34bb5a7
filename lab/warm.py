"""Warm the store before class: compute every page's default view and every preset, idempotently, in parallel.

Each experiment module that a page stands on lists its controls, its presets and what a setting needs
(`CONTROLS`, `PRESETS`, `needs(settings)`; lab/presets.py). `plan()` turns them into a list of distinct cached
results (deduplicated by kind and config), `missing()` keeps what the store lacks, and `warm()` computes those
in worker processes (one per core by default), cheapest first so that most pages are ready early. The store's
per-entry lock makes two workers that need the same trained model train it once; a second run finds everything
stored and does nothing.
"""

from __future__ import annotations

import importlib
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from . import presets
from .progress import Progress, silent
from .store import active_store, config_json

# Page name (its URL path) -> the experiment module whose CONTROLS / PRESETS / needs describe it.
PAGES = {"delete": "lab.experiments.delete", "shuffle": "lab.experiments.shuffle", "reinit": "lab.experiments.reinit",
         "layerdrop": "lab.experiments.layerdrop", "iot": "lab.experiments.iot",
         "rearrange": "lab.experiments.rearrange"}


@dataclass(frozen=True)
class Item:
    """One cached result to compute: which page and setting asked for it, and its rough cost."""

    page: str
    setting: str
    need: presets.Need

    @property
    def key(self) -> str:
        return f"{self.need.fn.kind}:{config_json(self.need.cfg)}"


def describes(page: str) -> bool:
    """Whether a page's experiment lists its controls, presets and needs (every classroom page does)."""
    mod = importlib.import_module(PAGES[page])
    return all(hasattr(mod, a) for a in ("CONTROLS", "PRESETS", "needs"))


def settings_of(page: str, seeds: Optional[Sequence[int]] = None) -> list[tuple[str, dict[str, Any]]]:
    """(name, settings) of a page's default view and every preset, for each seed asked for."""
    mod = importlib.import_module(PAGES[page])
    named = [("default", presets.defaults(mod.CONTROLS).settings)]
    named += [(p.label, p.settings) for p in getattr(mod, "PRESETS", ())]
    if seeds is None:
        return named
    return [(f"{name}, seed {s}", {**st, "seed": s}) for s in seeds for name, st in named if "seed" in st]


def plan(pages: Sequence[str], seeds: Optional[Sequence[int]] = None, defaults_only: bool = False) -> list[Item]:
    """Every distinct result the pages' default views and presets need (the first asker names it)."""
    unknown = sorted(set(pages) - set(PAGES))
    if unknown:
        raise ValueError(f"unknown page(s) {', '.join(unknown)}; choose from {', '.join(PAGES)}")
    items: dict[str, Item] = {}
    for page in pages:
        if not describes(page):
            continue
        mod = importlib.import_module(PAGES[page])
        for name, st in settings_of(page, seeds):
            if defaults_only and not name.startswith("default"):
                continue
            for need in mod.needs(st):
                item = Item(page, name, need)
                items.setdefault(item.key, item)
    return list(items.values())


def missing(items: Sequence[Item]) -> list[Item]:
    """The items whose result is not stored yet, cheapest first."""
    store = active_store()
    return sorted((i for i in items if not store.has(i.need.fn.kind, i.need.cfg)), key=lambda i: i.need.seconds)


def _compute(fn: Callable[..., Any], cfg: Any, cache: str) -> float:
    """In a worker process: one thread for torch, the same store as the parent; returns the seconds it took."""
    os.environ["LAYERLAB_CACHE"] = cache
    from .runtime import configure_threads

    configure_threads()
    t0 = time.perf_counter()
    fn(cfg)
    return time.perf_counter() - t0


def warm(items: Sequence[Item], workers: int = 2, progress: Progress = silent) -> dict[str, Any]:
    """Compute the missing items in `workers` processes; returns a summary (built, failed, seconds)."""
    todo = missing(items)
    cache = str(active_store().root)
    built: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    if todo:
        progress(0.0, f"{len(todo)} results to compute")
        with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = {pool.submit(_compute, i.need.fn, i.need.cfg, cache): i for i in todo}
            for n, fut in enumerate(as_completed(futures), start=1):
                item = futures[fut]
                what = {"page": item.page, "setting": item.setting, "result": item.need.label}
                try:
                    built.append({**what, "seconds": round(fut.result(), 1)})
                except Exception as exc:  # noqa: BLE001 - one failed result must not stop the others
                    failed.append({**what, "error": f"{type(exc).__name__}: {exc}"})
                progress(n / len(todo), f"{item.page}: {item.setting}: {item.need.label}")
    return {"planned": len(items), "already_stored": len(items) - len(todo), "built": built, "failed": failed,
            "seconds": round(time.perf_counter() - t0, 1)}


def ready(page: str) -> float:
    """Rough seconds until a page's default view is stored (0 = ready), without computing anything."""
    mod = importlib.import_module(PAGES[page])
    return presets.cost(mod.needs(presets.defaults(mod.CONTROLS).settings))


