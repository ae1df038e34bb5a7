"""Workshop questions (lab/classroom/questions.py): the answer is read from the run's claim in every direction (holds,
does not hold, cannot tell, missing), each question is about a real setting of its page, and its claim key is one its
experiment makes."""

import dataclasses
import re
from pathlib import Path

import pytest

from lab.catalog import descriptors, get
from lab.claims import claim, reads
from lab.claims import test as claim_test
from lab.classroom import questions
from lab.estimates import Estimate

Q = questions.q("t.q", "", "What happens?", "t.claim", ("falls", True), ("stays", False), ("can't tell", None))


def _claim(holds):
    """A claim whose test gives `holds`: 5 standard errors above the bar, 5 below, or inside the band."""
    value = {True: 0.55, False: 0.45, None: 0.51}[holds]
    c = claim("t.claim", "it falls", "Lad et al. (2024)", {"acc": value}, "acc >= 0.5",
              [claim_test("acc", Estimate(value, 0.01, "binomial", 2500), ">=", 0.5)], f"acc {100 * value:.0f} %")
    assert c["holds"] is holds
    return c


@pytest.mark.parametrize("holds, correct", [(True, 0), (False, 1), (None, 2)])
def test_the_answer_is_the_option_that_predicted_the_claims_verdict(holds, correct):
    other = dataclasses.replace(_claim(not holds if holds is not None else True), key="other")
    ans = questions.answer(Q, [other, _claim(holds)])
    assert ans.correct == correct and ans.claim["holds"] is holds
    assert ans.matches(correct) is True
    assert ans.matches((correct + 1) % 3) is False


def test_a_missing_claim_or_an_unpredicted_verdict_confirms_no_option():
    assert questions.answer(Q, []).claim is None
    assert questions.answer(Q, None).correct is None
    two = questions.q("t.two", "", "?", "t.claim", ("falls", True), ("stays", False))
    ans = questions.answer(two, [_claim(None)])
    assert ans.claim is not None and ans.correct is None and ans.matches(0) is None


def test_questions_are_checked_when_written():
    with pytest.raises(ValueError, match="two to four"):
        questions.q("x", "", "?", "c", ("a", True))
    with pytest.raises(ValueError, match="different verdict"):
        questions.q("x", "", "?", "c", ("a", True), ("b", True))
    with pytest.raises(ValueError, match="distinct"):
        questions.q("x", "", "?", "c", ("a", True), ("a", False))


def test_a_question_belongs_to_exactly_one_setting():
    d = get("delete")
    s = dict(d.defaults)
    assert questions.question_for(questions.of("delete"), d.presets, d.defaults, s).key == "delete.default"
    plain1 = next(p for p in d.presets if p.key == "plain1").settings
    assert questions.question_for(questions.of("delete"), d.presets, d.defaults, plain1).key == "delete.plain1"
    assert questions.question_for(questions.of("delete"), d.presets, d.defaults, {**s, "seed": 5}) is None


@pytest.mark.parametrize("page", sorted(descriptors()))
def test_every_question_is_about_a_real_setting_and_a_claim_its_experiment_makes(page):
    from lab.classroom.class_checks import QUESTION

    d = get(page)
    keys = {p.key for p in d.presets}
    for q in questions.of(page):
        assert QUESTION.fullmatch(q.key), q.key
        assert q.preset == "" or q.preset in keys, (q.key, q.preset)
    folder = Path(__import__(d.config.__module__, fromlist=["x"]).__file__).parent  # the experiment's folder
    source = "\n".join(f.read_text() for f in sorted(folder.glob("*.py")) if f.name != "questions.py")
    for q in questions.of(page):
        # a key is written whole, or as an f-string whose fixed parts surround a model name
        parts = [re.escape(x) for x in re.split(r"vit-sequential|vit-shuffle|plain|residual|kd|ce", q.claim)]
        assert q.claim in source or re.search(r".*?".join(parts), source), f"{q.key}: no claim {q.claim!r}"


def test_the_gate_finds_claims_in_a_result_or_in_results_side_by_side():
    from app.question_verdict import claims_in, md

    a, b = _claim(True), dataclasses.replace(_claim(False), key="other")
    assert claims_in({"claims": [a]}) == [a]
    assert claims_in(({"claims": [a]}, None, [{"claims": [b]}])) == [a, b]
    assert claims_in({"x": 1}) == [] and claims_in(None) == [] and claims_in({"claims": "junk"}) == []

    @dataclasses.dataclass(frozen=True)
    class Result:  # a typed result: it stores no claims, its claims module declares them (computed when read)
        acc: float

    reads(Result)(lambda r: [a] if r.acc > 0.5 else [b])
    assert claims_in([Result(0.9), {"claims": [b]}]) == [a, b] and claims_in(Result(0.1)) == [b]
    assert md("<b>*x*</b> $1 [l](u)") == "&lt;b&gt;\\*x\\*&lt;/b&gt; \\$1 \\[l\\]\\(u\\)"
