"""The store: trained models and results on disk under `cache/`, shared by every session and process.

- An entry is named by a hash of (kind, config, code version); the code version hashes the source of the
  config's module and of every lab module it imports (lab/runtime/codeversion.py), so a change to the science never
  serves a stale result, and a change elsewhere does not throw away what it cannot affect.
- Writes are atomic (temporary file, fsync, rename): a run killed mid-write leaves no half entry.
- Two processes or threads asking for the same missing entry compute it once: the first holds a file lock
  (lab/runtime/locks.py: flock, or Windows' own) while it builds, the others wait on the lock and then load.
- Models are safetensors files (tensors plus a JSON string of metadata); results are JSON. Nothing is ever
  unpickled, so a cache file cannot run code.
- Every entry file carries a hash of its content bound to its key (lab/runtime/sealed.py), checked at every read:
  an entry that is damaged, edited, moved under another key or written before sealing is treated as missing,
  rebuilt by whoever asked, reported once per file, and never served. It never crashes the caller.
- An entry imported from a pack this course did not sign keeps its origin mark, a result built from one inherits it,
  and each read of either tells the page (a notice).
- Beside each entry a small sidecar `<key>.meta.json` records what the key hashes (kind, code version, config
  JSON, the config's module): the key cannot be inverted, and a pack (lab/classroom/pack.py) must carry and check them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import torch

from lab.runtime import cores, locks, sealed, settings, timings
from lab.runtime.atomic import write_atomically, write_json_atomically  # noqa: F401 - part of the store's API
from lab.runtime.codeversion import code_version
from lab.runtime.notices import notify
from lab.runtime.plain import to_plain
from lab.runtime.quick import quick
from lab.runtime.version import libraries

# Plumbing: cannot change a number, so editing it keeps every stored result (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

LAB_DIR = Path(__file__).resolve().parents[1]  # the lab package
TensorEntry = tuple[dict[str, torch.Tensor], dict[str, Any]]  # (tensors, JSON-able metadata)
_cached_only: ContextVar[bool] = ContextVar("layerlab_cached_only", default=False)
_active: ContextVar["Store | None"] = ContextVar("layerlab_active_store", default=None)
_builds: ContextVar["list[dict[str, Any]] | None"] = ContextVar("layerlab_builds", default=None)
# The origin marks of the entries a build reads (lab/runtime/sealed.py); a copied context (a lane) shares the list.
_origins: ContextVar["list[sealed.Origin] | None"] = ContextVar("layerlab_origins", default=None)
_foreign: dict[tuple[str, str], sealed.Origin] = {}  # (store, key) -> mark of each marked entry read or built here
_reported: set[tuple[str, int, int]] = set()  # damaged files already reported: (path, size, mtime)
_reported_lock = threading.Lock()


# Shared reads (the app's script thread, app/jobs.py): a stored JSON entry never changes once written (its name hashes
# what it depends on), so within `shared_reads()` a read returns the object read before from the same file (same
# size and mtime) instead of parsing it again, and the hooks hear of every fresh read (the app keys its figures by
# it). The objects are shared: callers in this context must not change them.
_shared: ContextVar[bool] = ContextVar("layerlab_shared_reads", default=False)
_reads: "OrderedDict[str, tuple[tuple[int, int], Any]]" = OrderedDict()
_reads_lock = threading.Lock()
MAX_SHARED_READS = 256
read_hooks: list[Callable[[str, Any], None]] = []


@contextmanager
def shared_reads() -> Iterator[None]:
    """Within this context JSON entries are read once per file and shared (see above)."""
    token = _shared.set(True)
    try:
        yield
    finally:
        _shared.reset(token)


def _open_json(path: Path, key: str) -> tuple[Any, Optional[sealed.Origin]]:
    value, origin = sealed.open_json(key, path.read_bytes())
    return to_plain(value), origin


def _read_json(path: Path, key: str) -> tuple[Any, Optional[sealed.Origin]]:
    """(value, origin) of a JSON entry, its seal checked (sealed.Damaged if it fails); shared (see above)."""
    if not _shared.get():
        return _open_json(path, key)
    st = path.stat()
    stamp = (st.st_size, st.st_mtime_ns)
    with _reads_lock:
        hit = _reads.get(str(path))
        if hit is not None and hit[0] == stamp:
            _reads.move_to_end(str(path))
            return hit[1]
    read = _open_json(path, key)
    with _reads_lock:
        _reads[str(path)] = (stamp, read)
        while len(_reads) > MAX_SHARED_READS:
            _reads.popitem(last=False)
    for hook in read_hooks:
        hook(str(path), read[0])
    return read


def _report_damaged(path: Path, exc: Exception) -> None:
    """Say once per file (per size and time) that an entry is not served: the page's cached-only reads meet the same
    damaged file at every rerun until a job has rebuilt it."""
    try:
        st = path.stat()
        stamp = (str(path), st.st_size, st.st_mtime_ns)
    except OSError:
        return
    with _reported_lock:
        if stamp in _reported:
            return
        _reported.add(stamp)
    if isinstance(exc, sealed.Unsealed):
        why = "has no checksum (written by an older version of the lab)"
    elif isinstance(exc, sealed.Damaged):
        why = "does not match its checksum (damaged or altered)"
    else:
        why = f"was unreadable ({type(exc).__name__})"
    notify(f"The saved result {path.name} {why}; it is not used and is being rebuilt.")


def _heard(root: Path, key: str, origin: Optional[sealed.Origin]) -> None:
    """An entry with an origin mark was read or built: the page is told, and a build that reads it inherits it."""
    if origin is None:
        return
    _foreign[(str(root), key)] = origin
    notify(sealed.origin_words(origin))
    bucket = _origins.get()
    if bucket is not None:
        bucket.append(origin)


def model_record(path: Path) -> Any:
    """A stored model's record (its `lab_meta`), its seal checked without loading the weights; sealed.Damaged if it
    fails (app/training_view.py shows the training curves from it)."""
    return sealed.check_tensors(path.name.split(".", 1)[0], path.read_bytes())[0]


@contextmanager
def recording_builds() -> Iterator[list[dict[str, Any]]]:
    """Within this context every entry built (not read) is recorded in the yielded list, innermost first: kind,
    config JSON and seconds (a result's seconds include the models it trained). `python -m lab warm` reports with it
    where the time went."""
    bucket: list[dict[str, Any]] = []
    token = _builds.set(bucket)
    try:
        yield bucket
    finally:
        _builds.reset(token)


class NotCached(LookupError):
    """Raised inside `cached_only()` when an entry would have to be built."""


@contextmanager
def cached_only() -> Iterator[None]:
    """Within this context the store only reads: a missing entry raises NotCached instead of being built.

    The app uses it to serve stored results straight from the script thread, so a student whose result is
    already stored never waits behind somebody else's training in the job queue.
    """
    token = _cached_only.set(True)
    try:
        yield
    finally:
        _cached_only.reset(token)


def config_json(cfg: Any) -> str:
    """Canonical JSON of a (nested) frozen-dataclass config, with class names, for hashing."""

    def enc(o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return {"__class__": type(o).__name__, **{f.name: enc(getattr(o, f.name)) for f in dataclasses.fields(o)}}
        if isinstance(o, (list, tuple)):
            return [enc(v) for v in o]
        if isinstance(o, dict):
            return {str(k): enc(v) for k, v in o.items()}
        return o

    return json.dumps(enc(cfg), sort_keys=True)


def key_of(kind: str, code: str, config: str) -> str:
    """The entry name of (kind, code version, canonical config JSON)."""
    h = hashlib.sha256(f"{kind}\n{code}\n{config}".encode()).hexdigest()[:20]
    return f"{kind}-{h}"


SIDECAR = ".meta.json"


# Which module computes each kind of entry: its code version keys the entry, so an edit of the code that builds a
# result re-keys it even when the result's config class lives elsewhere.
KIND_MODULES: dict[str, str] = {}


def register_kind(kind: str, module: str) -> None:
    """Declare that `module` computes entries of `kind` (lab/experiment.py: entry); one module per kind."""
    known = KIND_MODULES.setdefault(kind, module)
    if known != module:
        raise ValueError(f"entry kind {kind!r} is computed in {known} already; {module} must name its own kind")


class Store:
    """A folder of cache entries; see the module docstring."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._thread_locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def describe(self, kind: str, cfg: Any) -> dict[str, str]:
        """What an entry's key hashes: kind, code version (with quick mode's mark), canonical config JSON, module.
        The module is the one that computes the kind (`register_kind`), else the config's own, joined by "+" with
        the code the config says its entry reaches by name (`cfg.code_reaches()`: lab/runtime/codeversion.py)."""
        module = KIND_MODULES.get(kind, type(cfg).__module__)
        reaches = getattr(cfg, "code_reaches", None)  # code it runs by name, not import (a model: its task's loader)
        if callable(reaches):
            module = "+".join((module, *reaches()))
        code = code_version(module)  # the computing module(s) and everything they import
        if quick():  # quick-mode (one-epoch) results must never be served as real ones
            code += "-quick"
        return {"kind": kind, "code": code, "config": config_json(cfg), "module": module}

    def estimate(self, kind: str, cfg: Any) -> Optional[float]:
        """Seconds the missing entry (kind, cfg) will take to build here, from recorded builds (None: none
        comparable); see lab/runtime/timings.py."""
        return timings.estimate(self.root, kind, config_json(cfg))

    def key(self, kind: str, cfg: Any) -> str:
        """The entry name of (kind, cfg). Asked inside a build, it counts as a use of that entry for its timing: the
        zoo finds models it holds in memory by their key, without reading the store (lab/runtime/timings.py)."""
        d = self.describe(kind, cfg)
        timings.used(d["kind"], d["config"], built=False)
        key = key_of(d["kind"], d["code"], d["config"])
        bucket = _origins.get()
        if bucket is not None and (str(self.root), key) in _foreign:  # marked, and perhaps held in memory (the zoo)
            bucket.append(_foreign[(str(self.root), key)])
        return key

    def path(self, key: str, suffix: str) -> Path:
        return self.root / key.split("-", 1)[0] / f"{key}{suffix}"

    # -- locking ------------------------------------------------------------------------------------
    @contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        with self._guard:
            tlock = self._thread_locks.setdefault(key, threading.Lock())
        lock_path = self.path(key, ".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        if not tlock.acquire(blocking=False):
            with cores.lent():  # another thread builds it: our core is theirs to borrow while we wait
                tlock.acquire()
        try:
            with open(lock_path, "a+") as fh:
                if not locks.take(fh, wait=False):
                    with cores.lent():  # another process builds it: likewise
                        locks.take(fh)
                try:
                    # A process killed mid-write (a Dask worker, say) leaves its temporary file behind; the lock is
                    # ours now, so nobody else is writing this entry and its leftovers can go.
                    for tmp in lock_path.parent.glob(f".{key}.*.tmp"):
                        tmp.unlink(missing_ok=True)
                    yield
                finally:
                    locks.give(fh)
        finally:
            tlock.release()

    def _load_or_rebuild(self, about: dict[str, str], suffix: str,
                         load: Callable[[Path, str], tuple[Any, Optional[sealed.Origin]]], build: Callable[[], Any],
                         save: Callable[[Path, str, Any, Optional[sealed.Origin]], None]) -> Any:
        key = key_of(about["kind"], about["code"], about["config"])
        path = self.path(key, suffix)
        if path.exists():  # fast path: no lock needed to read a finished entry (renames are atomic)
            try:
                value, origin = load(path, key)
                timings.used(about["kind"], about["config"], built=False)
                _heard(self.root, key, origin)
                return value
            except Exception as exc:  # noqa: BLE001 - any unreadable or damaged entry is rebuilt, whatever broke it
                _report_damaged(path, exc)
        if _cached_only.get():
            raise NotCached(key)
        with self._locked(key):
            if path.exists():  # somebody else may have built it while we waited for the lock
                try:
                    value, origin = load(path, key)
                    timings.used(about["kind"], about["config"], built=False)
                    _heard(self.root, key, origin)
                    return value
                except Exception:  # noqa: BLE001
                    path.unlink(missing_ok=True)
            t0 = time.perf_counter()
            token = _origins.set([])
            try:
                with timings.measuring() as uses:  # what this build reads or builds itself (lab/runtime/timings.py)
                    value = build()
                origin = sealed.derived(_origins.get() or [])
            finally:
                _origins.reset(token)
            seconds = time.perf_counter() - t0
            log = _builds.get()
            if log is not None:
                log.append({"kind": about["kind"], "config": about["config"], "seconds": round(seconds, 2)})
            # The sidecar first: a sidecar without its entry is harmless (a pack skips it), an entry without a
            # sidecar could not be exported.
            self.write_sidecar(key, {**about, "file": path.name, "versions": libraries(),
                                     **({"origin": origin} if origin else {})})
            save(path, key, value, origin)
            timings.record(self.root, about, key, seconds, uses)
            timings.used(about["kind"], about["config"], built=True, seconds=seconds)
            _heard(self.root, key, origin)
            return value

    def write_sidecar(self, key: str, about: dict[str, Any]) -> None:
        """Record what an entry's key hashes (see the module docstring) and the library versions that computed it
        (`versions`, lab/runtime/version.py: not part of the key), atomically."""
        text = json.dumps(about, sort_keys=True)
        write_atomically(self.path(key, SIDECAR), lambda tmp: Path(tmp).write_text(text))

    # -- public API ---------------------------------------------------------------------------------
    def has(self, kind: str, cfg: Any) -> bool:
        """Whether a JSON result is stored (cheap: its first bytes, no lock), e.g. to say that a preset is ready. An
        entry of the older, unsealed format is not (warming rebuilds it); a damaged one is found when it is read."""
        d = self.describe(kind, cfg)
        try:
            with open(self.path(key_of(d["kind"], d["code"], d["config"]), ".json"), "rb") as fh:
                return fh.read(len(sealed.JSON_HEAD)) == sealed.JSON_HEAD
        except OSError:
            return False

    def tensors(self, kind: str, cfg: Any, build: Callable[[], TensorEntry]) -> TensorEntry:
        """(tensors, metadata) of an entry, built by `build()` the first time."""

        def load(path: Path, key: str) -> tuple[TensorEntry, Optional[sealed.Origin]]:
            tens, meta, origin = sealed.open_tensors(key, path.read_bytes())  # one read: checked is what is loaded
            return (tens, meta), origin

        def save(path: Path, key: str, value: TensorEntry, origin: Optional[sealed.Origin]) -> None:
            tens, meta = value
            data = sealed.seal_tensors(key, tens, to_plain(meta), origin)
            write_atomically(path, lambda tmp: Path(tmp).write_bytes(data))

        return self._load_or_rebuild(self.describe(kind, cfg), ".safetensors", load, build, save)

    def json(self, kind: str, cfg: Any, build: Callable[[], Any]) -> Any:
        """A JSON-able result, built by `build()` the first time (returned as plain data either way)."""

        built = []

        def save(path: Path, key: str, value: Any, origin: Optional[sealed.Origin]) -> None:
            built.append(True)
            data = sealed.seal_json(key, json.dumps(to_plain(value)), origin)
            write_atomically(path, lambda tmp: Path(tmp).write_bytes(data))

        value = self._load_or_rebuild(self.describe(kind, cfg), ".json", _read_json, build, save)
        return to_plain(value) if built else value  # a read is plain already (and may be shared)


_default: Store | None = None


def default_root() -> Path:
    """$LAYERLAB_CACHE; else `cache/` in a checkout; else (an installed lab, whose code sits in site-packages) the
    user's cache folder: `$XDG_CACHE_HOME/layerlab` or `~/.cache/layerlab`, `~/Library/Caches/layerlab` on macOS."""
    chosen = settings.get("LAYERLAB_CACHE")
    if chosen:
        return Path(chosen).expanduser()
    if (LAB_DIR.parent / "pyproject.toml").is_file():
        return LAB_DIR.parent / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "layerlab"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "layerlab"


def default_store() -> Store:
    """The process-wide store, at `default_root()`."""
    global _default
    root = default_root()
    if _default is None or _default.root != root:
        _default = Store(root)
    return _default


def active_store() -> Store:
    """The store of the entry point being computed (see `use_store`), else the process-wide default."""
    return _active.get() or default_store()


def resolve(store: Store | None) -> Store:
    """The store an entry point was given, else the active one (`active_store`)."""
    return store or active_store()


@contextmanager
def use_store(store: Store) -> Iterator[None]:
    """Within this context `active_store()` is `store`: an experiment's store reaches every nested lookup."""
    token = _active.set(store)
    try:
        yield
    finally:
        _active.reset(token)
