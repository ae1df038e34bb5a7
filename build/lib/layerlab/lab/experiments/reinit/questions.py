"""Workshop questions of this page: predictions a student commits to before the results show, each answered by
one of the run's claims (lab/classroom/questions.py says how)."""

from __future__ import annotations

from lab.classroom.questions import FAILS, HOLDS, UNSURE_OPTION, q

QUESTIONS = (
    q("reinit.default", "", "Reset the plain MLP's first layer to its initial draw, every other layer as trained, "
      "no recovery: does the network keep its accuracy?", "reinit.focus-robust",
      ("Yes: that layer is robust", HOLDS), ("No: accuracy falls", FAILS), UNSURE_OPTION),
    q("reinit.resblock", "resblock", "Reset a middle block of the residual MLP to its initial draw: does the "
      "network keep its accuracy?", "reinit.focus-robust",
      ("Yes: that block is robust", HOLDS), ("No: accuracy falls", FAILS), UNSURE_OPTION),
)
