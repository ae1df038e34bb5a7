"""Studies (issue 58): the rules read along the knob on both sides of each, the study a user asks for checked, the
command line, and a study on the Dask engine that loses a worker mid-way and finishes without redoing a cell."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from lab.catalog import descriptors
from lab.claims import MIN_SEEDS
from lab.study import checks, shipped, stats
from lab.study.spec import DEFAULT_SEEDS
from tests import study_sim as S

ROOT = Path(__file__).resolve().parents[1]


def cell(p_holds: float = 1.0, p_absent: float = 1.0, per_seed=(0.0, 0.0, 0.0), repeating: float = 0.0):
    return stats.Cell(value=0, effect=float(np.mean(per_seed)), se=0.01, holds=None, p_holds=p_holds,
                      p_absent=p_absent, seeds=tuple(range(len(per_seed))), per_seed=tuple(per_seed),
                      repeating=repeating, settle_seeds=None)


def test_holm_against_its_definition():
    # level 0.05 over 4: 0.0125, 0.0167, 0.025, 0.05 step by step
    assert stats.holm([0.01, 0.016, 0.02, 0.04], 0.05) == [True, True, True, True]
    assert stats.holm([0.01, 0.02, 0.02, 0.04], 0.05) == [True, False, False, False]
    assert stats.holm([0.2, 0.001, 0.3], 0.05) == [False, True, False]


def test_appears_from_needs_every_larger_value():
    tiny, big = 1e-6, 0.5
    assert stats.appears_from([cell(big), cell(tiny), cell(big), cell(tiny), cell(tiny)]) == 3
    assert stats.appears_from([cell(tiny)] * 4) == 0
    assert stats.appears_from([cell(tiny), cell(tiny), cell(big)]) is None  # not at the largest value: nowhere
    # each value just under the lab's level alone is not enough for a family of 4 (Holm asks 2.3 % / 4 first)
    assert stats.appears_from([cell(0.02)] * 4) is None
    assert stats.appears_from([cell(0.02)]) == 0


def test_absent_up_to_needs_every_smaller_value():
    tiny, big = 1e-6, 0.5
    assert stats.absent_to([cell(p_absent=tiny), cell(p_absent=tiny), cell(p_absent=big)]) == 1
    assert stats.absent_to([cell(p_absent=big), cell(p_absent=tiny)]) is None
    assert stats.absent_to([cell(p_absent=tiny)] * 3) == 2


def test_a_cells_p_agrees_with_the_pages_own_verdict():
    """p_holds < the lab's level exactly when the pooled claim's verdict at z = Z holds; p_absent at a margin of 0
    below it exactly when it does not hold (the same test, the other side)."""
    rng = np.random.default_rng(3)
    seen = {True: 0, False: 0, None: 0}
    for _ in range(150):
        mu = rng.normal(0.0, 0.03)
        c = S.cells(rng, [mu], margin=0.0)[0]
        seen[c.holds] += 1
        assert (c.p_holds < stats.LEVEL) == (c.holds is True), (c.p_holds, c.holds)
        assert (c.p_absent < stats.LEVEL) == (c.holds is False), (c.p_absent, c.holds)
    assert min(seen.values()) > 5  # both sides of the rule and the band between were fed


def test_the_trend_reads_each_seeds_slope():
    up = [cell(per_seed=tuple(0.01 * j + 0.002 * s for s in range(4))) for j in range(5)]
    t = stats.trend(up)
    assert t.direction == "rises" and abs(t.slope - 0.01) < 1e-12
    # the same cells' means with seeds that disagree about the direction: no trend
    mixed = [cell(per_seed=(0.03 * j, -0.03 * j, 0.02 * j, -0.02 * j)) for j in range(5)]
    assert stats.trend(mixed).direction is None
    # a cell's shared inputs widen the slope's error: a slope of 1 pt a step against 5 pts repeating at each value
    noisy = [cell(per_seed=tuple(0.01 * j + 0.002 * s for s in range(4)), repeating=0.05 ** 2) for j in range(5)]
    assert stats.trend(noisy).direction is None
    assert stats.trend(up[:2]) is None  # two values: no trend to read


def test_a_study_is_checked_before_anything_runs():
    s = checks.make("delete", "blocks", ["3", "5", "7"])
    assert s.values == (3, 5, 7) and s.claim == shipped.of_page("delete")[0].claim
    assert s.settings(5, 2)["blocks"] == 5
    assert descriptors()["delete"].config_of(s.settings(5, 2)).blocks == 5  # a config field no control offers
    bad = [
        (("delete", "depth", ["3", "5"]), "no field 'depth'"),
        (("delete", "blocks", ["3", "40"]), "out of range"),
        (("delete", "blocks", ["3"]), "at least two distinct"),
        (("delete", "blocks", ["3", "three"]), "--values for blocks"),
        (("nowhere", "blocks", ["3", "5"]), "no page"),
    ]
    for args, words in bad:
        with pytest.raises(ValueError, match=words):
            checks.make(*args)
    with pytest.raises(ValueError, match="at least 3 distinct seeds"):
        checks.make("delete", "blocks", ["3", "5"], seeds=[1, 1, 2])
    with pytest.raises(ValueError, match="split the study"):
        checks.make("delete", "blocks", [str(b) for b in range(2, 16)], seeds=list(range(30)))


def test_a_page_setting_ignores_keys_no_control_makes():
    """The pass-through that lets a study vary `blocks` changes no page's config: a page's settings hold its
    controls only, and a setting with a control's own name stays the control's."""
    for d in descriptors().values():
        assert d.config_of(d.defaults) == d.config_of(dict(d.defaults))


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lab", "study", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=600)


def test_the_command_line_lists_the_cells_and_says_what_is_wrong():
    got = run_cli("delete", "--knob", "blocks", "--values", "3", "5", "--seeds", "0", "1", "2", "--dry-run",
                  "--json")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert [(c["value"], c["seed"]) for c in out["result"]["cells"]] == [(v, s) for v in (3, 5) for s in (0, 1, 2)]
    assert all(c["calls"] for c in out["result"]["cells"])
    for args, words in [(("delete", "--knob", "depth", "--values", "3", "5"), "no field 'depth'"),
                        (("delete-plain-depth", "--knob", "blocks", "--values", "3", "5"), "shipped study"),
                        (("delete",), "needs --knob")]:
        got = run_cli(*args, "--dry-run")
        assert got.returncode == 2 and words in got.stderr and "Traceback" not in got.stderr, got.stderr


def _files(root: Path) -> dict[str, float]:
    """Every stored result's file and its modification time (the records of timings, locks and engine jobs aside).

    A write in flight (`.<name>.*.tmp`, renamed into place when done) is not a stored result: taken while a worker
    writes, it would read as "rewritten" once renamed."""
    out = {}
    for p in root.rglob("*"):
        if p.name.startswith(".") and p.name.endswith(".tmp"):
            continue
        if {"timings", "locks", "progress", "jobs"} & set(p.relative_to(root).parts):
            continue
        try:
            if p.is_file():
                out[str(p)] = p.stat().st_mtime_ns
        except FileNotFoundError:  # removed between the listing and the stat
            continue
    return out


def test_a_study_loses_a_worker_and_finishes_without_redoing_a_cell(tmp_path, monkeypatch):
    from lab.runtime.engine import DaskEngine
    from lab.runtime.store import Store, use_store
    from lab.study import compute

    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    store = Store(tmp_path / "store")
    study = checks.make("delete", "blocks", ["2", "3"], seeds=[0, 1, 2], base={"width": 16})
    eng = DaskEngine(workers=2, store=store)
    try:
        assert eng.ready(600)
        with use_store(store):
            calls = [(n.fn, n.cfg) for c in compute.plan(study) for n in c.calls]
            got: dict = {}
            def run() -> None:
                with use_store(store):  # a thread does not inherit the context's store
                    got.update(compute.compute(study, 2, engine=eng))

            worker = threading.Thread(target=run)
            worker.start()
            deadline = time.monotonic() + 500
            while not any(store.has(fn.kind, cfg) for fn, cfg in calls):  # the event: a first cell is stored
                if time.monotonic() > deadline or not worker.is_alive():
                    pytest.fail("no cell finished")
                time.sleep(0.05)
            before = _files(store.root)
            pids = eng.client.run(os.getpid)
            victim = next(iter(pids.values()))
            os.kill(victim, signal.SIGKILL)  # one worker dies mid-study
            worker.join(600)
            assert victim not in eng.client.run(os.getpid).values()  # it was killed, and replaced
            assert not worker.is_alive() and not got["failed"], got
            after = _files(store.root)
            rewritten = sorted(p for p, t in before.items() if after.get(p) != t)
            assert not rewritten, rewritten  # nothing finished was written again
            assert all(c.done for c in compute.plan(study))
            assert compute.compute(study, 2, engine=eng)["built"] == 0  # a rerun resumes with nothing to do
            answer = compute.read(study)
        assert [c["value"] for c in answer["cells"]] == [2, 3] and all(len(c["per_seed"]) == 3
                                                                      for c in answer["cells"])
    finally:
        eng.close()


def test_every_shipped_study_is_a_valid_study_at_every_value():
    for s in shipped.STUDIES:
        made = checks.make(s.page, s.knob, [str(v) for v in s.values], s.claim, list(s.seeds), dict(s.base),
                         s.subject, s.margin, s.tied)
        assert made.values == s.values and len(made.seeds) >= MIN_SEEDS
        # the default is five seeds; a study that runs fewer (the dear ViT ones) says so where the page shows it
        assert len(made.seeds) >= len(DEFAULT_SEEDS) or f"{len(made.seeds)} seeds" in s.title, s.name
        for v in s.values:
            cfg = descriptors()[s.page].config_of(made.settings(v, 0))
            assert getattr(cfg, s.knob) == v
            for field, moved in dict(s.tied).get(v, ()):
                assert getattr(cfg, field) == moved
    assert len(shipped.by_name()) == len(shipped.STUDIES)  # names are unique


def test_warm_studies_computes_the_cells_and_a_pack_carries_the_map(tmp_path, monkeypatch):
    """`warm --studies` computes a shipped study's cells; `pack export` / `import` carry them to another store,
    where the map reads the same without computing anything."""
    from lab.classroom import pack
    from lab.cli import main
    from lab.runtime.store import Store, use_store
    from lab.study import compute
    from lab.study.spec import Study

    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    monkeypatch.setenv("LAYERLAB_SECRET_FILE", str(tmp_path / "course.secret"))  # one course: its packs verify
    tiny = Study(page="delete", claim="delete.plain-one-deletion-to-chance", subject="plain MLP", knob="blocks",
                 values=(2, 3), seeds=(0, 1, 2), base=(("width", 16),), name="tiny", title="Tiny")
    monkeypatch.setattr(shipped, "STUDIES", (tiny,))
    here, there = Store(tmp_path / "here"), Store(tmp_path / "there")
    with use_store(here):
        monkeypatch.setenv("LAYERLAB_CACHE", str(here.root))
        assert main(["warm", "--studies", "--workers", "0"]) == 0
        assert all(c.done for c in compute.plan(tiny))
        mine = compute.read(tiny)
        pack.export(here, tmp_path / "study.tar.gz", include_quick=True)
    with use_store(there):
        assert not any(c.done for c in compute.plan(tiny))
        pack.import_pack(there, tmp_path / "study.tar.gz")
        assert all(c.done for c in compute.plan(tiny))
        theirs = compute.read(tiny)
    assert [c["per_seed"] for c in theirs["cells"]] == [c["per_seed"] for c in mine["cells"]]
    assert theirs["sentence"] == mine["sentence"]


def test_each_values_mark_is_holms_and_the_runs_read_both_ways():
    tiny, big = 1e-6, 0.5
    cells = [cell(p_holds=tiny), cell(p_holds=big), cell(p_absent=tiny), cell(p_absent=tiny)]
    assert stats.marks(cells) == ["present", "cannot tell", "absent", "absent"]
    assert stats.holds_to(cells) == 0 and stats.absent_from(cells) == 2  # an effect that fades along the knob
    assert stats.appears_from(cells) is None and stats.absent_to(cells) is None
    both = cell(p_holds=tiny, p_absent=tiny)  # holds, with an effect also below the margin: present
    assert stats.marks([both]) == ["present"]


def test_the_sentence_says_what_the_marks_say():
    from lab.study.words import sentence

    def answer(marks, start=None, end=None, fades=None, until=None):
        cells = [{"family": m, "unit": "pts", "seeds_to_decide": None} for m in marks]
        return {"knob": "width", "values": [16, 32, 64], "seeds": [0, 1, 2, 3, 4], "margin": 0.05, "cells": cells,
                "appears_from": start, "absent_up_to": end, "absent_from": fades, "holds_up_to": until,
                "trend": None}

    assert "holds at every value tried" in sentence(answer(["present"] * 3, start=16, until=64))
    assert "below the margin of 5.0 pts from width = 32 on" in sentence(answer(["cannot tell", "absent", "absent"],
                                                                              fades=32))
    assert "does not appear at any value tried" in sentence(answer(["absent"] * 3, end=64, fades=16))
    assert "cannot tell where" in sentence(answer(["cannot tell"] * 3))
