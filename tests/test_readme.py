"""The front door tells the truth: README's table of pages is the catalog's, every package the code imports is
declared, the lock files pin what pyproject.toml asks for (with hashes), and the licence is there."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from lab.catalog import descriptors
from lab.catalog.readme import END, START, pages_table, with_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCKS = {"requirements.txt": False, "requirements-dev.txt": True, "requirements-macos.txt": False,
         "requirements-macos-dev.txt": True}  # file: includes the test tools


def test_readme_lists_every_page_from_the_catalog():
    assert with_table(README) == README, "README's table of pages is stale: run python -m lab.catalog.readme"
    table = README.split(START, 1)[1].split(END, 1)[0]
    for d in descriptors().values():
        assert f"**{d.title}**" in table and f"`layerlab {d.name} --help`" in table
    assert len(descriptors()) == len(list((ROOT / "lab" / "experiments").glob("*/descriptor.py")))  # no literal


def test_the_table_check_can_fail():
    stale = README.replace(pages_table(), pages_table().replace("**Layer lens**", "**Lens**"))
    assert with_table(stale) != stale
    with pytest.raises(ValueError, match="markers"):
        with_table("# a README without the markers")


def test_licence_is_mit_and_declared():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY" in text
    assert PYPROJECT["project"]["license"] == "MIT"


def _imported_top_names() -> set[str]:
    names: set[str] = set()
    for folder in ("lab", "app", "pages", "layerlab"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"lab", "app", "pages", "layerlab"}


def _declared(extra: str | None = None) -> set[str]:
    reqs = PYPROJECT["project"]["dependencies"] + (PYPROJECT["project"]["optional-dependencies"][extra]
                                                   if extra else [])
    return {Requirement(r).name.lower().replace("_", "-") for r in reqs}


def test_every_imported_package_is_declared():
    dists = packages_distributions()
    declared = _declared()
    missing = {name: dists.get(name) for name in _imported_top_names()
               if not {d.lower().replace("_", "-") for d in dists.get(name, [name])} & declared}
    assert not missing, f"imported by the lab but not in pyproject.toml's dependencies: {missing}"


def _pins(lock: str) -> dict[str, str]:
    text = (ROOT / lock).read_text()
    pins = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        m = re.match(r"([A-Za-z0-9_.\-\[\]]+)==(\S+)", block)
        if m is None:
            continue
        assert "--hash=sha256:" in block, f"{lock}: {m.group(1)} has no hash"
        pins[re.sub(r"\[.*\]", "", m.group(1)).lower()] = m.group(2).rstrip("\\").strip()
    return pins


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_lock_pins_every_declared_dependency_within_its_range(lock):
    pins = _pins(lock)
    reqs = PYPROJECT["project"]["dependencies"] + (PYPROJECT["project"]["optional-dependencies"]["test"]
                                                   if LOCKS[lock] else [])
    for text in reqs:
        req = Requirement(text)
        name = req.name.lower()
        assert name in pins, f"{lock} does not pin {name}"
        assert req.specifier.contains(pins[name], prereleases=True), f"{lock}: {name}=={pins[name]} not in {req}"


def test_linux_lock_takes_the_cpu_build_of_torch_and_no_cuda():
    for lock in ("requirements.txt", "requirements-dev.txt"):
        pins = _pins(lock)
        assert pins["torch"] == "2.13.0+cpu"
        assert not [n for n in pins if n.startswith("nvidia") or n == "triton"], f"{lock} pulls CUDA libraries"


def test_runtime_and_dev_locks_agree():
    for runtime, dev in (("requirements.txt", "requirements-dev.txt"),
                         ("requirements-macos.txt", "requirements-macos-dev.txt")):
        a, b = _pins(runtime), _pins(dev)
        assert set(a) <= set(b)
        assert {n: v for n, v in a.items() if b[n] != v} == {}


def test_streamlit_floor_is_the_first_release_with_what_the_pages_use():
    # app/controls.py passes bind= to st.selectbox, st.slider, st.select_slider and st.number_input (first in
    # Streamlit 1.55.0) and wrap= to st.button (first in 1.62.0; 1.61's buttons refuse it). The page tests passed on
    # 1.62.0 (tests/test_app_delete.py, _entry, _layerdrop, _links, _shuffle, _lens, run in a venv with it).
    req = next(Requirement(r) for r in PYPROJECT["project"]["dependencies"] if r.startswith("streamlit"))
    assert str(req.specifier) == ">=1.62"
    import inspect

    import streamlit as st

    for widget in (st.selectbox, st.slider, st.select_slider, st.number_input):
        assert "bind" in inspect.signature(widget).parameters
    assert "wrap" in inspect.signature(st.button).parameters
