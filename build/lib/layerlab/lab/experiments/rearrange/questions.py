"""Workshop questions of this page: predictions a student commits to before the results show, each answered by
one of the run's claims (lab/classroom/questions.py says how)."""

from __future__ import annotations

from lab.classroom.questions import FAILS, HOLDS, UNSURE, q

QUESTIONS = (
    q("rearrange.default", "", "Skip one middle block of the sequentially trained ViT (the others run in their "
      "trained order): does it keep most of its accuracy?", "rearrange.vit-sequential.middle-tolerates-skip-swap",
      ("Yes: the middle tolerates it", HOLDS), ("No: accuracy falls well below the original", FAILS),
      ("Too close to call in this run", UNSURE)),
    q("rearrange.repeat", "repeat", "Run one middle block in place of the whole middle, against skipping that same "
      "span: which hurts the ViT more?", "rearrange.vit-sequential.repeat-worse-than-skip",
      ("Repeating is worse than skipping", HOLDS), ("Repeating is no worse than skipping", FAILS),
      ("Too close to call in this run", UNSURE)),
)
