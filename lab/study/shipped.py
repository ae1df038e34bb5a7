"""The studies the source pages ship: each paper's headline claim along the knob in which the lab's scale differs
from the paper's, at five seeds that redraw the data. A grid is fixed here, before anything runs.

Where a grid stops short of the paper's scale (the Shuffle page's ViT is declared up to 8 blocks), the study's
title says so.
"""

from __future__ import annotations

from lab.study.spec import Study

STUDIES: tuple[Study, ...] = (
    Study(page="delete", claim="delete.plain-one-deletion-to-chance", subject="plain MLP", knob="blocks",
          values=(3, 5, 7, 10), margin=0.05, name="delete-plain-depth",
          title="Plain MLP: one deletion to chance, along depth",
          question="From how many blocks on does deleting one block of a plain MLP leave it near chance?"),
    Study(page="delete", claim="delete.residual-declines-gradually", subject="residual MLP", knob="blocks",
          values=(3, 5, 7, 10), margin=0.05, name="delete-residual-depth",
          title="Residual MLP: a gradual decline, along depth",
          question="Does a residual MLP decline gradually under deletion at every depth?"),
)


def by_name() -> dict[str, Study]:
    return {s.name: s for s in STUDIES}


def of_page(page: str) -> list[Study]:
    """A page's shipped studies, in the order shown."""
    return [s for s in STUDIES if s.page == page]
