"""The layer contract of docs/ARCHITECTURE.md, checked on the code: every import (at the top of a module or inside a
function) points down the layers, no two modules import each other through any path, and figures draw what they are
given without reading the store."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Top to bottom. A module may import its own layer and the layers below it, never one above.
LAYERS = ["pages", "app", "lab.cli", "lab.api", "lab.study", "lab.classroom", "lab.catalog", "lab.experiments",
          "lab.ops", "lab.contract", "lab.core", "lab.runtime"]
CONTRACT = {"lab.experiment", "lab.claims", "lab.estimates"}  # the experiment contract and claim records


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for d in ("lab", "app", "pages") for p in sorted((ROOT / d).rglob("*.py"))}


def imports(module: str) -> set[str]:
    """Every module `module` imports, anywhere in it (a function-level import counts)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES)
    return out


# An experiment's folder spans three layers: its science (experiment.py, claims.py) is lab.experiments, its descriptor
# (what the page, the CLI and the table offer) is lab.catalog, its workshop questions are lab.classroom.
FOLDER_LAYERS = {"descriptor": "lab.catalog", "questions": "lab.classroom"}
# What a study is and which studies the pages ship are declarations beside the descriptors (lab.catalog), so a lesson
# (lab.classroom) can ask where a shipped study's effect appears; computing and reading one is lab.study.
MODULE_LAYERS = {"lab.study.spec": "lab.catalog", "lab.study.shipped": "lab.catalog"}


def layer(module: str) -> str | None:
    if module in CONTRACT:
        return "lab.contract"
    if module in MODULE_LAYERS:
        return MODULE_LAYERS[module]
    parts = module.split(".")
    if len(parts) == 4 and parts[:2] == ["lab", "experiments"] and parts[3] in FOLDER_LAYERS:
        return FOLDER_LAYERS[parts[3]]
    for name in LAYERS:
        if module == name or module.startswith(name + "."):
            return name
    return None  # the `lab` package itself, lab.__main__, or outside the project


def test_imports_point_down_the_layers():
    wrong = []
    for m in MODULES:
        mine = layer(m)
        if mine is None:
            continue
        for i in imports(m):
            theirs = layer(i)
            if theirs is not None and LAYERS.index(theirs) < LAYERS.index(mine):
                wrong.append(f"{m} ({mine}) imports {i} ({theirs})")
    assert not wrong, "\n".join(wrong)


def test_the_library_never_imports_the_app_or_streamlit():
    wrong = [f"{m} imports {i}" for m in MODULES if m.startswith("lab")
             for i in imports(m) if i.split(".")[0] in ("app", "pages", "streamlit")]
    assert not wrong, "\n".join(wrong)


def experiment_of(module: str) -> str | None:
    parts = module.split(".")
    inside = len(parts) >= 3 and parts[:2] == ["lab", "experiments"]
    return parts[2] if inside and (ROOT / "lab/experiments" / parts[2]).is_dir() else None


def test_an_experiment_folder_imports_no_other_experiment():
    """What two experiments share lives below them (lab/core, lab/ops, the estimate helpers), so copying one folder
    starts the next experiment and editing one never changes another."""
    wrong = [f"{m} imports {i}" for m in MODULES if experiment_of(m)
             for i in imports(m) if experiment_of(i) and experiment_of(i) != experiment_of(m)]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph = {m: {i for i in imports(m) if i in MODULES and i != m} for m in MODULES}
    # a package's __init__ importing its own modules is how a package is made, not a cycle of the code
    for m in graph:
        graph[m] = {i for i in graph[m] if not (MODULES[i].name == "__init__.py" and m.startswith(i + "."))}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_the_checks_can_fail(tmp_path):
    """The rules above on made-up modules: an upward import and a cycle are found."""
    assert layer("lab.core.models.mlp") == "lab.core" and layer("lab.claims") == "lab.contract"
    assert LAYERS.index(layer("lab.experiments.delete.experiment")) < LAYERS.index(layer("lab.core.zoo"))  # allowed
    assert layer("lab.experiments.delete.descriptor") == "lab.catalog"
    assert layer("lab.experiments.delete.questions") == "lab.classroom"
    assert LAYERS.index(layer("lab.cli")) < LAYERS.index(layer("lab.classroom.reproduce"))  # reproduce -> cli: wrong


# -- figures draw what they are given ----------------------------------------------------------------------
STORE_READERS = {"active_store", "Store", "use_store", "trained", "cached_only"}


def _reads_store(fn: object, seen: set[int] | None = None) -> str | None:
    """Why calling `fn` may read the store (an entry point, the store, a trained model; followed through the
    functions of its own module), or None."""
    seen = seen if seen is not None else set()
    if id(fn) in seen:
        return None
    seen.add(id(fn))
    if hasattr(fn, "kind"):
        return f"{fn.__qualname__} is an entry point"
    if not inspect.isfunction(fn):
        return None
    try:
        tree = ast.parse(inspect.getsource(fn).strip() if fn.__code__.co_firstlineno else "")
    except (OSError, SyntaxError):
        return None
    module = inspect.getmodule(fn)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in STORE_READERS:
                return f"{fn.__qualname__} calls {name}"
            target = getattr(module, name, None)
            if target is not None and getattr(target, "__module__", None) == module.__name__:
                why = _reads_store(target, seen)
                if why:
                    return f"{fn.__qualname__} -> {why}"
            elif hasattr(target, "kind"):
                return f"{fn.__qualname__} calls the entry point {name}"
    return None


FIGURES = sorted(m for m in MODULES if m.startswith("app.figures"))


@pytest.mark.parametrize("module", FIGURES)
def test_figures_never_read_the_store(module):
    used: list[tuple[str, str]] = []  # (lab module, name) each figure module uses
    tree = ast.parse(MODULES[module].read_text())
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lab"):
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in MODULES:
                    aliases[a.asname or a.name] = full
                else:
                    used.append((node.module, a.name))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("lab"):
                    aliases[a.asname or a.name] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            used.append((aliases[node.value.id], node.attr))
    wrong = []
    for mod, name in used:
        assert not mod.startswith("lab.runtime"), f"{module} imports {mod}: figures never touch the store"
        why = _reads_store(getattr(importlib.import_module(mod), name, None))
        if why:
            wrong.append(f"{module} uses {mod}.{name}: {why}")
    assert not wrong, "\n".join(wrong)


def test_the_figure_check_finds_a_store_reader():
    from lab.experiments.layerdrop import experiment as layerdrop

    assert _reads_store(layerdrop.compare) is not None  # what app/figures_layerdrop.py once called
    assert _reads_store(layerdrop.run) is not None
    assert _reads_store(layerdrop.CompareConfig) is None
