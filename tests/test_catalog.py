"""The catalog (lab/catalog): one descriptor per experiment, and everything generated from them.

Checks that a descriptor is consistent (presets complete, controls declared as params, needs computable) and that
navigation, Home, warming, the CLI and packs are generated from the same list, so adding an experiment means its
science, its descriptor, its page and its tests only."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from lab.catalog import descriptors, get
from lab.catalog.descriptor import Descriptor, controls
from lab.classroom import pack, warm
from lab.cli import build_parser
from lab.experiment import KINDS, meta

ROOT = Path(__file__).resolve().parents[1]
NAMES = list(descriptors())


def test_every_page_file_has_a_descriptor_and_every_descriptor_a_page():
    pages = {p.stem for p in (ROOT / "pages").glob("*.py")} - {"home"}
    assert set(NAMES) == pages
    assert len(NAMES) == 8 and NAMES[0] == "delete" and NAMES[-1] == "lens"  # the navigation's order


@pytest.mark.parametrize("name", NAMES)
def test_a_descriptor_is_consistent(name):
    d: Descriptor = get(name)
    d.check()  # presets set exactly the controls, demo names controls, every setting makes a config and its needs
    assert 3 <= len(d.presets) <= 8 and len({p.key for p in d.presets}) == len(d.presets)
    for p in d.presets:
        assert p.settings != d.defaults, f"{p.key} does nothing from the default view"
        needs = d.needs(p.settings)
        assert needs and all(n.fn.kind in KINDS for n in needs), p.key  # stored results `lab warm` can compute
    for c in d.controls:
        assert meta(c.owner, c.field)["help"], c.name  # every control explains itself
        # A control's default is its declaring class's default: Reset and the CLI agree.
        assert d.defaults[c.name] == next(f.default for f in dataclasses.fields(c.owner) if f.name == c.field)
    # The config of the default setting is the config's own defaults where the page has a control for the field.
    cfg = d.config_of(d.defaults)
    for c in d.controls:
        if c.owner is type(cfg):
            assert getattr(cfg, c.field) == d.defaults[c.name]


@pytest.mark.parametrize("name", NAMES)
def test_a_preset_changes_the_config_it_says_it_changes(name):
    d = get(name)
    for p in d.presets:
        cfg = d.config_of(p.settings)
        for c in d.controls:
            if c.owner is type(cfg):
                assert getattr(cfg, c.field) == p.settings[c.name], (p.key, c.name)


def test_a_control_must_be_a_declared_param():
    @dataclasses.dataclass(frozen=True)
    class Bare:
        x: int = 1

    with pytest.raises(ValueError, match="not declared with param"):
        controls(Bare, names=("x",))
    with pytest.raises(ValueError, match="none of"):
        controls(Bare, names=("y",))


def test_cli_commands_and_tables_come_from_the_descriptors():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(NAMES) | {"table", "warm", "pack", "seeds"} == set(sub.choices)
    tables = next(a for a in sub.choices["table"]._actions if a.dest == "table")
    assert set(tables.choices) == {n for n in NAMES if get(n).table is not None}
    for n in tables.choices:
        flags = {o for a in tables.choices[n]._actions for o in a.option_strings}
        assert {f"--{ax.name}" for ax in get(n).table.axes} | {"--workers"} <= flags, n
    # A table's default comes from the config it sweeps (IOT's M was written out in five places).
    iot_m = next(a for a in tables.choices["iot"]._actions if a.dest == "m")
    assert iot_m.default == get("iot").config().m


def test_warming_packs_and_navigation_use_the_same_list():
    assert warm.pages() == NAMES
    kinds = pack.known_kinds()
    assert "iot-fixed" in kinds and "model" in kinds  # tensor kinds: the zoo's and the descriptors'
    for d in descriptors().values():
        assert all(n.fn.kind in kinds for n in d.needs(d.defaults)), d.name  # a pack can carry what a page needs
    shell = ast.parse((ROOT / "app" / "shell.py").read_text())
    named = [n.value for n in ast.walk(shell) if isinstance(n, ast.Constant) and n.value in NAMES]
    assert named == []  # the shell names no experiment: it reads the catalog


def test_experiments_never_import_the_catalog_so_a_label_edit_keeps_every_stored_result():
    from lab.runtime.codeversion import dependencies

    for d in descriptors().values():
        deps = dependencies(d.config.__module__)
        assert not any(m.startswith("lab.catalog") for m in deps), (d.name, sorted(deps))
        assert not any(m.startswith("lab.classroom") for m in deps), d.name
