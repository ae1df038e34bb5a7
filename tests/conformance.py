"""`check_experiment(descriptor)`: the experiment contract, checked for one experiment, in the style of
scikit-learn's `check_estimator`. Each check is a function of the descriptor that raises AssertionError (or the
ValueError of a declaration) saying what is wrong; `checks(d)` lists them, `check_experiment(d)` runs them all, and
tests/test_conformance.py runs every check for every experiment the catalog finds, so a new experiment folder is
covered with no list to extend.

- the declaration: presets set every control, controls are declared `param` fields whose defaults are the page's,
  the default view and every preset make a config and a plan of stored entry points (`Descriptor.check`);
- the command line: every flag is the config field's, with its default and choices;
- the declared ranges and choices are enforced by each class's `check`;
- the layers: the science imports neither the catalog nor the classroom, so a label edit re-keys nothing;
- one plan: warming, packs, the "ready" labels and Reproduce read the descriptor's plan;
- the workshop: every question is about a real setting and names a claim that setting's claims contain;
- the page (AppTest, quick mode): it draws every control from its declaration (label and help have one source)
  and runs exactly its plan, for the default view and for a preset: every lab call it asks of the job runner
  (app/jobs.py) is one of `plan(settings)`, and every call the plan always makes is asked.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Callable, Iterator, Optional, Sequence

from lab.catalog.descriptor import Descriptor
from lab.catalog.presets import Need, always
from lab.runtime.store import config_json

PAGE_TIMEOUT = 900.0  # seconds a page may take to ask for its whole plan (quick models on a loaded 2-core machine)


# -- the declaration, the command line, the layers ------------------------------------------------------------
def check_declaration(d: Descriptor) -> None:
    """Presets complete and distinct, controls declared with their help, defaults equal to the declaring class's,
    and the config of the default view and of every preset carries the page's values."""
    d.check()
    assert 3 <= len(d.presets) <= 8 and len({p.key for p in d.presets}) == len(d.presets), d.name
    for p in d.presets:
        assert p.settings != d.defaults, f"{d.name}: preset {p.key} does nothing from the default view"
    for c in d.controls:
        assert c.help, f"{d.name}: control {c.name} has no help"  # every control explains itself
        assert d.defaults[c.name] == next(f.default for f in dataclasses.fields(c.owner) if f.name == c.field)
    for settings in [d.defaults, *(p.settings for p in d.presets)]:
        cfg = d.config_of(settings)
        for c in d.controls:
            if c.owner is type(cfg):
                assert getattr(cfg, c.field) == settings[c.name], (d.name, c.name)


def check_cli(d: Descriptor) -> None:
    """Every CLI flag's default and choices are the config field's, so a default is written once."""
    from lab.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[d.name]
    actions = {a.dest: a for a in sub._actions}
    shown = [f for f in dataclasses.fields(d.config) if f.metadata.get("cli", True) and f.metadata]
    assert shown, f"{d.name}: a config without param fields"
    for f in shown:
        a = actions[f.name]
        assert a.default == f.default, (d.name, f.name)
        if f.metadata.get("choices") is not None:
            assert tuple(a.choices) == f.metadata["choices"], (d.name, f.name)
    assert d.config(**{f.name: actions[f.name].default for f in shown}) == d.config()  # the same default run


def declared_classes(d: Descriptor) -> list[type]:
    """The experiment's config and every class its page's controls are declared in."""
    return sorted({c.owner for c in d.controls} | {d.config}, key=lambda c: c.__name__)


def check_ranges(d: Descriptor) -> None:
    """A value outside a field's declared choices or range is rejected by its class."""
    import pytest

    for cls in declared_classes(d):
        for f in dataclasses.fields(cls):
            m = f.metadata
            if m.get("choices") is not None:
                with pytest.raises(ValueError, match="choose one of"):
                    cls(**{f.name: "no-such-choice"})
            elif m.get("hi") is not None and f.type in ("int", "Optional[int]"):
                with pytest.raises(ValueError):
                    cls(**{f.name: int(m["hi"]) + 1})


def check_layers(d: Descriptor) -> None:
    """Nothing a result depends on imports the catalog or the classroom: a label, preset or question edit keeps
    every stored result."""
    from lab.runtime.codeversion import dependencies

    deps = dependencies(d.config.__module__)
    assert not any(m.startswith(("lab.catalog", "lab.classroom")) for m in deps), (d.name, sorted(deps))


# -- one plan ---------------------------------------------------------------------------------------------------
def settings_of(d: Descriptor) -> list[tuple[str, dict[str, Any]]]:
    return [("default", d.defaults), *((p.key, p.settings) for p in d.presets)]


def check_one_plan(d: Descriptor) -> None:
    """Warming computes exactly what the plans of the default view and the presets always ask (optional calls left
    out), packs can carry each of their kinds, and Reproduce's call is a command line of the experiment."""
    from lab.classroom import pack, reproduce, warm

    kinds = pack.known_kinds()
    want: set[str] = set()
    for name, settings in settings_of(d):
        calls = d.plan(settings)
        assert all(n.fn.kind in kinds for n in calls), (d.name, name)  # a pack can carry what a page computes
        want |= {key_of(n.fn, n.cfg) for n in always(calls)}
        cmd = reproduce.command(d.reproduce(settings).cfg)
        assert cmd and f" -m lab {d.name}" in cmd, (d.name, name, cmd)
    assert {i.key for i in warm.plan([d.name])} == want, d.name


def key_of(fn: Callable[..., Any], cfg: Any) -> str:
    """One lab call as a comparable string (the store's kind and the config's canonical JSON)."""
    return f"{getattr(fn, 'kind', fn.__qualname__)}:{config_json(cfg)}"


# -- the workshop -------------------------------------------------------------------------------------------------
def check_questions(d: Descriptor) -> None:
    """Every workshop question is about the default view or a preset, and names a claim that the page's claims for
    that setting contain (computed in quick mode: the models train one epoch)."""
    from lab.classroom import questions
    from lab.classroom.class_checks import QUESTION

    qs = questions.of(d.name)
    if not qs:
        return
    assert d.claims is not None, f"{d.name} has workshop questions but no claims"
    presets = {p.key: p.settings for p in d.presets}
    os.environ["LAYERLAB_QUICK"] = "1"  # tests/conftest.py restores it after the test
    claims: dict[str, set[str]] = {}
    for q in qs:
        assert QUESTION.fullmatch(q.key), q.key
        assert q.preset == "" or q.preset in presets, (q.key, q.preset)
        if q.preset not in claims:
            claims[q.preset] = {c["key"] for c in d.claims(presets.get(q.preset, d.defaults))}
        assert q.claim in claims[q.preset], (f"{q.key}: the claims of its setting ({q.preset or 'default'}) have no "
                                             f"{q.claim!r}; they have {sorted(claims[q.preset])}")


# -- the page -----------------------------------------------------------------------------------------------------
def compare_calls(asked: set[str], plan: Sequence[Need], where: str) -> None:
    """The page asked exactly for the calls its plan always makes, and for nothing outside the plan."""
    want = {key_of(n.fn, n.cfg) for n in always(plan)}
    allowed = {key_of(n.fn, n.cfg) for n in plan}
    missing, extra = sorted(want - asked), sorted(asked - allowed)
    assert not missing and not extra, (f"{where}: the page did not ask for {missing} of its plan, and asked for "
                                       f"{extra} outside it")


class Recorder:
    """Every lab call a page asks of the job runner (app/jobs.py: `asked_hooks`), as `key_of` strings."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def __call__(self, fn: Callable[..., Any], cfg: Any) -> None:
        self.asked.add(key_of(fn, cfg))

    def __enter__(self) -> "Recorder":
        from app import jobs

        jobs.asked_hooks.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        from app import jobs

        jobs.asked_hooks.remove(self)


def _settled(at: Any, rec: Recorder, plan: Sequence[Need], timeout: float) -> None:
    """Rerun the page until it has asked for every call its plan always makes (its pieces land one by one and it
    asks for the next ones as they do; AppTest runs no timers), and once more so that a call it makes only after
    drawing everything would show too."""
    from tests.apptest_util import assert_clean

    want = {key_of(n.fn, n.cfg) for n in always(plan)}
    deadline = time.monotonic() + timeout
    while not want <= rec.asked and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
        assert_clean(at)
    at.run()
    assert_clean(at)


def check_controls_drawn(d: Descriptor, at: Any) -> None:
    """The page draws every control of its descriptor, each as the registered `Control` of the same declaration,
    with the declaration's label and help: one source for each (a page cannot pass its own)."""
    registered = at.session_state["_layerlab_controls"]
    assert list(registered) == [c.name for c in d.controls], (d.name, list(registered))
    widgets = {w.key: w for kind in ("selectbox", "slider", "number_input", "multiselect", "select_slider")
               for w in getattr(at, kind) if w.key in registered}
    for c in d.controls:
        r = registered[c.name]
        assert (r.owner, r.field) == (c.owner, c.field), (d.name, c.name)
        w = widgets.get(c.name)
        assert w is not None, f"{d.name}: no widget for control {c.name}"
        assert w.label == c.label and w.help == c.help, (d.name, c.name, w.label, w.help)


def check_page(d: Descriptor, preset: Optional[str] = None, timeout: float = PAGE_TIMEOUT) -> None:
    """The page (AppTest, quick mode) draws its controls from their declarations and runs exactly its plan, in its
    default view and after the Try-this button of `preset` (default: its first preset)."""
    from tests.apptest_util import open_page

    p = next(x for x in d.presets if x.key == (preset or d.presets[0].key))
    with Recorder() as rec:
        at = open_page(d.name, timeout=timeout)
        check_controls_drawn(d, at)
        _settled(at, rec, d.plan(d.defaults), timeout)
        compare_calls(rec.asked, d.plan(d.defaults), f"{d.name}, default view")
    with Recorder() as rec:
        at.button(key=f"try_{p.key}").click().run()
        _settled(at, rec, d.plan(p.settings), timeout)
        compare_calls(rec.asked, d.plan(p.settings), f"{d.name}, preset {p.key}")


STATIC_CHECKS: tuple[Callable[[Descriptor], None], ...] = (
    check_declaration, check_cli, check_ranges, check_layers, check_one_plan, check_questions)


def checks(d: Descriptor) -> Iterator[tuple[str, Callable[[], None]]]:
    """(name, check) of every check of one experiment, the page's last (it is the slow one)."""
    for check in STATIC_CHECKS:
        yield check.__name__, (lambda check=check: check(d))
    yield check_page.__name__, (lambda: check_page(d))


def check_experiment(d: Descriptor) -> None:
    """Every check of the experiment contract for one descriptor; the first failure raises."""
    for _, check in checks(d):
        check()
