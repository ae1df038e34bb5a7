"""The experiment contract, beyond what tests/conformance.py checks per experiment (its CLI flags, declared ranges,
plan, page): entry points honour the caller's store, named streams, param metadata, plumbing left out of code
versions."""

from __future__ import annotations

import dataclasses

import pytest

from lab import experiment
from lab.core import streams
from lab.experiments.delete import experiment as delete
from lab.experiments.reinit import experiment as reinit
from lab.experiments.shuffle import experiment as shuffle
from lab.runtime.store import Store


def test_an_entry_point_uses_the_callers_store_all_the_way_down(tmp_path):
    """The model a result needs is trained into the store the caller passed, not the process default."""
    store = Store(tmp_path / "private")
    cfg = reinit.ReinitConfig(model="residual", seed=5, blocks=2, width=8, epochs=1)
    r = reinit.run(cfg, store=store)
    assert r.base_acc >= 0
    kinds = {p.name for p in (tmp_path / "private").iterdir()}
    assert {"reinit", "model"} <= kinds  # the trained model went to the private store too
    assert reinit.run(cfg, store=store) == r  # and the second call is a read


def test_a_tensor_entry_is_stored_once_and_read_back(tmp_path):
    """`@entry(kind, tensors=True)`: the build's (tensors, metadata) kept as safetensors, a second call a read."""
    import torch

    from lab.runtime import store as store_module

    @dataclasses.dataclass(frozen=True)
    class TinyConfig:
        n: int = 3

    built = []

    @experiment.entry("contract-tensors", tensors=True)
    def tiny(cfg: TinyConfig, progress) -> tuple[dict[str, torch.Tensor], dict]:
        built.append(cfg)
        return {"w": torch.arange(float(cfg.n))}, {"n": cfg.n}

    try:
        store = Store(tmp_path / "s")
        tens, meta = tiny(TinyConfig(), store=store)
        again, meta2 = tiny(TinyConfig(), store=store)
        assert torch.equal(tens["w"], torch.arange(3.0)) and torch.equal(again["w"], tens["w"]) and meta == meta2
        assert len(built) == 1 and tiny.tensors and list((tmp_path / "s").rglob("contract-tensors-*.safetensors"))
        with pytest.raises(ValueError, match="tensor entry"):
            experiment.entry("contract-tensors-typed", result=TinyConfig, tensors=True)
    finally:
        store_module.KIND_MODULES.pop("contract-tensors", None)


def test_no_experiment_reaches_the_store_but_through_its_entries():
    """An experiment's stored pieces are its `@entry` points (and the zoo's `trained`): none calls the store itself."""
    import ast
    from pathlib import Path

    root = Path(experiment.__file__).parent / "experiments"
    direct = []
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and (
                    (isinstance(node.func, ast.Name) and node.func.id == "active_store")
                    or (isinstance(node.func, ast.Attribute) and node.func.attr in ("tensors", "json", "has"))):
                direct.append(f"{f.relative_to(root)}:{node.lineno}")
    assert not direct, f"calls the store directly: {direct}"


def test_named_streams_are_distinct_and_reproducible():
    seeds = {name: streams.seed_of(name, 7, 3) if name.startswith(("orders.", "iot.")) else streams.seed_of(name, 7)
             for name in streams._DERIVED}
    assert len(set(seeds.values())) == len(seeds)  # no two streams share a seed for the same run
    a = streams.generator("a-new-stream", 3)
    b = streams.generator("a-new-stream", 3)
    assert float(a.initial_seed()) == float(b.initial_seed())
    assert streams.seed_of("a-new-stream", 3) != streams.seed_of("another-stream", 3)
    assert streams.seed_of("train.batches", 3) != streams.seed_of("train.batches", 4)


def test_param_metadata_reaches_the_widgets_defaults():
    assert experiment.default(delete.DeleteConfig, "k") == delete.DeleteConfig().k
    assert experiment.meta(shuffle.ShuffleConfig, "mode")["choices"] == shuffle.MODES
    assert experiment.label_of(delete.DeleteConfig, "recovery", "kd") == delete.RECOVERY_LABELS["kd"]


def test_plumbing_is_left_out_of_code_versions_and_science_is_not():
    """A model's key covers the modules that compute its weights, not the store or progress plumbing."""
    from lab.runtime.codeversion import dependencies

    deps = dependencies("lab.core.zoo")
    assert {"lab.core.train", "lab.core.models.vit", "lab.core.models.base", "lab.core.data",
            "lab.core.streams"} <= set(deps)
    assert not {"lab.runtime.store", "lab.runtime.progress", "lab.runtime.notices", "lab.experiment"} & set(deps)
    assert "lab.runtime.store" in dependencies("lab.runtime.store")  # a neutral module still has a version of its own
