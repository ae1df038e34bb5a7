"""Every experiment the catalog finds passes the experiment contract (tests/conformance.py: `check_experiment`, one
test per check and experiment), and the checks themselves fail where they should."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lab.catalog import descriptors, get
from lab.catalog.presets import Need
from tests import conformance

NAMES = list(descriptors())


def test_every_experiment_is_checked():
    experiments = Path(__file__).resolve().parents[1] / "lab" / "experiments"
    folders = {p.parent.name for p in experiments.glob("*/descriptor.py")}
    assert set(NAMES) == folders  # every experiment the registry holds is checked, however many there are
    assert len({c for n in NAMES for c in conformance.declared_classes(get(n))}) >= len(NAMES)


@pytest.mark.parametrize("check", conformance.STATIC_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", NAMES)
def test_the_experiment_meets_the_contract(name, check):
    check(get(name))


@pytest.mark.parametrize("name", NAMES)
def test_the_page_draws_its_declared_controls_and_runs_exactly_its_plan(name):
    conformance.check_page(get(name))


# -- the checks can fail -------------------------------------------------------------------------------------
def test_a_page_that_skips_a_call_or_makes_one_outside_its_plan_fails():
    from lab.experiments.delete import descriptor as described
    from lab.experiments.delete import experiment as delete

    plan = described.plan(described.DEFAULTS)
    asked = {conformance.key_of(n.fn, n.cfg) for n in plan if not n.optional}
    conformance.compare_calls(asked, plan, "all asked")
    conformance.compare_calls(asked | {conformance.key_of(plan[-1].fn, plan[-1].cfg)}, plan, "an optional one too")
    with pytest.raises(AssertionError, match="did not ask for"):
        conformance.compare_calls(asked - {conformance.key_of(delete.sweep, plan[1].cfg)}, plan, "sweep skipped")
    other = delete.DeleteConfig(k=5)
    with pytest.raises(AssertionError, match="outside it"):
        conformance.compare_calls(asked | {conformance.key_of(delete.run, other)}, plan, "another deletion")


def test_a_plan_must_list_stored_entry_points_each_named_once():
    d = get("lens")
    with pytest.raises(ValueError, match="entry points"):
        dataclasses.replace(d, plan=lambda s: []).check()
    with pytest.raises(ValueError, match="entry points"):
        dataclasses.replace(d, plan=lambda s: [Need("not stored", len, d.config_of(s))]).check()
    twice = lambda s: d.plan(s) + d.plan(s)  # noqa: E731
    with pytest.raises(ValueError, match="both named"):
        dataclasses.replace(d, plan=twice).check()


def test_warming_follows_the_plan():
    d = get("delete")
    lost = dataclasses.replace(d, plan=lambda s: d.plan(s)[:1])  # a plan that forgot the sweep and the rest
    from lab import catalog

    catalog._FOUND["delete"] = lost
    try:
        with pytest.raises(AssertionError):
            conformance.check_one_plan(d)  # warm reads the catalog's (shorter) plan: they differ
    finally:
        catalog._FOUND["delete"] = d


def test_a_control_drawn_with_words_of_its_own_fails():
    class Widget:
        def __init__(self, key, label, help):
            self.key, self.label, self.help = key, label, help

    d = get("lens")
    registered = {c.name: c for c in d.controls}

    class At:
        session_state = {"_layerlab_controls": registered}
        selectbox = [Widget(c.name, c.label, c.help) for c in d.controls]
        slider = number_input = multiselect = select_slider = []

    conformance.check_controls_drawn(d, At)
    At.selectbox[0] = Widget(d.controls[0].name, d.controls[0].label, "help written on the page")
    with pytest.raises(AssertionError):
        conformance.check_controls_drawn(d, At)


def test_a_page_cannot_pass_help_of_its_own():
    """`controls.param` takes no label or help: they are the declaration's (the widget refuses a second help)."""
    import inspect

    from app import controls

    params = inspect.signature(controls.param).parameters
    assert "help" not in params and "label" not in params and "default" not in params


def test_a_question_whose_claim_its_setting_does_not_make_fails(monkeypatch):
    from lab.classroom import questions

    d = dataclasses.replace(get("lens"), claims=lambda s: [{"key": "lens.made"}])
    made = questions.q("lens.made", "", "?", "lens.made", ("yes", True), ("no", False))
    monkeypatch.setattr(questions, "of", lambda page: (made,))
    conformance.check_questions(d)
    monkeypatch.setattr(questions, "of", lambda page: (made, questions.q("lens.lost", "", "?", "lens.nowhere",
                                                                        ("yes", True), ("no", False))))
    with pytest.raises(AssertionError, match="lens.nowhere"):
        conformance.check_questions(d)
    monkeypatch.setattr(questions, "of", lambda page: (questions.q("lens.other", "no-such-preset", "?", "lens.made",
                                                                   ("yes", True), ("no", False)),))
    with pytest.raises(AssertionError):
        conformance.check_questions(d)
