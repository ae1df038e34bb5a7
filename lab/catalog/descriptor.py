"""One descriptor per experiment: everything the lab says *about* an experiment, as data, in one place.

The science (lab/experiments/NAME/experiment.py) computes; its descriptor (lab/experiments/NAME/descriptor.py) says
how it is offered: title, icon and summary (navigation, Home), its config class and the page's controls (config
fields, plus page-only controls declared as `param` fields of a small dataclass of their own), presets, the plan of
a setting (`plan(settings)`: the lab calls of the view, which the page runs and warming, "ready" labels, Reproduce
and the claims at other seeds read), the CLI subcommand (its flags come from the config; its summary text here) and
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

from lab.catalog.presets import Need, Preset, by_key
from lab.experiment import meta

# Plumbing: describes, computes nothing (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

PAGE_SEED_MAX = 99  # the pages offer seeds 0..99 (the CLI accepts any seed its config allows)
TABLE_SEEDS = 2  # how many seeds a `python -m lab table` averages unless told otherwise


@dataclass(frozen=True)
class Control:
    """One control of a page: its name (the URL key), the class declaring it as a `param` field and the field. Its
    default, label, help, choices or range and option labels are the declaration's, written once; a page's widget may
    only narrow them (`narrowed`: a menu of `options` within the declared ones, tighter bounds, labels of options
    that depend on the view, such as the model's own task). The one class of a control: the descriptor lists them,
    and the page's widgets (app/controls.py) are made from them and registered as them."""

    name: str
    owner: type
    field: str
    options: Optional[tuple[Any, ...]] = None  # the widget's menu, when narrower than the declared choices or range
    lo: Optional[float] = None
    hi: Optional[float] = None
    option_labels: tuple[tuple[Any, str], ...] = ()  # labels beside the declared ones (options the view names)

    @property
    def default(self) -> Any:
        return next(f.default for f in dataclasses.fields(self.owner) if f.name == self.field)

    @property
    def meta(self) -> dict[str, Any]:
        return meta(self.owner, self.field)

    @property
    def label(self) -> str:
        return self.meta.get("label") or self.name

    @property
    def help(self) -> str:
        return self.meta.get("help") or ""

    @property
    def choices(self) -> Optional[tuple[Any, ...]]:
        """The values the widget offers: its menu, else the declared choices (None for a range)."""
        return self.options if self.options is not None else self.meta.get("choices")

    @property
    def bounds(self) -> tuple[Optional[float], Optional[float]]:
        """[lo, hi] of a ranged control: the widget's, else the declared ones."""
        m = self.meta
        return (m.get("lo") if self.lo is None else self.lo, m.get("hi") if self.hi is None else self.hi)

    @property
    def labels(self) -> dict[Any, str]:
        """Human words for option values: the declared labels, and the view's own."""
        return {**(self.meta.get("labels") or {}), **dict(self.option_labels)}

    def show(self, value: Any) -> str:
        """A value in words (several options: each, comma-separated)."""
        if isinstance(value, (tuple, list)):
            return ", ".join(self.show(v) for v in value) or "none"
        return self.labels.get(value, str(value))

    def narrowed(self, options: Optional[Sequence[Any]] = None, lo: Optional[float] = None,
                 hi: Optional[float] = None, labels: Optional[Mapping[Any, str]] = None) -> "Control":
        """This control as a widget draws it: a menu of `options` or bounds [lo, hi] within what the field declares
        (a ValueError otherwise), and labels for options the declaration cannot name."""
        m = self.meta
        d_lo, d_hi = m.get("lo"), m.get("hi")
        if options is not None:
            declared = m.get("choices")
            bad = [o for o in options if (declared is not None and o not in declared)
                   or (o is not None and not isinstance(o, (str, bool)) and d_lo is not None and o < d_lo)
                   or (o is not None and not isinstance(o, (str, bool)) and d_hi is not None and o > d_hi)]
            if bad:
                raise ValueError(f"control {self.name!r}: options {bad} are outside what "
                                 f"{self.owner.__name__}.{self.field} declares")
            wanted = self.default if isinstance(self.default, tuple) else (self.default,)
            if any(v not in options for v in wanted):
                raise ValueError(f"control {self.name!r}: the options {list(options)} leave out its default, "
                                 f"{self.default!r}")
        for bound in (lo, hi):
            if bound is not None and ((d_lo is not None and bound < d_lo) or (d_hi is not None and bound > d_hi)):
                raise ValueError(f"control {self.name!r}: bound {bound} is outside [{d_lo}, {d_hi}] declared by "
                                 f"{self.owner.__name__}.{self.field}")
        return dataclasses.replace(self, options=None if options is None else tuple(options), lo=lo, hi=hi,
                                   option_labels=tuple((labels or {}).items()))


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
    name), plus `fixed`. The one way a page setting becomes a config. A setting may also name a field of `cls` that
    no control offers (a study's knob, lab/study: the teacher's `blocks`, the training `epochs`): it is passed on
    under its own name. Pages never make such keys (their settings come from their widgets), so a page's config is
    its controls' and nothing else."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {c.field: settings[c.name] for c in ctrls if c.owner is cls and c.field in names}
    offered = {c.name for c in ctrls}
    beyond = {k: v for k, v in settings.items() if k in names and k not in offered and k not in values}
    return cls(**{**values, **beyond, **fixed})


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
    """`python -m lab table NAME`: its flags (`axes`) and `main(args, pool)`, which prints the table's text (the
    engine's pool computes what the store lacks) and returns its `TableRows`, what `--json` prints."""

    help: str
    axes: tuple[Axis, ...]
    main: Callable[[argparse.Namespace, Any], Any]


@dataclass(frozen=True)
class TableRows:
    """What a table computed, for a researcher's tools: one record per row with named columns (every seed's own
    value, not only the means the text prints), and the claims the text states."""

    rows: list[dict[str, Any]]
    claims: list[Any] = field(default_factory=list)


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
    plan: Callable[[dict[str, Any]], list[Need]]  # the lab calls of a complete page setting: the page runs these
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
    # The lab call that `config_of`'s config answers, when it is not `run` (Re-initialise: the layer in focus).
    config_entry: Optional[Callable[..., Any]] = None
    # Whether a setting's view pools its recipe claims over MIN_SEEDS training seeds without a click (its models
    # are quick to train): None lets lab/classroom/seeds.default_seeds decide from the models the plan names (MLPs
    # yes, a ViT no); a descriptor says otherwise only where that guess is wrong for its page.
    seeds_by_default: Optional[Callable[[dict[str, Any]], bool]] = None

    @property
    def defaults(self) -> dict[str, Any]:
        return defaults(self.controls)

    def control(self, name: str) -> Control:
        for c in self.controls:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no control {name!r}")

    def reproduce(self, settings: dict[str, Any]) -> Need:
        """The one lab call that recomputes a view (the Reproduce expander's command, snippet and notebook)."""
        return Need("this view", self.config_entry or self.run, self.config_of(settings), key="reproduce")

    def check(self) -> None:
        """Consistency of the declaration: presets set exactly the controls, the demo names controls, the default
        setting and every preset make a valid config and a plan of stored entry points, each call named once
        (raises ValueError with what is wrong)."""
        names = [c.name for c in self.controls]
        for p in self.presets:
            if [k for k, _ in p.values] != names:
                raise ValueError(f"{self.name}: preset {p.key!r} does not set exactly the page's controls")
        bad = sorted(set(self.demo) - set(names))
        if bad:
            raise ValueError(f"{self.name}: demo names unknown controls {bad}")
        for st in [self.defaults] + [p.settings for p in self.presets]:
            self.config_of(st)
            calls = self.plan(st)
            by_key(calls)
            lost = [n.key for n in calls if getattr(n.fn, "kind", None) is None]
            if not calls or lost:
                raise ValueError(f"{self.name}: a plan lists stored entry points (lab.experiment.entry), at least "
                                 f"one; not {lost}")
