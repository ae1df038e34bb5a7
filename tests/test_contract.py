"""The experiment contract: configs declare their controls once; entry points honour the caller's store."""

from __future__ import annotations

import dataclasses

import pytest

from lab import experiment
from lab.catalog import descriptors
from lab.cli import build_parser
from lab.core import streams
from lab.experiments.delete import experiment as delete
from lab.experiments.reinit import experiment as reinit
from lab.experiments.shuffle import experiment as shuffle
from lab.runtime.store import Store

# Every experiment's config (its CLI subcommand) and every class a page's controls are declared in.
CONFIGS = {d.name: d.config for d in descriptors().values()}
DECLARED = sorted({c.owner for d in descriptors().values() for c in d.controls} | set(CONFIGS.values()),
                  key=lambda c: c.__name__)


def _subparser(name: str):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[name]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cli_flags_are_the_config_fields(name):
    """Every CLI flag's default and choices are the config field's, so a default is written once."""
    cls = CONFIGS[name]
    actions = {a.dest: a for a in _subparser(name)._actions}
    shown = [f for f in dataclasses.fields(cls) if f.metadata.get("cli", True) and f.metadata]
    assert shown, "a config without param fields"
    for f in shown:
        a = actions[f.name]
        assert a.default == f.default, f.name
        if f.metadata.get("choices") is not None:
            assert tuple(a.choices) == f.metadata["choices"], f.name
    defaults = {f.name: actions[f.name].default for f in shown}
    assert cls(**defaults) == cls()  # the CLI's default run is the config's default run


def test_every_experiment_is_covered():
    assert len(CONFIGS) == 8 and len(DECLARED) >= 10  # 8 configs, reinit's focus, 2 pages' own controls


@pytest.mark.parametrize("cls", DECLARED, ids=lambda c: c.__name__)
def test_check_rejects_values_outside_the_declared_choices_and_ranges(cls):
    for f in dataclasses.fields(cls):
        m = f.metadata
        if m.get("choices") is not None:
            with pytest.raises(ValueError, match="choose one of"):
                cls(**{f.name: "no-such-choice"})
        elif m.get("hi") is not None and f.type in ("int", "Optional[int]"):
            with pytest.raises(ValueError):
                cls(**{f.name: int(m["hi"]) + 1})


def test_an_entry_point_uses_the_callers_store_all_the_way_down(tmp_path):
    """The model a result needs is trained into the store the caller passed, not the process default."""
    store = Store(tmp_path / "private")
    cfg = reinit.ReinitConfig(model="residual", seed=5, blocks=2, width=8, epochs=1)
    r = reinit.run(cfg, store=store)
    assert r.base_acc >= 0
    kinds = {p.name for p in (tmp_path / "private").iterdir()}
    assert {"reinit", "model"} <= kinds  # the trained model went to the private store too
    assert reinit.run(cfg, store=store) == r  # and the second call is a read


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
