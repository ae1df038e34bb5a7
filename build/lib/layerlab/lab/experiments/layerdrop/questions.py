"""Workshop questions of this page: predictions a student commits to before the results show, each answered by
one of the run's claims (lab/classroom/questions.py says how)."""

from __future__ import annotations

from lab.classroom.questions import FAILS, HOLDS, UNSURE, UNSURE_OPTION, q

QUESTIONS = (
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
)
