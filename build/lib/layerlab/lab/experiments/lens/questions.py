"""Workshop questions of this page: predictions a student commits to before the results show, each answered by
one of the run's claims (lab/classroom/questions.py says how)."""

from __future__ import annotations

from lab.classroom.questions import FAILS, HOLDS, UNSURE_OPTION, q

QUESTIONS = (
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
)
