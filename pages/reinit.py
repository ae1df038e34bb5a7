"""Re-initialise a layer: widgets -> ReinitConfig / FocusConfig -> lab.experiments.reinit -> figures and text."""


import streamlit as st

from app import charts, claims_view, classroom, controls, query, study_view, task_control, text
from app import figures_reinit as figs
from lab import claims as lab_claims
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import pct
from lab.experiments.reinit import claims as reinit_claims
from lab.experiments.reinit import descriptor as described
from lab.experiments.reinit import experiment as reinit
from lab.ops import surgery, weight_ops

LAYER_LABELS = {f"blocks.{i}": f"block {i}" for i in range(32)}


def _keep_valid(key: str, options: list, default: object) -> None:
    """A value left over from another model (blocks.6 has no ViT twin) falls back to the default, not an error."""
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = default


st.title(":material/restart_alt: Re-initialise a layer")
st.caption("Put one layer of a trained network back to an earlier state, or draw it afresh, and see which layers "
           "the network cannot do without.")

page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    model = controls.param(reinit.ReinitConfig, "model")
    own_task = reinit.model_spec(model, 0).task
    task = task_control.task_select(reinit.ReinitConfig, "vit" if model == "vit" else "mlp", own_task)
    seed = controls.param(reinit.ReinitConfig, "seed", "number", hi=PAGE_SEED_MAX)
    base = described.map_config(model, seed, task)  # the model in focus: its layers and checkpoints are the options
    layer_opts = reinit.layer_names(base)
    _keep_valid("layer", layer_opts, described.DEFAULTS["layer"])
    layer = controls.param(reinit.FocusConfig, "layer", options=layer_opts, labels=LAYER_LABELS)
    op = controls.param(reinit.FocusConfig, "op")
    epochs = reinit.checkpoint_epochs(base)
    _keep_valid("checkpoint", epochs, described.DEFAULTS["checkpoint"])
    checkpoint = controls.param(reinit.FocusConfig, "checkpoint", options=epochs,
                                disabled=not weight_ops.op(op).takes("checkpoint"),
                                labels={e: f"t = {e}" + (" (initial draw)" if e == 0 else "") for e in epochs})
    recovery = controls.param(reinit.FocusConfig, "recovery")
    steps = controls.param(reinit.FocusConfig, "steps", options=(100, 300, 1000))
    if any(x not in layer_opts for x in st.session_state.get("group", ())):  # blocks.6 has no ViT twin
        st.session_state["group"] = [x for x in st.session_state["group"] if x in layer_opts]
    group = controls.param(described.ReinitPage, "group", "multiselect", options=layer_opts, labels=LAYER_LABELS)
    sweep = controls.param(described.ReinitPage, "sweep")

page.toolbar()
view = page.view()  # the descriptor's plan of this setting: every lab call below is one of its calls
map_cfgs = {m: view.cfg(f"map {m}") for m in reinit.MODELS}  # the ViT keeps its own task on a table
map_tasks = {m: c.spec.task for m, c in map_cfgs.items()}
task_facts = {t: task_control.facts(t) for t in set(map_tasks.values())}


def task_words(m: str) -> str:
    """The task of model m's map, in words."""
    f = task_facts[map_tasks[m]]
    return f.label if f else map_tasks[m]


def maps_note() -> str | None:
    """Which task each map is on, when they differ (the ViT reads images and sequences, never a table)."""
    if len(set(map_tasks.values())) == 1:
        return None
    mlps = [m for m in reinit.MODELS if m != "vit"]
    mlp_own = task is None or model == "vit"
    vit_own = map_cfgs["vit"].task is None
    why = (" (the ViT reads images and sequences, not a table)" if vit_own and task is not None and model != "vit"
           else "")
    return (f"The {' and '.join(reinit.MODEL_NAMES[m] for m in mlps)} maps are on **{task_words(mlps[0])}**"
            f"{' (their own task)' if mlp_own else ''}; the ViT's map "
            f"{'stays on its own task' if vit_own else 'is on'}, **{task_words('vit')}**{why}.")


def metrics_of(f: dict, s: dict) -> list[classroom.Metric]:
    """The number cards of one change (this one or the pinned one)."""
    what = weight_ops.op(s["op"]).done
    out = [classroom.Metric("Trained (held-out)", pct(f.base_acc), help="The unchanged trained model."),
           classroom.Metric(f"{s['layer']} {what}", pct(f.cut_acc), **classroom.delta(f.cut_acc, f.base_acc),
                            help=f"The changed model keeps {f.kept_share:.0%} of the trained model's accuracy "
                                 "above chance.")]
    if s["recovery"] != "none":
        back = f.steps_to_recover
        out.append(classroom.Metric(f"After {s['steps']} steps of {s['recovery']}", pct(f.recovered_acc),
                                    **classroom.delta(f.recovered_acc, f.base_acc, " vs trained"),
                                    help="Back within 1 point of the trained model after "
                                         + (f"{back} steps." if back is not None else "more steps than were run.")))
    else:
        out.append(classroom.Metric("Recovery", "off", help="Choose fine-tune or distil to retrain the network."))
    out.append(classroom.Metric("Chance", pct(f.chance), help="Always guessing the most common held-out class."))
    return out


with page.results():
    results = {}
    for m in reinit.MODELS:
        r = view.run(f"map {m}")
        if r is not None:
            results[m] = r
    if model not in results:
        st.stop()
    res = results[model]
    column = f"t={checkpoint}" if weight_ops.op(op).takes("checkpoint") else reinit_claims.RERAND

    charts.show(figs.heatmaps(results, focus=(model, layer, column),
                              height=classroom.PRESENT_HEIGHT if page.present else 520), "fig_heatmaps")
    st.caption("Each cell: held-out accuracy after changing that one layer, every other layer as trained (b3 = "
               "blocks.3). Column *re-randomise* is a fresh draw; column *t = e* puts the layer back to its weights "
               "after epoch e. The outlined cell is the one in focus below.")
    if note := maps_note():
        st.caption(note)

    what = weight_ops.done(op, checkpoint, "epoch ")
    f = page.show_run(view, metrics_of,
                      lambda res_, title, height: figs.per_class(
                          res_, None if page.present else "Which classes suffer?", height,
                          task_control.class_names(res_.config.task)),
                      call="focus", key="per_class", wait=False,
                      heading=f"#### In focus: **{layer}** of the {reinit.MODEL_NAMES[model]}, {what}")
    if f is not None:
        page.reproduce(figs.per_class)
        if recovery != "none":
            charts.show(figs.recovery_curve(f), "fig_recovery")
        else:  # empty figures are not drawn
            st.info("Recovery is off: choose fine-tune or distil to see how many steps bring the network back.")

    g = view.run("group") if "group" in view else None  # the plan changes a group when layers are chosen
    st.markdown("#### Layers changed together")
    if g is not None:
        charts.show(figs.group_bars(g), "fig_group")
        st.caption(f"The share of the trained model's above-chance accuracy that each of {', '.join(g.layers)} "
                   "keeps when changed alone; the product of those shares (what the group would keep if the damages "
                   f"were independent); and what the group keeps changed together ({pct(g.group_acc)} held-out). "
                   "Together below the product: the layers are fragile together.")
    elif "group" not in view:
        st.info("Choose layers under *Layers changed together* to change them all at once.")

    widths = [k for k in view.calls if k.startswith("width ")]  # the plan's width sweep, when it is on
    w = None
    if sweep == "on" and not widths:
        st.info("The width sweep is for the MLPs: choose the plain or residual MLP.")
    elif widths:
        wmaps = [view.run(k) for k in widths]
        if all(m is not None for m in wmaps):
            w = reinit.width_sweep(model, seed, task=task)  # every map is in the store (the jobs above): reads only
            st.markdown("#### Width")
            charts.show(figs.width_heatmap(w), "fig_width")
            trained = ", ".join(f"width {x}: {pct(a)}" for x, a in zip(w["widths"], w["base_acc"], strict=True))
            st.caption("Each column is its own trained model; a cell is the share of that model's above-chance "
                       "accuracy it keeps with this one layer re-initialised to t = 0. The top layers are the upper "
                       f"half of the rows: compare the columns row by row. Trained accuracy: {trained}.")

norm = st.radio("Distance from initialisation", ("rel2", "inf"), horizontal=True, key="norm",
                format_func={"rel2": "relative 2-norm", "inf": "inf-norm (largest single change)"}.get,
                help="||θ_T − θ_0||₂ / ||θ_0||₂ over all of the layer's weights and biases, or max |θ_T − θ_0|.")
left, right = st.columns(2)
charts.show(figs.distance_vs_damage(results, norm), "fig_scatter", left)
charts.show(figs.distance_bars(results, norm), "fig_distance", right)

st.download_button("Download this run's numbers (JSON)",
                   text.as_json({"maps": results, "focus": f, "group": g, "widths": w}),
                   file_name=f"layerlab-reinit-seed{seed}-{model}-{layer}-{op}-t{checkpoint}-{recovery}.json",
                   mime="application/json", help="Every number on this page, for your own analysis.")

text.section("The idea")
st.markdown("""
Are all layers of a trained network equally important? Zhang, Bengio and Singer asked it with a simple experiment:
take the trained network, change **one** layer, keep all the others, and measure the test accuracy. Two changes:

- **Re-initialise** the layer to its own weights at an earlier checkpoint t: t = 0 undoes all of training for
  that layer; a later t undoes only the end of it.
- **Re-randomise** it: draw completely new weights from the same distribution the layer started from.

A layer is **robust** when the network barely notices (its training could be undone), **critical** when accuracy
falls towards chance. The paper reports, for fully connected nets on MNIST, a critical bottom layer and robust
upper layers under re-initialisation, and chance-level accuracy after re-randomising any layer; for residual nets,
mostly robust blocks. "Against the paper" below checks each of these statements on this run's numbers.
""")

text.section("How it works")
mlp_spec, vit_spec = map_cfgs["plain"].spec, map_cfgs["vit"].spec
mc, vc = mlp_spec.model, vit_spec.model
vit_input = (f"a sequence of {vc.seq} values in {vc.seq // vc.patch} patches of {vc.patch}" if vc.seq
             else f"{vc.image}×{vc.image} images in {vc.patch}×{vc.patch} patches")
st.markdown(f"""
1. Train each model once and keep its weights at t = 0 (the initial draw), after a few early epochs and at the end:
   the **plain** and **residual MLPs** ({mc.n_in} → {mc.width} stem, {mc.blocks} blocks of {mc.width}, {mc.width} →
   {mc.n_out} head; the Delete page's teachers, {mlp_spec.train.epochs} epochs, checkpoints
   {reinit.checkpoint_epochs(map_cfgs["plain"])}) on **{task_words("plain")}**, {mc.n_out} classes, and a small
   pre-norm **ViT** ({vit_input}, {vc.depth} blocks of width {vc.width}, {vit_spec.train.epochs}
   epochs, checkpoints {reinit.checkpoint_epochs(map_cfgs["vit"])}) on **{task_words("vit")}**, {vc.n_classes}
   classes.
2. A *layer* is every weight whose name starts with `stem`, `blocks.i` or `head` (for the ViT the stem includes the
   patch projection, CLS token and positions; the head the final LayerNorm and classifier).
3. For every layer and every column, copy that layer's weights from the checkpoint (or from a freshly built model
   with another seed), measure held-out accuracy, put the trained weights back.
4. The distance of each layer from its start, ‖θ_T − θ_0‖₂ / ‖θ_0‖₂ and ‖θ_T − θ_0‖∞, is set against the damage done
   by re-initialising it to t = 0, ranked with Spearman's ρ.
5. **Layers changed together**: the chosen layers all get the operation in focus at once (the same checkpoint,
   or one fresh draw), set against what independent damages would leave: the product of the shares of the
   above-chance accuracy each layer keeps alone.
6. **Width sweep**: the MLP in focus trained again at widths {", ".join(map(str, reinit.WIDTHS))} (same depth,
   recipe and seed), each layer re-initialised to t = 0; the paper reports more robust top layers in wider nets.
""")
for tf in task_facts.values():
    if tf:
        st.caption(query.plain(f"{tf.label}: {tf.about} Source: {tf.source}."))
text.training_length("reinit", mlp_spec.train.epochs, map_cfgs["plain"].task)

text.section("The code")
text.show_code([surgery.layer_of, surgery.swapped, reinit.heatmap, reinit.changed_model, surgery.distance_from_init,
                reinit.group, reinit_claims.model_claims],
               "These are the functions that produced the numbers above, read from the running source:")

text.section("What the simulations show")
lines = []
for r in results.values():
    t0 = [row[1] for row in r.acc]
    rr = [row[0] for row in r.acc]
    worst, best = min(range(len(t0)), key=lambda i: t0[i]), max(range(len(t0)), key=lambda i: t0[i])
    rho = r.rank_corr["rel2"]
    lines.append(
        f"**{r.model_name}** on {task_words(r.model)}: trained {pct(r.base_acc)}, chance {pct(r.chance)}, "
        f"{r.n_test:,} held-out inputs. Re-initialised to t = 0: from {pct(t0[worst])} (`{r.layers[worst]}`) to "
        f"{pct(t0[best])} (`{r.layers[best]}`). Re-randomised: from {pct(min(rr))} to {pct(max(rr))}. Distance vs "
        f"damage: Spearman ρ = {'n/a' if rho is None else f'{rho:+.2f}'}. The map took {r.heatmap_seconds:.2f} s "
        f"({r.heatmap_cpu_seconds:.2f} s of CPU).")
st.markdown("\n".join(f"- {x}" for x in lines))
st.markdown("Look at the stem's row (the bottom one) of each heatmap, at how the re-randomise column differs from "
            "the t = 0 column, and at where each model's points lie in the distance–damage plot.")

text.section("Against the paper")
n_tests = ", ".join(f"{r.n_test:,} for the {r.model_name}" for r in results.values())
claims_view.show(described.claims_of(results, f, g, w),
                 "Each statement is the paper's; the verdict is this run's, with its numbers and its rule. Every "
                 f"changed model is compared with the trained one on the same held-out inputs ({n_tests}), "
                 "input by input (paired), and a difference within "
                 f"{lab_claims.Z:g} standard errors decides neither way.", page=page)
st.markdown(f"""
**Where this lab departs from the paper.** The paper trained fully connected nets on MNIST and ResNets/VGG on
CIFAR-10, several runs each; here the nets are small MLPs on {task_words("plain")}, {mc.n_out} classes, and a
{vc.depth}-block ViT on {task_words("vit")}, one trained model per seed and one fresh draw per re-randomisation. The
paper reads robust and critical off its heatmaps; this lab calls a change robust when it keeps at least 90 % of the
trained model's accuracy above chance and critical when it keeps less than 50 %, and a rank correlation over 8 or 9
layers decides only when it is more than two of its null spreads (1/√(L − 1)) from zero. For a group of layers the
paper's joint robustness is read against independence: the group should keep the product of the shares its layers
keep alone.
""")

text.section("When it breaks")
st.markdown("""
- **Small models on small tasks.** The MLPs and the ViT are small and trained briefly; the paper's wide nets
  on MNIST and CIFAR are not these nets: compare the *pattern*, not the numbers.
- **One draw.** Re-randomisation uses one fresh draw per seed; change the seed to see how much it varies.
- **"Layer" is a choice.** Here a ViT layer is a whole transformer block (attention and MLP together); the paper
  also split blocks into their parts, and found LayerNorms and attention behave differently.
- **Rank correlation on 8 or 9 points** is noisy: one layer can swing ρ by a lot.
- **Recovery trains every layer**, not only the changed one, so it measures how fast the whole net re-adapts.
""")

text.section("Try this")
page.try_this()

text.section("Going further")
st.markdown("""
- Step the checkpoint from t = 0 upwards for the most damaged layer: how early in training does that layer settle
  into weights the rest of the network can work with?
- Does a layer that moved little always survive? Look for points far from the trend in the distance–damage plot.
- Compare with the Delete page: is a block that survives re-initialisation also one that can be deleted?
""")

study_view.show(page.name, lecturer=page.workshop.lecturer, in_class=page.workshop.code is not None,
                workshop=page.workshop)

text.section("Papers")
text.papers([
    ("Zhang, Bengio, Singer. Are All Layers Created Equal? (2019; JMLR 2022)", "https://arxiv.org/abs/1902.01996"),
    ("Veit, Wilber, Belongie. Residual Networks Behave Like Ensembles of Relatively Shallow Networks (2016)",
     "https://arxiv.org/abs/1605.06431"),
    ("Dosovitskiy et al. An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale (2020)",
     "https://arxiv.org/abs/2010.11929"),
])
