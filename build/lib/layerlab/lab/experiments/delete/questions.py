"""Workshop questions of this page: predictions a student commits to before the results show, each answered by
one of the run's claims (lab/classroom/questions.py says how)."""

from __future__ import annotations

from lab.classroom.questions import FAILS, HOLDS, UNSURE, q

QUESTIONS = (
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
)
