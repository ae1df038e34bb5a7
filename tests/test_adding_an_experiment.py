"""The recipes a newcomer follows (docs/ARCHITECTURE.md: "Adding an experiment", "Adding a task", "Adding a
surgery"), followed to the letter in a copy of the lab's source tree and run in a subprocess with PYTHONPATH pointing
at it, as tests/test_rekey.py edits a copy.

- An experiment is four new files that no other file names: the catalog finds it, `python -m lab toy --json` prints
  an envelope valid against the unedited docs/cli-output.schema.json, the experiment contract's checks
  (tests/conformance.py: STATIC_CHECKS) pass, and its page draws its controls and runs exactly its plan.
- A task is a loader module and one record: the registry, the task facts and an experiment's `--task` read it, and
  every result's key covers its loader by the module's name (lab/core/recipes.py: CODE_COVERS), with no import for
  its side effect.
- A surgery is one `Surgery(...)` record in lab/ops/route_ops.py: tests/test_ops_registry.py adds a toy one, shows
  the Rearrange page offering it and that it re-keys no stored model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test dependency (requirements-dev.txt)")

MOST_FILES = 4  # what adding an experiment may touch (issue 62)

TOY_INIT = '''"""Nearest class mean: a toy experiment (tests/test_adding_an_experiment.py adds it to a copy of
the lab)."""
'''

TOY_EXPERIMENT = '''"""Nearest class mean: each held-out input gets the class whose mean training input is closest
to it."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lab import estimates
from lab.core.task_fit import check_task
from lab.core.zoo import task as task_data
from lab.experiment import check, entry, param, seed_param, task_param
from lab.runtime.progress import Progress


@dataclass(frozen=True)
class ToyConfig:
    per_class: int = param(0, "Training inputs averaged per class (0: all of them).", label="Inputs per class",
                           lo=0, hi=1000)
    seed: int = seed_param()
    task: str = task_param("synthetic")

    def __post_init__(self) -> None:
        check(self)
        check_task(self.task, "mlp")


@dataclass(frozen=True)
class ToyResult:
    config: ToyConfig
    acc: float
    chance: float
    outcomes: str  # per-input right/wrong on the held-out split, packed (lab/estimates.pack)


@entry("toy", result=ToyResult)
def run(cfg: ToyConfig, progress: Progress) -> ToyResult:
    d = task_data(cfg.task)
    x, y = d.train.x.reshape(len(d.train), -1), d.train.y
    g = torch.Generator().manual_seed(cfg.seed)
    means = []
    for k in range(d.n_classes):
        rows = x[y == k]
        if cfg.per_class:
            rows = rows[torch.randperm(len(rows), generator=g)[:cfg.per_class]]
        means.append(rows.mean(0))
    guess = torch.cdist(d.test.x.reshape(len(d.test), -1), torch.stack(means)).argmin(1)
    right = guess == d.test.y
    return ToyResult(cfg, float(right.float().mean()), float(d.chance), estimates.pack(right))
'''

TOY_DESCRIPTOR = '''"""Nearest class mean: the descriptor (page, presets, CLI) and the claims of
lab/experiments/toy/experiment.py."""

from __future__ import annotations

from typing import Any

from lab import claims as C
from lab import estimates
from lab.catalog.descriptor import Descriptor, config_from, controls, defaults
from lab.catalog.presets import Need, preset
from lab.experiments.toy import experiment as toy

CONTROLS = controls(toy.ToyConfig, names=("task", "per_class", "seed"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "few", "Five inputs per class", "Each class mean from five training inputs.", per_class=5),
    preset(DEFAULTS, "digits", "Digits", "The 8x8 digits: is a digit's mean image enough?", task="digits"),
    preset(DEFAULTS, "wine", "Wine", "Three cultivars, 13 measurements.", task="wine"),
)


@C.reads(toy.ToyResult)
def result_claims(r: toy.ToyResult) -> list[C.Claim]:
    acc = estimates.accuracy(estimates.unpack(r.outcomes))
    return [C.claim("toy.above-chance", "the nearest class mean beats chance on held-out inputs",
                    "a textbook baseline", {"acc": r.acc, "chance": r.chance},
                    "held-out accuracy above chance, beyond the noise", [C.test("accuracy", acc, ">=", r.chance)],
                    f"held-out {C.pct(r.acc)} against chance {C.pct(r.chance)}")]


def config_of(settings: dict[str, Any]) -> toy.ToyConfig:
    return config_from(toy.ToyConfig, settings, CONTROLS)


def plan(settings: dict[str, Any]) -> list[Need]:
    return [Need("Averaging each class's training inputs", toy.run, config_of(settings), "run")]


DESCRIPTOR = Descriptor(
    name="toy", order=900, title="Nearest class mean", icon=":material/science:",
    summary="Classify by the closest class mean.", about="classify each input by the closest class mean",
    config=toy.ToyConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=config_of, run=toy.run,
    cli_help="the nearest class mean of a task", cli_summary=lambda r: f"held-out {r.acc:.4f} (chance {r.chance:.3f})",
    claims=lambda settings: C.of(toy.run(config_of(settings))))
'''

TOY_PAGE = '''"""Nearest class mean: widgets -> ToyConfig -> lab.experiments.toy -> its accuracy and its claim."""

import streamlit as st

from app import claims_view, classroom, controls, task_control
from app.figures_common import accuracies
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import pct
from lab.experiments.toy import descriptor as described
from lab.experiments.toy import experiment as toy

st.title(":material/science: Nearest class mean")
page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    task_control.task_select(toy.ToyConfig, "mlp")
    controls.param(toy.ToyConfig, "per_class", "number")
    controls.param(toy.ToyConfig, "seed", "number", hi=PAGE_SEED_MAX)
page.toolbar()
view = page.view()


def metrics_of(r: toy.ToyResult, s: dict) -> list[classroom.Metric]:
    return [classroom.Metric("Held-out accuracy", pct(r.acc)), classroom.Metric("Chance", pct(r.chance))]


with page.results():
    r = page.show_run(view, metrics_of, accuracies)
    page.reproduce(accuracies)
claims_view.show(described.result_claims(r), page=page)
'''

# Run in the copy: the catalog's names, and every static check of the experiment contract and the page's check for
# the toy (its own subprocess, so that nothing of this test session's lab is imported).
CONTRACT = """
import json, sys
import lab
assert lab.__file__.startswith(sys.argv[1]), lab.__file__  # the copy's lab, not the checkout's
from lab.catalog import descriptors, get
from tests import conformance
d = get("toy")
for check in conformance.STATIC_CHECKS:
    check(d)
conformance.check_page(d)
print(json.dumps({"names": list(descriptors()), "checked": [c.__name__ for c in conformance.STATIC_CHECKS]}))
"""

RINGS = '''"""Two rings: a toy task (tests/test_adding_an_experiment.py adds it to a copy of the lab): 400 points in the
plane, the inner ring one class and the outer the other, split and standardised as every table is (data_tabular.py)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from lab.core.data import Dataset
from lab.core.data_tabular import tabular_dataset


@lru_cache(maxsize=1)
def rings_task() -> Dataset:
    """The task `rings` (lab/core/tasks.py)."""
    rng = np.random.default_rng(0)
    y = np.arange(400) % 2
    angle = rng.uniform(0, 2 * np.pi, len(y))
    radius = 1.0 + y + rng.normal(0, 0.2, len(y))
    return tabular_dataset("rings", np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1), y, 2)
'''
RINGS_IMPORT = ("from lab.core.data_tabular import breast_cancer_task, wine_task\n",
                "from lab.core.data_tabular import breast_cancer_task, wine_task\n"
                "from lab.core.data_rings import rings_task\n")
RINGS_RECORD = ('''         breast_cancer_task, TaskShape("table", 30, 2, 342), ("mlp",)),
)
''', '''         breast_cancer_task, TaskShape("table", 30, 2, 342), ("mlp",)),
    Task("rings", "Two rings (toy)", "An inner and an outer ring of points in the plane.",
         "generated by the lab (lab/core/data_rings.py), seed 0", rings_task, TaskShape("table", 2, 2, 240),
         ("mlp",)),
)
''')

TASK = """
import json
from lab.catalog import descriptors
from lab.core import task_fit, tasks
from lab.core.task_facts import task_facts
from lab.core.zoo import ModelSpec
from lab.experiment import KINDS
from lab.runtime.codeversion import dependencies
from lab.runtime.store import Store
t, d = tasks.get("rings"), tasks.load("rings")
task_fit.check_task("rings", "mlp")
descriptors()  # every @entry registers its kind
print(json.dumps({
    "shape": [t.shape.n_features, t.shape.n_classes, t.shape.n_train],
    "data": [d.n_features, d.n_classes, len(d.train)],
    "menu": "rings" in tasks.family_tasks("mlp"), "facts": task_facts("rings").label,
    "model": Store("/nonexistent").describe("model", ModelSpec(task="rings"))["module"],
    "uncovered": sorted(k for k, m in KINDS.items()
                        if m.startswith("lab.experiments.") and "lab.core.data_rings" not in dependencies(m)),
}))
"""


class Copy:
    """A copy of the lab's source tree, and every file written or edited in it since it was made."""

    def __init__(self, base: Path, parts: tuple[str, ...]) -> None:
        self.root = base / "src"
        for part in parts:
            src = ROOT / part
            if src.is_dir():
                shutil.copytree(src, self.root / part, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                (self.root / part).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, self.root / part)
        self.touched: set[str] = set()

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        assert not path.exists(), f"{rel} exists already: a new file was meant"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self.touched.add(rel)

    def edit(self, rel: str, old: str, new: str) -> None:
        path = self.root / rel
        text = path.read_text()
        assert text.count(old) == 1, f"{rel} no longer has {old!r} once: follow the recipe again"
        path.write_text(text.replace(old, new))
        self.touched.add(rel)

    def changed(self) -> set[str]:
        """Every file of the copy that is new or differs from the checkout's (the proof of `touched`)."""
        out = set()
        for path in self.root.rglob("*"):
            rel = path.relative_to(self.root)
            if path.is_file() and "__pycache__" not in rel.parts:
                orig = ROOT / rel
                if not orig.is_file() or orig.read_bytes() != path.read_bytes():
                    out.add(rel.as_posix())
        return out

    def run(self, *args: str, store: Path) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(self.root), "LAYERLAB_CACHE": str(store), "LAYERLAB_QUICK": "1",
               "LAYERLAB_THREADS": "1", "LAYERLAB_ENGINE": "threads", "LAYERLAB_WARM": "0"}
        p = subprocess.run([sys.executable, *args], cwd=self.root, env=env, capture_output=True, text=True,
                           timeout=900)
        assert p.returncode == 0, p.stderr[-4000:]
        return p


def test_an_experiment_is_four_files_that_nothing_else_names(tmp_path):
    tree = Copy(tmp_path, ("lab", "app", "pages", ".streamlit", "docs/cli-output.schema.json", "tests/__init__.py",
                           "tests/conformance.py", "tests/apptest_util.py"))
    tree.write("lab/experiments/toy/__init__.py", TOY_INIT)
    tree.write("lab/experiments/toy/experiment.py", TOY_EXPERIMENT)
    tree.write("lab/experiments/toy/descriptor.py", TOY_DESCRIPTOR)
    tree.write("pages/toy.py", TOY_PAGE)
    assert tree.changed() == tree.touched and len(tree.touched) <= MOST_FILES, sorted(tree.changed())

    said = json.loads(tree.run("-c", CONTRACT, str(tree.root), store=tmp_path / "store").stdout.splitlines()[-1])
    assert said["names"][-1] == "toy" and len(said["names"]) == len(list((ROOT / "pages").glob("*.py")))  # + home
    assert len(said["checked"]) >= 6

    out = json.loads(tree.run("-m", "lab", "toy", "--per-class", "5", "--json", store=tmp_path / "store").stdout)
    schema = json.loads((tree.root / "docs" / "cli-output.schema.json").read_text())  # as it is: not edited
    jsonschema.Draft202012Validator(schema).validate(out)
    assert out["command"] == "toy" and out["config"]["per_class"] == 5
    assert [c["key"] for c in out["result"]["claims"]] == ["toy.above-chance"]


def test_a_task_is_a_loader_module_and_one_record(tmp_path):
    tree = Copy(tmp_path, ("lab",))
    tree.write("lab/core/data_rings.py", RINGS)
    tree.edit("lab/core/tasks.py", *RINGS_IMPORT)
    tree.edit("lab/core/tasks.py", *RINGS_RECORD)
    assert tree.changed() == tree.touched == {"lab/core/data_rings.py", "lab/core/tasks.py"}

    said = json.loads(tree.run("-c", TASK, store=tmp_path / "store").stdout.splitlines()[-1])
    assert said["shape"] == said["data"] == [2, 2, 240]  # the record says what the loader builds
    assert said["menu"] and said["facts"] == "Two rings (toy)"
    assert said["model"] == "lab.core.zoo+lab.core.data_rings:rings_task"  # a model's key: its own task's loader
    assert said["uncovered"] == []  # every result's key covers the new loader, by its module's name alone
    out = json.loads(tree.run("-m", "lab", "delete", "--task", "rings", "--k", "1", "--recovery", "none", "--json",
                              store=tmp_path / "store").stdout)
    assert out["config"]["task"] == "rings" and out["result"]["claims"]  # an experiment trains and runs on it
