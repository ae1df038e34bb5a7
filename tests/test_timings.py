"""lab/runtime/timings.py: the store records how long each build took; estimates come from those records only."""

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.runtime import timings
from lab.runtime.store import Store, active_store, use_store

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Inner:
    seed: int = 0


@dataclass(frozen=True)
class Outer:
    tag: int = 0
    seed: int = 0


def inner(store, seed):
    return store.json("t-inner", Inner(seed), lambda: time.sleep(0.02) or {"seed": seed})


def outer(store, tag, seed):
    return store.json("t-outer", Outer(tag, seed), lambda: time.sleep(0.01) or {"in": inner(store, seed), "tag": tag})


def records(store, kind):
    return [json.loads(p.read_text()) for p in sorted((store.root / timings.FOLDER / kind).glob("*.json"))]


def test_a_build_records_its_time_and_the_same_config_at_another_seed_is_estimated_from_it(tmp_path):
    store = Store(tmp_path)
    assert store.estimate("t-inner", Inner(0)) is None  # nothing recorded yet
    inner(store, 0)
    [rec] = records(store, "t-inner")
    assert rec["kind"] == "t-inner" and json.loads(rec["config"])["seed"] == 0
    assert "seed" not in json.loads(rec["config_unseeded"]) and rec["seconds"] >= 0.02 and not rec["built_inside"]
    assert store.estimate("t-inner", Inner(0)) == rec["seconds"]  # the same config (a rebuild)
    assert store.estimate("t-inner", Inner(7)) == rec["seconds"]  # another seed
    inner(store, 1)
    both = [r["seconds"] for r in records(store, "t-inner")]
    assert store.estimate("t-inner", Inner(7)) == pytest.approx(sum(both) / 2)  # the mean over seeds
    inner(store, 1)  # read, not built: nothing new is recorded
    assert len(records(store, "t-inner")) == 2
    seed0 = next(r["seconds"] for r in records(store, "t-inner") if json.loads(r["config"])["seed"] == 0)
    pairs = [("t-inner", Inner(0)), ("t-outer", Outer(0)), ("t-nope", Inner(0))]
    assert [store.estimate(k, c) for k, c in pairs] == [seed0, None, None]


def test_an_unknown_config_has_no_estimate(tmp_path):
    store = Store(tmp_path)
    outer(store, 0, 0)
    assert store.estimate("t-outer", Outer(tag=5)) is None  # another tag is another config
    assert store.estimate("t-unknown", Outer()) is None
    with use_store(store):  # the active store is the default
        assert active_store().estimate("t-outer", Outer(0, seed=3)) is not None


def test_a_result_built_on_stored_models_is_not_taken_for_a_training(tmp_path):
    store = Store(tmp_path)
    outer(store, 0, 0)  # trains its inner entry inside
    outer(store, 1, 0)  # reads the stored one
    cold, warm = (next(r for r in records(store, "t-outer") if json.loads(r["config"])["tag"] == t) for t in (0, 1))
    [inner_rec] = records(store, "t-inner")
    assert cold["built_inside"] and [u["built"] for u in cold["uses"]] == [True]
    assert cold["own_seconds"] == pytest.approx(cold["seconds"] - cold["uses"][0]["seconds"], abs=2e-3)
    assert not warm["built_inside"] and [u["built"] for u in warm["uses"]] == [False]
    # Tag 1 at another seed trains its inner entry too: its own recorded seconds plus that training.
    assert store.estimate("t-outer", Outer(1, seed=4)) == pytest.approx(
        warm["seconds"] + inner_rec["seconds"])
    assert store.estimate("t-outer", Outer(0, seed=4)) == pytest.approx(cold["seconds"])


def test_a_corrupt_or_foreign_timing_file_is_ignored(tmp_path):
    store = Store(tmp_path)
    inner(store, 0)
    folder = store.root / timings.FOLDER / "t-inner"
    [rec] = records(store, "t-inner")
    good = rec["seconds"]
    (folder / "t-inner-broken.json").write_text("{not json")
    (folder / "t-inner-odd.json").write_text(json.dumps({"kind": "t-inner", "config": 3, "seconds": "x"}))
    (folder / "t-inner-neg.json").write_text(json.dumps({**rec, "seconds": -1}))
    assert store.estimate("t-inner", Inner(1)) == good
    (folder / "t-inner-nan.json").write_text('{"kind": "t-inner", "config": "{}", "seconds": NaN}')
    assert store.estimate("t-inner", Inner(1)) == good


WRITER = """
import sys
from lab.runtime import timings
root, name = sys.argv[1], sys.argv[2]
for i in range(40):
    about = {"kind": "t-race", "code": "c", "config": '{"i": %d, "seed": 0}' % (i % 5), "module": "m"}
    timings.record(root, about, "t-race-%d" % (i % 5), 0.5 + i % 5, [])
"""


def test_writers_in_two_processes_leave_only_whole_records(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(n)], cwd=ROOT) for n in range(2)]
    assert [p.wait(120) for p in procs] == [0, 0]
    folder = tmp_path / timings.FOLDER / "t-race"
    assert sorted(p.name for p in folder.iterdir()) == [f"t-race-{i}.json" for i in range(5)]  # no temp files left
    for i in range(5):
        rec = json.loads((folder / f"t-race-{i}.json").read_text())
        assert rec["seconds"] == 0.5 + i
    assert Store(tmp_path).estimate("t-race", {"i": 3, "seed": 9}) == 3.5


def test_an_entry_found_by_its_key_alone_counts_as_used(tmp_path):
    # The zoo answers a model it holds in memory by its key, without reading the store: still a use of that model.
    store = Store(tmp_path)
    inner(store, 0)
    store.json("t-outer", Outer(2, 0), lambda: store.key("t-inner", Inner(0)) and {"tag": 2})
    [rec] = records(store, "t-outer")
    assert [(u["kind"], u["built"]) for u in rec["uses"]] == [("t-inner", False)]
    [inner_rec] = records(store, "t-inner")
    assert store.estimate("t-outer", Outer(2, seed=1)) == pytest.approx(rec["seconds"] + inner_rec["seconds"])
