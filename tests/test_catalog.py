"""The catalog (lab/catalog): one descriptor per experiment, and everything generated from them.

Each descriptor's own consistency (presets, controls, plan, CLI flags, layers) is checked per experiment by
tests/conformance.py (`check_experiment`); here: that navigation, Home, warming, the CLI and packs are generated
from the same list, and the one `Control` class, so adding an experiment means its science, its descriptor, its
page and its tests only."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from lab.catalog import descriptors, get
from lab.catalog.descriptor import Control, controls
from lab.classroom import pack, warm
from lab.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
NAMES = list(descriptors())


def test_every_page_file_has_a_descriptor_and_every_descriptor_a_page():
    pages = {p.stem for p in (ROOT / "pages").glob("*.py")} - {"home"}
    assert set(NAMES) == pages
    folders = {p.parent.name for p in (ROOT / "lab" / "experiments").glob("*/descriptor.py")}
    assert set(NAMES) == folders and len(NAMES) >= 1  # what the registry holds, counted from the folders
    orders = [descriptors()[n].order for n in NAMES]
    assert orders == sorted(orders)  # the navigation's order


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
    assert set(NAMES) | {"table", "warm", "pack", "seeds", "study", "surgeries", "export"} == set(sub.choices)
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
    shell = ast.parse((ROOT / "app" / "shell.py").read_text())
    named = [n.value for n in ast.walk(shell) if isinstance(n, ast.Constant) and n.value in NAMES]
    assert named == []  # the shell names no experiment: it reads the catalog


def test_a_page_narrows_a_control_only_within_its_declaration():
    """One class of a control (lab/catalog/descriptor.py): the descriptor's and the page's widget's. A widget's menu
    or bounds may only narrow the declared ones, and keep the default."""
    from lab.experiments.delete.experiment import DeleteConfig

    k = Control("k", DeleteConfig, "k")
    assert (k.label, k.default, k.bounds) == ("Blocks deleted", 2, (0, 7)) and k.help.startswith("How many")
    assert k.narrowed(hi=5).bounds == (0, 5)
    assert k.narrowed(options=(1, 2, 4)).choices == (1, 2, 4)
    with pytest.raises(ValueError, match="outside"):
        k.narrowed(hi=99)
    with pytest.raises(ValueError, match="outside"):
        k.narrowed(options=(2, 30))
    with pytest.raises(ValueError, match="leave out its default"):
        k.narrowed(options=(1, 3))
    arch = Control("arch", DeleteConfig, "arch")
    assert arch.choices == ("plain", "residual")
    with pytest.raises(ValueError, match="outside"):
        arch.narrowed(options=("plain", "tree"))
    shown = arch.narrowed(labels={"plain": "the plain MLP"})
    assert shown.show("plain") == "the plain MLP" and shown.show("residual") == arch.show("residual")
    assert shown.show(("plain", "residual")) == "the plain MLP, " + arch.show("residual")
