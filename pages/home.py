"""Home: what the lab is, what each experiment asks, how to use it in class."""

import streamlit as st

from app import class_join, lesson, server_engine
from lab.catalog import descriptors, presets
from lab.classroom import reproduce, warm

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

st.subheader("In class", divider="gray")
# A student types the code from the lecturer's screen (or scans its QR code: `?join=CODE`); a lecturer starts a
# class (app/class_join.py) or a lesson the room follows (app/lesson.py).
lesson.join_from_link()
class_join.join_panel(lesson_step=lesson.student_target)
lesson.home_panel()

st.subheader("Experiments", divider="gray")
# One item per experiment's descriptor (lab/experiments/NAME/descriptor.py): adding an experiment adds it here.
st.markdown("\n".join(f"- {d.icon} **[{d.title}]({d.name})**: {d.about}" for d in descriptors().values()))

st.subheader("Using it in class", divider="gray")
WARM = " ".join((*reproduce.program(), "warm"))  # layerlab when installed, python -m lab in a checkout
st.markdown(
    f"""
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
   job); to warm every preset too before class, run `{WARM}` (add `--seeds 0 1 2` for more seeds).
"""
)

st.subheader("Ready now", divider="gray")
# Reads which stored results exist (file checks, nothing is computed), so it is instant.
cols = st.columns(3)
for i, d in enumerate(descriptors().values()):
    left = warm.ready(d.name)
    cols[i % 3].markdown(f"**[{d.title}]({d.name})**: " + (":green[ready]" if left == 0 else
                                                          f":orange[{presets.describe_cost(left)} on first visit]"))
warmer = server_engine.background_warmer()
if warmer is not None and warmer.state != "done":
    st.caption(f"Warming the default views in the background ({warmer.built} built so far): {warmer.state}. "
               "Students' jobs always go first.")
