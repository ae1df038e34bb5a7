"""Where-questions (lab/classroom/where.py): a lesson step asks the room where a shipped study's effect begins, and
the study's answer, read as its sentence reads it, names the option; a lesson of such steps warms every study cell."""

from __future__ import annotations

import pytest

from lab.catalog import get
from lab.classroom import lessons, questions, warm, where
from lab.classroom.lessons import Lesson, Step
from lab.classroom.seeds import seed_needs
from lab.study.shipped import STUDIES, by_name


def _answer(values, appears=None, absent_to=None):
    return {"values": list(values), "appears_from": appears, "absent_up_to": absent_to, "statement": "s",
            "sentence": "what the map shows", "how": "Holm", "seeds": [0, 1, 2, 3, 4]}


@pytest.mark.parametrize("study", [s for s in STUDIES if s.question], ids=lambda s: s.name)
def test_every_shipped_study_with_a_question_asks_one_option_per_value_and_nowhere(study):
    q = where.question(study)
    assert q.study == study.name and q.key == where.PREFIX + study.name and q.prompt == study.question
    assert len(q.options) == len(study.values) + 1
    assert [v for _, v in q.options] == [where.token(v) for v in study.values] + [where.NOWHERE]
    assert all(str(v) in t for (t, _), v in zip(q.options, study.values, strict=False))


def test_the_map_names_the_option_it_shows_and_no_other():
    study = by_name()["delete-plain-depth"]
    q = where.question(study)
    vals = study.values
    for i, v in enumerate(vals):  # it appears from each value in turn: exactly that option
        ans = questions.answer(q, [where.claim(study, _answer(vals, appears=v))])
        assert ans.correct == i and ans.matches(i) and not ans.matches((i + 1) % len(q.options))
    shown_absent = questions.answer(q, [where.claim(study, _answer(vals, absent_to=vals[-1]))])
    assert shown_absent.correct == len(vals)  # absent at every value: "nowhere"
    partly = questions.answer(q, [where.claim(study, _answer(vals, absent_to=vals[1]))])
    undecided = questions.answer(q, [where.claim(study, _answer(vals))])
    assert partly.correct is None and undecided.correct is None  # the map confirms no option
    assert questions.answer(q, []).claim is None  # not computed: no answer at all


def test_a_verdict_is_never_read_as_a_token_nor_a_token_as_a_verdict():
    study = by_name()["iot-orders"]
    q = where.question(study)
    assert questions.answer(q, [{"key": q.claim, "holds": True}]).correct is None
    view_q = questions.of("delete")[0]
    assert questions.answer(view_q, [{"key": view_q.claim, "holds": "nowhere"}]).correct is None


def test_a_where_question_is_never_a_views_question():
    d = get("delete")
    asked = questions.question_for(where.asked("delete"), d.presets, d.defaults, d.defaults)
    assert asked is not None and not asked.study  # the default view still asks its own question


def test_a_where_step_is_checked_and_its_outcome_is_the_maps_sentence():
    key = where.PREFIX + "delete-plain-depth"
    ok = Step("delete", "", key, "Where does it begin?")
    assert lessons.problems(Lesson("w", "W", 6, (ok,))) == []
    pinned = Step("delete", "plain1", key, "Where does it begin?")
    assert "default view" in " ".join(lessons.problems(Lesson("w", "W", 6, (pinned,))))
    other_page = Step("shuffle", "", key, "Where?")
    assert "has no question" in " ".join(lessons.problems(Lesson("w", "W", 6, (other_page,))))
    study = by_name()["delete-plain-depth"]
    out = lessons.outcome(ok.asked, [where.claim(study, _answer(study.values, appears=5))])
    assert out["correct"] == 1 and lessons.verdict_of(out) == "what the map shows"
    rows = lessons.report_rows(Lesson("w", "W", 6, (ok,)), {key: {1: 3, 4: 1}}, {key: out})
    assert rows[0]["predicted"] == 3 and rows[0]["votes"] == 4 and rows[0]["setting"].endswith("Where it appears")


def test_warming_a_where_lesson_plans_every_cell_of_its_studies():
    lesson = lessons.get("where-it-appears")
    keys = {i.key for i in warm.lesson_plan(lesson)}
    for step in lesson.steps:
        study = where.study_of(step.asked)
        for value, seed in study.cells():
            for n in seed_needs(step.page, study.settings(value, seed), seed):
                assert f"{n.fn.kind}:{warm.config_json(n.cfg)}" in keys, (study.name, value, seed)


def test_every_page_with_a_study_has_one_the_room_can_be_asked():
    assert {s.page for s in STUDIES if s.question} == {s.page for s in STUDIES}
