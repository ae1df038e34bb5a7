"""The server's collection policy (app/collector.py): after a run, survivors leave the collector's view, so an
automatic collection walks only what is new; an idle sweep reclaims reference cycles that were frozen."""

from __future__ import annotations

import gc
import weakref

import pytest

from app import collector


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cycle collector can free it


@pytest.fixture(autouse=True)
def _unfrozen():
    yield
    gc.unfreeze()  # leave the test process as it was


def test_after_a_run_the_survivors_are_out_of_view_and_a_sweep_frees_frozen_cycles(monkeypatch):
    gc.collect()
    before = gc.get_freeze_count()
    survivors = [Node() for _ in range(1000)]  # what a run leaves behind, alive
    ref = weakref.ref(survivors[0])
    collector.after_run()
    assert gc.get_freeze_count() >= before + 1000
    assert not any(o is survivors[0] for o in gc.get_objects(generation=2))  # no collection walks it now
    del survivors  # the cycles are garbage now, but frozen: a normal full collection does not see them
    gc.collect()
    assert ref() is not None
    collector.sweep()
    assert ref() is None


def test_the_sweeper_waits_for_idle_time_and_enough_growth(monkeypatch):
    collector.sweep()
    # A server's sweeper thread that another test of this process started would sweep between the lines below (once
    # FORCE_GROWTH is low, it is due) and reset the growth they read: from here only this test's `due` is asked.
    monkeypatch.setattr(collector, "sweep", lambda: 0)
    now = collector._state["last_run"] + collector.IDLE_S + 1
    assert not collector.due(now)  # idle, but nothing new frozen
    monkeypatch.setattr(collector, "SWEEP_GROWTH", 100)
    keep = [Node() for _ in range(200)]
    collector.after_run()
    assert not collector.due(collector._state["last_run"] + 0.1)  # grown, but a page just ran
    assert collector.due(collector._state["last_run"] + collector.IDLE_S + 1)
    monkeypatch.setattr(collector, "FORCE_GROWTH", 150)
    assert collector.due(collector._state["last_run"] + 0.1)  # a server that is never idle still sweeps
    del keep


def test_a_runs_own_garbage_cycles_are_freed_at_its_end():
    gc.collect()
    gc.freeze()  # what came before the run
    dead = Node()
    ref = weakref.ref(dead)
    del dead  # a cycle that died during the run
    collector.after_run()
    assert ref() is None
