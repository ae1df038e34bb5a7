"""Rearrange layers: widgets -> RearrangeConfig -> lab.experiments.rearrange -> figures and text."""


import streamlit as st

from app import classroom, controls, jobs, text
from app import figures_rearrange as figs
from app.text import pct, pts
from lab.experiments import rearrange
from lab.models.base import Parallel, RoutedModel

Config = rearrange.RearrangeConfig

st.title(":material/swap_vert: Rearrange layers")
st.caption("Take a trained network and, without retraining anything, skip, swap, reverse, repeat, loop or run its "
           "middle layers side by side. Which layers can be moved, and which cannot?")

page = classroom.Page(rearrange.PRESETS, rearrange.CONTROLS, rearrange.needs, demo=("model", "op", "block", "ends"))
with page.controls():
    model = controls.param(Config, "model",
                           help="residual: the Delete page's residual MLP (synthetic 20-class task, 7 blocks). "
                                "vit-sequential / vit-shuffle: the Shuffle page's 6-block ViT on 8x8 digits, trained "
                                "in order or with LayerShuffle (a random block order at every training step). The "
                                "models are shared with those pages: if they trained them, nothing trains here.")
    n = rearrange.n_blocks(model)
    op = controls.param(Config, "op",
                        help="identity: the trained order. skip: leave out block b. swap: swap b and b+1. reverse / "
                             "random: the middle in reverse or random order (mean of "
                             f"{rearrange.RANDOM_DRAWS} orders). repeat: block b run in place of every middle block. "
                             "skip-middle: no middle at all. loop: the middle twice. parallel: every middle block "
                             "reads the same input and their updates are combined. parallel-loop: that, twice.")
    block = controls.param(Config, "block", "slider",
                           help=f"Block b of skip, swap and repeat, numbered from 0. This model has blocks 0 to "
                                f"{n - 1}; with the ends kept, b must be a middle block (swap: b+1 too).")
    reduce = controls.param(Config, "reduce")
    ends = controls.param(Config, "ends")
    seed = controls.param(Config, "seed", "number", hi=99)
page.toolbar()

cfg = controls.make_config(Config, model=model, op=op, block=block, reduce=reduce, ends=ends, seed=seed)


def what_of(s: dict) -> str:
    """The operation of a setting in words, with its block filled in."""
    b = s["block"]
    return rearrange.OP_LABELS[s["op"]].replace("block b", f"block {b}").replace("b and b+1", f"{b} and {b + 1}")


def metrics_of(r: dict, s: dict) -> list[classroom.Metric]:
    """The number cards of one setting (this one or the pinned one)."""
    what = what_of(s)
    return [classroom.Metric("Trained order", pct(r["base_acc"]),
                             help="All blocks in their trained order, on held-out data."),
            classroom.Metric(what[:1].upper() + what[1:], pct(r["acc"]), **classroom.delta(r["acc"], r["base_acc"]),
                             help="Held-out accuracy after the operation; the model's weights are unchanged."
                                  + (f" Mean of {r['draws']} random orders." if r["draws"] > 1 else "")),
            classroom.Metric("Block runs", f"{r['block_runs']} in {r['depth']} steps",
                             help=f"How many block evaluations the route costs (the trained order: "
                                  f"{r['n_blocks']}), and in how many sequential steps (a parallel group is one "
                                  "step)."),
            classroom.Metric("Chance", pct(r["chance"]), help="Always guessing the most common held-out class.")]


def main_figure(r: dict, title: str | None, height: int):
    """What the setting's route runs, step by step."""
    return figs.route(r, "" if title is None else title, height=height)


with page.results():
    r = jobs.run(f"Training or loading the {rearrange.MODEL_LABELS[model]} and running every rearrangement",
                 rearrange.run, cfg)
    if r is None:
        st.stop()
    pin = page.pinned()
    pcfg = page.config(rearrange.config_of, pin) if pin else None
    pr = jobs.run("Training or loading the pinned setting's model", rearrange.run, pcfg) if pcfg else None
    page.show(metrics_of(r, page.settings()), metrics_of(pr, pin) if pr else None, main_figure, r, pr, key="route")
    st.markdown(f"**Route:** `{r['route']}`" + (" (the first of the random orders)" if r["draws"] > 1 else "")
                + f" · **middle:** blocks {r['middle']}")

what = what_of(page.settings())
profiles = jobs.run("Training or loading the other models for comparison", rearrange.all_models,
                    rearrange.SeedConfig(seed))
if profiles is not None:
    mine = profiles[model]
    st.plotly_chart(figs.operations(profiles, model), theme=None, key="fig_ops")
    st.caption("Bars show the share of each model's own trained accuracy that the operation keeps (hover for the "
               "accuracy and the cost). Block operations are averaged over every middle block; the first and last "
               "blocks stay in place.")
    st.plotly_chart(figs.per_block(mine), theme=None, key="fig_per_block")
    left, right = st.columns(2)
    left.plotly_chart(figs.similarity(mine, "cosine"), theme=None, key="fig_cos")
    right.plotly_chart(figs.similarity(mine, "cka"), theme=None, key="fig_cka")
    st.caption(f"The hidden state after the stem and after each block of the trained order, on up to "
               f"{rearrange.SIM_INPUTS} held-out inputs (the digits have 397). Left: mean cosine similarity (per "
               "input, and per token for the ViT). Right: linear CKA, which ignores rotations and scale.")

st.download_button("Download this run's numbers (JSON)",
                   text.as_json({"run": r, "profiles": profiles}),
                   file_name=f"layerlab-rearrange-{model}-{op}-b{block}-{reduce}-{ends}-seed{seed}.json",
                   mime="application/json", help="Every number on this page, for your own analysis.")

text.section("The idea")
st.markdown("""
A network is trained with its layers in one order, each layer always reading what the previous one wrote. Do the
layers really depend on that order? **Transformer Layers as Painters** (Sun et al., 2024) and **The Remarkable
Robustness of LLMs** (Lad et al., 2024) took trained language models and, *without any retraining*, skipped,
swapped, reversed, repeated, looped and parallelised their layers. They found that the **first and last layers are
special** while the **middle layers share a common representation**: they can be skipped or swapped at a small
cost, run in parallel with graceful loss, but **not replaced by copies of one layer**. Here you do the same to a
network you can train in seconds, and check each claim.
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
4. Every operation with every argument is scored on held-out data in one pass ({rearrange.RANDOM_DRAWS} random
   orders for *random*), and stored with the model: moving a control afterwards only reads the table.
5. **Similarity maps**: the hidden state after the stem and after every block, compared pairwise by cosine
   similarity and by linear CKA (Kornblith et al. 2019). Blocks whose outputs look alike are the ones that may be
   interchangeable.
""")

text.section("The code")
text.show_code([Parallel, RoutedModel.run_parallel, RoutedModel.run_steps, rearrange.route_of,
                rearrange.random_routes, rearrange.linear_cka, rearrange.similarity, rearrange.profile],
               "The functions that produced these numbers, read from the running source:")
text.show_code([rearrange.model_claims, rearrange.shuffle_claim])

text.section("What the simulations show")
lines = [f"In its trained order the {rearrange.MODEL_LABELS[model]} scores **{pct(r['base_acc'])}** (chance "
         f"{pct(r['chance'])}); **{what}** gives **{pct(r['acc'])}** ({pts(r['acc'], r['base_acc'])}) for "
         f"{r['block_runs']} block runs."]
if profiles is not None:
    s = rearrange.summary(mine)
    best = max((k for k in s if k != "identity"), key=lambda k: s[k]["acc"])
    worst = min(s, key=lambda k: s[k]["acc"])
    lines.append(f"For this model the gentlest operation is **{figs.SHORT[best]}** ({pct(s[best]['acc'])}), the "
                 f"harshest **{figs.SHORT[worst]}** ({pct(s[worst]['acc'])}).")
st.markdown("\n".join(f"- {x}" for x in lines))
if profiles is not None:
    st.markdown(f"**The papers' claims, checked on seed {seed}** (the bars are this lab's, stated in each line):")
    by_claim: dict[str, list[dict]] = {}
    for claim in rearrange.claims(profiles):
        by_claim.setdefault(claim["claim"], []).append(claim)
    for i, (name, rows) in enumerate(by_claim.items(), 1):
        st.markdown(f"{i}. *{name[:1].upper() + name[1:]}*\n"
                    + "\n".join(f"   - {':green[**holds**]' if c['holds'] else ':red[**does not hold**]'}: "
                                f"{c['detail']}" for c in rows))

text.section("When it breaks")
st.markdown("""
- **Copies of one layer.** Running one middle block in place of all the middle feeds that block inputs it has never
  seen, again and again: its errors compound. Skipping the same blocks loses less.
- **Summing a parallel group** adds every block's update at once; in a model whose stream is small next to what
  the blocks add, that overshoots. The mean shrinks the updates instead. Compare both on the two model families.
- **Small models.** These networks have 6 or 7 blocks; a "middle" of 4 or 5 blocks is a small sample of what the
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
