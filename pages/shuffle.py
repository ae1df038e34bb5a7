"""Shuffle layers: widgets -> the descriptor's plan (lab.experiments.shuffle's pieces) -> figures and text."""

import streamlit as st

from app import charts, claims_view, classroom, controls, jobs, query, study_view, task_control, text
from app import figures_shuffle as figs
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import pct
from lab.core import recipes
from lab.core.models import vit
from lab.experiments.shuffle import claims as shuffle_claims
from lab.experiments.shuffle import descriptor as described
from lab.experiments.shuffle import experiment as shuffle
from lab.runtime.plain import to_plain

COLOUR_KEYS = {"slot": "slot", "block": "block", "digit": "cls"}  # control value -> label field of the view


st.title(":material/shuffle: Shuffle layers")
st.caption("Train a small vision transformer with its blocks in a random order at every step, then run it in any "
           "order, with blocks missing, and ask whether its blocks know where they are.")

page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    mode = controls.param(shuffle.ShuffleConfig, "mode")
    task = task_control.task_select(shuffle.ShuffleConfig, "vit")
    depth = controls.param(shuffle.ShuffleConfig, "depth", "slider")
    orders = controls.param(shuffle.ShuffleConfig, "orders", options=shuffle.ORDER_CHOICES)
    colour_by = COLOUR_KEYS[controls.param(described.ShufflePage, "colour")]
    removed = controls.param(described.ShufflePage, "removed", "slider")
    seed = controls.param(shuffle.ShuffleConfig, "seed", "number", hi=PAGE_SEED_MAX)
removed = min(removed, depth - 1)

page.toolbar()

view = page.view()  # the descriptor's plan of this setting: every lab call below is one of its calls
cfg = view.cfg("random orders")
other = view.cfg("their model").mode
name = shuffle.MODE_LABELS[mode]


def pieces(v: jobs.View, b: shuffle.ModelSummary, who: str = "") -> dict:
    """A model's run as the figures read it (the record `shuffle.run` assembles) from the pieces `v` names
    `{who}probe`, ...; a piece still computing is None."""
    pv, prune, rnd = v.get(f"{who}probe"), v.get(f"{who}pruning"), v.get(f"{who}random orders")
    out = {**shuffle.model_of(b), "probe": pv and pv.probe, "view": pv and pv.view,
           "pruning": None if prune is None else to_plain(prune),
           "random_orders": None if rnd is None else to_plain(rnd), "all_orders": None}
    if f"{who}all orders" in v and rnd is not None:  # read from it: stored
        table = v.get(f"{who}all orders")
        if table is not None:
            out["all_orders"] = shuffle.all_orders_of(table, v.cfg(f"{who}random orders").depth)
    return out


def metrics_of(r: dict, s: dict) -> list[classroom.Metric]:
    """The number cards of one run (this one or the pinned one); a piece still computing shows "…"."""
    wait = "Computing: see the progress bars below."
    gone = min(s["removed"], s["depth"] - 1)
    out = [classroom.Metric("Trained order", pct(r["base_acc"]), help="Blocks in the order 0, 1, 2, ... (held-out "
                                                                     "digits).")]
    ro = r["random_orders"]
    if r["all_orders"] is not None and s["orders"] >= r["all_orders"]["n"]:  # fewer orders exist than asked for
        ro = r["all_orders"]
        out += [classroom.Metric(f"Mean of all {ro['n']} orders", pct(ro["mean"]),
                                 **classroom.delta(ro["mean"], r["base_acc"]),
                                 help=f"Only {ro['n']} orders of {s['depth']} blocks exist: every one is tested."),
                classroom.Metric("Worst order", pct(ro["min"]),
                                 help=f"Best: {pct(ro['max'])}. Reversed: {pct(r['reversed_acc'])}.")]
    elif ro is not None:
        out += [classroom.Metric(f"Mean of {s['orders']} random orders", pct(ro["mean"]),
                                 **classroom.delta(ro["mean"], r["base_acc"]),
                                 help="Mean held-out accuracy over random orders."),
                classroom.Metric("Worst random order", pct(ro["min"]),
                                 help=f"Best: {pct(ro['max'])}. Reversed order: {pct(r['reversed_acc'])}.")]
    else:
        out += [classroom.Metric(f"Mean of {s['orders']} random orders", "…", help=wait),
                classroom.Metric("Reversed order", pct(r["reversed_acc"]),
                                 **classroom.delta(r["reversed_acc"], r["base_acc"]))]
    if r["pruning"] is not None:
        acc = r["pruning"][gone]["random_order"]["mean"]
        every = r["pruning"][gone]["random_order"].get("exact")
        how = ("Mean over every subset of the remaining blocks, each in every order." if every
               else "Mean over random subsets of the remaining blocks, run in random order.")
        out.append(classroom.Metric(f"{gone} blocks removed", pct(acc), **classroom.delta(acc, r["base_acc"]),
                                    help=how))
    else:
        out.append(classroom.Metric(f"{gone} blocks removed", "…", help=wait))
    if r["probe"] is not None:
        p = r["probe"]
        out.append(classroom.Metric("Slot probe (unit length)", pct(p["acc_direction"]), f"chance {pct(p['chance'])}",
                                    delta_color="off", help="Held-out accuracy of a linear probe that reads the slot "
                                                            "from the CLS token after it, scaled to unit length (its "
                                                            "norm alone tells how many blocks have run). On the raw "
                                                            f"token: {pct(p['acc'])}."))
    else:
        out.append(classroom.Metric("Slot probe", "…", help=wait))
    return out


def main_figure(runs: list, title: str | None, height: int):
    """Accuracy over random orders, one panel per model (the two compared models, or one run of a pair)."""
    if any(x["random_orders"] is None for x in runs):
        return None
    return figs.order_distribution(runs, height=height)


with page.results():
    # Both models train at once (the job pool has a worker per core); the page waits for both, then draws what is
    # ready and fills in the rest (all orders, pruning, probe) as each piece lands, each cached on its own.
    view.prefetch("their model")
    base, obase = view.run("model"), view.run("their model")
    if base is None or obase is None:
        st.stop()
    r, b = pieces(view, base), pieces(view, obase, "their ")
    seq, shuf = (r, b) if mode == "sequential" else (b, r)
    # The claims read the pieces of the modes `shuffle.claim_modes` names: for -position / -predict also plain
    # LayerShuffle's slot probe (the reference its probe is compared with).
    runs = {r["mode"]: r, b["mode"]: b}
    if "reference probe" in view:
        spv = view.get("reference probe")
        runs["shuffle"] = {"mode": "shuffle", "probe": spv and spv.probe}
    both = lambda key: r[key] is not None and b[key] is not None  # noqa: E731
    complete = (both("random_orders") and both("pruning") and both("probe")
                and all(runs[m].get("probe") is not None for m in shuffle.claim_modes(mode))
                and (not shuffle.walks_all_orders(depth) or both("all_orders")))  # the block x slot claim reads it
    # The workshop question reads this view's claims, once every piece they rest on is in (none before: a claim
    # computed from half the pieces could give another verdict than the whole run); meanwhile the page keeps polling.
    page.about({"claims": shuffle_claims.claims(runs, mode)} if complete else None)
    polled = page.workshop.active and not complete
    if polled:
        view.show()
    pin, pinned = page.pinned(), page.pinned_view(beside=view)
    pr = None
    if pinned is not None:
        pbase = pinned.run("model")
        pr = pieces(pinned, pbase) if pbase is not None else None
    page.show(metrics_of(r, page.settings()), metrics_of(pr, pin) if pr else None, main_figure,
              [r] if pr else [seq, shuf], [pr] if pr else None, key="orders")
    page.reproduce(figs.orders_of_run)
    if r["all_orders"]:
        a = r["all_orders"]
        st.markdown(f"**All {a['n']} orders** of the {name} model: mean {pct(a['mean'])}, worst {pct(a['min'])}, "
                    f"best {pct(a['max'])} · reversed order {pct(r['reversed_acc'])} · trained in "
                    f"{r['train_seconds']:.0f} s")
    if not polled:
        view.show()

if both("pruning"):
    charts.show(figs.pruning([seq, shuf], removed), "fig_pruning")
if both("all_orders"):
    charts.show(figs.block_slot([seq, shuf]), "fig_block_slot")
    st.caption(f"Each cell averages the {seq['all_orders']['block_slot']['count']} orders that run that block in "
               "that slot (read from the table of all orders). Look along a row: does a block's accuracy change "
               "with the slot it runs in, and is that different for the two models?")
# The embedding: PCA as soon as the probe lands; UMAP when its background job has finished.
points = r["view"]  # the PCA view of the probe's points
umap_job = view.submit("umap")
umap_ready = umap_job.future.done()


@st.fragment(run_every=None if umap_ready else 1.0)
def embedding_view() -> None:
    """Polls (once a second) only while UMAP runs; when it lands, one full rerun draws it and stops the polling."""
    fut = umap_job.future
    done = fut.done()  # read once: the job can land while this runs, and a view must not say "failed" when it did
    if done and not umap_ready:
        st.rerun()
    if done and not fut.cancelled() and fut.exception() is None:
        u = fut.result()
        hover = {k: getattr(u, k) for k in ("slot", "block", "cls", "order")}
        charts.show(figs.embedding(u.umap, hover[colour_by], colour_by, "UMAP", hover=hover), "fig_umap")
        st.caption(f"UMAP of {len(u.umap)} points ({shuffle.VIEW_ORDERS} random orders x {depth} slots x "
                   f"{shuffle.VIEW_INPUTS} held-out digits); embedded in {u.seconds:.1f} s.")
        return
    charts.show(figs.embedding(points["pca"], points[colour_by], colour_by, "PCA", hover=points), "fig_pca")
    if done:
        st.warning("The UMAP view could not be computed; the PCA view stands in for it.")
        jobs.log_failure(umap_job)
    else:
        st.caption(f"PCA view, shown at once; UMAP is running ({umap_job.message}) and replaces it when ready.")


if points is not None:
    embedding_view()

# The probe of the two models above at once; the other two modes train only on request (a minute or so each).
probes = {m: res for m in shuffle.MODES for res in runs.values() if res["mode"] == m and res.get("probe") is not None}
if st.toggle("Compare the slot probe across all four training modes", key="all_modes",
             help="Trains the two modes not shown above (if no one has yet) and adds their probe bars."):
    for m in shuffle.MODES:
        if m not in probes and f"probe of {m}" in view:  # the plan's optional probes: the modes not above
            res = view.run(f"probe of {m}")
            if res is not None:
                probes[m] = {"mode": m, "probe": res.probe, "view": res.view}
    probes = {m: probes[m] for m in shuffle.MODES if m in probes}
if probes:  # empty figures are not drawn
    charts.show(figs.probe_bars(probes), "fig_probe")
if complete:
    st.download_button("Download this run's numbers (JSON)",
                       text.as_json({"run": r, "comparison": b, "claims": shuffle_claims.claims(runs, mode),
                                     "probe": {m: p["probe"] for m, p in probes.items()}}),
                       file_name=f"layerlab-shuffle-{mode}-d{depth}-n{orders}-seed{seed}.json", mime="application/json",
                       help="Every number on this page, for your own analysis.")

text.section("The idea")
st.markdown("""
A transformer runs its blocks in a fixed order, and each block learns to expect the output of the one before.
What if the order were not fixed: a distributed network where blocks run on different machines and the order of
execution cannot be guaranteed, or parts fail? **LayerShuffle** trains the network for that: at every training
step the blocks run in a fresh random order. If the network still learns, no block can rely on its neighbour: each
must make a useful contribution to the residual stream whatever came before it.
""")

text.section("How it works")
facts = task_control.facts(task)
shape = cfg.spec.model
tokens = (f"{shape.seq // shape.patch} patches of {shape.patch} values give {shape.seq // shape.patch} tokens"
          if shape.seq else f"{shape.patch}x{shape.patch} patches give {(shape.image // shape.patch) ** 2} tokens")
data_line = (f"{query.plain(facts.label)}: {facts.n_train:,} training inputs, {facts.n_test:,} held-out inputs "
             "for every accuracy on this page" if facts else task)
st.markdown(f"""
1. **Data**: {data_line}.
2. **Model**: a tiny pre-norm vision transformer: {tokens} plus a CLS token, width 64, 4 heads,
   MLP ratio 2, {depth} blocks, a final LayerNorm and a linear head on the CLS token. Each block adds its output to
   a residual stream, so any order of the blocks can run.
3. **Training modes**: *sequential* always runs 0, 1, 2, ...; *LayerShuffle* draws a new permutation at every
   step (one per batch). *-position* follows the official code: one learned, zero-initialised 32-number embedding
   of the slot, shared by all blocks, is appended to every token of the block's input and passed through the
   block's own LayerNorm, linear layer and GELU, whose output is added to the stream before the block runs.
   *-predict* gives each block a small head
   (LayerNorm, linear) that guesses its current slot from the mean of its output tokens; that cross-entropy is added
   to the loss. Every mode trains with the same recipe: AdamW at a peak learning rate of 2e-3 with a 10 % linear
   warm-up and a cosine decay, batch 64, 40 epochs, and a stem (patch projection, CLS token, positions) drawn at
   0.1 of unit scale (about 25 CPU-seconds on one core).
4. **Tests**: the trained order; {orders} random orders; all orders when there are at most 720 (the claims then
   average over every order, so no draw of orders adds noise); the reversed order; and pruning: remove k blocks and
   run the rest in random order (solid) or in their trained order (dashed): every subset in every order when there
   are at most 720 such routes, otherwise 10 random subsets.
5. **Features**: for 20 random orders and 200 held-out digits, the CLS token after every slot. A linear probe
   (logistic regression) is trained on half the orders and half the digits (10 orders x 100 digits x each slot)
   to predict the slot, and tested on the other half of both, on the raw token and on the token scaled to unit
   length (the verdict reads the unit-length probe; its error comes from resampling test orders and digits, whose
   rows are not independent). The 2-D views show a subset.
6. **Departures from the paper**: ImageNet/CIFAR-100 ViT-B/16 fine-tuned there, a {depth}-block ViT trained from
   scratch on 8x8 digits here; the paper shows slot information in UMAP views, this lab also measures it with the probe;
   -predict starts from a larger stem (0.2 instead of 0.1) because its slot loss stalled it (lab/core/recipes.py).
""")
text.training_length("shuffle", cfg.spec.train.epochs, task)


text.section("The code")
text.show_code([recipes.vit_model_config, recipes.vit_train_config, vit.Block.forward, vit.ViT.loss,
                shuffle.all_orders_accuracy, shuffle.position_probe],
               "These are the functions that produced the numbers above, read from the running source:")
from lab.core.routes import sample_route  # noqa: E402 - shown, not used

text.show_code([sample_route], "The route of each training step (mode `shuffle` for all three LayerShuffle "
               "variants):")

text.section("What the simulations show")
if not complete:
    st.info("The numbers of this run appear here as soon as the last of them is computed (see the progress "
            "bars above).")
else:
    # Each model under its own name (the selected mode may be -position or -predict, not plain LayerShuffle).
    def line(x: dict) -> str:
        ro = x["random_orders"]
        return (f"{shuffle.MODE_LABELS[x['mode']]} training: **{pct(x['base_acc'])}** in the trained order, "
                f"**{pct(ro['mean'])}** on average over {orders} random orders (worst {pct(ro['min'])}, best "
                f"{pct(ro['max'])}), reversed order {pct(x['reversed_acc'])}, with {removed} of {depth} blocks "
                f"removed (random order) {pct(x['pruning'][removed]['random_order']['mean'])}.")

    lines = [line(seq), line(shuf), f"Chance: {pct(seq['chance'])} (the most frequent class); every accuracy is on "
             f"the same {seq['n_test']} held-out inputs, so one input is {100 / seq['n_test']:.2f} points."]
    d = shuffle_claims.trained_order_difference(shuf, seq)
    lines.append(f"In their trained orders, {shuffle.MODE_LABELS[shuf['mode']]} minus sequential: "
                 f"{100 * d.value:+.1f} points (standard error {100 * d.se:.1f}, paired on the same held-out inputs).")
    lines.append("Slot probe (chance " + pct(r["probe"]["chance"]) + f"; trained on {r['probe']['n_train']:,} rows, "
                 f"tested on {r['probe']['n_test']:,}), unit-length features (raw in brackets): "
                 + ", ".join(f"{shuffle.MODE_LABELS[m]} {pct(p['probe']['acc_direction'])} ({pct(p['probe']['acc'])})"
                             for m, p in probes.items()) + ".")
    st.markdown("\n".join(f"- {x}" for x in lines))

text.section("Against the paper")
if not complete:
    claims_view.pending()
else:
    claims_view.show(shuffle_claims.claims(runs, mode), "Each statement of the paper, checked against this run's "
                     "numbers with its rule and the run's noise (held-out inputs paired one by one, and the "
                     "draw of random orders where not every order is run):", page=page)

text.section("When it breaks")
st.markdown("""
- **The slot is not a secret.** The residual stream grows as blocks add to it, so even a model that was never told
  its slot leaves traces of how many blocks have run: a probe above chance does not by itself mean that blocks
  *use* their slot. Compare the modes, not one bar against chance.
- **Depth 2.** With two blocks there are only two orders; shuffling costs little and shows little.
- **Shuffling is not free.** A shuffle-trained block must work after any other block, so it cannot specialise.
  Compare the two models' trained-order accuracies under "What the simulations show"
  (paired on the same held-out inputs).
- **The size of the stream at the start decides both ends.** The stem's initial scale sets how loud the residual
  stream is next to what the blocks add. With the usual small init (0.02) the sequential model scored 25 % over
  random orders on a validation split, and LayerShuffle training reached only 52 %; with a unit-scale stem
  LayerShuffle trains, but the sequential model keeps 68-71 % in random orders (the lab's first recipe), because
  every block only nudges a large stream. This lab starts the stem at 0.1 (LayerShuffle-predict at 0.2, whose slot
  loss held it back at 0.1): see `recipes.vit_model_config` and the measurements in `lab/core/recipes.py`.
- **A shuffle that never shuffles.** The official LayerShuffle code once silently trained in the fixed order.
  This lab's tests record the route of every training step to make sure the order really changes.
""")

text.section("Try this")
page.try_this()

text.section("Going further")
st.markdown("""
- Colour the embedding by **block** instead of slot: do points cluster by which block ran, or by where it ran?
- IOT (Zhu et al.) lets a small router choose the order per input: do all orders score about the same on average
  while single inputs prefer different ones? The IOT page measures it.
- LayerDrop trains with random deletions instead of random orders; compare its pruning curve with this one.
- *Transformer Layers as Painters* runs a frozen model's middle layers in random order, reversed or in parallel:
  those layers turn out to share a representation space, which is what LayerShuffle enforces by training.
""")

study_view.show(page.name, lecturer=page.workshop.lecturer, in_class=page.workshop.code is not None,
                workshop=page.workshop)

text.section("Papers")
text.papers([
    ("Freiberger et al. LayerShuffle: Enhancing Robustness in Vision Transformers by Randomizing Layer Execution "
     "Order (2024)", "https://arxiv.org/abs/2407.04513"),
    ("Dosovitskiy et al. An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale (2020)",
     "https://arxiv.org/abs/2010.11929"),
    ("Zhu et al. IOT: Instance-wise Layer Reordering for Transformer Structures (2021)",
     "https://arxiv.org/abs/2103.03457"),
    ("Sun et al. Transformer Layers as Painters (2024)", "https://arxiv.org/abs/2407.09298"),
    ("McInnes, Healy, Melville. UMAP: Uniform Manifold Approximation and Projection (2018)",
     "https://arxiv.org/abs/1802.03426"),
])
