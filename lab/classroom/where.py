"""Where-questions: a lesson step that asks the room where a shipped study's effect begins (lab/study/shipped.py),
before the page's "Where it appears" map is revealed (app/study_view.py asks it).

The options are the grid's values ("from X on": the claim holds at X and every larger value) and "nowhere in this
grid"; each predicts a token. The answer is read from the study's computed answer (lab/study/compute.read) by the
same reading as its sentence: `appears_from` names the option, an effect shown absent at every value names
"nowhere", and any other map (a value that cannot tell, an effect that fades) confirms no option.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import lab.study.shipped as shipped_studies  # read at each call: a test may ship other studies
from lab.classroom import questions as lab_questions
from lab.classroom.questions import Question
from lab.study.spec import Study

PREFIX = "where."  # a where-question's key: PREFIX + the study's name
NOWHERE = "nowhere"


def token(value: Any) -> str:
    """The token an option "from `value` on" predicts."""
    return f"from:{value}"


def _value_words(study: Study, value: Any) -> str:
    return f"{study.knob} = {value}"


def question(study: Study) -> Question:
    """The where-question of a study: one option per grid value, then "nowhere in this grid"."""
    vals = study.values
    options: list[tuple[str, Any]] = []
    for i, v in enumerate(vals):
        words = f"From {_value_words(study, v)} on"
        if i == 0:
            words += " (every value tried)"
        elif i == len(vals) - 1:
            words = f"Only at {_value_words(study, v)}, the last value tried"
        options.append((words, token(v)))
    options.append(("Nowhere in this grid (shown absent at every value)", NOWHERE))
    return Question(key=PREFIX + study.name, preset="", prompt=study.question or study.title,
                    options=tuple(options), claim=PREFIX + study.name, study=study.name)


def of(page: str) -> tuple[Question, ...]:
    """The where-questions of a page's shipped studies."""
    return tuple(question(s) for s in shipped_studies.STUDIES if s.page == page and s.question)


def asked(page: str) -> tuple[Question, ...]:
    """Every question a lesson step can ask on a page: its views' (lab/experiments/NAME/questions.py), then its
    studies'."""
    return lab_questions.of(page) + of(page)


def study_of(q: Question) -> Optional[Study]:
    return next((s for s in shipped_studies.STUDIES if s.name == q.study), None)


def answer_token(answer: Mapping[str, Any]) -> Optional[str]:
    """The option a study's answer confirms: "from X on" where it appears from X, "nowhere" where the effect is shown
    absent at every value, else None (the map confirms no option)."""
    values = list(answer.get("values") or [])
    if answer.get("appears_from") is not None:
        return token(answer["appears_from"])
    if values and answer.get("absent_up_to") == values[-1]:
        return NOWHERE
    return None


def claim(study: Study, answer: Mapping[str, Any]) -> dict[str, Any]:
    """The study's answer as the claim a where-question reads (lab/classroom/questions.answer): its key, the token it
    confirms as `holds`, and the map's sentence as its detail and verdict."""
    return {"key": PREFIX + study.name, "holds": answer_token(answer), "claim": str(answer.get("statement", "")),
            "detail": str(answer.get("sentence", "")), "verdict": str(answer.get("sentence", "")),
            "rule": str(answer.get("how", "")), "over": "seeds", "seeds": list(answer.get("seeds") or [])}
