"""Watching a model learn: the training loop's epoch reports read into curves (lab/runtime/progress.py), kept with a
job by both engines (in process, and across a progress file), drawn as a figure (app/figures_training.py), and read
back from a stored model's record for a cached view (app/training_view.py). The browser sees it grow:
tests/test_browser_training_curve.py."""

from __future__ import annotations

import json
import math
import time
from types import SimpleNamespace

import pytest
import torch

from app import figures_training as figs
from app import theme, training_view
from lab.core import zoo
from lab.core.data import Split
from lab.core.models import MLPConfig
from lab.core.train import TrainConfig, train
from lab.runtime.engine.jobs import Job, ThreadEngine
from lab.runtime.engine.progress_files import ProgressFileWriter
from lab.runtime.progress import Curves, Epoch, epoch_of
from lab.runtime.store import Store, use_store

REPORT = "training: epoch {e}/{n}, loss {loss:.3f}, held-out accuracy {acc:.1f} %"


def _reports(n: int, loss0: float = 2.0, acc0: float = 10.0) -> list[str]:
    return [REPORT.format(e=e, n=n, loss=loss0 / e, acc=acc0 + 5 * e) for e in range(1, n + 1)]


def _tiny_split(n: int, seed: int) -> Split:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    return Split(x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long())


# -- the training loop's reports ---------------------------------------------------------------------------------------
def test_every_report_of_the_training_loop_reads_as_its_epoch_with_the_logged_numbers():
    model = zoo.build(MLPConfig(n_in=6, n_out=3, width=8, blocks=2), seed=0)
    cfg = TrainConfig(epochs=4, batch=32, checkpoints=())
    messages: list[str] = []
    log = train(model, _tiny_split(96, 0), cfg, _tiny_split(48, 1), progress=lambda f, m: messages.append(m))
    assert len(messages) == 4
    curves = Curves()
    assert all(curves.add(m) for m in messages)  # every report is an epoch: none missed if train.py rewords it
    (run,) = curves.runs()
    assert [e.epoch for e in run] == [1, 2, 3, 4] and {e.epochs for e in run} == {4}
    assert [e.loss for e in run] == pytest.approx(log.loss, abs=5.1e-4)  # printed to 3 decimals
    assert [e.acc for e in run] == pytest.approx(log.test_acc, abs=5.1e-4)  # printed in % to 1 decimal

    without_test: list[str] = []  # no held-out split: the loss alone
    train(zoo.build(MLPConfig(n_in=6, n_out=3, width=8, blocks=2), seed=0), _tiny_split(64, 0),
          TrainConfig(epochs=2, batch=32, checkpoints=()), progress=lambda f, m: without_test.append(m))
    assert [epoch_of(m).acc for m in without_test] == [None, None]


def test_epoch_of_reads_the_numbers_and_nothing_else():
    assert epoch_of("training: epoch 3/12, loss 1.891, held-out accuracy 83.2 %") == Epoch(3, 12, 1.891, 0.832)
    assert epoch_of("plain MLP: training: epoch 1/1, loss 0.500") == Epoch(1, 1, 0.5, None)  # a wrapper's prefix
    assert epoch_of("IOT training: epoch 2/8, loss 0.700, held-out accuracy 61.5 %") == Epoch(2, 8, 0.7, 0.615)
    assert math.isnan(epoch_of("training: epoch 2/5, loss nan, held-out accuracy 5.0 %").loss)
    for other in ("model ready", "training the sequential model", "queued: waiting for a free worker",
                  "training: epoch 0/5, loss 1.000", "training: epoch 6/5, loss 1.000", "epoch 2/5, loss 1.0"):
        assert epoch_of(other) is None, other


def test_curves_start_a_run_per_model_and_follow_models_trained_side_by_side():
    c = Curves()
    for m in [*_reports(3), "model ready", *_reports(2, loss0=3.0)]:  # one model after another
        c.add(m)
    assert [[e.epoch for e in r] for r in c.runs()] == [[1, 2, 3], [1, 2]] and c.points == 5
    side = Curves()  # two models on lanes, reporting in turn: each epoch joins its own model's run
    a, b = _reports(3, loss0=2.0), _reports(3, loss0=9.0)
    for ma, mb in zip(a, b, strict=True):
        side.add(ma)
        side.add(mb)
    assert [[e.loss for e in r] for r in side.runs()] == [[2.0, 1.0, 0.667], [9.0, 4.5, 3.0]]
    many = Curves()  # bounded: the newest runs are kept
    for _ in range(Curves.MAX_RUNS + 3):
        many.add(_reports(1)[0])
    assert len(many.runs()) == Curves.MAX_RUNS


def test_curves_cross_as_plain_data_and_junk_is_left_out():
    c = Curves()
    for m in _reports(3) + _reports(2):
        c.add(m)
    back = Curves.from_data(c.data())
    assert back.runs() == c.runs() and back.points == 5
    junk = [{"epochs": 2, "points": [[1, 0.5, None]]}, {"points": []}, "x", {"epochs": "y", "points": [[1, 1, 1]]}]
    assert [[(e.epoch, e.acc) for e in r] for r in Curves.from_data(junk).runs()] == [[(1, None)]]
    assert Curves.from_data(None).runs() == []


# -- the engines keep a job's curves -----------------------------------------------------------------------------------
def test_an_in_process_job_keeps_its_curves_as_it_reports():
    eng = ThreadEngine(workers=1)
    seen: list[int] = []

    def work(cfg, progress):
        for m in _reports(3):
            progress(0.5, m)
            seen.append(job.curves.points)  # the page reads them while the job still runs
        progress(1.0, "done")
        return cfg

    try:
        job = eng.submit("curve job", work, 7)
        assert job.future.result(timeout=30) == 7
    finally:
        eng.close()
    assert seen == [1, 2, 3]
    assert [[e.epoch for e in r] for r in job.curves.runs()] == [[1, 2, 3]]


def test_a_worker_s_curves_reach_the_server_through_the_progress_file(tmp_path):
    path = tmp_path / "jobs" / "j.json"
    writer = ProgressFileWriter(path, submitted=time.time(), notices=[])
    job = Job("on a worker", progress_file=path)
    msgs = _reports(4)
    for m in msgs[:2]:
        writer(0.2, m)  # the second comes within WRITE_EVERY_S of the first: not written yet...
    writer(0.4, msgs[2])
    writer.write()  # ...and is in the next write, with every epoch before it
    job.refresh()
    assert [e.epoch for e in job.curves.runs()[0]] == [1, 2, 3]
    writer(1.0, msgs[3])  # the last report is always written
    job._read_at = 0.0  # refresh reads at most 4 times a second
    job.refresh()
    assert job.curves.points == 4 and job.curves.runs()[0][-1].loss == pytest.approx(0.5)


# -- the figure --------------------------------------------------------------------------------------------------------
def test_the_live_figure_spans_the_whole_run_and_draws_each_epoch_so_far():
    c = Curves()
    assert figs.training_figure(training_view.live_curves(c)) is None  # no empty axes before the first epoch
    for m in _reports(12)[:3]:
        c.add(m)
    fig = figs.training_figure(training_view.live_curves(c), "live")
    loss, acc = fig.data
    assert list(loss.x) == [1, 2, 3] and list(acc.x) == [1, 2, 3]
    assert list(acc.y) == pytest.approx([15.0, 20.0, 25.0])  # held-out accuracy in percent
    assert loss.xaxis == "x" and acc.xaxis == "x2"  # two panels: loss left, accuracy right
    assert list(fig.layout.xaxis.range) == [0.5, 12.5] and list(fig.layout.xaxis2.range) == [0.5, 12.5]
    assert loss.mode == "lines+markers" and loss.line.color == theme.ORIGINAL  # the model as trained
    assert not fig.layout.showlegend  # one model: the panels' titles say it all
    for m in _reports(12)[3:6]:
        c.add(m)
    assert len(figs.training_figure(training_view.live_curves(c)).data[0].x) == 6  # it grows


def test_the_stored_curve_s_figure_names_each_model_with_a_style_of_its_own():
    a = figs.stored_curve("plain MLP", {"loss": [2.0, 1.0, 0.5], "test_acc": [0.3, 0.6, 0.8]}, theme.PLAIN)
    b = figs.stored_curve("residual MLP", {"loss": [1.5, 0.7], "test_acc": [0.5, 0.9]}, theme.RESIDUAL)
    assert figs.stored_curve("none", {"loss": [], "test_acc": []}) is None
    fig = figs.training_figure([a, b], "stored")
    drawn = [t for t in fig.data if t.x[0] is not None]
    assert [t.name for t in drawn] == ["training loss, plain MLP", "held-out accuracy (%), plain MLP",
                                       "training loss, residual MLP", "held-out accuracy (%), residual MLP"]
    assert [t.line.color for t in drawn] == [theme.PLAIN] * 2 + [theme.RESIDUAL] * 2
    assert drawn[0].line.dash != drawn[2].line.dash and drawn[0].marker.symbol != drawn[2].marker.symbol
    assert drawn[0].line.dash == drawn[1].line.dash  # one model looks the same in both panels
    assert fig.layout.showlegend and [t.name for t in fig.data if t.showlegend] == ["plain MLP", "residual MLP"]
    assert list(fig.layout.xaxis.range) == [0.5, 3.5]  # the longest run
    assert list(drawn[3].y) == pytest.approx([50.0, 90.0])


# -- a cached view: the models its results were computed from ----------------------------------------------------------
def test_a_stored_result_leads_to_its_models_and_their_stored_curves(tmp_path):
    store = Store(tmp_path / "store")
    spec = zoo.ModelSpec(MLPConfig(width=8, blocks=1), TrainConfig(epochs=2, seed=3, checkpoints=()))
    assert training_view.spec_of(_json(spec)) == spec

    def result():  # a result computed from a trained model, as every experiment's entries are
        return {"acc": zoo.trained(spec, store=store).info["test_acc"][-1]}

    fn = SimpleNamespace(kind="curve-test")
    call = SimpleNamespace(fn=fn, cfg=spec)
    assert training_view.models_of([call], store) == []  # nothing stored yet: no expander
    with use_store(store):
        store.json("curve-test", spec, result)
    (learned,) = training_view.models_of([call, call], store)  # each model once
    assert learned.spec == spec and len(learned.info["loss"]) == 2 and len(learned.info["test_acc"]) == 2
    assert training_view.model_words(spec) == "residual MLP, 1 block, seed 3"
    fig = figs.training_figure(training_view.curves_of([learned]))
    assert list(fig.data[0].y) == pytest.approx(learned.info["loss"])
    assert fig.data[0].line.color == theme.RESIDUAL
    assert training_view.models_of([SimpleNamespace(fn=lambda: None, cfg=spec)], store) == []  # not an entry


def _json(cfg) -> str:
    from lab.runtime.store import config_json

    return config_json(cfg)


def test_spec_of_gives_back_only_what_gives_the_same_json():
    spec = zoo.ModelSpec(MLPConfig(arch="plain"), TrainConfig(mode="layerdrop", drop_p=0.5))
    assert training_view.spec_of(_json(spec)) == spec
    assert training_view.model_words(spec) == "plain MLP, 7 blocks, LayerDrop p = 0.5, seed 0"
    assert training_view.spec_of(_json(TrainConfig())) is None  # not a model
    assert training_view.spec_of('{"__class__": "Nothing"}') is None
    assert training_view.spec_of("not json") is None


def test_the_expander_says_how_the_model_learned_and_draws_the_curve_only_when_open():
    from streamlit.testing.v1 import AppTest

    from lab.runtime.store import active_store

    spec = zoo.ModelSpec(MLPConfig(width=8, blocks=1), TrainConfig(epochs=3, seed=4, checkpoints=()))
    active_store().json("curve-test", spec, lambda: {"acc": zoo.trained(spec).info["test_acc"][-1]})

    def page():
        from types import SimpleNamespace

        from app import training_view
        from lab.core import zoo
        from lab.core.models import MLPConfig
        from lab.core.train import TrainConfig

        spec = zoo.ModelSpec(MLPConfig(width=8, blocks=1), TrainConfig(epochs=3, seed=4, checkpoints=()))
        training_view.learned([SimpleNamespace(fn=SimpleNamespace(kind="curve-test"), cfg=spec)])

    at = AppTest.from_function(page)
    at.run()
    assert not at.exception, at.exception
    assert [e.label for e in at.expander] == ["How this model learned"]
    text = " ".join(m.value for m in at.markdown)
    assert "residual MLP, 1 block, seed 4" in text and "3 epochs" in text and "held-out accuracy" in text
    assert not at.get("plotly_chart")  # closed: no figure is built (a cached view pays nothing for it)
    at.session_state[training_view.LEARNED_KEY] = True  # the student opens it
    at.run()
    assert not at.exception, at.exception
    (chart,) = at.get("plotly_chart")
    drawn = json.loads(chart.proto.spec)["data"]
    assert [len(t["x"]) for t in drawn] == [3, 3]  # loss and held-out accuracy, every epoch
