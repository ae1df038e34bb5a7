"""Workshop questions: predictions to commit to before a view's results show (app/workshop.py), as data.

A question is about one setting of a page (one of its presets, or its default view) and is tied to one claim
key of that setting's result (lab/claims.py). Its options say which verdict of the claim each one predicts; the
answer is always read from the run's claim (`answer`), never written here. Nothing in the science imports this
module (nor lab/catalog), so editing a question never changes a code version (lab/runtime/codeversion.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from lab.catalog.presets import Preset

HOLDS, FAILS, UNSURE = True, False, None
UNSURE_OPTION = ("Too close to call in this run", UNSURE)


@dataclass(frozen=True)
class Question:
    """One prediction. `preset` is the key of the page's preset it is about ("" for the default view);
    `options` are (what the student reads, the verdict of claim `claim` it predicts: True / False / None)."""

    key: str  # stable id (the database's question id): lowercase letters, digits, ".", "_", "-"
    preset: str
    prompt: str
    options: tuple[tuple[str, Optional[bool]], ...]
    claim: str

    def __post_init__(self) -> None:
        if not 2 <= len(self.options) <= 4:
            raise ValueError(f"question {self.key!r}: two to four options")
        verdicts = [v for _, v in self.options]
        if len(set(verdicts)) != len(verdicts) or any(v not in (True, False, None) for v in verdicts):
            raise ValueError(f"question {self.key!r}: each option predicts a different verdict")
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

    claim: Optional[dict[str, Any]]
    correct: Optional[int]

    def matches(self, chosen: int) -> Optional[bool]:
        """Whether the chosen option matched the run (None when the run confirms no option)."""
        return None if self.correct is None else chosen == self.correct


def answer(question: Question, claims: Optional[Sequence[dict[str, Any]]]) -> Answer:
    """The question's answer, read from the run's claims (the first claim with the question's key)."""
    found = next((c for c in claims or () if isinstance(c, dict) and c.get("key") == question.claim), None)
    if found is None:
        return Answer(None, None)
    correct = next((i for i, (_, v) in enumerate(question.options) if v is found.get("holds")), None)
    return Answer(found, correct)


def question_for(questions: Sequence[Question], presets: Sequence[Preset], defaults: Mapping[str, Any],
                 settings: Mapping[str, Any]) -> Optional[Question]:
    """The question about exactly this setting (a preset's or the defaults'), or None."""
    targets = {p.key: p.settings for p in presets}
    for q in questions:
        target = dict(defaults) if q.preset == "" else targets.get(q.preset)
        if target is not None and all(settings.get(k) == v for k, v in target.items()):
            return q
    return None


def q(key: str, preset: str, prompt: str, claim: str, *options: tuple[str, Optional[bool]]) -> Question:
    return Question(key, preset, prompt, tuple(options), claim)


# -- the questions of each page (page name = the page's file in pages/) -----------------------------------------
PAGES: dict[str, tuple[Question, ...]] = {
    "delete": (
        q("delete.default", "", "Delete 2 of the residual MLP's 7 blocks, then distil from the uncut network for 500 "
          "steps: does it get back to the teacher's accuracy?", "delete.kd-reaches-teacher",
          ("Yes: within a point of the teacher", HOLDS), ("No: it stays clearly below", FAILS),
          ("Too close to call in this run", UNSURE)),
        q("delete.plain1", "plain1", "Delete one layer of the plain MLP, without any recovery: what happens to its "
          "held-out accuracy, whichever layer goes?", "delete.plain-one-deletion-to-chance",
          ("It falls to about chance", HOLDS), ("Some layer can go and it stays well above chance", FAILS),
          ("Too close to call in this run", UNSURE)),
        q("delete.res4", "res4", "Delete 4 of the residual MLP's 7 blocks, no recovery: which way of choosing them "
          "keeps the most accuracy?", "delete.greedy-beats-influence-beats-random",
          ("Greedy search, then ranking by block influence, then random", HOLDS),
          ("Not in that order", FAILS), ("Too close to call in this run", UNSURE)),
        q("delete.kd6", "kd6", "Cut 6 of the plain MLP's 7 blocks, then distil for 500 steps: does the network that "
          "collapsed come back to its teacher's accuracy?", "delete.kd-reaches-teacher",
          ("Yes: within a point of the teacher", HOLDS), ("No: it stays clearly below", FAILS),
          ("Too close to call in this run", UNSURE)),
    ),
    "rearrange": (
        q("rearrange.default", "", "Skip one middle block of the sequentially trained ViT (the others run in their "
          "trained order): does it keep most of its accuracy?", "rearrange.vit-sequential.middle-tolerates-skip-swap",
          ("Yes: the middle tolerates it", HOLDS), ("No: accuracy falls well below the original", FAILS),
          ("Too close to call in this run", UNSURE)),
        q("rearrange.repeat", "repeat", "Run one middle block in place of the whole middle, against skipping that same "
          "span: which hurts the ViT more?", "rearrange.vit-sequential.repeat-worse-than-skip",
          ("Repeating is worse than skipping", HOLDS), ("Repeating is no worse than skipping", FAILS),
          ("Too close to call in this run", UNSURE)),
    ),
    "reinit": (
        q("reinit.default", "", "Reset the plain MLP's first layer to its initial draw, every other layer as trained, "
          "no recovery: does the network keep its accuracy?", "reinit.focus-robust",
          ("Yes: that layer is robust", HOLDS), ("No: accuracy falls", FAILS), UNSURE_OPTION),
        q("reinit.resblock", "resblock", "Reset a middle block of the residual MLP to its initial draw: does the "
          "network keep its accuracy?", "reinit.focus-robust",
          ("Yes: that block is robust", HOLDS), ("No: accuracy falls", FAILS), UNSURE_OPTION),
    ),
    "layerdrop": (
        q("layerdrop.default", "", "Prune a residual MLP to half its depth (every other block): does training with "
          "LayerDrop at p = 0.5 beat the ordinary model (p = 0)?", "layerdrop.p05-beats-p0-half-depth",
          ("Yes: the LayerDrop model is clearly better", HOLDS), ("No: not better", FAILS),
          ("Too close to call in this run", UNSURE)),
        q("layerdrop.quarter", "quarter", "Keep only 2 of the residual MLP's 8 blocks (every other pruning, no "
          "fine-tuning). The rule of thumb says: train with p* = 1 - 2/8 = 0.75. Is the best of the trained rates "
          "the one near p* (0.7), rather than 0, 0.2 or 0.5?", "layerdrop.p-star-rule",
          ("Yes: the rate near p* keeps the most", HOLDS), ("No: a rate farther from p* does better", FAILS),
          UNSURE_OPTION),
        q("layerdrop.first", "first", "The LayerDrop model (p = 0.5) loses half its 8 blocks: every other one, or "
          "the first four (or the last four) in one run. Does keeping every other block beat both contiguous cuts?",
          "layerdrop.every-other-beats-contiguous",
          ("Yes: every other beats both contiguous cuts", HOLDS), ("No: a contiguous cut does as well or better",
                                                                   FAILS), UNSURE_OPTION),
    ),
    "shuffle": (
        q("shuffle.default", "", "A ViT trained with LayerShuffle (its 6 blocks in a new random order at every "
          "step) is tested in every one of its 720 block orders: does it keep nearly all its accuracy in all of them?",
          "shuffle_any_order", ("Yes: it works in any order", HOLDS),
          ("No: some orders, or the average, lose clearly", FAILS), UNSURE_OPTION),
        q("shuffle.seq", "seq", "An ordinary ViT, always trained with its blocks in the order 0, 1, ..., 5, is run "
          "with its blocks in random orders: what happens to its accuracy?", "seq_random_chance",
          ("It falls to near chance (within 10 points of it, averaged over every order)", HOLDS),
          ("It keeps most of its accuracy", FAILS), UNSURE_OPTION),
        q("shuffle.position", "position", "Each block is told which slot it runs in (LayerShuffle-position). Can a "
          "linear probe read the slot from the features after a block better than chance, and better than for plain "
          "LayerShuffle, where no block is told?", "slot_decodable",
          ("Yes: better than both", HOLDS), ("No: not better than both", FAILS), UNSURE_OPTION),
        q("shuffle.shallow", "shallow", "A 3-block LayerShuffle ViT, tested in all 6 orders: does a block's "
          "contribution depend on the slot it runs in (its accuracy differs by more than 2 points between its best "
          "and its worst slot)?", "blocks_by_position",
          ("Yes: blocks contribute by position", HOLDS), ("No: a block does the same wherever it runs", FAILS),
          UNSURE_OPTION),
    ),
    "iot": (
        q("iot.default", "", "The residual MLP is trained 4 times, each time with its blocks in another fixed order, "
          "and the 4 models score about the same. If every input could use whichever of the 4 suits it best, would "
          "that beat the best single order by at least a point, and by more than the same choice among 4 models of "
          "one order that differ only in their random seed?", "inputs_prefer_orders",
          ("Yes: inputs prefer different orders", HOLDS), ("No: the best single order is as good", FAILS),
          UNSURE_OPTION),
        q("iot.collapse", "collapse", "Train IOT again with the exploration term switched off: does the predictor's "
          "choice collapse onto one order (at least 90 % of the inputs)?", "collapse_without_exploration",
          ("Yes: it collapses onto one order", HOLDS), ("No: inputs still spread over the orders", FAILS),
          UNSURE_OPTION),
        q("iot.m8", "m8", "Eight candidate orders instead of 4: for each input, does the predictor pick the order "
          "that suits that input best more often than a fixed guess (always the order that is best most often)?",
          "predictor_finds_best_order", ("Yes: it finds each input's best order more often", HOLDS),
          ("No: no better than the fixed guess", FAILS), UNSURE_OPTION),
    ),
    "lens": (
        q("lens.default", "", "Read the ViT's hidden state after each block through its own classifier head (the "
          "logit lens), or through a small map fitted for that slot first (the tuned lens). Is the tuned lens closer "
          "to the final prediction at every slot?", "tuned",
          ("Yes: at every slot", HOLDS), ("No: at some slot it is farther", FAILS), UNSURE_OPTION),
        q("lens.plain", "plain", "In the plain MLP, do the blocks that change their input least (ShortGPT's block "
          "influence) cost the least accuracy when deleted?", "influence",
          ("Yes: the ranking agrees", HOLDS), ("No: the ranking does not agree", FAILS), UNSURE_OPTION),
        q("lens.layerdrop", "layerdrop", "In the residual MLP trained with LayerDrop, does the pair of neighbouring "
          "blocks whose input and output are closest in angle cost the least to delete?", "angular",
          ("Yes: closeness in angle ranks the cost", HOLDS), ("No: it does not", FAILS), UNSURE_OPTION),
    ),
}


def of(page: str) -> tuple[Question, ...]:
    """The questions of a page (none for an unknown name)."""
    return PAGES.get(page, ())
