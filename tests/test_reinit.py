"""Re-initialise a layer: the surgery invariants, reproducible checkpoints, the experiment and its CLI.

Tiny models (3 hidden layers of 32 units, 2 epochs; a 2-block ViT of width 16, 1 epoch) keep this file fast.
"""

import json
import math

import numpy as np
import pytest
import torch

from lab import claims as C
from lab import estimates as E
from lab.cli import main
from lab.core.models import logits_of
from lab.core.zoo import trained
from lab.experiments.reinit import claims as RC
from lab.experiments.reinit import experiment as reinit
from lab.ops import surgery
from lab.runtime.store import Store

TINY = dict(blocks=2, width=32, epochs=2)


@pytest.fixture(scope="module")
def plain():
    return trained(reinit.model_spec("plain", 0, **TINY))


@pytest.fixture(scope="module")
def vit():
    return trained(reinit.model_spec("vit", 0, blocks=2, width=16, epochs=1))


def _snapshot(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_layers_are_named_groups_in_order(plain, vit):
    assert list(surgery.layers(plain.model)) == ["stem", "blocks.0", "blocks.1", "head"]
    assert list(surgery.layers(vit.model)) == ["stem", "blocks.0", "blocks.1", "head"]
    # every state-dict entry belongs to exactly one layer
    for t in (plain, vit):
        keys = [k for ks in surgery.layers(t.model).values() for k in ks]
        assert sorted(keys) == sorted(t.model.state_dict())


@pytest.mark.parametrize("which", ["plain", "vit"])
def test_reinit_to_final_checkpoint_changes_nothing(which, request):
    t = request.getfixturevalue(which)
    x = t.data.test.x[:512]
    ref = logits_of(t.model, x)
    last = max(t.checkpoints)
    for layer in surgery.layers(t.model):
        out = logits_of(surgery.with_layer(t.model, layer, t.checkpoints[last]), x)
        assert torch.equal(out, ref), layer


@pytest.mark.parametrize("which", ["plain", "vit"])
@pytest.mark.parametrize("op", ["reinit", "rerand"])
def test_each_operation_changes_exactly_one_layer(which, op, request):
    t = request.getfixturevalue(which)
    before = _snapshot(t.model)
    groups = surgery.layers(t.model)
    for layer, keys in groups.items():
        changed = reinit.changed_model(t, layer, op, 0, reinit.REDRAW_OFFSET)
        sd = changed.state_dict()
        differs = {k for k in sd if not torch.equal(sd[k], before[k])}
        assert differs <= set(keys), f"{op} of {layer} also changed {sorted(differs - set(keys))}"
        weights = [k for k in keys if k.endswith("weight") and not torch.equal(before[k], torch.ones_like(before[k]))]
        assert any(k in differs for k in weights), f"{op} of {layer} changed none of its weights"
    after = t.model.state_dict()
    assert all(torch.equal(after[k], before[k]) for k in before), "the shared trained model was modified"


def test_rerandomised_layer_is_a_fresh_draw_with_init_statistics(plain):
    t, width = plain, TINY["width"]
    t0 = t.checkpoints[0]
    # He init, as an independent reference: std sqrt(2 / fan_in), zero biases; the head uses 1 / sqrt(width)
    expected = {"stem": math.sqrt(2 / t.data.n_features), "blocks.0": math.sqrt(2 / width),
                "blocks.1": math.sqrt(2 / width), "head": 1 / math.sqrt(width)}
    for layer, std in expected.items():
        w = reinit.changed_model(t, layer, "rerand", 0, 12345).state_dict()[f"{layer}.weight"]
        b = reinit.changed_model(t, layer, "rerand", 0, 12345).state_dict()[f"{layer}.bias"]
        w0 = t0[f"{layer}.weight"]
        assert not torch.equal(w, w0)
        corr = float(np.corrcoef(w.flatten().numpy(), w0.flatten().numpy())[0, 1])
        assert abs(corr) < 0.2, f"{layer}: the redraw correlates with t=0 ({corr:.2f})"
        assert abs(float(w.std()) / std - 1) < 0.15, f"{layer}: std {float(w.std()):.4f}, expected {std:.4f}"
        assert abs(float(w.std()) / float(w0.std()) - 1) < 0.15
        assert abs(float(w.mean())) < 3 * std / math.sqrt(w.numel())
        assert torch.equal(b, torch.zeros_like(b))


def test_vit_rerandomised_layers_match_their_own_t0_statistics(vit):
    # Whatever the ViT's init rule is, a fresh draw must come from the same distribution as the t = 0 draw:
    # constant tensors (LayerNorm weights, biases, zero-started tables) exactly equal, random ones with the same
    # spread (std within 30 % on >= 64 numbers), and the layer as a whole a different draw.
    t0 = vit.checkpoints[0]
    for layer, keys in surgery.layers(vit.model).items():
        sd = reinit.changed_model(vit, layer, "rerand", 0, 777).state_dict()
        assert any(not torch.equal(sd[k], t0[k]) for k in keys), f"{layer} was not re-drawn"
        for k in keys:
            if bool((t0[k] == t0[k].flatten()[0]).all()):  # a constant start: the redraw must equal it
                assert torch.equal(sd[k], t0[k]), k
            elif t0[k].numel() >= 64:
                assert abs(float(sd[k].std()) / float(t0[k].std()) - 1) < 0.3, k


def test_checkpoints_are_reproducible_from_the_seed(tmp_path):
    spec = reinit.model_spec("residual", 3, blocks=2, width=16, epochs=2)
    a = trained(spec, store=Store(tmp_path / "a"))
    b = trained(spec, store=Store(tmp_path / "b"))  # a separate store: trained again from scratch
    assert sorted(a.checkpoints) == [0, 1, 2]
    for e in a.checkpoints:
        for k, v in a.checkpoints[e].items():
            assert torch.equal(v, b.checkpoints[e][k]), (e, k)
    other = trained(reinit.model_spec("residual", 4, blocks=2, width=16, epochs=2), store=Store(tmp_path / "a"))
    assert not torch.equal(other.checkpoints[0]["stem.weight"], a.checkpoints[0]["stem.weight"])
    assert not torch.equal(a.checkpoints[1]["stem.weight"], a.checkpoints[0]["stem.weight"])  # training moved it


def test_distance_from_init_matches_numpy():
    rng = np.random.default_rng(0)
    t0 = {"a.w": rng.normal(size=(4, 3)), "a.b": np.zeros(4)}
    tt = {"a.w": t0["a.w"] + rng.normal(size=(4, 3)) * 0.1, "a.b": rng.normal(size=4) * 0.5}
    flat = lambda d: np.concatenate([d["a.w"].ravel(), d["a.b"]])  # noqa: E731
    rel, inf = surgery.distance_from_init({k: torch.tensor(v) for k, v in tt.items()},
                                          {k: torch.tensor(v) for k, v in t0.items()}, ["a.w", "a.b"])
    diff = flat(tt) - flat(t0)
    assert rel == pytest.approx(np.linalg.norm(diff) / np.linalg.norm(flat(t0)))
    assert inf == pytest.approx(np.abs(diff).max())
    zero_rel, _ = surgery.distance_from_init({"b": torch.ones(3)}, {"b": torch.zeros(3)}, ["b"])
    assert zero_rel is None


def test_cli_heatmap_json(plain, capsys):
    rc = main(["reinit", "--model", "plain", "--seed", "0", "--blocks", "2", "--width", "32", "--epochs", "2",
               "--json"])
    assert rc == 0
    r = json.loads(capsys.readouterr().out)["result"]
    for key in ("layers", "checkpoints", "acc", "base_acc", "distance", "chance"):
        assert key in r
    assert r["layers"] == ["stem", "blocks.0", "blocks.1", "head"]
    assert r["checkpoints"] == ["re-randomise", "t=0", "t=1", "t=2"]
    acc = np.array(r["acc"])
    assert acc.shape == (4, 4)
    assert np.all(acc[:, -1] == r["base_acc"])  # the last checkpoint is the trained model itself
    assert r["chance"] == pytest.approx(plain.data.chance)
    assert len(r["distance"]["rel2"]) == len(r["distance"]["inf"]) == 4
    # the paper's ordering: a fresh random layer hurts at least as much as the layer's own initial draw
    assert acc[:, 0].mean() <= acc[:, 1].mean()
    assert not np.array_equal(acc[:, 0], acc[:, 1])  # the fresh draw is not the model's own t = 0 draw
    # a re-randomised stem of a plain net leaves nothing of the input: close to chance
    assert acc[0, 0] < r["chance"] + 0.1
    # every cell's per-input outcomes travel with the map and agree with its accuracy
    assert all(E.unpack(o).mean() == pytest.approx(a) for row_o, row_a in zip(r["outcomes"], r["acc"], strict=True)
               for o, a in zip(row_o, row_a, strict=True))
    assert E.unpack(r["base_outcomes"]).mean() == pytest.approx(r["base_acc"])
    C.check(r["claims"])


def test_cli_rejects_unknown_layer(plain, capsys):
    rc = main(["reinit", "--model", "plain", "--blocks", "2", "--width", "32", "--epochs", "2", "--layer", "blocks.9"])
    assert rc == 2
    assert "unknown layer 'blocks.9'" in capsys.readouterr().err


def test_focus_agrees_with_the_heatmap_and_recovers(plain):
    r = reinit.run(reinit.ReinitConfig("plain", 0, **TINY))
    i = r.layers.index("blocks.0")
    f = reinit.focus(reinit.FocusConfig("plain", 0, layer="blocks.0", op="reinit", checkpoint=0, recovery="kd",
                                        steps=60, **TINY))
    assert f.cut_acc == pytest.approx(r.acc[i][1])
    assert f.curve_steps[0] == 0 and f.curve_steps[-1] == 60
    assert f.recovered_acc > f.cut_acc
    assert len(f.per_class["cut"]) == plain.data.n_classes
    assert f.steps_to_recover is None or f.steps_to_recover in f.curve_steps
    # the focus's outcomes are the map's cell, input by input (the claim pairs them with the trained model's)
    assert f.outcomes["cut"] == r.outcomes[i][1] and f.outcomes["base"] == r.base_outcomes
    C.check(RC.result_focus_claims(f))
    with pytest.raises(ValueError, match="no checkpoint at epoch 7"):
        reinit.focus(reinit.FocusConfig("plain", 0, layer="stem", checkpoint=7, **TINY))


@pytest.mark.parametrize("which", ["plain", "vit"])
def test_heatmap_shortcut_matches_a_full_forward_pass(which, request):
    # the heatmap reuses the trained layers below the changed one; a full forward of a changed copy must agree
    t = request.getfixturevalue(which)
    h = reinit.heatmap(t, reinit.REDRAW_OFFSET)
    x, y, n = t.data.test.x, t.data.test.y, len(t.data.test)
    fresh = reinit.build(t.spec.model, reinit.REDRAW_OFFSET).state_dict()
    for i, layer in enumerate(h["layers"]):
        for j, src in ((0, fresh), (1, t.checkpoints[0])):
            full = float((logits_of(surgery.with_layer(t.model, layer, src), x).argmax(1) == y).float().mean())
            assert h["acc"][i][j] == pytest.approx(full, abs=1.01 / n), (layer, j)


# -- groups of layers and widths (issue 17) ---------------------------------------------------------------------


def test_a_group_of_one_layer_is_that_layer_alone(plain):
    r = reinit.run(reinit.ReinitConfig("plain", 0, **TINY))
    for op, col in (("reinit", 1), ("rerand", 0)):
        for i, layer in enumerate(r.layers):
            g = reinit.group(reinit.GroupConfig("plain", 0, layers=layer, op=op, **TINY))
            assert g.group_acc == g.single_accs[0] == pytest.approx(r.acc[i][col]), (op, layer)
            assert g.group_damage == pytest.approx(g.sum_single_damage)
            assert RC.result_group_claims(g)[0]["holds"] is None  # the same change twice: nothing to tell


def test_a_group_changes_exactly_its_layers(plain):
    names = ["blocks.0", "head"]
    src = plain.checkpoints[0]
    changed = surgery.with_layers(plain.model, names, src).state_dict()
    groups = surgery.layers(plain.model)
    for layer, keys in groups.items():
        for k in keys:
            want = src[k] if layer in names else plain.model.state_dict()[k]
            assert torch.equal(changed[k], want), k
    g = reinit.group(reinit.GroupConfig("plain", 0, layers="head,blocks.0", **TINY))
    assert g.layers == names  # the model's own order, whatever the spelling
    want = float((logits_of(surgery.with_layers(plain.model, names, src), plain.data.test.x).argmax(1)
                  == plain.data.test.y).float().mean())
    assert g.group_acc == pytest.approx(want)
    with pytest.raises(ValueError, match="unknown layer 'blocks.5'"):
        reinit.GroupConfig("plain", 0, layers="blocks.0,blocks.5", **TINY)


def test_cli_group_json(plain, capsys):
    rc = main(["reinit", "--model", "plain", "--blocks", "2", "--width", "32", "--epochs", "2", "--layers",
               "blocks.0,blocks.1", "--json"])
    assert rc == 0
    r = json.loads(capsys.readouterr().out)["result"]
    g = r["group"]  # the group, whole, beside the map
    assert g["layers"] == ["blocks.0", "blocks.1"] and "group_acc" not in r
    assert g["sum_single_damage"] == pytest.approx(sum(g["single_damages"]))
    assert "reinit.group-jointly-fragile" in [c["key"] for c in g["claims"]]
    C.check(r["claims"] + g["claims"])
    o = g["outcomes"]
    assert E.unpack(o["group"]).mean() == pytest.approx(g["group_acc"])
    assert [E.unpack(x).mean() for x in o["single"]] == pytest.approx(g["single_accs"])
    for bad, why in (("blocks.1,blocks.1", "named twice"), ("blocks.0,blocks.7", "unknown layer 'blocks.7'"),
                     (",", "at least one layer")):
        assert main(["reinit", "--model", "plain", "--blocks", "2", "--width", "32", "--epochs", "2", "--layers",
                     bad]) == 2
        assert why in capsys.readouterr().err


def test_width_sweep_maps_each_width_and_rejects_the_vit():
    w = reinit.width_sweep("plain", 0, (16, 8), blocks=2, epochs=1)
    assert w["widths"] == [8, 16] and w["layers"] == ["stem", "blocks.0", "blocks.1", "head"]
    for j, width in enumerate(w["widths"]):
        r = reinit.run(reinit.ReinitConfig("plain", 0, blocks=2, width=width, epochs=1))
        assert w["t0_acc"][j] == [row[1] for row in r.acc]
    assert RC.width_claims(w)[0]["key"] == "reinit.plain-wider-more-robust-top"
    with pytest.raises(ValueError, match="for the MLPs"):
        reinit.width_sweep("vit", 0)
    assert main(["table", "reinit", "--models", "vit", "--widths", "32", "64", "--workers", "0"]) == 2
