"""One descriptor per experiment: everything the lab says *about* an experiment, as data, in one place.

The science (lab/experiments/NAME.py) computes; its descriptor (lab/catalog/NAME.py) says how it is offered:
title, icon and summary (navigation, Home), its config class and the page's controls (config fields, plus
page-only controls declared as `param` fields of a small dataclass of their own), presets and what a setting
needs (warming, "ready" labels), the CLI subcommand (its flags come from the config; its summary text here) and
its table (the flags of `python -m lab table NAME`, declared as axes). Navigation, Home, `warm`, the CLI, packs'
kinds and the presets' controls are all generated from the list of descriptors (`lab.catalog.descriptors()`).

A descriptor is imported by nothing a result depends on (the experiments never import lab/catalog), so editing
a preset's label or help re-keys no stored result. No Streamlit here.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from lab.catalog.presets import Need, Preset
from lab.experiment import meta

# Plumbing: describes, computes nothing (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

PAGE_SEED_MAX = 99  # the pages offer seeds 0..99 (the CLI accepts any seed its config allows)
TABLE_SEEDS = 2  # how many seeds a `python -m lab table` averages unless told otherwise


@dataclass(frozen=True)
class Control:
    """One control of a page: its name (the URL key), the class declaring it as a `param` field and the field."""

    name: str
    owner: type
    field: str

    @property
    def default(self) -> Any:
        return next(f.default for f in dataclasses.fields(self.owner) if f.name == self.field)

    @property
    def meta(self) -> dict[str, Any]:
        return meta(self.owner, self.field)


def controls(*owners: type, names: Sequence[str], aliases: Optional[Mapping[str, str]] = None) -> tuple[Control, ...]:
    """The page's controls in order, each found as a `param` field of the first of `owners` that declares it
    (`aliases` maps a control's URL key to its field when they differ, e.g. Lens's `change` -> `route_op`)."""
    aliases = dict(aliases or {})
    out = []
    for n in names:
        f = aliases.get(n, n)
        owner = next((o for o in owners if any(x.name == f for x in dataclasses.fields(o))), None)
        if owner is None:
            raise ValueError(f"control {n!r} is a field of none of {[o.__name__ for o in owners]}")
        if not meta(owner, f):
            raise ValueError(f"control {n!r}: {owner.__name__}.{f} is not declared with param()")
        out.append(Control(n, owner, f))
    return tuple(out)


def defaults(ctrls: Sequence[Control]) -> dict[str, Any]:
    """{control: default} in page order (what `Reset` applies and every preset starts from)."""
    return {c.name: c.default for c in ctrls}


def config_from(cls: type, settings: Mapping[str, Any], ctrls: Sequence[Control], **fixed: Any) -> Any:
    """The config `cls` of a complete page setting: every control that is a field of `cls` (under its field
    name), plus `fixed`. The one way a page setting becomes a config."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {c.field: settings[c.name] for c in ctrls if c.owner is cls and c.field in names}
    return cls(**{**values, **fixed})


@dataclass(frozen=True)
class Axis:
    """One flag of an experiment's table: `--name` with its type, default, choices and help."""

    name: str
    help: str
    type: Callable[[str], Any] = int
    default: Any = None
    choices: Optional[Sequence[Any]] = None
    nargs: Optional[str] = None

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        shown = self.default not in (None, False)
        kw: dict[str, Any] = {"type": self.type, "default": self.default, "dest": self.name.replace("-", "_"),
                              "help": f"{self.help} [default: {self.default}]" if shown else self.help}
        if self.choices is not None:
            kw["choices"] = tuple(self.choices)
        if self.nargs:
            kw["nargs"] = self.nargs
        if self.type is bool:
            kw.pop("type")
            kw["action"] = "store_true"
        parser.add_argument("--" + self.name, **kw)


def seeds_axis(default: int = TABLE_SEEDS) -> Axis:
    """The `--seeds N` flag every table has: seeds 0..N-1."""
    return Axis("seeds", "how many seeds (0..N-1); numbers are means over them", int, default)


@dataclass(frozen=True)
class Table:
    """`python -m lab table NAME`: its flags (`axes`) and `main(args, pool, progress) -> text` (the engine's pool
    computes what the store lacks; the text is printed)."""

    help: str
    axes: tuple[Axis, ...]
    main: Callable[[argparse.Namespace, Any, Any], str]


@dataclass(frozen=True)
class Descriptor:
    """What the lab says about one experiment (see the module's docstring)."""

    name: str  # URL path, page file (pages/NAME.py), CLI subcommand and table
    order: int  # place in the navigation, Home and the CLI's lists
    title: str
    icon: str  # a Streamlit material icon, ":material/...:"
    summary: str  # one line (navigation, Home's list)
    about: str  # Home's paragraph: the questions the page asks (markdown, no verdicts)
    config: type  # the experiment's config class (the CLI subcommand's flags)
    controls: tuple[Control, ...]
    presets: tuple[Preset, ...]
    needs: Callable[[dict[str, Any]], list[Need]]  # the cached results a complete page setting asks for
    config_of: Callable[[dict[str, Any]], Any]  # the config of a complete page setting
    run: Callable[..., Any]  # the experiment's main entry point: run(cfg, progress)
    cli_help: str
    cli_summary: Callable[[Any], str]  # the CLI's text answer (without --json)
    # The command's whole result (--json prints all of it); default: run(cfg) with a text progress.
    cli_answer: Optional[Callable[[Any, argparse.Namespace], Any]] = None
    cli_extra: Optional[Callable[[argparse.ArgumentParser], None]] = None  # flags beyond the config's fields
    # Other configs the subcommand answers too, each with the subcommand's own config of it: its fields beyond that
    # config's are flags of `cli_extra` under the same names (lab/classroom/reproduce.py writes the command of one).
    cli_views: Mapping[type, Callable[[Any], Any]] = field(default_factory=dict)
    demo: tuple[str, ...] = ()  # the controls presentation mode shows above the figure
    table: Optional[Table] = None
    tensor_kinds: Mapping[str, str] = field(default_factory=dict)  # store kinds kept as tensors (packs)
    page_controls: Optional[type] = None  # the dataclass of page-only controls (param fields), if any
    # The claims the page shows for a complete setting, computing (and storing) what they rest on: what "run N more
    # seeds" runs at other seeds on the engine, and what bench/claims_table.py tabulates.
    claims: Optional[Callable[[dict[str, Any]], list[dict[str, Any]]]] = None

    @property
    def defaults(self) -> dict[str, Any]:
        return defaults(self.controls)

    def control(self, name: str) -> Control:
        for c in self.controls:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no control {name!r}")

    def check(self) -> None:
        """Consistency of the declaration: presets set exactly the controls, the demo names controls, the default
        setting and every preset make a valid config (raises ValueError with what is wrong)."""
        names = [c.name for c in self.controls]
        for p in self.presets:
            if [k for k, _ in p.values] != names:
                raise ValueError(f"{self.name}: preset {p.key!r} does not set exactly the page's controls")
        bad = sorted(set(self.demo) - set(names))
        if bad:
            raise ValueError(f"{self.name}: demo names unknown controls {bad}")
        for st in [self.defaults] + [p.settings for p in self.presets]:
            self.config_of(st)
            self.needs(st)
