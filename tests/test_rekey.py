"""Keys follow what runs (issue 47): in a warmed quick-mode store, rewording a claim, adding a task record and
rewording an error of lab/core/data_csv.py each re-key nothing (recomputing the same entries writes no new store
file), while a changed constant in the training code re-keys (the control: this test can fail). Each edit is made to
a copy of the lab's source tree, run in a subprocess with PYTHONPATH pointing at it, as tests/test_codeversion.py
edits a copy of a file; and the rules that make it so are checked on the lab as it is: no stored result holds its
claims and no result's key covers a claims module, a model's key covers its own task's loader only, and every
result's key covers every loader."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.runtime.codeversion import code_version, dependencies

from .conftest import ROOT

# Warms (and then recomputes) a few cheap entries of two experiments, and prints the statements of their claims,
# computed when read: a deletion of the residual MLP (quick mode: one epoch) and the Layer-lens default view.
SCRIPT = """
import json, sys
from lab import claims
from lab.experiments.delete import claims as delete_claims, experiment as delete
from lab.experiments.lens import claims as lens_claims, experiment as lens
out = delete_claims.run_claims(delete.run(delete.DeleteConfig(k=1, select="evenly-spaced", recovery="none")))
if sys.argv[1] == "all":
    out += claims.of(lens.run(lens.LensConfig()))
print(json.dumps([c.claim for c in out]))
"""
TUNED = "a tuned lens is closer to the final prediction than the logit lens at every layer"


def run(tree: Path, store: Path, which: str = "all") -> list[str]:
    """The claims' statements the script prints, run on the source tree `tree` with the store `store`."""
    env = {**os.environ, "PYTHONPATH": str(tree), "LAYERLAB_CACHE": str(store), "LAYERLAB_QUICK": "1",
           "LAYERLAB_THREADS": "1"}
    p = subprocess.run([sys.executable, "-c", SCRIPT, which], cwd=tree, env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def entries(store: Path) -> set[str]:
    """The store's entry files (results, models and their sidecars; not timings, job files or locks)."""
    return {str(p.relative_to(store)) for p in store.rglob("*") if p.is_file() and p.suffix != ".lock"
            and p.relative_to(store).parts[0] not in ("timings", "jobs")}


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    """A copy of the lab's source tree and a quick-mode store warmed by it."""
    base = tmp_path_factory.mktemp("rekey")
    tree, store = base / "src", base / "store"
    shutil.copytree(ROOT / "lab", tree / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    said = run(tree, store)
    assert TUNED in said
    return tree, store


def edited(tree: Path, rel: str, old: str, new: str):
    """A context: `rel` (under the copy's lab/) with `old` replaced by `new`, restored afterwards."""
    path = tree / "lab" / rel
    text = path.read_text()
    assert old in text, f"{rel} no longer has {old!r}: choose another edit"

    class Edit:
        def __enter__(self) -> None:
            path.write_text(text.replace(old, new, 1))

        def __exit__(self, *exc: object) -> None:
            path.write_text(text)

    return Edit()


NEW_TASK = '''    Task("wine-again", "Wine again", "The wine table under another name.", "scikit-learn's load_wine",
         wine_task, TaskShape("table", 13, 3, 107), ("mlp",)),
)
'''


@pytest.mark.parametrize("rel, old, new", [
    # a claim reworded: claims are computed when read, so it shows at once, and nothing is recomputed
    ("experiments/lens/claims.py", TUNED, "a tuned lens is nearer the final prediction than the logit lens at every "
                                          "slot"),
    # a task record added: the registry is neutral, and a model's key covers only its own task's loader
    ("core/tasks.py", "breast_cancer_task, TaskShape(\"table\", 30, 2, 342), (\"mlp\",)),\n)\n",
     "breast_cancer_task, TaskShape(\"table\", 30, 2, 342), (\"mlp\",)),\n" + NEW_TASK),
    # an error reworded: a raise's message is not hashed
    ("core/data_csv.py", "This file is empty: upload a CSV file", "This file is empty; please upload a CSV file"),
], ids=["claim-wording", "task-record", "csv-error"])
def test_an_edit_that_changes_no_number_recomputes_nothing(warmed, rel, old, new):
    tree, store = warmed
    before = entries(store)
    with edited(tree, rel, old, new):
        said = run(tree, store)
    assert entries(store) == before, sorted(entries(store) - before)
    if rel.endswith("claims.py"):  # the new wording is read at once, from the same stored results
        assert TUNED not in said and new in said


def test_a_changed_constant_in_the_training_code_re_keys(warmed):
    """The control: the same recomputation after a change to what trains a model writes new entries (the model and
    the deletion computed on it); `1` and `1.0` give the same numbers, but the code is not the same."""
    tree, store = warmed
    before = entries(store)
    with edited(tree, "core/train.py", "return 0.5 * (1 + math.cos(", "return 0.5 * (1.0 + math.cos("):
        run(tree, store, "delete")
    new = entries(store) - before
    assert any(n.startswith("model/") for n in new) and any(n.startswith("delete/") for n in new), sorted(new)


def test_no_stored_result_holds_claims(warmed):
    _, store = warmed
    stored = [p for p in store.rglob("*.json") if p.parts[len(store.parts)] not in ("timings", "jobs")
              and not p.name.endswith(".meta.json")]
    assert stored
    for p in stored:
        data = json.loads(p.read_text())["entry"]["value"]  # a sealed entry (lab/runtime/sealed.py)
        assert not (isinstance(data, dict) and "claims" in data), p.name


def test_no_results_key_covers_claims_and_every_results_key_covers_every_loader():
    from lab.catalog import descriptors
    from lab.core import tasks
    from lab.experiment import KINDS

    descriptors()  # every @entry registers its kind
    loaders = {t.loader.__module__ for t in tasks.TASKS.values()} | {"lab.core.data_csv"}
    for kind, module in KINDS.items():
        if not module.startswith("lab.experiments."):  # kinds a test registers for itself (tests/test_engine.py)
            continue
        deps = set(dependencies(module))
        assert not {m for m in deps if m == "lab.claims" or m.endswith(".claims")}, kind
        assert loaders <= deps, (kind, loaders - deps)
        assert "lab.core.tasks" not in deps  # the records: neutral


def test_a_models_key_covers_its_own_tasks_loader_only():
    from lab.core import tasks
    from lab.core.zoo import ModelSpec
    from lab.runtime.store import Store

    zoo = set(dependencies("lab.core.zoo"))
    assert not zoo & {"lab.core.tasks", "lab.core.data_csv", "lab.core.data_digits", "lab.core.data_mnist1d",
                      "lab.core.data_tabular"}
    store = Store("/nonexistent")
    codes = {}
    for name, t in tasks.TASKS.items():
        assert t.loader.__module__.startswith("lab.core.data") and t.loader.__name__ != "<lambda>", name
        about = store.describe("model", ModelSpec(task=name))
        assert about["module"] == f"lab.core.zoo+{t.loader.__module__}:{t.loader.__qualname__}"
        assert about["code"].startswith(code_version(about["module"]))
        codes[name] = about["code"]
    assert len(set(codes.values())) == len(codes)  # two loaders of one module are told apart by name
    csv = store.describe("model", ModelSpec(task="csv:0123456789abcdef"))["module"]
    assert csv == "lab.core.zoo+lab.core.data_csv:load_csv"


COVERS = """
import json
from lab.core.zoo import ModelSpec
from lab.runtime.codeversion import code_version, dependencies
from lab.runtime.store import Store
print(json.dumps({"delete": code_version("lab.experiments.delete.experiment"),
                  "model": Store("/nonexistent").describe("model", ModelSpec(task="digits"))["code"],
                  "covered": "lab.core.data_toy" in dependencies("lab.experiments.delete.experiment")}))
"""


def test_a_new_data_module_is_covered_by_every_results_key_by_its_name_alone(tmp_path):
    """No import for its side effect (lab/core/recipes.py declares CODE_COVERS): a task's new data module joins every
    result's key, and no other task's model's."""
    tree = tmp_path / "src"
    shutil.copytree(ROOT / "lab", tree / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tree), "LAYERLAB_THREADS": "1"}

    def read() -> dict:
        p = subprocess.run([sys.executable, "-c", COVERS], cwd=tree, env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    before = read()
    (tree / "lab" / "core" / "data_toy.py").write_text("def toy_task() -> int:\n    return 1\n")
    after = read()
    assert not before["covered"] and after["covered"]
    assert after["delete"] != before["delete"] and after["model"] == before["model"]
    assert "import data_digits" not in (ROOT / "lab" / "core" / "recipes.py").read_text()
