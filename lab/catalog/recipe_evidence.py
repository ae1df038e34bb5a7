"""Which training length each page runs, and the evidence that chose it (issue 59; docs/recipe-decision.md).

A page's default recipe is the cheapest one whose claims all agree with the full recipe's over five training seeds
(`bench/recipe_agreement.py`: the same decided pooled verdict, or every test's paired move inside +-2 pts); where
none agrees, the full recipe stays. The counts below are what that tool printed for studies run on this lab
(`python -m lab study PAGE --knob epochs ...`, then `bench/claims_table.py --pool`); the docs hold the full tables,
and tests/test_recipe_evidence.py checks that the two say the same and that each page's default follows the rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Trial:
    """One cheaper recipe against the full one: how many of the page's claims agreed, and which moved."""

    value: int
    agree: int
    claims: int
    moved: tuple[str, ...]

    @property
    def agrees(self) -> bool:
        return self.agree == self.claims


@dataclass(frozen=True)
class RecipeEvidence:
    """A page's training length measured at several values against its full recipe."""

    page: str
    knob: str  # the config field the study varied
    unit: str  # how the page says one step of it
    full: int
    seeds: int
    measured: str  # the date it was measured (the lab's code then)
    trials: tuple[Trial, ...]
    model: str  # which of the page's models the knob trains
    task: str  # the task it was measured on (another task sizes its own training: lab/core/task_fit.py)

    def chosen(self) -> int:
        """The rule: the cheapest value at which every claim agrees, else the full recipe."""
        return min((t.value for t in self.trials if t.agrees), default=self.full)


EVIDENCE = (
    RecipeEvidence(page="shuffle", knob="epochs", unit="epochs", full=40, seeds=5, measured="2026-12-07",
                   model="the digits ViT (sequential and LayerShuffle)", task="digits",
                   trials=(Trial(30, 4, 5, ("shuffle_costs_accuracy",)),
                           Trial(20, 3, 5, ("shuffle_costs_accuracy", "blocks_by_position")),
                           Trial(10, 4, 5, ("shuffle_costs_accuracy",)))),
    RecipeEvidence(page="delete", knob="epochs", unit="epochs", full=12, seeds=5, measured="2026-12-07",
                   model="the plain and residual teachers", task="synthetic",
                   trials=(Trial(9, 7, 8, ("delete.plain-one-deletion-to-chance",)),
                           Trial(6, 6, 8, ("delete.plain-one-deletion-to-chance",
                                           "delete.residual-one-deletion-barely-matters")),
                           Trial(3, 5, 8, ("delete.greedy-beats-influence-beats-random",
                                           "delete.plain-one-deletion-to-chance",
                                           "delete.residual-one-deletion-barely-matters")))),
    RecipeEvidence(page="reinit", knob="epochs", unit="epochs", full=12, seeds=5, measured="2026-12-07",
                   model="the plain and residual MLPs (the ViT keeps its own recipe)", task="synthetic",
                   trials=(Trial(9, 12, 13, ("reinit.residual-moved-least-robust",)),
                           Trial(6, 12, 13, ("reinit.residual-moved-least-robust",)),
                           Trial(3, 11, 13, ("reinit.plain-moved-least-robust",
                                             "reinit.residual-moved-least-robust")))),
)


def evidence(page: str) -> Optional[RecipeEvidence]:
    """The page's measured evidence, None where its training length was not studied."""
    return next((e for e in EVIDENCE if e.page == page), None)


def evidence_words(page: str, ran: int, task: Optional[str] = None) -> Optional[str]:
    """One sentence for the page's method: what ran, and what the shorter recipes did (None: not studied). `task`
    is the run's (None: the page's own)."""
    e = evidence(page)
    if e is None:
        return None
    if task not in (None, e.task):
        return (f"This page's training length ({e.full} {e.unit} on {e.task}) was chosen by evidence measured on "
                f"{e.task} only; on this task the lab sizes the training itself ({ran} {e.unit}), and no study of "
                "its length was run here (docs/recipe-decision.md).")
    which = ("the full recipe" if ran == e.full else
             "the recipe the evidence chose" if ran == e.chosen() else "a setting the evidence did not choose")
    trials = "; ".join(f"{t.value} {e.unit}: {t.agree} of {t.claims} claims agree" for t in e.trials)
    if e.chosen() == e.full:
        outcome = f"no shorter recipe agreed on every claim, so the page keeps {e.full} {e.unit}"
    else:
        outcome = f"{e.chosen()} {e.unit} is the shortest at which every claim agreed, so the page runs it"
    return (f"This run trained for {ran} {e.unit} ({which}). Shorter training of {e.model} was measured against "
            f"{e.full} {e.unit} over {e.seeds} training seeds on {e.measured} ({trials}): {outcome}. A claim agrees "
            "when both give the same decided verdict or every test moves by less than 2 points, paired over seeds "
            "(docs/recipe-decision.md).")
