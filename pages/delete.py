"""Delete layers: widgets -> DeleteConfig -> lab.experiments.delete -> figures and text."""


import streamlit as st

from app import charts, claims_view, classroom, controls, query, study_view, task_control, text
from app import figures_delete as figs
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import pct
from lab.experiments.delete import claims as delete_claims
from lab.experiments.delete import descriptor as described
from lab.experiments.delete import experiment as delete
from lab.ops import recover, search, selection

st.title(":material/content_cut: Delete layers")
st.caption("Remove hidden layers from a trained MLP, plain or residual, and see what survives and what comes back.")

page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    arch = controls.param(delete.DeleteConfig, "arch")
    task = task_control.task_select(delete.DeleteConfig, "mlp", "synthetic")
    k = controls.param(delete.DeleteConfig, "k", "slider")
    select = controls.param(delete.DeleteConfig, "select")
    recovery = controls.param(delete.DeleteConfig, "recovery")
    steps = controls.param(delete.DeleteConfig, "steps", options=(100, 250, 500, 1000, 1500))
    seed = controls.param(delete.DeleteConfig, "seed", "number", hi=PAGE_SEED_MAX)
page.toolbar()

view = page.view()  # the descriptor's plan of this setting: every lab call below is one of its calls
cfg = view.cfg("run")
n_blocks = cfg.blocks
tf = task_control.facts(task)
rec_label = delete.RECOVERY_LABELS[recovery]
spec = cfg.spec  # the teacher's shape on this task (lab/core/task_fit.py: on_task)
task_words = tf.label if tf else task


def chance_help(r: delete.DeleteResult) -> str:
    """What chance means on the run's task (a pinned run's may be another)."""
    f = task_control.facts(r.config.task)
    on = f"{f.label}, {f.n_classes} classes" if f else r.config.task
    return f"Always guessing the most common held-out class ({on}): {pct(r.chance)}."


def metrics_of(r: delete.DeleteResult, s: dict) -> list[classroom.Metric]:
    """The number cards of one run (this one or the pinned one)."""
    recovered = s["recovery"] != "none" and s["k"] > 0
    return [
        classroom.Metric("Original (held-out)", pct(r.base_acc),
                         help=f"The uncut network: stem, {n_blocks} blocks, head."),
        classroom.Metric(f"Cut: {s['k']} deleted", pct(r.cut_acc), **classroom.delta(r.cut_acc, r.base_acc),
                         help=f"Blocks deleted: {r.dropped} (original numbering). On the probe set: "
                              f"{pct(r.cut_probe_acc)}."),
        classroom.Metric("Recovered", pct(r.recovered_acc),
                         **classroom.delta(r.recovered_acc, r.base_acc, " vs original"),
                         help=f"After {delete.RECOVERY_LABELS[s['recovery']]}, {s['steps']} steps.") if recovered
        else classroom.Metric("Recovery", "off", help="Nothing was retrained: choose ce or kd to recover."),
        classroom.Metric("Chance", pct(r.chance), help=chance_help(r)),
    ]


with page.results():
    r = page.show_run(view, metrics_of,
                      lambda res, title, height: figs.per_class(res, None if page.present else "Which classes suffer?",
                                                                height, task_control.class_names(res.config.task)),
                      key="per_class")
    page.reproduce(figs.per_class)
st.markdown(f"**Deleted blocks:** {r.dropped or 'none'} · **route that runs:** {r.route}")

if recovery != "none" and k > 0:
    charts.show(figs.recovery_curve(r), "fig_recovery")
else:  # empty figures are not drawn
    st.info("Recovery is off, so there is no recovery curve: choose **ce** or **kd** to retrain the cut network.")
charts.show(figs.selections(r), "fig_selections")

sweep = view.run("sweep")
if sweep is not None:
    left, right = st.columns(2)
    charts.show(figs.single_block(sweep), "fig_single", left)
    charts.show(figs.versus_k(sweep), "fig_vs_k", right)
race = view.run("race") if "race" in view else None  # the plan races CE against KD when something is cut
if race is not None:
    charts.show(figs.race(race), "fig_race")
shallow = view.run("shallow")

st.download_button("Download this run's numbers (JSON)",
                   text.as_json({"run": r, "sweep": sweep, "race": race, "shallow": shallow}),
                   file_name=f"layerlab-delete-{arch}-{task.replace(':', '-')[:24]}-k{k}-{select}-{recovery}-"
                             f"{steps}-seed{seed}.json",
                   mime="application/json", help="Every number on this page, for your own analysis.")

text.section("The idea")
st.markdown("""
Layers run one after another, so removing a whole layer saves time on any hardware. Whether a layer can go depends
on the architecture. In a **plain** network each layer transforms its input, `h = relu(h W + b)`, and the next layer
is tuned to that transform, so removing one feeds it something it has never seen. In a **residual** network each
layer adds a correction to a running stream, `h = h + relu(h W + b)`: deleting one just drops one correction, and
the stream it leaves behind is still in the format the next layer expects.
""")

text.section("How it works")
mc = spec.model
sizes = (f": {tf.n_train:,} training inputs (each training seed draws its own bootstrap of them), a "
         f"{tf.n_probe:,}-input **probe** set for searching and {tf.n_test:,} **held-out** inputs for every "
         "accuracy reported, both kept apart from training" if tf else "")
st.markdown(f"""
1. Train a deep network: a {mc.n_in} → {mc.width} stem, {mc.blocks} blocks of {mc.width} → {mc.width}, a {mc.width} →
   {mc.n_out} head, plain or residual, for {spec.train.epochs} epochs on **{task_words}**, {mc.n_out} classes{sizes}.
2. The candidates are the {mc.blocks} hidden-to-hidden blocks (their input and output widths match).
3. Choose k of them. **Greedy**: k rounds, each deleting the block whose removal (on top of earlier ones) hurts the
   probe accuracy least (ties in accuracy broken by the lower probe loss). **Optimal**: try every subset of size k.
   **Evenly spaced**: spread over the depth. **Influence**: the blocks that turn their input least,
   1 − cos(input, output) per token (ShortGPT). **Random**: the average over every subset of size k (at most 35).
4. Run the network without them: the *route* simply skips those blocks, so block indices keep their original
   numbering.
5. Optionally recover: fine-tune the cut network on the labels, or distil it from the uncut one.
""")
if tf:
    st.caption(query.plain(f"{tf.label}: {tf.about} Source: {tf.source}."))
text.training_length("delete", spec.train.epochs, task)

text.section("The code")
text.show_code([delete.DeleteConfig, search.greedy, search.block_influence, recover.recover, recover.kd_loss],
               "These are the functions that produced the numbers above, read from the running source:")
from lab.core.models.mlp import MLP  # noqa: E402 - shown, not used

text.show_code([MLP.run_block])

text.section("What the simulations show")
lines = [
    f"On {task_words}, the **{arch}** teacher scores **{pct(r.base_acc)}** on {r.n_test:,} held-out inputs "
    f"(chance {pct(r.chance)}).",
    f"Deleting blocks **{r.dropped}** ({selection.LABELS[select]}) leaves **{pct(r.cut_acc)}** held-out "
    f"({pct(r.cut_probe_acc)} on the probe the search saw).",
]
if recovery != "none" and k > 0:
    lines.append(f"{rec_label.capitalize()} for {steps} steps brings it to **{pct(r.recovered_acc)}** "
                 f"({100 * (r.recovered_acc - r.base_acc):+.1f} points against the original).")
if sweep is not None:
    for a in delete.ARCHS:
        s = sweep.archs[a].single_block_acc
        lines.append(f"Deleting any single block of the **{a}** net leaves between {pct(min(s))} and {pct(max(s))}.")
sel = r.selections
best = max(sel, key=lambda m: sel[m]["test_acc"])
lines.append(f"At k = {k}, the best held-out cut came from **{best}** ({pct(sel[best]['test_acc'])}); greedy "
             f"{pct(sel['greedy']['test_acc'])}, optimum {pct(sel['optimal']['test_acc'])}, random (average over "
             f"{sel['random']['draws']} subsets) {pct(sel['random']['test_acc'])}.")
if shallow is not None:
    lines.append(f"A one-block MLP (stem, one block, head: what {n_blocks - 1} of {n_blocks} deletions leave) "
                 "trained from scratch by the "
                 f"teacher's recipe scores **{pct(shallow.acc)}** held-out, against the {arch} teacher's "
                 f"{pct(r.base_acc)}.")
worst_class = min(range(len(r.per_class["cut"])), key=lambda i: r.per_class["cut"][i])
names = task_control.class_names(task)
worst_name = f"{worst_class} ({query.plain(names[worst_class])})" if names else worst_class
lines.append(f"The class hit hardest by the cut is class {worst_name}: {pct(r.per_class['base'][worst_class])} "
             f"→ {pct(r.per_class['cut'][worst_class])}.")
st.markdown("\n".join(f"- {x}" for x in lines))

text.section("Against the paper")
claims_view.show(delete_claims.page_claims(r, sweep, race), "The papers' statements, checked against this run's "
                 f"numbers. Two accuracies on the same {r.n_test:,} held-out inputs are compared input by input "
                 "(paired: only the inputs on which they disagree add noise); each rule states the lab's bar:",
                 page=page)
if sweep is None:
    claims_view.pending()

text.section("When it breaks")
st.markdown(f"""
- **Plain networks.** Each plain layer is tuned to the exact output of the one before it; compare the plain net's
  single-deletion bars with the residual net's, and ask whether any block is safe for greedy to find.
- **Shape changes.** Only width-preserving blocks can be removed this way; a layer that changes the width would need
  a replacement projection.
- **Greedy is short-sighted.** The best single deletion is not always part of the best pair; compare it with the
  optimum. And scoring on a probe set can overfit the probe: compare the hatched (probe) and solid (held-out) bars.
- **Overall accuracy hides classes.** A cut can spare the average and still ruin one class: see the per-class bars.
- **Recovery hides damage only when depth was spare.** Even {n_blocks - 1} of {n_blocks} deleted blocks can recover;
  compare the recovered accuracy with the one-block MLP trained from scratch (under *What the simulations show*):
  when a shallow net alone comes close to the teacher, the task did not need the depth. On a model that needs its
  depth, the no-recovery numbers are the honest warning.
""")

text.section("Try this")
page.try_this()

text.section("Going further")
st.markdown("""
- **Initialise a student from the teacher?** DistilBERT built its student from every other teacher layer. Does that
  head start matter here, or does a random init catch up?
- LayerDrop (Fan et al.) trains with random layer deletion so that the model tolerates it later; LayerShuffle trains
  with random layer order. Block influence (ShortGPT) ranks blocks by how little they change the residual stream.
""")
if st.toggle("Run the DistilBERT-style comparison (every other teacher block, then KD)", key="student_init",
             help=f"Distils a {len(delete.student_blocks(n_blocks))}-block student initialised from teacher blocks "
             f"{', '.join(map(str, delete.student_blocks(n_blocks)))} and one from a random init."):
    s = view.run("student")
    if s is not None:
        st.markdown(f"Teacher {pct(s.base_acc)}. Student from teacher blocks {s.kept}: starts at "
                    f"{pct(s.inherited.start_acc)}, ends at **{pct(s.inherited.final_acc)}**. Same shape "
                    f"from a random init: starts at {pct(s.random_init.start_acc)}, ends at "
                    f"**{pct(s.random_init.final_acc)}** (both {steps} KD steps).")

study_view.show(page.name, lecturer=page.workshop.lecturer, in_class=page.workshop.code is not None,
                workshop=page.workshop)

text.section("Papers")
text.papers([
    ("Veit, Wilber, Belongie. Residual Networks Behave Like Ensembles of Relatively Shallow Networks (2016)",
     "https://arxiv.org/abs/1605.06431"),
    ("Fan, Grave, Joulin. Reducing Transformer Depth on Demand with Structured Dropout (2019)",
     "https://arxiv.org/abs/1909.11556"),
    ("Hinton, Vinyals, Dean. Distilling the Knowledge in a Neural Network (2015)", "https://arxiv.org/abs/1503.02531"),
    ("Sanh et al. DistilBERT, a distilled version of BERT (2019)", "https://arxiv.org/abs/1910.01108"),
    ("Men et al. ShortGPT: Layers in Large Language Models are More Redundant Than You Expect (2024)",
     "https://arxiv.org/abs/2403.03853"),
])
