"""The Python API (lab/api/, docs/API.md) against references it does not compute itself: the model's own forward
pass and `RoutedModel.states`, the model's own block variants and routes, and the numbers the experiments report
for a page's default (quick mode: the models train one epoch)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

import layerlab
from lab.api import hooks
from lab.core import zoo
from lab.core.models.base import Parallel, Step, logits_of
from lab.core.models.vit import NO_ATTN, NO_MLP
from lab.core.routes import without
from lab.runtime.store import Store

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebooks" / "layerlab-api.ipynb"


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")


def _load(*args, **kw):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LAYERLAB_QUICK", "1")
        return layerlab.load(*args, **kw)


@pytest.fixture(scope="module")
def mlp():
    return _load("delete")  # the Delete page's default: the 7-block residual MLP


@pytest.fixture(scope="module")
def vit():
    return _load("shuffle")  # the Shuffle page's default: the 6-block ViT trained with LayerShuffle


def no_hooks_left(model) -> bool:
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


# -- the identity ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["mlp", "vit"])
def test_the_trained_route_without_hooks_is_the_models_own_forward_pass(which, request):
    m = request.getfixturevalue(which)
    x = m.x_test[:64]
    assert torch.equal(m.run_with_hooks(x), m.model(x))
    logits, cache = m.run_with_cache(x)
    assert torch.equal(logits, m.model(x)) and torch.equal(cache["hook_logits"], logits)
    assert torch.equal(m.logits(), logits_of(m.model, m.x_test))
    assert torch.equal(m.run_with_hooks(x, [("blocks.1.hook_out", lambda t, name: t)]), m.model(x))
    assert torch.equal(m.run_with_hooks(x, [(lambda name: True, lambda t, name: None)]), m.model(x))


@pytest.mark.parametrize("which", ["mlp", "vit"])
@pytest.mark.parametrize("route", [None, (3, 0, 5, 1, 2, 4), (0, 1, 4, 5)])
def test_each_blocks_hook_out_is_the_models_own_state_on_any_route(which, route, request):
    m = request.getfixturevalue(which)
    x = m.x_test[:32]
    logits, cache = m.run_with_cache(x, route=route)
    ref_logits, states = m.model.states(x, route)
    assert torch.equal(logits, ref_logits)
    assert torch.equal(cache["hook_embed"], states[0])
    for slot, b in enumerate(m.model.check_route(route)):
        assert torch.equal(cache[f"blocks.{b}.hook_in"], states[slot])
        assert torch.equal(cache[f"blocks.{b}.hook_out"], states[slot + 1])
    assert all(k in m.hook_names(route) for k in cache) and len(cache) == len(m.hook_names(route))


@pytest.mark.parametrize("point,variant", [("hook_attn_out", NO_ATTN), ("hook_mlp_out", NO_MLP)])
def test_zeroing_a_sublayer_is_the_models_own_variant_without_it(vit, point, variant):
    x = vit.x_test[:32]
    zeroed = vit.run_with_hooks(x, [(f"blocks.2.{point}", lambda t, name: torch.zeros_like(t))])
    steps = (0, 1, Step(2, variant), 3, 4, 5)
    m = vit.model
    assert torch.equal(zeroed, m.readout(m.run_steps(m.embed(x), steps)))
    assert not torch.equal(zeroed, m(x))
    assert torch.equal(vit.no_attn(2).run_with_hooks(x) if variant == NO_ATTN else vit.no_mlp(2).run_with_hooks(x),
                       zeroed)
    _, cache = vit.run_with_cache(x, names=[f"blocks.2.{point}", "blocks.2.hook_in", "blocks.2.hook_out"])
    assert set(cache) == {f"blocks.2.{point}", "blocks.2.hook_in", "blocks.2.hook_out"}


def test_zeroing_a_blocks_output_changes_the_logits_and_its_input_for_its_output_deletes_it(mlp):
    x = mlp.x_test[:64]
    zeroed = mlp.run_with_hooks(x, [("blocks.3.hook_out", lambda t, name: torch.zeros_like(t))])
    assert not torch.equal(zeroed, mlp.model(x))
    seen = {}
    bypass = [("blocks.3.hook_in", lambda t, name: seen.update(h=t)), ("blocks.3.hook_out", lambda t, name: seen["h"])]
    assert torch.equal(mlp.run_with_hooks(x, bypass), mlp.model(x, without(7, [3])))
    assert mlp.accuracy(fwd_hooks=bypass) == mlp.delete(3).accuracy()


def test_parallel_groups_and_repeated_blocks_run_as_the_model_runs_them(vit):
    m, x = vit.model, vit.x_test[:16]
    for steps in [(0, Parallel((1, 2, 3), "mean"), 4, 5), (0, Parallel((1, 2), "sum"), Parallel((3,)), 4, 5),
                  (0, 1, 2, 1, 2, 5), (0, Step(1, "mlp_first"), 2, 3, 4, 5)]:
        logits, cache = vit.run_with_cache(x, route=steps)
        assert torch.equal(logits, m.readout(m.run_steps(m.embed(x), steps))), steps
    _, cache = vit.run_with_cache(x, route=(0, 1, 2, 1, 2, 5))
    assert torch.equal(cache["blocks.1.hook_out#2"], m.run_steps(m.embed(x), (0, 1, 2, 1)))
    assert torch.equal(cache["blocks.1.hook_out"], m.run_steps(m.embed(x), (0, 1)))
    looped = vit.surgery("loop", loops=2)
    assert looped.route == (0, 1, 2, 3, 4, 1, 2, 3, 4, 5)
    fired = []
    looped.run_with_hooks(x, [("blocks.2.hook_out", lambda t, name: fired.append(name))])
    assert fired == ["blocks.2.hook_out", "blocks.2.hook_out#2"]
    fired.clear()
    looped.run_with_hooks(x, [("blocks.2.hook_out#2", lambda t, name: fired.append(name))])
    assert fired == ["blocks.2.hook_out#2"]


# -- patching ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["mlp", "vit"])
def test_patching_the_clean_run_into_itself_is_the_identity(which, request):
    m = request.getfixturevalue(which)
    x = m.x_test[:32]
    for name in ["hook_embed", "blocks.0.hook_out", "blocks.3.hook_in", "blocks.5.hook_out"]:
        assert torch.equal(m.patch(x, x, name), m.model(x)), name


@pytest.mark.parametrize("which", ["mlp", "vit"])
def test_patching_the_last_state_or_the_embedding_gives_the_clean_answer(which, request):
    m = request.getfixturevalue(which)
    clean, corrupt = m.x_test[:32], m.x_test[32:64]
    last = f"blocks.{m.route[-1]}.hook_out"
    assert torch.equal(m.patch(clean, corrupt, last), m.model(clean))
    assert torch.equal(m.patch(clean, corrupt, "hook_embed"), m.model(clean))
    assert not torch.equal(m.patch(clean, corrupt, "blocks.0.hook_in", route=(1, 2, 3, 4, 5, 0)), m.model(corrupt))
    scan = m.patch_scan(clean, corrupt, lambda logits: float(logits.sum()), names=lambda k: k.endswith("hook_out"))
    assert list(scan) == [f"blocks.{b}.hook_out" for b in m.route]
    with torch.no_grad():
        assert scan[last] == float(m.model(clean).sum())


def test_patching_every_token_is_patching_the_whole_activation_and_one_token_is_not(vit):
    clean, corrupt = vit.x_test[:16], vit.x_test[16:32]
    whole = vit.patch(clean, corrupt, "blocks.2.hook_out")
    n = vit.run_with_cache(clean, names="blocks.2.hook_out")[1]["blocks.2.hook_out"].shape[1]
    assert torch.equal(vit.patch(clean, corrupt, "blocks.2.hook_out", positions=range(n)), whole)
    one = vit.patch(clean, corrupt, "blocks.2.hook_out", positions=0)
    assert not torch.equal(one, whole)
    scan = vit.patch_scan(clean, corrupt, lambda lg: float(lg.sum()), names=["blocks.2.hook_out"], by_position=True)
    assert scan["blocks.2.hook_out"][0] == float(one.detach().sum()) and len(scan["blocks.2.hook_out"]) == n
    # across routes: block 0's output in the trained order, patched into the reversed order's last block
    rev = vit.reverse()
    assert rev.route == (5, 4, 3, 2, 1, 0)
    after_block0 = vit.model.states(clean)[1][1]
    assert torch.equal(rev.patch(corrupt, corrupt, "blocks.0.hook_out", clean_route=vit.route),
                       vit.model.readout(vit.model.states(corrupt)[1][1]))
    assert torch.equal(rev.patch(clean, corrupt, "blocks.0.hook_out", clean_route=vit.route),
                       vit.model.readout(after_block0))


def test_patching_refuses_what_it_cannot_do(mlp, vit):
    x = mlp.x_test[:8]
    with pytest.raises(ValueError, match="no token dimension"):
        mlp.patch(x, x, "blocks.1.hook_out", positions=0)
    with pytest.raises(ValueError, match="does not run on the route"):
        mlp.patch(x, x, "blocks.2.hook_out", route=(0, 1, 3))
    with pytest.raises(ValueError, match="same shape"):
        vit.patch(vit.x_test[:8], vit.x_test[:4], "blocks.1.hook_out")
    with pytest.raises(ValueError, match="out of range"):
        vit.patch(vit.x_test[:8], vit.x_test[:8], "blocks.1.hook_out", positions=99)


# -- hooks never stay --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["mlp", "vit"])
def test_hooks_are_removed_after_an_exception(which, request):
    m = request.getfixturevalue(which)
    x = m.x_test[:8]
    name = "blocks.1.hook_attn_out" if which == "vit" else "blocks.1.hook_out"

    def boom(t, n):
        raise RuntimeError("a hook that fails")

    with pytest.raises(RuntimeError, match="a hook that fails"):
        m.run_with_hooks(x, [(name, boom)])
    assert no_hooks_left(m.model)
    assert torch.equal(m.run_with_hooks(x), m.model(x))
    with pytest.raises(TypeError, match="return a tensor or None"):
        m.run_with_hooks(x, [(name, lambda t, n: 3)])
    assert no_hooks_left(m.model)
    _, cache = m.run_with_cache(x)
    assert no_hooks_left(m.model) and len(cache) == len(m.hook_names())


def test_a_sublayer_hook_acts_only_on_its_own_thread(vit):
    """The zoo's models are shared by every caller in the process: another thread's forward pass during a hooked run
    must not see the hook."""
    import threading

    x = vit.x_test[:8]
    plain = vit.model(x)
    other = {}

    def during(t, name):
        th = threading.Thread(target=lambda: other.update(out=vit.model(x)))
        th.start()
        th.join()
        return torch.zeros_like(t)

    vit.run_with_hooks(x, [("blocks.1.hook_attn_out", during)])
    assert torch.equal(other["out"], plain)


# -- the pages' numbers --------------------------------------------------------------------------------------------
def test_accuracy_and_the_cut_are_the_delete_pages_numbers(mlp):
    from lab.experiments.delete.experiment import DeleteConfig, run

    r = run(DeleteConfig())
    assert mlp.accuracy() == r.base_acc
    assert mlp.delete(*r.dropped).accuracy() == r.cut_acc
    assert mlp.accuracy(x=mlp.data.probe.x, y=mlp.data.probe.y) == r.base_probe_acc
    from lab.estimates import unpack

    for b, packed in enumerate(r.outcomes["single"]):  # per input, each block deleted alone
        assert torch.equal(mlp.delete(b).correct(), torch.from_numpy(unpack(packed))), b
    assert mlp.config == DeleteConfig() and mlp.spec.train.epochs == 1  # quick mode: what really trained


def test_the_shuffle_pages_orders_and_numbers(vit):
    from lab.experiments.shuffle.experiment import ModelConfig, ShuffleConfig, model_summary, random_order_stats

    cfg = ShuffleConfig(orders=5)
    s = model_summary(ModelConfig.of(cfg))
    assert vit.accuracy() == s.base_acc and vit.reverse().accuracy() == s.reversed_acc
    r = random_order_stats(cfg)
    orders = vit.orders(5)
    assert [list(o.route) for o in orders] == r.routes
    assert [o.accuracy() for o in orders] == r.accs
    assert vit.shuffle().route == orders[0].route


def test_the_reinit_pages_surgeries():
    from lab.estimates import unpack
    from lab.experiments.reinit.experiment import FocusConfig, focus

    m = _load("reinit", blocks=3, width=16, epochs=2)
    for op, layer in [("reinit", "stem"), ("reinit", "blocks.1"), ("rerand", "blocks.2"), ("rerand", "head")]:
        f = focus(FocusConfig(model="plain", layer=layer, op=op, blocks=3, width=16, epochs=2))
        changed = m.reinit(layer) if op == "reinit" else m.rerand(layer)
        assert changed.accuracy() == f.cut_acc, (op, layer)
        assert torch.equal(changed.correct(), torch.from_numpy(unpack(f.outcomes["cut"]))), (op, layer)
        assert torch.equal(m.correct(), torch.from_numpy(unpack(f.outcomes["base"])))
        assert changed.model is not m.model  # a copy: the shared trained model is untouched
    assert m.layers() == ["stem", "blocks.0", "blocks.1", "blocks.2", "head"]
    before = {k: v.clone() for k, v in m.model.state_dict().items()}
    m.rerand("blocks.0").reinit("head").delete(1).accuracy()
    assert all(torch.equal(before[k], v) for k, v in m.model.state_dict().items())


def test_every_route_surgery_of_the_registry_runs(vit, mlp):
    from lab.ops import registry

    for s in registry.surgeries().values():
        if s.acts_on == "weights":
            continue
        target = vit if s.acts_on == "sub-layer" else mlp
        kw = {"block": 2} if s.takes("block") else {}
        out = target.surgery(s.name, **kw)
        assert 0.0 <= out.accuracy() <= 1.0 and out.changes[-1].startswith(s.name), s.name
    assert mlp.surgery("delete", block=2).route == mlp.delete(2).route == (0, 1, 3, 4, 5, 6)
    assert mlp.swap(2).route == (0, 1, 3, 2, 4, 5, 6)
    assert mlp.delete(2).swap(2).route == (0, 1, 4, 3, 5, 6)  # surgeries compose (slots of the new route)


# -- loading --------------------------------------------------------------------------------------------------------
def test_loading_twice_trains_once_and_the_second_comes_from_the_store(tmp_path, monkeypatch):
    calls = []
    real = zoo.train
    monkeypatch.setattr(zoo, "train", lambda *a, **k: calls.append(1) or real(*a, **k))
    store = Store(tmp_path / "store")
    first = layerlab.load("delete", arch="plain", seed=1, blocks=2, width=16, epochs=1, store=store)
    assert len(calls) == 1
    monkeypatch.setattr(zoo, "_memo", {})  # forget the process's copy: the second must read the store
    second = layerlab.load("delete", arch="plain", seed=1, blocks=2, width=16, epochs=1, store=store)
    assert len(calls) == 1
    assert second.model is not first.model
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                 second.model.state_dict().values(), strict=True))
    assert second.accuracy() == first.accuracy()
    assert any((tmp_path / "store").rglob("*.safetensors"))


def test_a_page_a_preset_and_a_model_by_name():
    a = _load("reinit", model="plain", blocks=3, width=16, epochs=2)
    assert a.page == "reinit" and a.spec.model.arch == "plain" and a.spec.model.blocks == 3
    b = _load("delete", preset="plain1", blocks=3, width=16, epochs=2)
    assert b.config.arch == "plain" and b.config.k == 1
    c = _load("vit6.shuffle")
    assert c.page is None and c.config.model == "vit6.shuffle"
    v = _load("shuffle")
    assert c.spec == v.spec and torch.equal(c.logits(), v.logits())  # the same stored model
    looped = _load("matrix", recipe="looped")
    assert looped.route == (0, 1, 2, 0, 1, 2) and looped.accuracy() == looped.accuracy(route=looped.trained_route)


def test_bad_names_and_settings_say_what_is_allowed(mlp):
    with pytest.raises(ValueError, match="neither a page .*delete.* nor a model .*vit6"):
        layerlab.load("nope")
    with pytest.raises(ValueError, match="no setting 'model'; its settings: arch, task, k"):
        layerlab.load("delete", model="plain")
    with pytest.raises(ValueError, match="choose one of plain, residual"):
        layerlab.load("delete", arch="wide")
    with pytest.raises(ValueError, match="unknown preset 'x'.*plain1"):
        layerlab.load("delete", preset="x")
    with pytest.raises(ValueError, match="takes the settings seed, task"):
        layerlab.load("vit6", depth=3)
    with pytest.raises(ValueError, match="unknown recipe 'fast'"):
        layerlab.load("matrix", recipe="fast")
    with pytest.raises(ValueError, match=r"unknown hook point 'blocks.1.hook_attn_out'.*blocks.\{0..6\}"):
        mlp.run_with_cache(names="blocks.1.hook_attn_out")
    with pytest.raises(ValueError, match="does not run on the route"):
        mlp.delete(1).run_with_hooks(fwd_hooks=[("blocks.1.hook_in", lambda t, n: t)])
    with pytest.raises(ValueError, match="block 9 does not run"):
        mlp.delete(9)
    with pytest.raises(ValueError, match="swap .* needs block=b"):
        mlp.surgery("swap")
    with pytest.raises(ValueError, match="takes block, ends, not 'layer'"):
        mlp.surgery("swap", layer="stem")
    with pytest.raises(ValueError, match="unknown layer 'blocks.9'; this model has stem, blocks.0"):
        mlp.reinit("blocks.9")
    with pytest.raises(ValueError, match="unknown surgery"):
        mlp.surgery("melt")
    with pytest.raises(ValueError, match="names blocks \\[7\\]"):
        mlp.with_route((0, 7))


def test_layerlab_exposes_the_api_without_loading_torch_on_import(mlp, vit):
    import subprocess
    import sys

    code = ("import sys, layerlab; assert 'torch' not in sys.modules, 'import layerlab loaded torch'; "
            "print(layerlab.load.__module__, 'load' in dir(layerlab))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["lab.api.loaded", "True"]
    assert hooks.describe_points(mlp.model) == "hook_embed, blocks.{0..6}.{hook_in, hook_out}, hook_logits"
    assert hooks.describe_points(vit.model) == ("hook_embed, blocks.{0..5}.{hook_in, hook_attn_out, hook_mlp_out, "
                                                "hook_out}, hook_logits")


# -- the shipped notebook --------------------------------------------------------------------------------------------
def test_the_shipped_notebook_runs_and_prints_the_pages_numbers(mlp, vit, monkeypatch):
    nbclient = pytest.importorskip("nbclient", reason="nbclient is a test dependency (requirements-dev.txt)")
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "ship the notebook without outputs"
    sections = {}
    for c in nb.cells:
        if c.cell_type == "code" and c.source.startswith("# "):
            sections[c.source.splitlines()[0][2:]] = c.source
    for part in ("Delete", "Shuffle", "Re-initialise"):
        found = [k for k in sections if k.startswith(part)]
        assert found, f"no {part} cell"
        assert len(sections[found[0]].splitlines()) < 20, f"the {part} cell is 20 lines or more"
    monkeypatch.setenv("LAYERLAB_QUICK", "1")  # the kernel inherits it, and the session's store (LAYERLAB_CACHE)
    monkeypatch.setenv("LAYERLAB_THREADS", os.environ.get("LAYERLAB_THREADS", "1"))
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error" or o.get("name") == "stderr" and "Traceback" in o.get("text", "")]
    assert not errors, errors
    text = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []) if o.get("output_type") == "stream")
    printed = json.loads(text.strip().splitlines()[-1])
    assert printed["delete"] == mlp.accuracy() and printed["shuffle"] == vit.accuracy()
    assert printed["delete_2_4"] == mlp.delete(2, 4).accuracy()
