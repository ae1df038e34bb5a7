"""The matrix on the residual MLP (where an operation applies): its recipes share the LayerDrop page's stored models,
its sub-layer columns do not apply (NaN, never a number), and its looped route runs 4 blocks twice."""

from __future__ import annotations

import math

import pytest

from lab.core import model_registry, page_models
from lab.experiments.matrix import experiment as matrix
from lab.runtime.store import Store


def test_the_mlp_rows_are_the_layerdrop_pages_models_where_the_recipe_is_theirs():
    assert page_models.matrix_spec("sequential", 3, "mlp") == page_models.layerdrop_spec("residual", 0.0, 3)
    assert page_models.matrix_spec("layerdrop", 3, "mlp") == model_registry.model("layerdrop").spec(3)
    looped = page_models.matrix_spec("looped", 3, "mlp")
    assert looped.model.blocks == 4 and looped.train.loops == 2
    assert page_models.matrix_route("looped", "mlp") == (0, 1, 2, 3, 0, 1, 2, 3)
    assert page_models.matrix_spec("shuffle", 0, "mlp").train.mode == "shuffle"
    assert page_models.matrix_spec("early-exit", 0, "mlp").train.early_exit


def test_a_recipe_that_does_not_apply_to_the_mlp_is_one_clear_message():
    with pytest.raises(ValueError, match="does not apply"):
        matrix.RowConfig("ln-scale", model="mlp")
    with pytest.raises(ValueError, match="ViT"):
        matrix.MatrixConfig(model="vit", task="wine")
    assert matrix.MatrixConfig(model="mlp", task="synthetic").task is None  # its own task: one spelling


def test_a_quick_mlp_row_has_every_column_that_applies_and_no_number_where_none_does(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    row = matrix.row(matrix.RowConfig("sequential", 0, 2, model="mlp"), store=Store(tmp_path / "s"))
    assert row.n_blocks == 8 and row.label == "sequential"
    for op in matrix.OPS:
        applies = op not in ("no_attn", "no_mlp")
        assert math.isnan(row.acc[op]) != applies, op
        assert (len(row.profiles[op]) > 0) == applies, op
    assert row.profiles["exit"][-1] == row.base_acc  # the last exit is the model itself
