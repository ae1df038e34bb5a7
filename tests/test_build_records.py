"""store.recording_builds: what a job built (not what it read), innermost first, with seconds; warm's model names."""

import time
from dataclasses import dataclass

from lab.classroom.warm import model_label
from lab.runtime.store import Store, recording_builds


@dataclass(frozen=True)
class Cfg:
    n: int = 1


def test_builds_are_recorded_innermost_first_and_reads_are_not(tmp_path):
    store = Store(tmp_path)
    def inner() -> int:
        time.sleep(0.05)  # long enough to show in seconds rounded to 0.01
        return 5

    t0 = time.perf_counter()
    with recording_builds() as builds:
        store.json("outer", Cfg(1), lambda: {"inner": store.json("inner", Cfg(2), inner)})
    wall = time.perf_counter() - t0
    assert [b["kind"] for b in builds] == ["inner", "outer"] and '"n": 2' in builds[0]["config"]
    # the seconds are the builds' own: the inner one's sleep at least, the outer one's include it, both within
    # the time measured around the call (0.01: the recorded seconds are rounded)
    inner_s, outer_s = builds[0]["seconds"], builds[1]["seconds"]
    assert 0.04 <= inner_s <= outer_s <= wall + 0.01, (inner_s, outer_s, wall)
    with recording_builds() as again:
        store.json("outer", Cfg(1), lambda: 0)  # stored: read, not built
    assert again == []


def test_a_model_is_named_by_the_fields_that_tell_models_apart():
    spec = ('{"__class__": "ModelSpec", "model": {"__class__": "ViTConfig", "depth": 6}, "task": "digits", '
            '"train": {"__class__": "TrainConfig", "epochs": 40, "mode": "layerdrop", "drop_p": 0.2, "seed": 1}}')
    assert model_label(spec) == "depth=6 task=digits epochs=40 mode=layerdrop drop_p=0.2 seed=1"
