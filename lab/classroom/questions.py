"""Workshop questions: predictions to commit to before a view's results show (app/workshop.py), as data.

A question is about one setting of a page (one of its presets, or its default view) and is tied to one claim
key of that setting's result (lab/claims.py). Its options say which verdict of the claim each one predicts; the
answer is always read from the run's claim (`answer`), never written here. Nothing in the science imports this
module (nor lab/catalog), so editing a question never changes a code version (lab/runtime/codeversion.py).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from lab.catalog.presets import Preset

HOLDS, FAILS, UNSURE = True, False, None
UNSURE_OPTION = ("Too close to call in this run", UNSURE)
MAX_WHERE_OPTIONS = 7  # a where-question: one option per grid value (at most 6 in the shipped studies) and "nowhere"


@dataclass(frozen=True)
class Question:
    """One prediction. `preset` is the key of the page's preset it is about ("" for the default view);
    `options` are (what the student reads, the verdict of claim `claim` it predicts: True / False / None).
    A where-question (`study` names a shipped study: lab/classroom/where.py) is asked beside the study's map, not
    at a view: its options predict tokens (where the effect begins), matched to the study's answer."""

    key: str  # stable id (the database's question id): lowercase letters, digits, ".", "_", "-"
    preset: str
    prompt: str
    options: tuple[tuple[str, Any], ...]
    claim: str
    study: str = ""

    def __post_init__(self) -> None:
        most = MAX_WHERE_OPTIONS if self.study else 4
        if not 2 <= len(self.options) <= most:
            raise ValueError(f"question {self.key!r}: two to {'seven' if self.study else 'four'} options")
        verdicts = [v for _, v in self.options]
        allowed = (lambda v: isinstance(v, str) and v) if self.study else (lambda v: v in (True, False, None))
        if len(set(verdicts)) != len(verdicts) or not all(allowed(v) for v in verdicts):
            raise ValueError(f"question {self.key!r}: each option predicts a different "
                             f"{'token' if self.study else 'verdict'}")
        texts = [t for t, _ in self.options]
        if len(set(texts)) != len(texts) or not all(t.strip() for t in texts):
            raise ValueError(f"question {self.key!r}: options must be distinct and non-empty")

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(t for t, _ in self.options)


@dataclass(frozen=True)
class Answer:
    """What a run says about a question: the claim it rests on (None when the run has no such claim) and the
    index of the option that predicted its verdict (None when no option did)."""

    claim: Optional[Mapping[str, Any]]
    correct: Optional[int]

    def matches(self, chosen: int) -> Optional[bool]:
        """Whether the chosen option matched the run (None when the run confirms no option)."""
        return None if self.correct is None else chosen == self.correct


def answer(question: Question, claims: Optional[Sequence[Mapping[str, Any]]]) -> Answer:
    """The question's answer, read from the run's claims (the first claim with the question's key): `Claim`s, or
    their plain dicts."""
    found = next((c for c in claims or () if isinstance(c, Mapping) and c.get("key") == question.claim), None)
    if found is None:
        return Answer(None, None)
    said = found.get("holds")
    # A verdict is matched by identity (True is not 1); a where-question's token by its text.
    correct = next((i for i, (_, v) in enumerate(question.options)
                    if (v == said and isinstance(said, str) if question.study else v is said)), None)
    return Answer(found, correct)


def question_for(questions: Sequence[Question], presets: Sequence[Preset], defaults: Mapping[str, Any],
                 settings: Mapping[str, Any]) -> Optional[Question]:
    """The question about exactly this setting (a preset's or the defaults'), or None; a where-question is about a
    study's map, never a setting."""
    targets = {p.key: p.settings for p in presets}
    for q in questions:
        if q.study:
            continue
        target = dict(defaults) if q.preset == "" else targets.get(q.preset)
        if target is not None and all(settings.get(k) == v for k, v in target.items()):
            return q
    return None


def q(key: str, preset: str, prompt: str, claim: str, *options: tuple[str, Optional[bool]]) -> Question:
    return Question(key, preset, prompt, tuple(options), claim)


def of(page: str) -> tuple[Question, ...]:
    """The questions of a page, from lab/experiments/NAME/questions.py (none for a page without that module or an
    unknown name)."""
    if not page.isidentifier():
        return ()
    try:
        mod = importlib.import_module(f"lab.experiments.{page}.questions")
    except ModuleNotFoundError as e:
        if e.name in (f"lab.experiments.{page}", f"lab.experiments.{page}.questions"):
            return ()
        raise
    return tuple(mod.QUESTIONS)
