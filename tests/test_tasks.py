"""A recipe on another task (lab/core/task_fit.py: on_task, check_task): shapes read from the data itself, the own task
keeps the stored spec, epochs scale with the task's size, every experiment's config and CLI take --task, and a bad
task is one clear message."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lab.catalog import descriptors
from lab.core import page_models, recipes, task_fit
from lab.core.data_csv import save_csv
from lab.core.models import MLPConfig, ViTConfig
from lab.core.zoo import build, task
from lab.runtime.store import Store

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(task_fit.TASK_SHAPES))
def test_each_static_task_shape_is_the_data_sets_own(name):
    shape, d = task_fit.TASK_SHAPES[name], task(name)
    assert (shape.n_features, shape.n_classes, shape.n_train) == (d.n_features, d.n_classes, len(d.train))
    assert shape.kind == ("image" if name == "digits" else "sequence" if name.startswith("mnist1d") else "table")


def test_the_own_task_is_the_same_spec_so_stored_weights_are_kept():
    for spec in (page_models.mlp_spec("plain", 3), page_models.vit_spec("shuffle", 6, 1),
                 page_models.layerdrop_spec("residual", 0.5, 0)):
        assert task_fit.on_task(spec, None) is spec and task_fit.on_task(spec, spec.task) is spec


def test_an_mlp_on_another_task_reads_its_features_and_trains_as_many_inputs():
    s = task_fit.on_task(page_models.mlp_spec("residual", 0), "mnist1d")
    assert (s.model.n_in, s.model.n_out, s.task) == (40, 10, "mnist1d")
    assert s.model.blocks == recipes.MLP_BLOCKS and s.model.width == recipes.MLP_WIDTH  # the recipe's shape is kept
    assert s.train.epochs == 96  # 12 epochs of 28,000 inputs = 96 of 3,500
    assert s.train.checkpoints == (0, 8, 16, 24, 40)  # (0, 1, 2, 3, 5) scaled alike
    tiny = task_fit.on_task(page_models.mlp_spec("plain", 0), "wine")
    assert tiny.train.epochs == recipes.MLP_EPOCHS * task_fit.MAX_EPOCH_SCALE  # capped
    big = task_fit.on_task(page_models.mlp_spec("plain", 0), "mnist1d-large")
    assert big.train.epochs == 31  # never fewer than the recipe's 12: 28,000 / 11,000 x 12, rounded up


def test_the_vit_reads_mnist1d_as_a_sequence_of_patches_and_keeps_its_epochs():
    s = task_fit.on_task(page_models.vit_spec("sequential", 6, 0), "mnist1d")
    assert isinstance(s.model, ViTConfig)
    assert (s.model.seq, s.model.patch, s.model.n_classes, s.train.epochs) == (40, 4, 10, recipes.VIT_EPOCHS)
    m = build(s.model, 0)
    d = task("mnist1d")
    assert m(d.test.x[:5]).shape == (5, 10)
    back = task_fit.on_task(s, "digits")  # and back to the image: the digits recipe's own shape
    assert (back.model.seq, back.model.image, back.model.patch) == (0, 8, 2)


@pytest.mark.parametrize("name,family", [("wine", "vit"), ("synthetic", "vit"), ("nope", "mlp"), ("csv:xyz", "mlp"),
                                         ("csv:0123456789abcdef", "vit"), (3, "mlp")])
def test_a_task_a_model_cannot_read_is_one_clear_message(name, family):
    with pytest.raises(ValueError, match="task|CSV"):
        task_fit.check_task(name, family)


def test_registry_models_normalise_their_own_task_and_refuse_a_table_for_the_vit():
    assert page_models.ModelSeed("vit-sequential", 0, "digits").task is None
    assert page_models.ModelSeed("residual", 0, "mnist1d").spec.model.n_in == 40
    with pytest.raises(ValueError, match="ViT"):
        page_models.ModelSeed("vit-shuffle", 0, "breast-cancer")
    assert task_fit.readable("wine", "vit") is None and task_fit.readable("mnist1d", "vit") == "mnist1d"
    assert task_fit.readable("wine", "mlp") == "wine"


def test_every_experiment_page_config_takes_a_task_and_the_descriptor_offers_it():
    """The issue's rule: every MLP and ViT page offers the task control (the matrix among them)."""
    for d in descriptors().values():
        names = [f.name for f in dataclasses.fields(d.config)]
        assert "task" in names, d.name
        assert "task" in [c.name for c in d.controls], d.name


def _csv(path: Path, rows: int = 240, classes: int = 3) -> bytes:
    rng = np.random.default_rng(0)
    lines = ["a,b,c,kind"]
    for i in range(rows):
        y = i % classes
        x = rng.normal(size=3) + 2 * y
        lines.append(",".join(f"{v:.4f}" for v in x) + f",k{y}")
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return data


def test_a_stored_csv_trains_an_mlp_sized_to_it(tmp_path):
    store = Store(tmp_path / "store")
    name = save_csv(store.root, _csv(tmp_path / "t.csv"))
    from lab.runtime.store import use_store

    with use_store(store):
        spec = task_fit.on_task(page_models.mlp_spec("plain", 0), name)
        assert isinstance(spec.model, MLPConfig) and (spec.model.n_in, spec.model.n_out) == (3, 3)
        assert spec.task == name


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {"LAYERLAB_CACHE": str(cache), "LAYERLAB_QUICK": "1", "PATH": "/usr/bin:/bin", "LAYERLAB_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_cli_takes_a_task_and_your_own_csv(tmp_path):
    cache = tmp_path / "cache"
    r = _cli("delete", "--task", "mnist1d", "--k", "1", "--steps", "0", "--recovery", "none", "--json", cache=cache)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["config"]["task"] == "mnist1d" and out["result"]["n_test"] == 1000  # MNIST-1D's held-out signals
    _csv(tmp_path / "mine.csv")
    r = _cli("delete", "--data", str(tmp_path / "mine.csv"), "--k", "1", "--steps", "0", "--recovery", "none",
             "--json", cache=cache)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["config"]["task"].startswith("csv:") and out["result"]["n_test"] == 60  # 25 % of 240 rows held out
    stored = list((cache / "data").glob("*.csv"))
    assert len(stored) == 1 and stored[0].read_bytes() == (tmp_path / "mine.csv").read_bytes()


@pytest.mark.parametrize("args,says", [
    (("delete", "--data", "/nonexistent.csv"), "cannot read --data"),
    (("delete", "--task", "wine-red"), "unknown task"),
    (("shuffle", "--task", "wine"), "ViT"),
    (("lens", "--model", "vit-sequential", "--task", "synthetic"), "ViT"),
])
def test_a_bad_task_on_the_cli_is_one_line_and_status_2(tmp_path, args, says):
    r = _cli(*args, cache=tmp_path / "cache")
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
