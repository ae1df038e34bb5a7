"""IOT on the experiment contract: config messages, caching by what each piece depends on, the CLI's JSON."""

import json

import pytest

from lab import cli
from lab.core import zoo
from lab.core.models import accuracy
from lab.experiments.iot import experiment as iot
from lab.experiments.iot import routing as core
from lab.runtime.store import Store


def test_config_rejects_bad_values_with_clear_messages():
    with pytest.raises(ValueError, match="only in the ViT"):
        iot.IOTConfig(model="residual", space="sublayers")
    with pytest.raises(ValueError, match="from 1 to 8"):
        iot.IOTConfig(m=0)
    with pytest.raises(ValueError, match="exploration weight from 0 to 10"):
        iot.IOTConfig(explore=-0.5)
    with pytest.raises(ValueError, match="unknown model"):
        iot.IOTConfig(model="cnn")
    iot.IOTConfig(model="vit-sequential", space="sublayers", m=8, explore=0.0, exploit=0.0, gumbel=False)  # all legal


def test_cli_rejects_bad_arguments_in_one_line(capsys):
    assert cli.main(["iot", "--model", "residual", "--space", "sublayers"]) == 2
    err = capsys.readouterr().err
    assert "only in the ViT" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as e:
        cli.main(["iot", "--space", "diagonal"])
    assert e.value.code == 2 and capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("space,n", [("blocks", 7), ("blocks", 6), ("sublayers", 6)])
def test_candidate_j_does_not_depend_on_m(space, n):
    """Why the fixed-order models are cached per candidate, not per M: the candidates of M are a prefix of M + 1's."""
    big = core.candidate_orders(space, iot.M_MAX, 3, n)
    for m in range(iot.M_MIN, iot.M_MAX):
        assert core.candidate_orders(space, m, 3, n) == big[:m]


def _count(monkeypatch):
    calls = {"zoo": 0, "iot": 0}
    real_zoo, real_iot = zoo.train, core.train_iot

    def zoo_train(*a, **k):
        calls["zoo"] += 1
        return real_zoo(*a, **k)

    def iot_train(*a, **k):
        calls["iot"] += 1
        return real_iot(*a, **k)

    monkeypatch.setattr(zoo, "train", zoo_train)
    monkeypatch.setattr(core, "train_iot", iot_train)
    zoo._memo.clear()  # a fresh process: models come from the store, not from memory
    return calls


def test_the_store_is_honoured_and_a_repeat_trains_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")  # one epoch: this checks the wiring, not the science
    store = Store(tmp_path / "s")
    cfg = iot.IOTConfig(m=3, seed=4)
    calls = _count(monkeypatch)
    first = iot.run(cfg, store=store)
    # the sequential model and the seed control's two other seeds (zoo), two orders trained alone, one IOT training
    # and its twin with exploration switched (the collapse claim reads both)
    assert calls == {"zoo": 3, "iot": 4}
    assert any((tmp_path / "s").rglob("*.json")) and any((tmp_path / "s").rglob("*.safetensors"))
    calls = _count(monkeypatch)
    assert iot.run(cfg, store=store) == first
    assert calls == {"zoo": 0, "iot": 0}
    # exploration off: that training is the first run's twin, already stored, so nothing trains
    iot.run(iot.IOTConfig(m=3, seed=4, explore=0.0), store=store)
    assert calls == {"zoo": 0, "iot": 0}
    # one more order: one more model trained alone, one more seed of the control, and the IOT training of M = 4
    # with its twin
    calls = _count(monkeypatch)
    iot.run(iot.IOTConfig(m=4, seed=4), store=store)
    assert calls == {"zoo": 1, "iot": 3}


def test_part1_identity_is_the_stored_sequential_model(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    store = Store(tmp_path / "s")
    cfg = iot.IOTConfig(m=2, seed=1)
    obs = iot.observe(cfg.observe_cfg, store=store)
    t = zoo.trained(cfg.spec, store=store)
    d = t.data
    assert obs.fixed_acc[0] == pytest.approx(accuracy(t.model, d.test.x, d.test.y), abs=1e-6)
    assert obs.sequential_order_acc[0] == pytest.approx(obs.fixed_acc[0], abs=1e-6)
    order1 = core.candidate_orders(cfg.space, cfg.m, cfg.seed, t.model.n_blocks)[1]
    route = [s.block for s in order1]  # an independent path: the ordinary forward on the permuted route
    assert obs.sequential_order_acc[1] == pytest.approx(accuracy(t.model, d.test.x, d.test.y, route), abs=1e-6)
    assert obs.fixed_oracle_acc >= max(obs.fixed_acc)
    assert obs.best_fixed_acc in obs.fixed_acc
    assert isinstance(obs.seed_control, iot.SeedControl)  # typed, read back from the store as built
    assert obs.seed_control.acc[0] == obs.fixed_acc[0]  # the control's first model is the sequential one


def test_cli_prints_the_promised_json(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "cli"))
    assert cli.main(["iot", "--model", "residual", "--m", "3", "--explore", "0.3", "--seed", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    out = printed["result"]
    for key in ("sequential_acc", "best_fixed_acc", "ensemble_acc", "oracle_acc", "iot_acc", "chance",
                "base_acc", "shared_best_acc", "oracle_agreement"):
        assert 0.0 <= out[key] <= 1.0, key
    assert len(out["choice_share"]) == 3 and sum(out["choice_share"]) == pytest.approx(1.0)
    assert out["oracle_acc"] >= max(out["order_acc"])
    assert out["config"] == printed["config"] == {"model": "residual", "space": "blocks", "m": 3, "explore": 0.3,
                                                  "exploit": 0.1, "gumbel": True, "seed": 2, "task": None}
    confusion = out["choice_confusion"]
    assert sum(map(sum, confusion)) == pytest.approx(1.0)
    assert sum(confusion[j][j] for j in range(3)) == pytest.approx(out["oracle_agreement"], abs=1e-6)
