"""Rearrange layers: widgets -> RearrangeConfig -> lab.experiments.rearrange -> figures and text."""


import streamlit as st

from app import charts, claims_view, classroom, controls, task_control, text
from app import figures_rearrange as figs
from app.text import pts_between
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import pct
from lab.core import metrics, model_registry, routes
from lab.core.models.base import Parallel, RoutedModel
from lab.experiments.rearrange import claims as rearrange_claims
from lab.experiments.rearrange import descriptor as described
from lab.experiments.rearrange import experiment as rearrange
from lab.experiments.rearrange import rows
from lab.ops import route_ops

Config = rearrange.RearrangeConfig

st.title(":material/swap_vert: Rearrange layers")
st.caption("Take a trained network and, without retraining anything, skip, swap, reverse, repeat, loop or run its "
           "middle layers side by side. Which layers can be moved, and which cannot?")

page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    model = controls.param(Config, "model")
    task = task_control.task_select(Config, model_registry.model(model).family, model_registry.model(model).task)
    op = controls.param(Config, "op")
    block = controls.param(Config, "block", "slider")
    reduce = controls.param(Config, "reduce")
    loops = controls.param(Config, "loops", "slider")
    span = controls.param(Config, "span", "slider")
    ends = controls.param(Config, "ends")
    seed = controls.param(Config, "seed", "number", hi=PAGE_SEED_MAX)
page.toolbar()

view = page.view()  # the descriptor's plan of this setting: every lab call below is one of its calls
cfg = view.cfg("run")


def what_of(s: dict) -> str:
    """The operation of a setting in words, with its block and loop count filled in."""
    b, k, sp = s["block"], s.get("loops", route_ops.LOOPS), s.get("span", 0)
    what = (route_ops.OPS[s["op"]].label.replace("block b", f"block {b}").replace("b and b+1", f"{b} and {b + 1}")
            .replace("K times", "once" if k == 1 else "twice" if k == 2 else f"{k} times"))
    if sp and s["op"] in route_ops.SPAN_OPS:
        win = f"blocks {b} to {b + sp - 1}"
        what = (what.replace("the middle", win).replace("middle in parallel", f"{win} in parallel")
                .replace("skip block", "skip from block")
                + (f" to {b + sp - 1}" if s["op"] == "skip" else ""))
    return what


def metrics_of(r: rearrange.RearrangeResult, s: dict) -> list[classroom.Metric]:
    """The number cards of one setting (this one or the pinned one)."""
    what = what_of(s)
    return [classroom.Metric("Trained order", pct(r.base_acc),
                             help="All blocks in their trained order, on held-out data."),
            classroom.Metric(what[:1].upper() + what[1:], pct(r.acc), **classroom.delta(r.acc, r.base_acc),
                             help="Held-out accuracy after the operation; the model's weights are unchanged."
                                  + (f" Mean of {r.draws} random orders." if r.draws > 1 else "")),
            classroom.Metric("Block runs", f"{r.block_runs} in {r.sequential_steps} steps",
                             help=f"How many block evaluations the route costs (the trained order: "
                                  f"{r.n_blocks}), and in how many sequential steps (a parallel group is one "
                                  "step)."),
            classroom.Metric("Chance", pct(r.chance), help="Always guessing the most common held-out class.")]


def main_figure(r: rearrange.RearrangeResult, title: str | None, height: int):
    """What the setting's route runs, step by step."""
    return figs.route(r, "" if title is None else title, height=height)


with page.results():
    r = page.show_run(view, metrics_of, main_figure, key="route")
    page.reproduce(figs.route)
    st.markdown(f"**Route:** `{r.route}`" + (" (the first of the random orders)" if r.draws > 1 else "")
                + f" · **middle:** blocks {r.middle}")

what = what_of(page.settings())
# Every model's profile (the plan's), side by side: the comparison (what `rearrange.compare` returns).
got = view.run_all([f"profile {mo}" for mo in rearrange.MODELS])  # the models in one order, whichever is chosen
comparison = ({"seed": seed, "profiles": {view.cfg(k).model: p for k, p in got.items()}}
              if all(p is not None for p in got.values()) else None)
profiles = comparison["profiles"] if comparison is not None else None
if profiles is not None:
    mine = profiles[model]
    charts.show(figs.operations(profiles, model), "fig_ops")
    st.caption("Bars show the share of each model's own trained accuracy that the operation keeps (hover for the "
               "accuracy and the cost); the dotted lines are chance as a share of each model's trained accuracy. "
               "Block operations are averaged over every middle block; the first and last blocks stay in place; "
               "loop and parallel-loop run twice here (the loop slider moves only the chosen operation).")
    charts.show(figs.per_block(mine), "fig_per_block")
    charts.show(figs.spans(profiles), "fig_spans")
    st.caption("Each point: the mean accuracy over every window of that many consecutive middle blocks (a span of "
               "1 skips, repeats or parallelises a single block; the longest span is the whole middle). Repeating "
               "runs the window's first block in each of its slots; compare it with skipping the same window.")
    charts.show(figs.loops(mine), "fig_loops")
    st.caption(f"Parallel-loop on the chosen model: the window run in parallel (mean of updates) K = 1 to "
               f"{route_ops.MAX_LOOPS} times, each line a span (averaged over its windows); the star marks each "
               "span's best K. Sun et al. report that the best K grows with the number of layers run in parallel.")
    left, right = st.columns(2)
    charts.show(figs.similarity(mine, "cosine"), "fig_cos", left)
    charts.show(figs.similarity(mine, "cka"), "fig_cka", right)
    sim = mine.similarity
    st.caption(f"The hidden state after the stem and after each block of the trained order, on "
               f"{sim.get('inputs', '?')} held-out inputs ({sim.get('features', '?')} features each). Left: mean "
               "cosine similarity (per input, and per token for the ViT). Right: linear CKA, which ignores rotations "
               "and scale, computed with the unbiased HSIC estimator (Song et al. 2012): the plain estimate is "
               "pulled towards 1 when features outnumber inputs, as for the ViT (hover for it).")

st.download_button("Download this run's numbers (JSON)",
                   text.as_json({"run": r, "comparison": comparison}),
                   file_name=f"layerlab-rearrange-{model}-{op}-b{block}-{reduce}-k{loops}-s{span}-{ends}-seed{seed}.json",
                   mime="application/json", help="Every number on this page, for your own analysis.")

# the shapes the text names
vit_entry, mlp_entry = model_registry.model("vit-sequential"), model_registry.model("residual")
sizes = sorted({model_registry.model(m).blocks for m in rearrange.MODELS})
text.section("The idea")
st.markdown(f"""
A network is trained with its layers in one order, each layer always reading what the previous one wrote. Do the
layers really depend on that order? **Transformer Layers as Painters** (Sun et al., 2024) and **The Remarkable
Robustness of LLMs** (Lad et al., 2024) took trained language models and, *without any retraining*, skipped,
swapped, reversed, repeated, looped and parallelised their layers. They report that the **first and last layers
are special** while the **middle layers share a common representation**: they can be skipped or swapped at a small
cost, run in parallel with graceful loss, but **not replaced by copies of one layer**. Here you do the same to a
network you can train in seconds, and each claim is checked against this run's numbers under *Against the paper*.

**Where this lab departs from the papers.** The models are small: a {vit_entry.title} on {vit_entry.data_words} (397
held-out images) and a {mlp_entry.title} (4,000 held-out inputs), not language models of 24 to 80 layers scored on
benchmarks. The operations act on the whole middle (every block but the first and last) where Sun et al. choose a
span [start, end); repeating is compared, as in their code, with skipping that same span. Their parallel layers
average outputs, here the mean of updates (the same for residual blocks); loops run K times (the slider).
""")

text.section("How it works")
st.markdown(f"""
1. Load (or train, once) the model: the same recipe and seed as the Delete and Shuffle pages, so it is the same
   network. Its weights are frozen: nothing on this page trains.
2. Every operation is a **route**: the list of blocks to run, in order. Skipping leaves a block out, swapping and
   reversing permute the middle, repeating and looping name blocks twice. A **parallel group** is one step of a
   route: every block in it reads the same input h, and what comes out is
   h + mean (or sum) of the blocks' *updates* run_block(h, b) − h, which is what a residual block adds to its
   stream.
3. The **middle** is every block except the first and the last (the papers' setting); *include them* makes the
   middle every block, a control for how special the ends are.
4. **Span** (Sun et al.'s [start, end)): skip, reverse, repeat and parallel can act on a window of s consecutive
   middle blocks from block b instead; every window of every span, and parallel-loop with K = 1 to
   {route_ops.MAX_LOOPS}, is part of the same stored table.
5. Every operation with every argument is scored on held-out data in one pass ({rearrange.RANDOM_DRAWS} random
   orders for *random*), and stored with the model: moving a control afterwards only reads the table.
6. **Similarity maps**: the hidden state after the stem and after every block, compared pairwise by cosine
   similarity and by linear CKA (Kornblith et al. 2019), debiased (Nguyen et al. 2021): the plain CKA of two
   unrelated 1,088-feature representations of 397 inputs is about 0.7, the debiased one about 0. Blocks whose
   outputs look alike are the ones that may be interchangeable.
7. **Verdicts**: each claim below compares accuracies measured on the same held-out inputs input by input
   (paired: only the inputs on which the two routes disagree add noise, so the error is far below the
   sqrt(p (1 - p) / n) of one accuracy, about 1.5 points on the ViT's 397 images and 0.5 on the MLP's 4,000); a
   difference inside two standard errors of the claim's bar leaves the verdict open. The best loop count of each
   span is chosen on half the inputs and compared on the other half.
""")

text.section("The code")
text.show_code([Parallel, RoutedModel.run_parallel, RoutedModel.run_steps, route_ops.route_of, routes.PrefixStates,
                rearrange.random_routes, metrics.unbiased_hsic, metrics.debiased_cka, rearrange.similarity,
                rearrange.profile],
               "The functions that produced these numbers, read from the running source:")
text.show_code([rearrange_claims.model_claims, rows.span_sweep, rearrange_claims.loops_decision,
                rearrange_claims.shuffle_claim])

text.section("What the simulations show")
lines = [f"In its trained order the {model_registry.model(model).label} scores **{pct(r.base_acc)}** (chance "
         f"{pct(r.chance)}); **{what}** gives **{pct(r.acc)}** ({pts_between(r.acc, r.base_acc)}) for "
         f"{r.block_runs} block runs."]
if profiles is not None:
    s = rows.summary(mine)
    best = max((k for k in s if k != "identity"), key=lambda k: s[k]["acc"])
    worst = min(s, key=lambda k: s[k]["acc"])
    lines.append(f"For this model the gentlest operation is **{figs.SHORT[best]}** ({pct(s[best]['acc'])}), the "
                 f"harshest **{figs.SHORT[worst]}** ({pct(s[worst]['acc'])}).")
st.markdown("\n".join(f"- {x}" for x in lines))

text.section("Against the paper")
if comparison is None:
    claims_view.pending()
else:
    claims_view.show(rearrange_claims.compare_claims(comparison),
                     f"The papers' claims, checked on every model at seed {seed} (each "
                     "rule states the lab's bar and the run's noise):", page=page)

text.section("When it breaks")
st.markdown(f"""
- **Copies of one layer.** Running one middle block in place of all the middle feeds that block inputs it has never
  seen, again and again: its errors can compound. Compare it with skipping the same blocks (skip the whole middle).
- **Summing a parallel group** adds every block's update at once; in a model whose stream is small next to what
  the blocks add, that overshoots. The mean shrinks the updates instead. Compare both on the two model families.
- **Small models.** These networks have {" or ".join(map(str, sizes))} blocks; a "middle" of
  {" or ".join(str(n - 2) for n in sizes)} blocks is a small sample of what the
  papers saw with 32 to 80 layers, and a single seed can move a claim across its bar: try seed 1.
- **Different tasks.** The residual MLP's synthetic task needs few layers, so it forgives a lot; the digits ViT
  trained in order relies on its order far more.
- **LayerShuffle is not free.** The LayerShuffle ViT tolerates every order because it was trained for it; its
  trained-order accuracy is the price to compare.
""")

text.section("Try this")
page.try_this()

text.section("Going further")
st.markdown("""
- **Delete layers** and **LayerDrop** remove blocks and then heal or prepare the model; here nothing is retrained.
  How much of what skipping costs does distillation bring back?
- **Loop to think longer**: looping the middle spends more compute for the same weights, the idea behind looped and
  universal transformers. Does a model trained with loops gain from more of them?
- **Similarity predicts robustness?** ShortGPT's Block Influence, 1 − cos(input, output), ranks blocks by how much
  they change the stream: compare it with the per-block skip curve above.
""")

text.section("Papers")
text.papers([
    ("Sun, Pickett, Nain, Jones. Transformer Layers as Painters (2024)", "https://arxiv.org/abs/2407.09298"),
    ("Lad, Gurnee, Tegmark. The Remarkable Robustness of LLMs: Stages of Inference? (2024)",
     "https://arxiv.org/abs/2406.19384"),
    ("Kornblith, Norouzi, Lee, Hinton. Similarity of Neural Network Representations Revisited (2019)",
     "https://arxiv.org/abs/1905.00414"),
    ("Freiberger et al. LayerShuffle: Enhancing Robustness in Vision Transformers by Randomizing Layer Execution "
     "Order (2024)", "https://arxiv.org/abs/2407.04513"),
    ("Men et al. ShortGPT: Layers in Large Language Models are More Redundant Than You Expect (2024)",
     "https://arxiv.org/abs/2403.03853"),
])
