"""Workshop questions of this page: predictions a student commits to before the results show, each answered by
one of the run's claims (lab/classroom/questions.py says how)."""

from __future__ import annotations

from lab.classroom.questions import FAILS, HOLDS, UNSURE_OPTION, q

QUESTIONS = (
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
)
