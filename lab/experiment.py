"""The experiment contract: how an experiment declares its controls and its cached entry points.

A config is a frozen dataclass whose fields are declared with `param(...)`: the default, the help sentence,
the choices or the range, written once. From those fields
- `check(cfg)` validates a config (call it from `__post_init__`),
- `add_arguments(parser, Config)` / `from_arguments(Config, args)` make the CLI subcommand's flags,
- the pages' widgets read their defaults, choices and bounds (app/controls.py: `controls.param`).

An entry point is a function `build(cfg, progress) -> plain data` decorated with `@entry("kind")`: the result is
cached in the store under (kind, config, code version), and the store the caller passes is the one every nested
lookup uses (trained models included), so a test's private store is honoured all the way down. Quick mode
(UI smoke tests) is the store key's business alone (lab/runtime/store.py), never an entry point's.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import types
import typing
from typing import Any, Callable, Optional, Sequence, TypeVar

from lab.runtime.plain import from_plain
from lab.runtime.progress import Progress, silent
from lab.runtime.store import KIND_MODULES, Store, register_kind, resolve, use_store

# Plumbing: cannot change a number, so editing it keeps every stored result (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

C = TypeVar("C")
SEED_MAX = 2**31 - 1
KINDS = KIND_MODULES  # every @entry kind -> the module that computes it (its code version keys the kind's entries)


def param(default: Any, help: str, *, label: Optional[str] = None, choices: Optional[Sequence[Any]] = None,
          labels: Optional[dict[Any, str]] = None, lo: Optional[float] = None, hi: Optional[float] = None,
          cli: bool = True) -> Any:
    """A config field with its control: `choices` (with human `labels`) or the range [lo, hi]; `cli=False` hides it
    from the command line (e.g. a shape that only tests change)."""
    meta = {"help": help, "label": label, "choices": tuple(choices) if choices is not None else None,
            "labels": dict(labels or {}), "lo": lo, "hi": hi, "cli": cli}
    return dataclasses.field(default=default, metadata=meta)


def seed_param(help: str = "Fixes the initial weights, the data order and every random draw: same seed, same "
                           "numbers.") -> Any:
    """The seed field every experiment has."""
    return param(0, help, label="Seed", lo=0, hi=SEED_MAX)


def task_param(default: Optional[str] = None) -> Any:
    """The task field of a config whose models can train on another data set (lab/core/task_fit.py: on_task); None
    (the default) is each model's own task. Validate it with task_fit.check_task in `__post_init__`."""
    return param(default, "The data the models are trained and tested on: a ready-made task, or (MLPs) your own CSV "
                 "named by its content hash (csv:<16 hex digits>; on the command line --data PATH). Another task "
                 "trains its own models by the same recipe (more epochs on a smaller task).", label="Task")


def field_type(cls: type, name: str) -> type:
    """The plain type of a field (int for `Optional[int]`)."""
    hint = typing.get_type_hints(cls)[name]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0]
    return hint


def meta(cls: type, name: str) -> dict[str, Any]:
    """The control metadata of one field (empty for a field declared without `param`)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            return dict(f.metadata)
    raise KeyError(f"{cls.__name__} has no field {name!r}")


def default(cls: type, name: str) -> Any:
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.default
    raise KeyError(f"{cls.__name__} has no field {name!r}")


def label_of(cls: type, name: str, value: Any) -> str:
    """The human label of a choice (the value itself when it has none)."""
    return meta(cls, name).get("labels", {}).get(value, str(value))


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def check(cfg: Any) -> None:
    """Validate every `param` field of a config against its choices and range; ValueError says what to do."""
    for f in dataclasses.fields(cfg):
        m, v = f.metadata, getattr(cfg, f.name)
        if not m or v is None:
            continue
        what = (m.get("label") or f.name).lower()
        if m.get("choices") is not None and v not in m["choices"]:
            raise ValueError(f"unknown {what} {v!r}; choose one of {', '.join(map(str, m['choices']))}")
        lo, hi = m.get("lo"), m.get("hi")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            lo_s, hi_s = _num(lo) if lo is not None else "-inf", _num(hi) if hi is not None else "inf"
            raise ValueError(f"{f.name}={v} is out of range: choose {what} from {lo_s} to {hi_s}")


def entry(kind: str, result: Optional[type] = None,
          tensors: bool = False) -> Callable[[Callable[[C, Progress], Any]], Callable[..., Any]]:
    """Declare a cached entry point: `@entry("kind", result=Result) def build(cfg, progress) -> Result: ...` becomes
    `run(cfg, progress=silent, store=None) -> Result`, which answers from the store or builds and stores the result.
    The store holds the result as plain data (lab/runtime/plain.py); with `result` (a dataclass) the caller gets it
    back typed whether it was just built or read, without it the plain data itself. With `tensors=True` the build
    returns (a dict of tensors, plain metadata), stored as safetensors (a model's logits, say) and returned as such;
    the kind is then a tensor kind of its descriptor (`Descriptor.tensor_kinds`), for packs."""

    if tensors and result is not None:
        raise ValueError(f"entry {kind!r}: a tensor entry returns (tensors, metadata), not a typed result")

    def wrap(build: Callable[[C, Progress], Any]) -> Callable[..., Any]:
        @functools.wraps(build)
        def run(cfg: C, progress: Progress = silent, store: Optional[Store] = None) -> Any:
            st = resolve(store)
            keep = st.tensors if tensors else st.json
            with use_store(st):  # nested entries and trained() use the caller's store, not the default one
                out = keep(kind, cfg, lambda: build(cfg, progress))
            progress(1.0, "done")
            return out if result is None else from_plain(result, out)

        run.kind = kind  # type: ignore[attr-defined]
        run.result = result  # type: ignore[attr-defined]
        run.tensors = tensors  # type: ignore[attr-defined]
        register_kind(kind, build.__module__)
        return run

    return wrap


# -- the command line --------------------------------------------------------------------------------------
def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser, cls: type, skip: Sequence[str] = ()) -> None:
    """One flag per `param` field of `cls`: type, default, choices and help from the field."""
    for f in dataclasses.fields(cls):
        m = f.metadata
        if not m or not m.get("cli", True) or f.name in skip:
            continue
        typ = field_type(cls, f.name)
        help_ = m["help"]
        if m.get("lo") is not None and m.get("hi") is not None:
            help_ += f" ({_num(m['lo'])}..{_num(m['hi'])})"
        kw: dict[str, Any] = {"default": f.default, "help": f"{help_} [default: {f.default}]", "dest": f.name}
        if typ is bool:
            parser.add_argument(_flag(f.name), action=argparse.BooleanOptionalAction, **kw)
            continue
        if m.get("choices") is not None:
            kw["choices"] = m["choices"]
        parser.add_argument(_flag(f.name), type=typ, **kw)


def from_arguments(cls: type[C], args: argparse.Namespace, **override: Any) -> C:
    """The config of the parsed flags (fields without a flag keep their defaults)."""
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    return cls(**{**values, **override})


# -- pools: how a table runs its independent entry calls -----------------------------------------------------------
Calls = Sequence[tuple[Callable[..., Any], Any]]  # (entry point, config) pairs
Pool = Callable[[Calls, Progress], list[Any]]


def serial(calls: Calls, progress: Progress = silent) -> list[Any]:
    """Run the calls one after another in this process (the default pool of every table); results in order."""
    from lab.runtime.progress import span

    n = max(1, len(calls))
    return [fn(cfg, span(progress, i / n, (i + 1) / n)) for i, (fn, cfg) in enumerate(calls)]
