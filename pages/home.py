"""Home: what the lab is, what each experiment asks, how to use it in class."""

import streamlit as st

from app import jobs
from lab.catalog import presets
from lab.classroom import warm

st.title(":material/science: Layer Lab")
st.markdown(
    """
Train small neural networks on a laptop-class CPU, then **take their layers apart**: delete them, shuffle
their order, re-initialise one, train with random layer dropping, and recover what was lost by distillation.
Every number on these pages is computed live from seeded runs on held-out data; the same settings always
give the same numbers, and every result is saved so the next student who asks for it gets it at once. Each page
checks the papers' statements against its own run in a section "Against the paper", with the rule and the run's
own noise behind each verdict.
"""
)

st.subheader("Experiments", divider="gray")
st.markdown(
    """
- :material/content_cut: **[Delete layers](delete)**: remove k hidden layers from a trained 8-layer MLP, plain or
  residual.
  Which layers can go, chosen greedily, exhaustively, evenly, by how little they change their input, or at random?
  What does one deletion do to a plain network, and to a residual one? How much does distillation from the uncut
  network bring back?
- :material/shuffle: **[Shuffle layers](shuffle)**: train a tiny Vision Transformer on handwritten digits with its
  blocks in a fresh random order at every step (LayerShuffle), optionally telling each block its position or asking
  it to guess it. Does the network still work in any order? Does each block know where it sits? A slot probe and
  UMAP views of the features after every position let you check.
- :material/restart_alt: **[Re-initialise a layer](reinit)**: are all layers created equal? Reset one layer of a trained
  network to its weights from the start of training (or from a later checkpoint), or draw it afresh, and map
  which layers are critical and which are robust, for plain and residual MLPs and the ViT.
- :material/layers_clear: **[LayerDrop](layerdrop)**: train with each block skipped at random (probability p), then
  prune the network to any depth without retraining. Which p should you train with for the depth you want, and
  which blocks should go?
- :material/alt_route: **[Choose an order per input](iot)**: keep one set of weights and several layer orders, and
  let a tiny predictor pick the order for each input (IOT). How far is the best order per input from the best
  single order, and how much of that gap does a learned choice recover?
- :material/swap_vert: **[Rearrange layers](rearrange)**: on a frozen trained network, skip, swap, reverse, repeat,
  loop or run the middle layers side by side, as "Transformer Layers as Painters" did to language models. Are the
  first and last layers special? Is a LayerShuffle-trained ViT robust to all of it? Layer-similarity maps show why.
- :material/visibility: **[Layer lens](lens)**: read a trained network from the inside: its own head applied after
  every block (logit and tuned lens). Where is each answer decided? Do block influence and angular distance predict
  what deleting a block really costs?
"""
)

st.subheader("Using it in class", divider="gray")
st.markdown(
    """
1. **Try this** buttons at the top of each page set *every* control to a prepared setting, so what they show never
   depends on what was clicked before; the results appear right below them. Each says whether it is **ready**
   (stored: instant) or roughly how long it **trains**. **Reset** brings back the defaults.
2. **Pin this result** keeps the current setting on screen: change the controls and the number cards and the main
   figure show the pinned and the current run side by side (plain k = 1 next to residual k = 1, say). The pinned
   setting is part of the page address (`pin=`), so a compared view is a link too.
3. **Presentation mode** (a switch on every page, or `present=1` in the link) hides the sidebar, enlarges the type
   and puts the main figure first, sized for a 1280x720 projector, with the controls that matter for the demo in a
   row above it.
4. **Student link**: the current view, pinned comparison included, with no controls at all (`student=1`): hand it
   out and everyone sees exactly what you discussed.
5. Every control is mirrored in the page address: **copy the link** to hand out exactly the view you see. A link
   value the lab cannot use is reported in a notice and ignored.
6. The first run of a setting trains a model (a progress bar shows how far it is, seconds to a minute or two);
   after that the result is stored and anyone asking for it again gets it instantly. A freshly started lab warms
   every page's default view in the background, one at a time at the lowest priority (never ahead of a student's
   job); to warm every preset too before class, run `python -m lab warm` (add `--seeds 0 1 2` for more seeds).
"""
)

st.subheader("Ready now", divider="gray")
# Reads which stored results exist (file checks, nothing is computed), so it is instant.
cols = st.columns(3)
for i, (page, title) in enumerate([("delete", "Delete layers"), ("shuffle", "Shuffle layers"),
                                   ("reinit", "Re-initialise a layer"), ("layerdrop", "LayerDrop"),
                                   ("iot", "Choose an order per input"), ("rearrange", "Rearrange layers"),
                                   ("lens", "Layer lens")]):
    if not warm.describes(page):
        continue
    left = warm.ready(page)
    cols[i % 3].markdown(f"**[{title}]({page})**: " + (":green[ready]" if left <= 0 else
                                                       f":orange[{presets.describe_cost(left)} on first visit]"))
warmer = jobs.background_warmer()
if warmer is not None and warmer.state != "done":
    st.caption(f"Warming the default views in the background ({warmer.built} built so far): {warmer.state}. "
               "Students' jobs always go first.")
