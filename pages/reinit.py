"""Re-initialise a layer: widgets -> ReinitConfig / FocusConfig -> lab.experiments.reinit -> figures and text."""


import streamlit as st

from app import classroom, controls, jobs, text
from app import figures_reinit as figs
from app.text import pct
from lab import surgery
from lab.experiments import reinit

LAYER_LABELS = {f"blocks.{i}": f"block {i}" for i in range(32)}


def _keep_valid(key: str, options: list, default: object) -> None:
    """A value left over from another model (blocks.6 has no ViT twin) falls back to the default, not an error."""
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = default


st.title(":material/restart_alt: Re-initialise a layer")
st.caption("Put one layer of a trained network back to an earlier state, or draw it afresh, and see which layers "
           "the network cannot do without.")

page = classroom.Page(reinit.PRESETS, reinit.CONTROLS, reinit.needs, demo=("model", "layer", "op", "recovery"))
with page.controls():
    model = controls.param(reinit.ReinitConfig, "model",
                           help="plain MLP, residual MLP or ViT: the model whose layer is in focus below. "
                                 "The heatmaps always show all three.")
    seed = controls.param(reinit.ReinitConfig, "seed", "number", hi=99,
                          help="Fixes the models' initial weights and data order, and the fresh draw of a "
                                "re-randomised layer (seed + 1,000,003): same seed, same numbers.")
    base = reinit.ReinitConfig(model=model, seed=seed)
    layer_opts = reinit.layer_names(base)
    _keep_valid("layer", layer_opts, layer_opts[0])
    layer = controls.select("Layer", "layer", layer_opts, layer_opts[0], labels=LAYER_LABELS,
                            help="stem = the input layer, block i = hidden block i, head = the output layer.")
    op = controls.param(reinit.FocusConfig, "op",
                        help="reinit: the layer's own weights from checkpoint t (t = 0 is its initial draw). "
                              "rerand: a new draw from the same initialisation distribution, biases included.")
    epochs = reinit.checkpoint_epochs(base)
    _keep_valid("checkpoint", epochs, 0)
    checkpoint = controls.select("Checkpoint t (epoch)", "checkpoint", epochs, 0, disabled=op == "rerand",
                                 labels={e: f"t = {e}" + (" (initial draw)" if e == 0 else "") for e in epochs},
                                 help=f"Weights were kept at the start (t = 0) and after epochs {epochs[1:]}; "
                                      f"t = {epochs[-1]} is the trained model itself.")
    recovery = controls.param(reinit.FocusConfig, "recovery",
                              help="After the change, train the whole network again: ce = fine-tune on the labels, "
                                    "kd = distil, i.e. match the unchanged trained network's outputs.")
    steps = controls.param(reinit.FocusConfig, "steps", options=(100, 300, 1000),
                           help="Minibatch steps of recovery training (256 examples each).")

page.toolbar()


def metrics_of(f: dict, s: dict) -> list[classroom.Metric]:
    """The number cards of one change (this one or the pinned one)."""
    what = "re-randomised" if s["op"] == "rerand" else "re-initialised"
    kept = {"robust": "at least 90 %", "critical": "less than 50 %"}.get(f["verdict"], "50 to 90 %")
    out = [classroom.Metric("Trained (held-out)", pct(f["base_acc"]), help="The unchanged trained model."),
           classroom.Metric(f"{s['layer']} {what}", pct(f["cut_acc"]), **classroom.delta(f["cut_acc"], f["base_acc"]),
                            help=f"This layer is {f['verdict']} under this change: it keeps {kept} of the trained "
                                 "model's accuracy above chance.")]
    if s["recovery"] != "none":
        back = f["steps_to_recover"]
        out.append(classroom.Metric(f"After {s['steps']} steps of {s['recovery']}", pct(f["recovered_acc"]),
                                    **classroom.delta(f["recovered_acc"], f["base_acc"], " vs trained"),
                                    help="Back within 1 point of the trained model after "
                                         + (f"{back} steps." if back is not None else "more steps than were run.")))
    else:
        out.append(classroom.Metric("Recovery", "off", help="Choose fine-tune or distil to retrain the network."))
    out.append(classroom.Metric("Chance", pct(f["chance"]), help="Always guessing the most common held-out class."))
    return out


with page.results():
    results = {}
    for i, m in enumerate(reinit.MODELS):
        r = jobs.run(f"Robustness map of the {reinit.MODEL_NAMES[m]} ({i + 1} of 3)", reinit.run,
                     reinit.ReinitConfig(model=m, seed=seed))
        if r is not None:
            results[m] = r
    if model not in results:
        st.stop()
    res = results[model]
    column = reinit.RERAND if op == "rerand" else f"t={checkpoint}"

    st.plotly_chart(figs.heatmaps(results, focus=(model, layer, column),
                                  height=classroom.PRESENT_HEIGHT if page.present else 520),
                    theme=None, key="fig_heatmaps")
    st.caption("Each cell: held-out accuracy after changing that one layer, every other layer as trained (b3 = "
               "blocks.3). Column *re-randomise* is a fresh draw; column *t = e* puts the layer back to its weights "
               "after epoch e. The outlined cell is the one in focus below.")

    fcfg = reinit.focus_config(page.settings())
    f = jobs.run(f"Changing {layer} of the {reinit.MODEL_NAMES[model]}", reinit.focus, fcfg)
    pin = page.pinned()
    pcfg = page.config(reinit.focus_config, pin) if pin else None
    pf = jobs.run("Changing the pinned layer", reinit.focus, pcfg) if pcfg else None
    if f is not None:
        what = "re-randomised" if op == "rerand" else f"re-initialised to epoch {checkpoint}"
        st.markdown(f"#### In focus: **{layer}** of the {reinit.MODEL_NAMES[model]}, {what}")
        page.show(metrics_of(f, page.settings()), metrics_of(pf, pin) if pf else None,
                  lambda res_, title, height: figs.per_class(res_, None if page.present else "Which classes suffer?",
                                                             height), f, pf, key="per_class")
        if recovery != "none":
            st.plotly_chart(figs.recovery_curve(f), theme=None, key="fig_recovery")
        else:  # empty figures are not drawn
            st.info("Recovery is off: choose fine-tune or distil to see how many steps bring the network back.")

norm = st.radio("Distance from initialisation", ("rel2", "inf"), horizontal=True, key="norm",
                format_func={"rel2": "relative 2-norm", "inf": "inf-norm (largest single change)"}.get,
                help="||θ_T − θ_0||₂ / ||θ_0||₂ over all of the layer's weights and biases, or max |θ_T − θ_0|.")
left, right = st.columns(2)
left.plotly_chart(figs.distance_vs_damage(results, norm), theme=None, key="fig_scatter")
right.plotly_chart(figs.distance_bars(results, norm), theme=None, key="fig_distance")

st.download_button("Download this run's numbers (JSON)", text.as_json({"maps": results, "focus": f}),
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
falls towards chance. In their fully connected nets the bottom layer was critical and the others robust to
re-initialisation, while re-randomising any layer was fatal; in residual nets most blocks were robust.
""")

text.section("How it works")
mlp_spec, vit_spec = reinit.ReinitConfig("plain", seed).spec, reinit.ReinitConfig("vit", seed).spec
mc, vc = mlp_spec.model, vit_spec.model
st.markdown(f"""
1. Train each model once and keep its weights at t = 0 (the initial draw), after a few early epochs and at the end:
   the **plain** and **residual MLPs** ({mc.n_in} → {mc.width} stem, {mc.depth - 1} blocks of {mc.width}, {mc.width} →
   {mc.n_out} head; the Delete page's teachers, {mlp_spec.train.epochs} epochs, checkpoints
   {reinit.checkpoint_epochs(reinit.ReinitConfig("plain", seed))}) on the synthetic {mc.n_out}-class task, and a small
   pre-norm **ViT** ({vc.patch}×{vc.patch} patches, {vc.depth} blocks of width {vc.width}, {vit_spec.train.epochs}
   epochs, checkpoints {reinit.checkpoint_epochs(reinit.ReinitConfig("vit", seed))}) on the 8×8 handwritten digits.
2. A *layer* is every weight whose name starts with `stem`, `blocks.i` or `head` (for the ViT the stem includes the
   patch projection, CLS token and positions; the head the final LayerNorm and classifier).
3. For every layer and every column, copy that layer's weights from the checkpoint (or from a freshly built model
   with another seed), measure held-out accuracy, put the trained weights back.
4. The distance of each layer from its start, ‖θ_T − θ_0‖₂ / ‖θ_0‖₂ and ‖θ_T − θ_0‖∞, is set against the damage done
   by re-initialising it to t = 0, ranked with Spearman's ρ.
""")

text.section("The code")
text.show_code([surgery.layer_of, surgery.swapped, reinit.heatmap, reinit.changed_model, surgery.distance_from_init],
               "These are the functions that produced the numbers above, read from the running source:")

text.section("What the simulations show")


def _names(r: dict, verdicts: list[str], want: str) -> str:
    picked = [f"`{layer}`" for layer, v in zip(r["layers"], verdicts, strict=True) if v == want]
    return ", ".join(picked) if picked else "none"


lines = []
for r in results.values():
    t0 = [row[1] for row in r["acc"]]
    rr = [row[0] for row in r["acc"]]
    worst = min(range(len(t0)), key=lambda i: t0[i])
    rho = r["rank_corr"]["rel2"]
    lines.append(
        f"**{r['model_name']}** (trained {pct(r['base_acc'])}, chance {pct(r['chance'])}). Re-initialised to t = 0: "
        f"robust {_names(r, r['verdict_t0'], 'robust')}; critical {_names(r, r['verdict_t0'], 'critical')}; the "
        f"worst is `{r['layers'][worst]}` at {pct(t0[worst])}. Re-randomised: accuracy between {pct(min(rr))} and "
        f"{pct(max(rr))}, critical {sum(v == 'critical' for v in r['verdict_rerand'])} of {len(rr)} layers. "
        f"Distance vs damage: Spearman ρ = {'n/a' if rho is None else f'{rho:+.2f}'}. "
        f"The map took {r['heatmap_seconds']:.2f} s ({r['heatmap_cpu_seconds']:.2f} s of CPU).")
st.markdown("\n".join(f"- {x}" for x in lines))


def _row(r: dict, layer: str) -> tuple[float, str]:
    i = r["layers"].index(layer)
    return r["acc"][i][1], r["verdict_t0"][i]


def _blocks(r: dict, verdicts: list[str], ok: tuple[str, ...]) -> str:
    vs = [v for layer, v in zip(r["layers"], verdicts, strict=True) if layer.startswith("blocks.")]
    return f"{sum(v in ok for v in vs)} of {len(vs)}"


def _rho(r: dict) -> str:
    rho = r["rank_corr"]["rel2"]
    return "n/a" if rho is None else f"{rho:+.2f}"


paper = []
if "plain" in results:
    p = results["plain"]
    (stem0, stem_v), (b0, b0_v) = _row(p, "stem"), _row(p, "blocks.0")
    paper.append(f"*Re-randomising any layer of a fully connected net is fatal.* Plain MLP: "
                 f"{sum(v == 'critical' for v in p['verdict_rerand'])} of {len(p['layers'])} layers critical.")
    paper.append(f"*The bottom layer of a fully connected net is critical to re-initialisation.* Plain MLP: the stem "
                 f"keeps {pct(stem0)} ({stem_v}), the first hidden block {pct(b0)} ({b0_v}).")
if "plain" in results and "residual" in results:
    p, q = results["plain"], results["residual"]
    paper.append(f"*Residual nets have more robust layers.* Blocks robust to re-initialising to t = 0: residual "
                 f"{_blocks(q, q['verdict_t0'], ('robust',))}, plain {_blocks(p, p['verdict_t0'], ('robust',))}; "
                 f"blocks that survive re-randomisation (robust or sensitive): residual "
                 f"{_blocks(q, q['verdict_rerand'], ('robust', 'sensitive'))}, plain "
                 f"{_blocks(p, p['verdict_rerand'], ('robust', 'sensitive'))}.")
paper.append("*Robust layers moved least from their initialisation.* Spearman ρ of distance and damage: "
             + ", ".join(f"{r['model_name']} {_rho(r)}" for r in results.values())
             + " (positive: the layers that moved more are the ones whose reset hurts more).")
st.markdown("**Against the paper** (its claim in italics, this run's numbers after it):\n"
            + "\n".join(f"- {x}" for x in paper))
st.caption("Robust: keeps at least 90 % of the trained model's accuracy above chance; critical: less than 50 %.")

text.section("When it breaks")
st.markdown("""
- **Small, easy tasks make everything look robust or everything critical.** A 2-layer MLP fits the synthetic task,
  so its spare depth can hide damage; the digits ViT is small and trained briefly. The paper's wide nets on MNIST
  and CIFAR are not these nets: compare the *pattern*, not the numbers.
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

text.section("Papers")
text.papers([
    ("Zhang, Bengio, Singer. Are All Layers Created Equal? (2019; JMLR 2022)", "https://arxiv.org/abs/1902.01996"),
    ("Veit, Wilber, Belongie. Residual Networks Behave Like Ensembles of Relatively Shallow Networks (2016)",
     "https://arxiv.org/abs/1605.06431"),
    ("Dosovitskiy et al. An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale (2020)",
     "https://arxiv.org/abs/2010.11929"),
])
