"""Workshop questions of this page: predictions a student commits to before the results show, each answered by
one of the run's claims (lab/classroom/questions.py says how)."""

from __future__ import annotations

from lab.classroom.questions import FAILS, HOLDS, UNSURE_OPTION, q

QUESTIONS = (
    q("matrix.default", "", "Which recipe loses least when one block is deleted? Do the ViTs trained with LayerDrop "
      "and with LayerShuffle both lose less than the one trained in order?", "robust",
      ("Yes: both lose less", HOLDS), ("No: at least one loses more", FAILS), UNSURE_OPTION),
    q("matrix.sublayers", "sublayers", "Delete one block's attention sub-layer, or its MLP sub-layer. Is the "
      "attention the one the ViTs can spare?", "attention",
      ("Yes: attention is more deletable", HOLDS), ("No: the MLP is more deletable", FAILS), UNSURE_OPTION),
    q("matrix.exits", "exits", "Read the head after every block. Does training with an early-exit loss make those "
      "early answers better than in the ViT trained in order?", "early_exit",
      ("Yes: its early exits are better", HOLDS), ("No: they are worse", FAILS), UNSURE_OPTION),
    q("matrix.linear", "linear", "Fit each block's input-to-output map with the best affine (linear) map. Is every "
      "block of every recipe nearly linear (R² at least 0.95)?", "linear",
      ("Yes: every block is nearly linear", HOLDS), ("No: some block is far from linear", FAILS)),
    q("matrix.influence", "influence", "Delete the two block runs that change their input least (ShortGPT), or "
      "simply the last two. Does the influence order win?", "influence",
      ("Yes: the influence order wins", HOLDS), ("No: the last quarter wins", FAILS), UNSURE_OPTION),
)
