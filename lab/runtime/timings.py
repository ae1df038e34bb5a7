"""How long entries took to build on this machine, so the app can say what a missing result costs from measurement.

Whenever the store builds an entry (an `@entry` result, a trained model, any kind) it records here how many wall
seconds the build took, in a small JSON file `<store>/timings/<kind>/<key>.json` written with the store's atomic
writer: Dask workers build in other processes and several servers may share the folder, and a file per entry
needs no lock (two writers of one entry write the same kind of record; the last rename wins, whole).

A record says which entries the build used and whether it built them itself (`uses`, `built_inside`): a result
computed on models that were already stored took seconds, not the minutes of a training, and must not be read as
one. `estimate(kind, cfg)` therefore answers the cost of a *cold* build, as if what it uses were missing too: its
own recorded seconds plus, for every entry it only read, that entry's estimate. The numbers come from the same
config (rebuilt after a code change, say), else from the same config at other seeds, else there is no answer
(None: "not timed on this machine yet").

Reads are file checks cached in memory: a kind's folder is listed again only when it changed (or changed in the
last seconds, below the file system's timestamp resolution), and only new or changed files are parsed.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Optional

from lab.runtime.atomic import write_json_atomically
from lab.runtime.quick import quick

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

FOLDER = "timings"  # under the store's root
RECENT_S = 2.0  # a folder changed this recently is listed again even if its mtime looks the same
MAX_DEPTH = 8  # how deep estimates follow what a build used (a guard; real chains are 1-2 deep)

_frame: ContextVar["list[dict[str, Any]] | None"] = ContextVar("layerlab_timing_frame", default=None)


# -- recording (called by lab/runtime/store.py) -------------------------------------------------------------------
@contextmanager
def measuring() -> Iterator[list[dict[str, Any]]]:
    """Around one build: yields the list of entries the build uses (filled by `used`, from nested store calls)."""
    uses: list[dict[str, Any]] = []
    token = _frame.set(uses)
    try:
        yield uses
    finally:
        _frame.reset(token)


def used(kind: str, config: str, built: bool, seconds: Optional[float] = None) -> None:
    """Tell the build in progress (if any) that it used an entry: read from the store, or built inside it."""
    uses = _frame.get()
    if uses is None:
        return
    entry = {"kind": kind, "config": config, "built": built, "seconds": None if seconds is None else round(seconds, 3)}
    for i, u in enumerate(uses):  # once per entry (its key is asked before it is read or built)
        if u["kind"] == kind and u["config"] == config:
            if built:
                uses[i] = entry
            return
    uses.append(entry)


def without_seeds(config: str) -> str:
    """A config's canonical JSON with its seed fields (`seed`, `*_seed`, at any depth) removed."""
    return _unseeded(config)


@lru_cache(maxsize=4096)
def _unseeded(config: str) -> str:
    def strip(o: Any) -> Any:
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if not (k == "seed" or k.endswith("_seed"))}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o

    try:
        return json.dumps(strip(json.loads(config)), sort_keys=True)
    except ValueError:
        return config


def record_path(root: Path | str, kind: str, key: str) -> Path:
    """Where the timing of entry `key` (of `kind`) lives in the store at `root`."""
    return Path(root) / FOLDER / kind / f"{key}.json"


def record(root: Path | str, about: dict[str, str], key: str, seconds: float, uses: list[dict[str, Any]]) -> None:
    """Write the timing of one build (`about` as the store describes an entry: kind, code, config, module).
    Never raises: a timing that cannot be written is not worth failing the build that produced a result."""

    built = [u for u in uses if u["built"]]
    data = {"kind": about["kind"], "config": about["config"], "config_unseeded": without_seeds(about["config"]),
            "code": about["code"], "quick": quick(), "seconds": round(seconds, 3),
            "own_seconds": round(max(0.0, seconds - sum(u["seconds"] or 0.0 for u in built)), 3),
            "built_inside": bool(built), "uses": uses, "when": time.time(), "host": socket.gethostname()}
    try:
        write_json_atomically(record_path(root, about["kind"], key), data)
    except (OSError, TypeError, ValueError):
        pass


# -- reading --------------------------------------------------------------------------------------------------------
class _Kind:
    """The records of one kind's folder, parsed once per file version, indexed by config and by unseeded config."""

    def __init__(self) -> None:
        self.mtime = -1
        self.listed = 0.0
        self.files: dict[str, tuple[int, Optional[dict[str, Any]]]] = {}
        self.by_config: dict[str, list[dict[str, Any]]] = {}
        self.by_unseeded: dict[str, list[dict[str, Any]]] = {}

    def refresh(self, folder: Path) -> None:
        try:
            mtime = folder.stat().st_mtime_ns
        except OSError:  # nothing recorded for this kind (yet)
            self.files, self.by_config, self.by_unseeded, self.mtime = {}, {}, {}, -1
            return
        # Unchanged since a listing made well after its last change: nothing new. (Two renames within one tick of
        # the file system's clock leave the same mtime, so a folder changed just before the listing is listed again.)
        if mtime == self.mtime and self.listed > mtime / 1e9 + RECENT_S:
            return
        now = time.time()
        files: dict[str, tuple[int, Optional[dict[str, Any]]]] = {}
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if not e.name.endswith(".json") or e.name.startswith("."):
                        continue
                    try:
                        stamp = e.stat().st_mtime_ns
                    except OSError:
                        continue
                    old = self.files.get(e.name)
                    files[e.name] = old if old is not None and old[0] == stamp else (stamp, _load(Path(e.path)))
        except OSError:
            return
        self.mtime, self.listed, self.files = mtime, now, files
        self.by_config, self.by_unseeded = {}, {}
        for _, rec in files.values():
            if rec is not None:
                self.by_config.setdefault(rec["config"], []).append(rec)
                self.by_unseeded.setdefault(_unseeded(rec["config"]), []).append(rec)


def _load(path: Path) -> Optional[dict[str, Any]]:
    """One record, or None if it is unreadable or malformed (ignored, never raised)."""
    try:
        rec = json.loads(path.read_text())
        ok = (isinstance(rec, dict) and isinstance(rec.get("kind"), str) and isinstance(rec.get("config"), str)
              and isinstance(rec.get("seconds"), (int, float)) and math.isfinite(rec["seconds"]) and rec["seconds"] >= 0
              and isinstance(rec.get("uses", []), list)
              and all(isinstance(u, dict) and isinstance(u.get("kind"), str) and isinstance(u.get("config"), str)
                      for u in rec.get("uses", [])))
        return rec if ok else None
    except (OSError, ValueError, TypeError):
        return None


_cache: dict[tuple[str, str], _Kind] = {}
_cache_lock = threading.Lock()


def _records(root: Path, kind: str) -> _Kind:
    with _cache_lock:
        k = _cache.setdefault((str(root), kind), _Kind())
        k.refresh(root / FOLDER / kind)
        return k


def _cold(root: Path, rec: dict[str, Any], q: bool, depth: int) -> Optional[float]:
    """A record's cost as a cold build: its seconds plus the estimates of what it only read."""
    total = float(rec["seconds"])
    for u in rec.get("uses", []):
        if u.get("built"):
            continue  # inside its seconds already
        e = _estimate(root, u["kind"], u["config"], q, depth + 1)
        if e is None:
            return None
        total += e
    return total


def _estimate(root: Path, kind: str, config: str, q: bool, depth: int = 0) -> Optional[float]:
    if depth > MAX_DEPTH:
        return None
    recs = _records(root, kind)
    exact = sorted((r for r in recs.by_config.get(config, []) if bool(r.get("quick")) == q),
                   key=lambda r: r.get("when", 0), reverse=True)
    for r in exact:  # the newest build of this very config (an older code version's, say)
        cost = _cold(root, r, q, depth)
        if cost is not None:
            return cost
    newest: dict[str, dict[str, Any]] = {}  # the same config at other seeds: the newest build of each
    for r in recs.by_unseeded.get(_unseeded(config), []):
        if bool(r.get("quick")) == q and r.get("when", 0) >= newest.get(r["config"], {}).get("when", -1):
            newest[r["config"]] = r
    costs = [c for c in (_cold(root, r, q, depth) for r in newest.values()) if c is not None]
    return sum(costs) / len(costs) if costs else None


def estimate(root: Path | str, kind: str, config: str) -> Optional[float]:
    """Seconds a missing entry (`kind`, canonical `config` JSON) of the store at `root` will take to build on this
    machine (a cold build: what it uses built too), from recorded builds of the same config, else the mean over the
    same config at other seeds; None if nothing comparable was recorded. File checks only, cached
    (`Store.estimate` is the way in)."""
    return _estimate(Path(root), kind, config, quick())


def typical(root: Path | str, kind: str) -> Optional[float]:
    """The median cold cost of any recorded build of `kind` here (every config, this mode): a rough guess for a
    config never built on this machine, such as a study's new grid value (its caller says it is a guess)."""
    q = quick()
    recs = _records(Path(root), kind)
    costs = sorted(c for c in (_cold(Path(root), r, q, 0) for rs in recs.by_config.values() for r in rs
                               if bool(r.get("quick")) == q) if c is not None)
    return costs[len(costs) // 2] if costs else None


def own_seconds(root: Path | str, kind: str, config: str) -> Optional[float]:
    """The seconds the newest recorded build of this very config took, with whatever it built inside it and
    nothing it only read (summed over distinct entries, what building them all took on one worker)."""
    q = quick()
    recs = [r for r in _records(Path(root), kind).by_config.get(config, []) if bool(r.get("quick")) == q]
    return float(max(recs, key=lambda r: r.get("when", 0))["seconds"]) if recs else None
