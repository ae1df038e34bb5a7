"""Lessons as data (lab/classroom/lessons.py): the shipped lessons are complete (every step's page, setting and
question exist, and the question is the one its page asks at that setting), a lesson file round-trips and a broken one
is refused with words that name the problem, the report says per step what the class predicted against the run, and
`python -m lab warm --lesson NAME` plans exactly the steps' results."""

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab.catalog import descriptors, get
from lab.classroom import lessons, questions, warm, where
from lab.classroom.lessons import Lesson, LessonError, Step

ROOT = Path(__file__).resolve().parents[1]


def test_the_lab_ships_at_least_three_lessons_of_30_to_45_minutes_whose_every_step_exists():
    shipped = lessons.shipped()
    assert len(shipped) >= 3
    assert {"layers-equal", "order-matters", "answer-decided"} <= set(shipped)
    for lesson in shipped.values():
        assert lessons.problems(lesson) == [], lesson.key
        assert 30 <= lesson.minutes <= 45, lesson.key
        assert len(lesson.steps) * lessons.MINUTES_PER_STEP <= 45
        for step in lesson.steps:
            d = descriptors()[step.page]  # the page exists
            assert step.setting == "" or step.setting in {p.key for p in d.presets}  # its preset exists
            q = next(x for x in where.asked(step.page) if x.key == step.question)  # its question exists
            if q.study:  # a where-question: about a study the page ships, asked at its map
                assert where.study_of(q).page == step.page and step.setting == ""
            else:
                asked = questions.question_for(questions.of(step.page), d.presets, d.defaults, step.settings)
                assert asked is q, (lesson.key, step)  # the page asks exactly it at the step's setting
            assert step.aim.strip() and "\n" not in step.aim and len(step.aim) <= lessons.AIM_CHARS
    pages = {k: {s.page for s in x.steps} for k, x in shipped.items()}
    assert pages["layers-equal"] == {"delete", "reinit", "layerdrop"}
    assert pages["order-matters"] == {"shuffle", "rearrange", "iot"}
    assert pages["answer-decided"] == {"lens", "matrix"}
    assert pages["where-it-appears"] == {"delete", "reinit", "shuffle", "layerdrop", "iot"}  # the five source pages


def test_a_lesson_file_round_trips_and_is_small():
    for lesson in lessons.LESSONS:
        text = lessons.to_json(lesson)
        assert len(text.encode()) < 4000
        assert lessons.from_json(text) == lesson
        assert lessons.from_json(text.encode()) == lesson


def _file(**change) -> str:
    data = json.loads(lessons.to_json(lessons.LESSONS[0]))
    steps = change.pop("steps", None)
    data.update(change)
    if steps is not None:
        data["steps"] = steps
    return json.dumps(data)


STEP = {"page": "delete", "setting": "plain1", "question": "delete.plain1", "aim": "One layer."}


@pytest.mark.parametrize("text, words", [
    ("{not json", "it is not JSON"),
    (b"\xff\xfe\x00", "not a lesson file"),
    ("[1, 2]", '"layerlab_lesson": 1'),
    (json.dumps({"layerlab_lesson": 2}), '"layerlab_lesson": 1'),
    (_file(title=3), "title must be str"),
    (_file(minutes="36"), "minutes must be int"),
    (_file(steps=[{"page": "delete"}]), "step 1 must give page, setting, question, aim"),
    (_file(steps=[]), "1-30 steps"),
    (_file(steps=[STEP] * 31), "1-30 steps"),
    (_file(steps=[{**STEP, "page": "nope"}]), "'nope' is not a page of this lab"),
    (_file(steps=[{**STEP, "question": "delete.nope"}]), "no question 'delete.nope'"),
    (_file(steps=[{**STEP, "setting": "nope"}]), "no preset 'nope'"),
    (_file(steps=[{**STEP, "setting": "res4"}]), "asks 'delete.res4' at its setting 'res4', not 'delete.plain1'"),
    (_file(steps=[STEP, STEP]), "step 2: question 'delete.plain1' is asked by an earlier step"),
    (_file(steps=[{**STEP, "aim": ""}]), "step 1: its aim must be one line"),
    (_file(steps=[{**STEP, "aim": "two\nlines"}]), "step 1: its aim must be one line"),
    (_file(steps=[{**STEP, "setting": "k.99"}]), "k='99' is not a value of that control"),
    (_file(steps=[{**STEP, "setting": "colour.red"}]), "is not control.value of one of its controls"),
    (_file(key="Bad Key!"), "its key must be"),
    ("x" * (lessons.MAX_BYTES + 1), "at most 32 kB"),
    ("[" * 20_000, "nests lists or objects more than 8 deep"),  # issue 60: json's parser recursed into an error
    ('{"a": ' * 9 + "1" + "}" * 9, "more than 8 deep"),
    ('{"layerlab_lesson": 1, "minutes": ' + "9" * 5_000 + "}", "a number of 5,000 characters"),  # int's own limit
    ('{"layerlab_lesson": 1.' + "5" * 30 + "}", "a number of 32 characters"),
])
def test_a_broken_lesson_file_is_refused_with_words_that_name_the_problem(text, words):
    with pytest.raises(LessonError) as e:
        lessons.from_json(text)
    assert words in str(e.value), str(e.value)


def test_brackets_and_quotes_inside_text_do_not_count_as_nesting():
    lesson = lessons.get("order-matters")
    odd = lessons.Lesson(lesson.key, 'Order [[[[[[[[[[{{{{ "matters" \\', lesson.minutes, lesson.steps)
    assert lessons.from_json(lessons.to_json(odd)) == odd


def test_a_step_may_name_its_setting_as_a_pinned_link_does():
    pinned = Step("delete", "arch.plain_k.1_recovery.none", "delete.plain1", "One layer.")
    assert pinned.settings == get("delete").presets[0].settings == Step("delete", "plain1", "", "").settings
    assert lessons.problems(Lesson("pinned", "Pinned", 6, (pinned,))) == []
    wrong = Step("delete", "arch.plain_k.2_recovery.none", "delete.plain1", "One layer.")  # not the question's setting
    assert "asks no question" in " ".join(lessons.problems(Lesson("pinned", "Pinned", 6, (wrong,))))


def test_a_lesson_built_from_the_menu_is_checked_and_keyed_by_its_title():
    menu = lessons.menu()
    assert len(menu) == sum(len(where.asked(n)) for n in descriptors())  # every question of every page
    assert any(s.question.startswith(where.PREFIX) for s in menu)  # its studies' where-questions among them
    assert all(lessons.problems(Lesson("x", "x", 6, (s,))) == [] for s in menu)
    built = lessons.built("  My first lesson! ", [menu[3], menu[0]])
    assert built.key == "my-first-lesson" and built.title == "My first lesson!"
    assert built.steps == (menu[3], menu[0]) and built.minutes == 2 * lessons.MINUTES_PER_STEP
    with pytest.raises(LessonError, match="1-30 steps"):
        lessons.built("Empty", [])


def _claim(holds, key="delete.plain-one-deletion-to-chance"):
    return {"key": key, "claim": "one deletion sends a plain MLP to chance", "holds": holds,
            "detail": "worst 12.0 %, best 14.1 %, chance 11.0 %", "rule": "within 10 points of chance",
            "tests": [{"name": "best minus chance", "value": 0.031, "se": 0.012, "threshold": 0.1, "unit": "pts",
                       "side": "<=", "holds": holds}]}


def test_an_outcome_keeps_the_verdict_its_error_and_the_option_that_predicted_it():
    q = next(x for x in questions.of("delete") if x.key == "delete.plain1")
    out = lessons.outcome(q, [_claim(True)])
    assert out["holds"] is True and out["correct"] == 0 and "12.0 %" in out["detail"]
    assert out["error"] == "best minus chance +3.1 pts ± 1.2 (se) against +10.0"
    assert lessons.outcome(q, [_claim(None)])["correct"] == 2
    assert lessons.outcome(q, [_claim(True, key="another")]) is None  # the run has no such claim


def test_the_report_has_every_step_with_the_distribution_the_verdict_its_error_and_who_predicted_it():
    lesson = lessons.get("layers-equal")
    q1, q2 = lesson.steps[0].asked, lesson.steps[1].asked
    tallies = {q1.key: {0: 3, 1: 1}, q2.key: {2: 2}}
    outs = {q1.key: lessons.outcome(q1, [_claim(True)]),
            q2.key: {**lessons.outcome(q1, [_claim(False)]), "claim": "<script>alert(1)</script>"}}
    rows = lessons.report_rows(lesson, tallies, outs)
    assert [r["step"] for r in rows] == list(range(1, len(lesson.steps) + 1))
    assert rows[0]["counts"] == [3, 1, 0] and rows[0]["predicted"] == 3 and rows[0]["votes"] == 4
    assert lessons.predicted_words(rows[0]) == "3 of 4 predicted what happened"
    assert rows[1]["predicted"] == 0 and rows[1]["verdict"] == "does not hold"
    assert rows[2]["verdict"] == "not run in class" and rows[2]["votes"] == 0
    table = list(csv.DictReader(io.StringIO(lessons.report_csv(rows))))
    assert len(table) == len(lesson.steps)
    assert table[0]["predicted_it"] == "3" and table[0]["verdict"] == "holds"
    assert table[0]["distribution"] == "It falls to about chance: 3 | Some layer can go and it stays well above " \
                                       "chance: 1 | Too close to call in this run: 0"
    assert table[0]["error"].startswith("best minus chance +3.1 pts")
    page = lessons.report_html(lesson, "K7M4QX", rows)
    assert page.startswith("<!doctype html>") and "<script" not in page  # self-contained, nothing runs
    assert "&lt;script&gt;" in page and "3 of 4 predicted what happened" in page and "Class K7M4QX" in page
    assert page.count("<section>") == len(lesson.steps) and "http" not in page


def test_a_cell_a_spreadsheet_would_run_as_a_formula_is_quoted():
    lesson = lessons.get("layers-equal")
    q1 = lesson.steps[0].asked
    rows = lessons.report_rows(lesson, {}, {q1.key: {**lessons.outcome(q1, [_claim(True)]), "detail": "=1+1"}})
    assert list(csv.DictReader(io.StringIO(lessons.report_csv(rows))))[0]["what_happened"] == "'=1+1"


def test_warming_a_lesson_plans_exactly_its_steps_results():
    lesson = lessons.get("layers-equal")
    items = warm.lesson_plan(lesson)
    want = {f"{n.fn.kind}:{warm.config_json(n.cfg)}" for s in lesson.steps
            for n in get(s.page).plan(s.settings) if not n.optional}
    assert {i.key for i in items} == want and len(items) == len(want)
    assert {i.page for i in items} == {"delete", "reinit", "layerdrop"}
    assert items[0].setting == "step 1"
    seeds = warm.lesson_plan(lesson, seeds=[0, 1])
    assert {i.setting.split(", ")[1] for i in seeds} == {"seed 0", "seed 1"} and len(seeds) > len(items)


def test_the_warm_command_takes_a_lesson_by_name_or_file(tmp_path):
    def warm_cmd(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "lab", "warm", *args, "--dry-run", "--json"], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)

    out = warm_cmd("--lesson", "order-matters")
    assert out.returncode == 0, out.stderr
    envelope = json.loads(out.stdout)
    assert envelope["config"]["lesson"] == "order-matters"
    assert envelope["config"]["pages"] == ["shuffle", "rearrange", "iot"]
    assert {t["page"] for t in envelope["result"]["todo"]} <= {"shuffle", "rearrange", "iot"}
    assert {t["setting"] for t in envelope["result"]["todo"]} <= {f"step {n}" for n in range(1, 7)}
    path = tmp_path / "mine.lesson.json"
    path.write_text(lessons.to_json(lessons.built("Mine", [lessons.menu()[0]])))
    assert json.loads(warm_cmd("--lesson", str(path)).stdout)["config"]["pages"] == ["delete"]
    bad = warm_cmd("--lesson", "no-such-lesson")
    assert bad.returncode == 2 and "unknown lesson 'no-such-lesson'" in bad.stderr and "layers-equal" in bad.stderr
    path.write_text("{broken")
    bad = warm_cmd("--lesson", str(path))
    assert bad.returncode == 2 and "it is not JSON" in bad.stderr
