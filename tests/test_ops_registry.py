"""Surgeries in one registry (lab/ops/registry.py): every page, the matrix and the CLI read it, and a new surgery
re-keys no stored model. The toy surgery is added to a copy of the lab's source tree and read in a subprocess, as
tests/test_rekey.py edits a copy; the control is that the results which offer surgeries do re-key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.ops import registry, route_ops, weight_ops

from .conftest import ROOT

# Prints every registry model's key code (seed 0) and every task's default model's, the Rearrange results' code
# version, the toy surgery's route if there is one, and the choices the Rearrange page offers.
SCRIPT = """
import json
from lab.core import model_registry, tasks
from lab.core.zoo import ModelSpec
from lab.experiments.rearrange import experiment as rearrange
from lab.ops import registry, route_ops
from lab.runtime.codeversion import code_version
from lab.runtime.store import Store
store = Store("/nonexistent")
models = {n: store.describe("model", m.spec(0))["code"] for n, m in model_registry.REGISTRY.items()}
models.update({"task " + t: store.describe("model", ModelSpec(task=t))["code"] for t in tasks.TASKS})
toy = list(route_ops.route_of("toy", 5)) if "toy" in registry.surgeries() else None
print(json.dumps({"models": models, "rearrange": code_version(rearrange.__name__), "toy": toy,
                  "offered": list(rearrange.OPS)}))
"""
TOY = '''    Surgery("toy", "toy: the middle back to front, twice", "route",
            apply=_middle_body(lambda s, mid, b, red, k: mid[::-1][::-1][::-1])),
)
_ALL = '''


def _read(tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "LAYERLAB_THREADS": "1"}
    p = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tree, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("ops") / "src"
    shutil.copytree(ROOT / "lab", base / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    return base


def test_a_new_surgery_is_offered_and_re_keys_no_stored_model(tree):
    before = _read(tree)
    path = tree / "lab" / "ops" / "route_ops.py"
    text = path.read_text()
    assert text.count("\n)\n_ALL = ") == 1, "route_ops.py's declarations moved: choose another place for the toy"
    path.write_text(text.replace("\n)\n_ALL = ", "\n" + TOY, 1))
    after = _read(tree)
    assert before["toy"] is None and after["toy"] == [0, 3, 2, 1, 4]  # declared once, it applies to a route
    assert after["offered"] == [*before["offered"], "toy"]  # and the page that offers route surgeries offers it
    assert len(before["models"]) >= 10
    assert after["models"] == before["models"]  # no stored model's key changes
    assert after["rearrange"] != before["rearrange"]  # the control: the results that offer surgeries re-key


def test_no_trained_models_key_covers_a_surgery():
    from lab.runtime.codeversion import dependencies

    deps = set(dependencies("lab.core.zoo")) | set(dependencies("lab.core.train"))
    assert not {m for m in deps if m.startswith("lab.ops")}, sorted(deps)
    assert "lab.ops.route_ops" in dependencies("lab.experiments.rearrange.experiment")  # the check can fail


def test_every_page_and_the_matrix_name_surgeries_of_the_registry():
    from lab.experiments.lens import experiment as lens
    from lab.experiments.matrix import experiment as matrix
    from lab.experiments.rearrange import experiment as rearrange
    from lab.experiments.reinit import experiment as reinit

    found = registry.surgeries()
    assert list(rearrange.OPS) == [n for n, s in found.items() if s.acts_on == "route"]
    assert list(reinit.OPS) == [n for n, s in found.items() if s.acts_on == "weights"]
    assert reinit.OP_LABELS == {n: found[n].label for n in reinit.OPS}
    assert all(registry.get(w).acts_on == "route" for w in lens.ROUTE_OPS)  # "delete", "none": page words
    assert set(matrix.COLUMN_SURGERY) == set(matrix.OPS)
    for col, name in matrix.COLUMN_SURGERY.items():
        assert name is None or name in found, col
    assert matrix.OP_LABELS["no_attn"] == found["no-attn"].label


def test_names_are_unique_and_words_resolve():
    names = [s.name for m in registry.DECLARED_IN for s in m.SURGERIES]
    assert len(names) == len(set(names)) == len(registry.surgeries())
    assert registry.get("delete").name == "skip" and registry.labels(["delete"]) == {"delete": "delete block b"}
    with pytest.raises(ValueError, match="unknown surgery 'nope'; choose one of identity, skip"):
        registry.get("nope")
    for s in registry.surgeries().values():
        assert s.apply is not None and s.label and s.acts_on


def test_a_weight_surgery_says_what_it_did():
    assert weight_ops.done("rerand", 3) == "re-randomised"
    assert weight_ops.done("reinit", 0) == "re-initialised to t = 0"
    assert weight_ops.done("reinit", 4, "epoch ") == "re-initialised to epoch 4"
    with pytest.raises(ValueError, match="choose reinit or rerand"):
        weight_ops.op("rewind")


def test_the_cli_lists_the_registry():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "lab", "surgeries", "--json"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["result"]["rows"]
    assert [r["name"] for r in rows] == list(registry.surgeries())
    assert route_ops.op("skip").label in {r["label"] for r in rows}
