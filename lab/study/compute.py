"""Computing and reading a study: its cells' stored results on the lab's engine, then the claim along the knob.

`needs` lists every (value, seed) cell's lab calls: the calls the page's claims at that setting rest on
(lab/classroom/seeds.seed_needs), which are the entries the page's own view there reads. `compute` hands the missing
ones to the engine (lab/runtime/engine/batch.compute: a local Dask cluster, or the course cluster at
$LAYERLAB_SCHEDULER): a study stopped, or a worker killed, resumes without redoing a finished cell, since a
finished cell is a stored result. `read` then pools each value's seeds (lab/claims.pool) and reads the claim along
the knob (lab/study/stats.py); it computes nothing when every cell is stored.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Optional

from lab.catalog import presets
from lab.claims import VERDICTS, pool
from lab.classroom.seeds import seed_needs
from lab.runtime import timings
from lab.runtime.progress import Progress, silent
from lab.runtime.store import active_store
from lab.study import stats
from lab.study.spec import Study
from lab.study.words import sentence


@dataclass(frozen=True)
class CellPlan:
    """One (value, seed) cell: its lab calls, whether all are stored, and the seconds the missing ones will take on
    this machine (None: some were never timed here)."""

    value: Any
    seed: int
    calls: tuple[presets.Need, ...]
    done: bool
    seconds: Optional[float]
    guessed: bool = False  # some call never built at this config here: its cost is its kind's typical one


def plan(study: Study) -> list[CellPlan]:
    """Every cell's calls, with what is stored and what the rest would cost (file checks only: no training)."""
    store = active_store()
    out = []
    seen: set[str] = set()  # a call two cells share (one teacher under several settings) is counted once
    for value, seed in study.cells():
        calls = tuple(seed_needs(study.page, study.settings(value, seed), seed))
        missing = [n for n in calls if not store.has(n.fn.kind, n.cfg)]
        cost: Optional[float] = 0.0
        guessed = False
        for n in missing:
            key = store.key(n.fn.kind, n.cfg)
            if key in seen:
                continue
            seen.add(key)
            e = store.estimate(n.fn.kind, n.cfg)
            if e is None:
                e, guessed = timings.typical(store.root, n.fn.kind), True
            cost = None if e is None or cost is None else cost + e
        out.append(CellPlan(value, int(seed), calls, not missing, cost, guessed))
    return out


def cost_words(cells: list[CellPlan], workers: int) -> str:
    """The cells left and their cost in words: CPU seconds and, over `workers`, the wall time."""
    left = [c for c in cells if not c.done]
    if not left:
        return f"all {len(cells)} cells stored"
    timed = [c.seconds for c in left if c.seconds is not None]
    untimed = len(left) - len(timed)
    cpu = sum(timed)
    words = f"{len(cells) - len(left)} of {len(cells)} cells stored, {len(left)} left"
    if timed:
        guess = sum(c.guessed for c in left if c.seconds is not None)
        words += (f": about {cpu / 60:.1f} CPU-minutes ({cpu / 60 / max(1, workers):.1f} minutes on {workers} workers"
                  + (f"; {guess} cell(s) never built at their setting here, guessed from their kind's typical "
                     "build" if guess else "") + ")")
    if untimed:
        words += f"{';' if timed else ':'} {untimed} cell(s) never timed on this machine (their cost is unknown)"
    return words


def compute(study: Study, workers: int = 2, progress: Progress = silent, engine: Any = None) -> dict[str, Any]:
    """Compute the cells the store lacks on the engine (each missing call once, the dearest known first) and return
    {"built", "failed", "seconds"}: a cell whose job failed is reported, the others are kept."""
    from lab.runtime.engine.batch import compute as engine_compute

    cells = plan(study)
    calls, labels = [], []
    for c in cells:
        if c.done:
            continue
        for n in c.calls:
            calls.append((n.fn, n.cfg))
            labels.append(f"{study.knob} = {c.value}, seed {c.seed}: {n.label}")
    if not calls:
        return {"built": 0, "failed": [], "seconds": 0.0}
    store = active_store()
    order = sorted(range(len(calls)), key=lambda i: -(store.estimate(calls[i][0].kind, calls[i][1]) or 0.0))
    t0 = time.perf_counter()
    out = engine_compute([calls[i] for i in order], workers=workers, progress=progress, engine=engine,
                         labels=[labels[i] for i in order])
    return {"built": len(out["built"]), "failed": [(labels[order[i]], e) for i, e in out["failed"]],
            "seconds": time.perf_counter() - t0}


def _find(claims: list[Any], study: Study) -> Any:
    for c in claims:
        if c["key"] == study.claim and (not study.subject or (c.get("subject") or "") == study.subject):
            return c
    keys = sorted({f"{c['key']}" + (f" [{c.get('subject')}]" if c.get("subject") else "") for c in claims})
    raise ValueError(f"{study.page} makes no claim {study.claim!r}"
                     f"{' of ' + study.subject if study.subject else ''} at this setting: it makes {', '.join(keys)}")


def read(study: Study, progress: Progress = silent) -> dict[str, Any]:
    """The study's answer from its stored cells (computing here, in this process, whatever is missing): per value
    the pooled claim and its cell statistics, then "appears from", "absent up to", the trend and one sentence."""
    d = study.descriptor
    rows = []
    for i, value in enumerate(study.values):
        progress(i / len(study.values), f"{study.knob} = {value}: reading {len(study.seeds)} seeds")
        per_seed = [d.claims(study.settings(value, s)) for s in study.seeds]
        pooled = _find(pool(per_seed, list(study.seeds)), study)
        cell = stats.cell_of(value, pooled, study.margin)
        rows.append((cell, pooled))
    progress(1.0, "read")
    cells = [c for c, _ in rows]
    start, end = stats.appears_from(cells), stats.absent_to(cells)
    fades, until = stats.absent_from(cells), stats.holds_to(cells)
    tr = stats.trend(cells)
    out_cells = []
    for (c, pooled), mark in zip(rows, stats.marks(cells), strict=True):
        lo, hi = c.interval
        out_cells.append({
            "value": c.value, "effect": c.effect, "se": c.se, "interval": [lo, hi], "unit": c.unit,
            "verdict": VERDICTS[c.holds], "holds": c.holds, "p_holds": c.p_holds, "p_absent": c.p_absent,
            "family": mark, "seeds": list(c.seeds), "per_seed": list(c.per_seed),
            "signs": "".join("+" if g > 0 else "-" if g < 0 else "0" for g in c.per_seed),
            "seeds_to_decide": None if mark != "cannot tell" else stats.seeds_to_decide(c, study.margin),
            "detail": pooled["detail"], "claim": pooled["claim"], "rule": pooled["rule"]})
    answer = {
        "study": study.name or f"{study.page}.{study.claim}.{study.knob}", "page": study.page, "claim": study.claim,
        "statement": rows[0][1]["claim"], "subject": study.subject, "knob": study.knob,
        "values": list(study.values), "seeds": list(study.seeds), "base": dict(study.base), "margin": study.margin,
        "level": stats.LEVEL, "cells": out_cells,
        "appears_from": None if start is None else study.values[start],
        "absent_up_to": None if end is None else study.values[end],
        "absent_from": None if fades is None else study.values[fades],
        "holds_up_to": None if until is None else study.values[until],
        "trend": None if tr is None else {"slope": tr.slope, "se": tr.se, "p": tr.p, "direction": tr.direction,
                                          "per_seed": list(tr.per_seed)},
        "over": "seeds",
        "how": ("each value's seeds pooled by the lab's rule (lab/claims.pool: the seeds' spread with Student's t "
                "plus the shared inputs' part); 'appears from' and 'absent up to' with Holm's correction over the "
                f"{len(cells)} values at the lab's one-sided level {100 * stats.LEVEL:.1f} %; 'absent' means the "
                f"effect is shown below the margin {_margin_words(study.margin, cells)} (the upper half of a TOST); "
                "the trend is each seed's slope along the grid, seeds as blocks"),
    }
    answer["sentence"] = sentence(answer)
    answer["cost"] = _cost(study)
    return answer


def _margin_words(margin: float, cells: list[stats.Cell]) -> str:
    unit = cells[0].unit if cells else "pts"
    return f"{100 * margin:.1f} pts" if unit == "pts" else f"{margin:g} {unit}"


def _cost(study: Study) -> dict[str, Any]:
    """The study's recorded CPU cost on this machine: each distinct call's own build as the store timed it (a model
    two calls share counted once, in the build that trained it)."""
    cells = plan(study)
    store = active_store()
    seen: set[str] = set()
    total, untimed = 0.0, 0
    for c in cells:
        for n in c.calls:
            key = store.key(n.fn.kind, n.cfg)
            if key in seen:
                continue
            seen.add(key)
            e = timings.own_seconds(store.root, n.fn.kind, store.describe(n.fn.kind, n.cfg)["config"])
            if e is None or not math.isfinite(e):
                untimed += 1
            else:
                total += e
    return {"cpu_seconds": total, "calls": len(seen), "untimed": untimed,
            "cells": len(cells), "stored": sum(c.done for c in cells)}
