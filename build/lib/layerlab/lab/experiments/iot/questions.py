"""Workshop questions of this page: predictions a student commits to before the results show, each answered by
one of the run's claims (lab/classroom/questions.py says how)."""

from __future__ import annotations

from lab.classroom.questions import FAILS, HOLDS, UNSURE_OPTION, q

QUESTIONS = (
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
)
