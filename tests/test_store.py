"""The store: same config -> same entry, atomic writes, one build under concurrency, corrupt entries rebuilt."""

import json
import pickle
import threading
import time
from dataclasses import dataclass

import pytest
import torch

from lab.runtime.notices import collecting
from lab.runtime.store import Store


@dataclass(frozen=True)
class Cfg:
    a: int = 1
    b: tuple = (1, 2)


def test_same_config_loads_instead_of_building(tmp_path):
    s = Store(tmp_path)
    calls = []
    build = lambda: calls.append(1) or {"x": [1, 2]}  # noqa: E731
    assert s.json("r", Cfg(), build) == {"x": [1, 2]}
    assert Store(tmp_path).json("r", Cfg(), build) == {"x": [1, 2]}  # a new process-like instance
    assert len(calls) == 1
    s.json("r", Cfg(a=2), build)
    assert len(calls) == 2  # another config is another entry


def test_concurrent_requests_build_once_across_instances(tmp_path):
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.5)
        return {"v": 1}

    # Separate Store objects share no in-process locks, so only the file lock can keep them from building twice.
    results = []
    threads = [threading.Thread(target=lambda: results.append(Store(tmp_path).json("r", Cfg(), slow)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and results == [{"v": 1}] * 4


def test_corrupt_json_entry_is_rebuilt_with_a_notice(tmp_path):
    s = Store(tmp_path)
    s.json("r", Cfg(), lambda: {"v": 1})
    path = s.path(s.key("r", Cfg()), ".json")
    path.write_text('{"v": ')  # truncated
    with collecting() as notes, pytest.warns(UserWarning):
        assert s.json("r", Cfg(), lambda: {"v": 2}) == {"v": 2}
    assert notes and "rebuilt" in notes[0]
    assert json.loads(path.read_text())["entry"] == {"value": {"v": 2}}


def test_tensor_entries_round_trip_and_rebuild_when_corrupt(tmp_path):
    s = Store(tmp_path)
    t = {"w": torch.arange(6.0).reshape(2, 3)}
    tens, meta = s.tensors("m", Cfg(), lambda: (t, {"epochs": [0, 1]}))
    tens2, meta2 = s.tensors("m", Cfg(), lambda: pytest.fail("should load, not build"))
    assert torch.equal(tens2["w"], t["w"]) and meta2 == {"epochs": [0, 1]}
    path = s.path(s.key("m", Cfg()), ".safetensors")
    path.write_bytes(path.read_bytes()[:40])
    with pytest.warns(UserWarning):
        tens3, _ = s.tensors("m", Cfg(), lambda: ({"w": torch.ones(1)}, {}))
    assert torch.equal(tens3["w"], torch.ones(1))


class Boom:
    def __reduce__(self):
        return (open, ("/tmp/layerlab-pickle-ran", "w"))


def test_loading_never_unpickles(tmp_path):
    import os

    marker = "/tmp/layerlab-pickle-ran"
    if os.path.exists(marker):
        os.unlink(marker)
    s = Store(tmp_path)
    for kind, suffix, build in [("r", ".json", lambda: {"ok": 1}), ("m", ".safetensors", lambda: ({}, {}))]:
        path = s.path(s.key(kind, Cfg()), suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(Boom()))
        with pytest.warns(UserWarning):
            getattr(s, "json" if suffix == ".json" else "tensors")(kind, Cfg(), build)
    assert not os.path.exists(marker)


def test_a_failed_build_leaves_no_entry_and_no_temp_files(tmp_path):
    s = Store(tmp_path)

    def broken():
        raise RuntimeError("killed mid-run")

    with pytest.raises(RuntimeError):
        s.json("r", Cfg(), broken)
    assert not s.path(s.key("r", Cfg()), ".json").exists()
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_write_killed_midway_leaves_the_old_state(tmp_path, monkeypatch):
    s = Store(tmp_path)
    import lab.runtime.atomic as atomic_mod  # where the store's writes rename

    def crash(src, dst):
        raise KeyboardInterrupt  # the process dies between writing the temp file and renaming it

    monkeypatch.setattr(atomic_mod.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        s.json("r", Cfg(), lambda: {"v": 1})
    monkeypatch.undo()
    assert not s.path(s.key("r", Cfg()), ".json").exists()
    assert not list(tmp_path.rglob("*.tmp"))
    assert s.json("r", Cfg(), lambda: {"v": 3}) == {"v": 3}


def test_key_depends_on_config_values_and_class():
    s = Store("/nonexistent")

    @dataclass(frozen=True)
    class Other:
        a: int = 1
        b: tuple = (1, 2)

    assert s.key("r", Cfg()) == s.key("r", Cfg())
    assert s.key("r", Cfg()) != s.key("r", Cfg(b=(2, 1)))
    assert s.key("r", Cfg()) != s.key("r", Other())


def test_code_version_follows_imports_only():
    from lab.runtime.codeversion import code_version, dependencies

    deps = dependencies("lab.experiments.delete.experiment")
    assert {"lab.ops.search", "lab.ops.recover", "lab.core.zoo", "lab.core.train", "lab.core.models.mlp",
            "lab.experiments"} <= set(deps)
    # a model does not depend on an experiment
    assert "lab.experiments.delete.experiment" not in dependencies("lab.core.zoo")
    assert "lab.cli" not in deps
    assert code_version("lab.core.zoo") != code_version("lab.experiments.delete.experiment")


def test_cached_only_reads_but_never_builds(tmp_path):
    from lab.runtime.store import NotCached, cached_only

    s = Store(tmp_path)
    with cached_only(), pytest.raises(NotCached):
        s.json("r", Cfg(), lambda: pytest.fail("must not build inside cached_only"))
    s.json("r", Cfg(), lambda: {"v": 1})
    with cached_only():
        assert s.json("r", Cfg(), lambda: pytest.fail("must not build")) == {"v": 1}


def test_each_entry_records_what_its_key_hashes(tmp_path):
    from lab.runtime.store import SIDECAR, key_of

    s = Store(tmp_path)
    s.json("r", Cfg(), lambda: {"v": 1})
    key = s.key("r", Cfg())
    about = json.loads(s.path(key, SIDECAR).read_text())
    assert about["kind"] == "r" and about["file"] == f"{key}.json" and about["module"] == Cfg.__module__
    assert key_of(about["kind"], about["code"], about["config"]) == key


def test_a_dead_writers_temp_file_is_cleared_by_the_next_builder(tmp_path):
    s = Store(tmp_path)
    key = s.key("r", Cfg())
    leftover = s.path(key, ".json").with_name(f".{key}.json.abc123.tmp")
    leftover.parent.mkdir(parents=True)
    leftover.write_text('{"half')  # what a worker killed mid-write leaves
    assert s.json("r", Cfg(), lambda: {"v": 1}) == {"v": 1}
    assert not list(tmp_path.rglob("*.tmp"))


def test_an_entry_is_keyed_by_the_code_that_computes_it_not_by_its_configs_module(tmp_path, monkeypatch):
    """A config class may live in a module other than the entry's: the entry's module still keys the result."""
    from lab.runtime import store as store_mod
    from lab.runtime.codeversion import code_version

    @dataclass(frozen=True)
    class Cfg:
        n: int = 1

    monkeypatch.setitem(store_mod.KIND_MODULES, "test-keyed", "lab.core.zoo")
    s = Store(tmp_path)
    about = s.describe("test-keyed", Cfg())
    assert about["module"] == "lab.core.zoo" and about["code"] == code_version("lab.core.zoo")
    assert s.describe("test-unregistered", Cfg())["module"] == Cfg.__module__
    with pytest.raises(ValueError, match="computed in lab.core.zoo already"):
        store_mod.register_kind("test-keyed", "lab.core.train")


# -- integrity: every entry carries a hash of its content, checked at every read (lab/runtime/sealed.py) -----------
def weights_overwritten(path, n=64):
    """The model file with `n` float32 weights overwritten in place: still a valid safetensors file."""
    from safetensors.torch import load

    data = bytearray(path.read_bytes())
    start = 8 + int.from_bytes(data[:8], "little")  # the data section
    data[start:start + 4 * n] = torch.full((n,), -7.5).numpy().tobytes()
    path.write_bytes(bytes(data))
    assert (load(bytes(data))["w"][:n] == -7.5).all()  # an ordinary reader takes it as a good model


def test_overwritten_weights_in_a_valid_model_file_are_rebuilt_not_served(tmp_path):
    s = Store(tmp_path)
    good = {"w": torch.linspace(0, 1, 1000)}
    s.tensors("m", Cfg(), lambda: (good, {"acc": 0.842}))
    path = s.path(s.key("m", Cfg()), ".safetensors")
    weights_overwritten(path)
    rebuilt = []

    def build():
        rebuilt.append(1)
        return good, {"acc": 0.842}

    with collecting() as notes, pytest.warns(UserWarning):
        tens, meta = s.tensors("m", Cfg(), build)
    assert rebuilt == [1] and torch.equal(tens["w"], good["w"]) and meta == {"acc": 0.842}
    assert len(notes) == 1 and "does not match its checksum" in notes[0]
    tens, _ = Store(tmp_path).tensors("m", Cfg(), lambda: pytest.fail("the rebuilt entry is served"))
    assert torch.equal(tens["w"], good["w"])


def test_an_edited_result_is_never_served_and_is_reported_once(tmp_path):
    from lab.runtime.store import NotCached, cached_only, shared_reads

    s = Store(tmp_path)
    s.json("r", Cfg(), lambda: {"acc": 0.842})
    path = s.path(s.key("r", Cfg()), ".json")
    path.write_bytes(path.read_bytes().replace(b"0.842", b"0.049"))  # valid JSON still, same length
    assert b"0.049" in path.read_bytes()
    with collecting() as notes, pytest.warns(UserWarning):
        for _ in range(3):  # a page's reruns: each finds the entry missing, one notice in all
            with cached_only(), shared_reads(), pytest.raises(NotCached):
                s.json("r", Cfg(), lambda: pytest.fail("cached only"))
    assert len(notes) == 1 and "does not match its checksum" in notes[0]
    assert s.json("r", Cfg(), lambda: {"acc": 0.842}) == {"acc": 0.842}  # whoever may build, rebuilds


def test_an_entry_written_before_sealing_is_rebuilt(tmp_path):
    s = Store(tmp_path)
    path = s.path(s.key("r", Cfg()), ".json")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"acc": 0.999}))  # the older format: the bare value
    assert not s.has("r", Cfg())  # warming rebuilds it
    with collecting() as notes, pytest.warns(UserWarning):
        assert s.json("r", Cfg(), lambda: {"acc": 0.5}) == {"acc": 0.5}
    assert "no checksum" in notes[0] and s.has("r", Cfg())


def test_a_valid_entry_under_another_entrys_name_is_not_served(tmp_path):
    s = Store(tmp_path)
    s.json("r", Cfg(a=1), lambda: {"acc": 0.1})
    s.json("r", Cfg(a=2), lambda: {"acc": 0.9})
    src, dst = (s.path(s.key("r", Cfg(a=a)), ".json") for a in (1, 2))
    dst.write_bytes(src.read_bytes())
    with pytest.warns(UserWarning):
        assert s.json("r", Cfg(a=2), lambda: {"acc": 0.9}) == {"acc": 0.9}


def test_a_result_built_from_a_marked_model_carries_the_mark(tmp_path):
    from lab.runtime import sealed

    s = Store(tmp_path)
    s.tensors("m", Cfg(), lambda: ({"w": torch.ones(3)}, {}))
    key = s.key("m", Cfg())
    path = s.path(key, ".safetensors")
    mark = {"why": "unsigned", "pack": "0123456789ab", "derived": False}
    path.write_bytes(sealed.marked(key, ".safetensors", path.read_bytes(), mark))

    def result():
        tens, _ = s.tensors("m", Cfg(), lambda: pytest.fail("the marked model is intact"))
        return {"sum": float(tens["w"].sum())}

    with collecting() as notes, pytest.warns(UserWarning):
        assert s.json("r", Cfg(), result) == {"sum": 3.0}
    assert any("was imported from an unsigned pack (pack 0123456789ab)" in n for n in notes)
    with collecting() as notes, pytest.warns(UserWarning):
        assert Store(tmp_path).json("r", Cfg(), lambda: pytest.fail("stored")) == {"sum": 3.0}
    assert notes == [sealed.origin_words({**mark, "derived": True})] and "computed from entries imported" in notes[0]

    # A model the build only names by key (the zoo holds it in memory) marks the result too.
    with pytest.warns(UserWarning):
        s.json("r2", Cfg(), lambda: {"key": s.key("m", Cfg())})
    with collecting() as notes, pytest.warns(UserWarning):
        s.json("r2", Cfg(), lambda: pytest.fail("stored"))
    assert notes and "computed from entries imported" in notes[0]


def test_the_training_curves_read_a_model_record_only_when_intact(tmp_path):
    from lab.runtime import sealed
    from lab.runtime.store import model_record

    s = Store(tmp_path)
    s.tensors("m", Cfg(), lambda: ({"w": torch.linspace(0, 1, 100)}, {"loss": [1.0, 0.5]}))
    path = s.path(s.key("m", Cfg()), ".safetensors")
    assert model_record(path) == {"loss": [1.0, 0.5]}
    weights_overwritten(path)
    with pytest.raises(sealed.Damaged):
        model_record(path)
