"""A trained model exported (lab/classroom/export.py, `python -m lab export`): its safetensors give the stored model's
logits exactly when loaded into a fresh build, its held-out accuracy is the one computed from the logits here, and
every file names the lab's version and commit."""

from __future__ import annotations

import contextlib
import csv
import io
import json

import jsonschema
import torch

from lab.classroom import export
from lab.cli import main
from lab.core import model_registry
from lab.core.models.base import logits_of
from lab.core.zoo import build, trained
from lab.runtime.version import commit, version

from .conftest import ROOT


def test_the_weights_load_into_a_fresh_build_and_give_the_stored_models_logits(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    cfg = export.export("residual", 1, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(export.FILES)
    state, meta = export.load_state(tmp_path)
    t = trained(model_registry.model("residual").spec(1))
    fresh = build(t.spec.model, 99)  # another draw: only the loaded weights can make it the stored model
    x = t.data.test.x
    assert not torch.equal(logits_of(fresh, x), logits_of(t.model, x))  # the check can fail
    fresh.load_state_dict(state)
    logits = logits_of(fresh, x)
    assert torch.equal(logits, logits_of(t.model, x))
    acc = float((logits.argmax(1) == t.data.test.y).double().mean())
    assert cfg["held_out"]["accuracy"] == acc and cfg["held_out"]["inputs"] == len(t.data.test)
    assert meta["layerlab_version"] == version() and meta["layerlab_commit"] == str(commit())
    assert json.loads(meta["spec"]) == cfg["spec"] and cfg["quick"] is True
    on_disk = json.loads((tmp_path / "config.json").read_text())
    assert on_disk["lab"] == {"version": version(), "commit": commit()} and on_disk["model"] == "mlp7-residual"
    rows = list(csv.DictReader(io.StringIO((tmp_path / "training.csv").read_text())))
    assert [float(r["held_out_accuracy"]) for r in rows] == [float(f"{a:.6g}") for a in t.info["test_acc"]]
    card = (tmp_path / "MODEL_CARD.md").read_text()
    assert f"{100 * acc:.2f} %" in card and version() in card and "Quick mode" in card


def test_the_cli_exports_with_a_json_the_schema_reads_and_refuses_an_unknown_model(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["export", "plain", "--out", str(tmp_path / "x"), "--json"]) == 0
    env = json.loads(out.getvalue())
    schema = json.loads((ROOT / "docs" / "cli-output.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(env)
    assert env["command"] == "export" and env["result"]["config"]["model"] == "mlp7-plain"
    capsys.readouterr()
    assert main(["export", "nope"]) == 2
    assert "unknown model 'nope'" in capsys.readouterr().err
