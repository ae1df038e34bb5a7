"""Warm the store before class: compute every page's default view and every preset, idempotently, in parallel.

Each experiment's descriptor (lab/experiments/NAME/descriptor.py) lists its page's controls, its presets and the lab
calls of a setting (`controls`, `presets`, `plan(settings)`: the very calls the page makes). `plan()` turns them
into a list of distinct cached results (deduplicated by kind and config; a view's optional calls left out; a
default view also at the training seeds its recipe claims are pooled over, `recipe_seeds`, a ViT's view included),
`missing()` keeps what the store lacks, and `warm()` computes those through the lab's one engine
(lab/runtime/engine/: a local Dask cluster of one worker per core, or the cluster at LAYERLAB_SCHEDULER), dearest
first (`dearest_first`: a long job started last leaves the other workers idle until it ends) and dealt round-robin
over the settings (`interleaved`), so that two workers seldom wait on one model. The
store's per-entry lock makes two workers that need the same trained model train it once; a second run finds
everything stored and does nothing.

`Background` is the server's own warmer: one item at a time, at the engine's BACKGROUND priority, and only while
no student's job is waiting, so warming never runs ahead of a student and leaves a worker free for them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from lab.catalog import descriptors, get, presets
from lab.runtime.engine import BACKGROUND, Engine, compute
from lab.runtime.progress import Progress, silent
from lab.runtime.store import active_store, config_json


def pages() -> list[str]:
    """Every page with a descriptor (its URL path), in navigation order."""
    return list(descriptors())


@dataclass(frozen=True)
class Item:
    """One cached result to compute: which page and setting asked for it, and its rough cost."""

    page: str
    setting: str
    need: presets.Need

    @property
    def key(self) -> str:
        return f"{self.need.fn.kind}:{config_json(self.need.cfg)}"


def settings_of(page: str, seeds: Optional[Sequence[int]] = None) -> list[tuple[str, dict[str, Any]]]:
    """(name, settings) of a page's default view and every preset, for each seed asked for."""
    d = get(page)
    named = [("default", d.defaults)]
    named += [(p.label, p.settings) for p in d.presets]
    if seeds is None:
        return named
    return [(f"{name}, seed {s}", {**st, "seed": s}) for s in seeds for name, st in named if "seed" in st]


def plan(pages: Sequence[str], seeds: Optional[Sequence[int]] = None, defaults_only: bool = False) -> list[Item]:
    """Every distinct result the pages' default views and presets need (the first asker names it)."""
    unknown = sorted(set(pages) - set(descriptors()))
    if unknown:
        raise ValueError(f"unknown page(s) {', '.join(unknown)}; choose from {', '.join(descriptors())}")
    from lab.classroom.seeds import seed_needs

    items: dict[str, Item] = {}
    for page in pages:
        d = get(page)
        for name, st in settings_of(page, seeds):
            if defaults_only and not name.startswith("default"):
                continue
            runs = [(name, presets.always(d.plan(st)))]
            if name.startswith("default"):
                # at the other seeds only what the claims read (a view's embedding is looked at at its own seed)
                runs += [(n, seed_needs(page, s, s["seed"])) for n, s in recipe_seeds(page, name, st)]
            for run_name, needs in runs:
                for need in needs:
                    item = Item(page, run_name, need)
                    items.setdefault(item.key, item)
    return list(items.values())


def recipe_seeds(page: str, name: str, settings: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The other seeds a view judges its recipe claims over (lab/classroom/seeds.course_seeds: every view with
    claims, a ViT's included, which then pools them without a click), as (name, settings): what `claims_at` computes
    at each of them."""
    from lab.classroom.seeds import course_seeds

    own = settings.get("seed")
    return [(f"{name}, seed {s} (recipe claims)", {**settings, "seed": s})
            for s in course_seeds(page, settings) if s != own]


def lesson_plan(lesson: Any, seeds: Optional[Sequence[int]] = None) -> list[Item]:
    """Every distinct result the steps of a lesson (lab/classroom/lessons.py: a Lesson) need, each step's setting
    named "step N", at every seed asked for (default: the step's own seed); a where-question's step needs its
    study's every cell as well (the map it reveals), at the study's own seeds."""
    from lab.classroom import where
    from lab.classroom.seeds import seed_needs

    items: dict[str, Item] = {}
    for n, step in enumerate(lesson.steps, start=1):
        study = where.study_of(step.asked) if step.question.startswith(where.PREFIX) else None
        for value, seed in study.cells() if study else ():
            for need in seed_needs(step.page, study.settings(value, seed), seed):
                item = Item(step.page, f"step {n}: {study.knob} = {value}, seed {seed}", need)
                items.setdefault(item.key, item)
        settings = step.settings
        runs = [(f"step {n}", settings)] if seeds is None or "seed" not in settings else \
            [(f"step {n}, seed {s}", {**settings, "seed": s}) for s in seeds]
        for name, st in runs:
            for need in presets.always(get(step.page).plan(st)):
                item = Item(step.page, name, need)
                items.setdefault(item.key, item)
    return list(items.values())


def default_views() -> list[Item]:
    """What a starting server warms: every described page's default view."""
    return plan(pages(), defaults_only=True)


def estimates(items: Sequence[Item]) -> dict[str, Optional[float]]:
    """Each item's estimated seconds on this store (measured here before), None where never timed; read once per
    plan, since each estimate reads the store's timing records."""
    store = active_store()
    return {i.key: store.estimate(i.need.fn.kind, i.need.cfg) for i in items}


def missing(items: Sequence[Item], est: Optional[dict[str, Optional[float]]] = None) -> list[Item]:
    """The items whose result is not stored yet, cheapest first (the server's warmer's order: the most pages
    ready soonest). `est`: their `estimates`, when already read."""
    store = active_store()
    todo = [i for i in items if not store.has(i.need.fn.kind, i.need.cfg)]
    est = estimates(todo) if est is None else est
    return sorted(todo, key=lambda i: (est[i.key] is None, est[i.key] or 0.0))


def dearest_first(items: Sequence[Item], est: Optional[dict[str, Optional[float]]] = None) -> list[Item]:
    """`items` by their estimated cost on this store, dearest first, those never timed here first of all (in their
    own order). Why: on several workers the whole batch ends when its last job does, and a long job started last
    leaves every other worker idle until it ends; started first, it runs beside the short ones (the longest
    processing time rule)."""
    est = estimates(items) if est is None else est
    return sorted(items, key=lambda i: (est[i.key] is not None, -(est[i.key] or 0.0)))


def timed_order(items: Sequence[Item], workers: int = 2,
                engine: Optional[Engine] = None) -> tuple[list[Item], dict[str, Optional[float]]]:
    """`order` and the estimates it was sorted by (what `python -m lab warm --dry-run` lists), each read once."""
    store = active_store()
    est = estimates([i for i in items if not store.has(i.need.fn.kind, i.need.cfg)])
    todo = dearest_first(missing(items, est), est)
    return (interleaved(todo) if workers > 1 or engine is not None else todo), est


def order(items: Sequence[Item], workers: int = 2, engine: Optional[Engine] = None) -> list[Item]:
    """The missing items in the order `warm` submits them: dearest first and, on several workers, dealt
    round-robin over their settings."""
    return timed_order(items, workers, engine)[0]


def interleaved(items: Sequence[Item]) -> list[Item]:
    """`items` dealt round-robin over their (page, setting) groups, each group in its own order.

    Why: a setting's first result usually trains its model and the next ones read it, so two workers that take two
    neighbours of one group end with one of them waiting on the store's lock while the other trains: half the
    machine idle for a model's training (a full warm, bench/bench_warm.py: the machine 6 % idle, in windows of 15-35 s
    beside a setting's "this model" and its readers; 1.4 % dealt round-robin). Dealt round-robin, a group's readers
    start after every other group's first result, when its model is long stored."""
    groups: dict[tuple[str, str], list[Item]] = {}
    for i in items:
        groups.setdefault((i.page, i.setting), []).append(i)
    queues = list(groups.values())
    out: list[Item] = []
    for depth in range(max((len(q) for q in queues), default=0)):
        out += [q[depth] for q in queues if depth < len(q)]
    return out


def warm(items: Sequence[Item], workers: int = 2, progress: Progress = silent,
         engine: Optional[Engine] = None) -> dict[str, Any]:
    """Compute the missing items on `engine` (default: a local Dask cluster of `workers` single-threaded worker
    processes, or the cluster at $LAYERLAB_SCHEDULER); returns a summary (built, failed, seconds)."""
    todo = order(items, workers, engine)
    t0 = time.perf_counter()
    if todo:
        progress(0.0, f"{len(todo)} results to compute (starting the workers)")
    out = compute([(i.need.fn, i.need.cfg) for i in todo], workers, progress, engine,
                  labels=[f"{i.page}: {i.setting}: {i.need.label}" for i in todo])

    def what(i: int) -> dict[str, Any]:
        return {"page": todo[i].page, "setting": todo[i].setting, "result": todo[i].need.label}

    builds = out.get("builds", {})
    return {"planned": len(items), "already_stored": len(items) - len(todo),
            "built": [{**what(i), "seconds": round(sec, 1), "trained": _trained(builds.get(i, []))}
                      for i, sec in out["built"]],
            "failed": [{**what(i), "error": err} for i, err in out["failed"]],
            "seconds": round(time.perf_counter() - t0, 1)}


def _trained(builds: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The models a result's job trained (not read from the store), each with its seconds and what it is."""
    return [{"model": model_label(b["config"]), "seconds": b["seconds"]} for b in builds if b["kind"] == "model"]


def model_label(config: str) -> str:
    """A short name of a model's spec (its config JSON): the fields that tell two of them apart."""
    import json

    found: dict[str, Any] = {}

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("task", "__class__", "blocks", "depth", "mode", "drop_p", "seed", "epochs", "slot_mode",
                         "route", "order") and not isinstance(v, (dict, list)) and k not in found:
                    found[k] = v
                elif isinstance(v, (dict, list)):
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(json.loads(config))
    found.pop("__class__", None)
    return " ".join(f"{k}={v}" for k, v in found.items())


class Background:
    """The server's warmer: computes `items` on the server's engine one at a time, at BACKGROUND priority, and
    only while no other job of this server is queued. Runs in a daemon thread; `state` says where it is."""

    def __init__(self, engine: Engine, items: Callable[[], Sequence[Item]], poll: float = 1.0) -> None:
        # `items` is called in the thread: planning imports every experiment module, which a page need not wait for
        self.engine, self.items, self.poll = engine, items, poll
        self.state = "starting"
        self.built = 0
        self.failed: list[str] = []
        self.thread = threading.Thread(target=self._loop, name="layerlab-warm", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        try:
            todo = missing(self.items())
        except Exception as exc:  # noqa: BLE001 - a warmer that cannot plan must not take the server down
            self.state = f"could not plan ({type(exc).__name__}: {exc})"
            return
        for item in todo:
            while self.engine.waiting(above=BACKGROUND):  # a student's job waits: let it have the worker
                self.state = "paused: students' jobs first"
                time.sleep(self.poll)
            self.state = f"warming {item.page}: {item.need.label}"
            job = self.engine.submit(f"{item.page}: {item.need.label}", item.need.fn, item.need.cfg,
                                     priority=BACKGROUND)
            exc = job.future.exception()  # waits; one at a time
            if exc is None:
                self.built += 1
            else:
                self.failed.append(f"{item.page}: {item.need.label}: {type(exc).__name__}: {exc}")
        self.state = "done"


def ready(page: str) -> Optional[float]:
    """Seconds until a page's default view is stored (0 = ready; measured times, None when never timed here),
    without computing anything."""
    d = get(page)
    return presets.cost(d.plan(d.defaults))


