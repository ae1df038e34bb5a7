"""Delete on a tiny real run (quick mode, a small teacher): stored per-input outcomes agree with the accuracies they
come from, the race's curve outcomes with its curves, and every claim the page draws is a complete record."""

from __future__ import annotations

import numpy as np

from lab import claims
from lab.experiments.delete import claims as DC
from lab.experiments.delete import experiment as D
from lab.ops import selection
from lab.runtime.store import Store


def test_tiny_real_results_carry_outcomes_that_agree_and_complete_claims(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")  # one epoch: this checks the wiring, not the science
    store = Store(tmp_path / "s")
    cfg = D.DeleteConfig(k=2, blocks=3, width=16, epochs=1, steps=50)
    r = D.run(cfg, store=store)
    o = r.outcomes
    for name, acc in (("base", r.base_acc), ("cut", r.cut_acc), ("recovered", r.recovered_acc)):
        assert abs(selection.scores(o[name]).mean() - acc) < 1e-6, name
    assert np.allclose([selection.scores(s).mean() for s in o["single"]], r.single_block_acc, atol=1e-6)
    for m, sel in r.selections.items():
        assert abs(selection.scores(sel["outcomes"]).mean() - sel["test_acc"]) < 1e-6, m
    assert r.selections["random"]["exact"] and r.selections["random"]["draws"] == 3  # C(3, 2)
    race = D.race(D.RaceConfig.of(cfg), store=store)
    for method in ("ce", "kd"):
        curve = [selection.scores(s).mean() for s in race.outcomes[method]]
        assert len(curve) == len(getattr(race, method).curve_steps) >= 2
        assert np.allclose(curve, getattr(race, method).curve_acc, atol=1e-6)
    sw = D.sweep(D.SweepConfig.of(cfg), store=store)
    page = DC.page_claims(r, sw, race)
    claims.check(page)
    assert [c["key"] for c in page][-1] == "delete.kd-as-fast-as-ce"
    assert len({c["key"] for c in page}) == len(page)
    shallow = D.shallow(D.ShallowConfig.of(cfg), store=store)
    assert shallow.blocks == 1 and abs(selection.scores(shallow.outcomes["model"]).mean() - shallow.acc) < 1e-6
