"""Layer lens: widgets -> LensConfig -> lab.experiments.lens -> figures and text."""


import math

import streamlit as st

from app import charts, claims_view, classroom, controls, task_control, text
from app import figures_lens as figs
from app.text import pts_between
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import pct
from lab.core import metrics, model_registry
from lab.experiments.lens import claims as lens_claims
from lab.experiments.lens import descriptor as described
from lab.experiments.lens import experiment as lens
from lab.ops import layer_lens as methods

Config = lens.LensConfig

st.title(":material/visibility: Layer lens")
st.caption("Every other page changes layers and measures the damage at the output. Here you read the network "
           "from the inside: what does each layer already know, and where is the answer decided?")

page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    model = controls.param(Config, "model")
    task = task_control.task_select(Config, model_registry.model(model).family, model_registry.model(model).task)
    route_op = controls.param(Config, "route_op", key="change")
    block = controls.param(Config, "block", "slider")
    seed = controls.param(Config, "seed", "number", hi=PAGE_SEED_MAX)
page.toolbar()

view = page.view()  # the descriptor's plan of this setting: every lab call below is one of its calls


def metrics_of(r: lens.LensResult, s: dict) -> list[classroom.Metric]:
    """The number cards of one setting (this one or the pinned one)."""
    half = r.n_blocks // 2
    out = [classroom.Metric("Model (held-out)", pct(r.base_acc), help="The intact model in its trained order."),
           classroom.Metric(f"Logit lens after {half} blocks", pct(r.slot_acc[half]),
                            **classroom.delta(r.slot_acc[half], r.base_acc),
                            help="The model's own head read halfway through the blocks."),
           classroom.Metric("Blocks before the answer settles", f"{r.commit['mean']:.2f} of {r.n_blocks}",
                            help="Commitment depth: how many blocks run before the logit lens's answer stays the "
                                 "final answer, averaged over the held-out inputs (0 = already after the stem).")]
    if r.change is not None:
        ch = r.change
        out.append(classroom.Metric(f"After: {figs.change_name(r)}", pct(ch.acc),
                                    **classroom.delta(ch.acc, r.base_acc),
                                    help=f"Held-out accuracy of the route {ch.route} (no retraining)."))
    out.append(classroom.Metric("Chance", pct(r.chance), help="Always guessing the most common held-out class."))
    return out


def main_figure(r: lens.LensResult, title: str | None, height: int):
    return figs.lens_curve(r, "" if title is None else title, height=height)


with page.results():
    r = page.show_run(view, metrics_of, main_figure, key="lens")
    page.reproduce(figs.lens_curve)
    st.caption("Each point reads the hidden state after one slot through the model's own head (the logit lens; "
               "dashed: the tuned lens, one affine map per slot first). The last point is the model itself."
               + (f" Vermillion: the same frozen model with {figs.change_name(r)} (route {r.change.route})."
                  if r.change is not None else ""))

charts.show(figs.confidence(r), "fig_confidence")
st.caption("Left: how spread out the lens's prediction is (0 = certain; the largest possible is ln of the number "
           "of classes). Right: how far it is from the model's final prediction; 0 at the last slot by definition.")
charts.show(figs.commitment(r), "fig_commit")
ex = figs.examples(r)
if ex is not None:
    charts.show(ex, "fig_examples")
    st.caption("Each digit is labelled true digit → the model's answer, and how many blocks run before the lens's "
               "answer stays that answer (a wrong final answer settles too). Ties are broken by the order of the "
               "held-out set.")
else:
    st.caption("The MLPs read 12 synthetic features, not images: their per-class commitment is on the right above.")
charts.show(figs.influence(r), "fig_influence")
st.caption("ShortGPT's block influence, 1 − cos(block input, block output), beside the held-out accuracy really "
           "lost when that one block is skipped (no retraining); on the right, one against the other.")
charts.show(figs.triangle(r), "fig_triangle")
st.caption("Gromov et al.'s picture: the angular distance between the state after l blocks and n blocks later; a small "
           "value in row n says those n blocks change the stream little, so they are the candidates to drop.")

st.download_button("Download this run's numbers (JSON)", text.as_json(r),
                   file_name=f"layerlab-lens-{model}-{route_op}-b{block}-seed{seed}.json", mime="application/json",
                   help="Every number on this page, for your own analysis.")

text.section("The idea")
st.markdown("""
A trained network's last layer writes the answer, but *when* is the answer decided? The **logit lens**
(nostalgebraist, 2020) simply applies the model's own head to the hidden state after every layer, as if the
network stopped there. The **tuned lens** (Belrose et al., 2023) first translates each layer's state with a small
affine map learnt for that layer, since earlier layers may speak a slightly different language. Lad et al. (2024)
read such lenses as *stages of inference*; ShortGPT (Men et al., 2024) and Gromov et al. (2024) use how little a
layer changes its input to decide which layers could be deleted. Here you read every layer of a network you
trained on another page, and check those predictions against what deleting each block really costs.
""")

text.section("How it works")
st.markdown(f"""
1. Load (or train, once) the model: the same recipe and seed as the Delete, Shuffle and LayerDrop pages. Nothing
   on this page trains it further.
2. Run the held-out inputs once, keeping the hidden state after the stem and after every block.
3. **Logit lens**: the model's own readout (the ViT: final LayerNorm and linear head on the CLS token; the MLPs:
   the linear head) on each state: accuracy, mean entropy, and the KL divergence to the final prediction.
4. **Tuned lens**: for each slot, the affine map that best sends what the head reads there onto what it reads after
   the last block (closed-form least squares on up to {lens.TUNED_INPUTS:,} training inputs; Belrose et al. train
   their maps on the KL instead), then the same head.
5. **Commitment depth** of an input: how many blocks run before the lens's answer never changes again.
6. **Block influence** 1 − cos(input, output) of each block, and the **angular distance**
   arccos(cos)/π between the state after l blocks and n blocks later (per input, averaged over tokens for the ViT;
   Gromov et al. use the last token only).
7. **The real cost**: held-out accuracy with each block deleted (and each pair of neighbours), no retraining.
   Spearman's rank correlation says whether the cheap geometry predicts it; its noise comes from
   {lens_claims.BOOTSTRAP} bootstrap resamples of the held-out inputs, plus an exact permutation test over the blocks.
""")

text.section("The code")
text.show_code([methods.lens_logits, methods.fit_affine, methods.fit_tuned_lens, methods.commitment,
                metrics.block_influence, metrics.angular_distance, lens.measure],
               "The functions that produced these numbers, read from the running source:")
text.show_code([lens_claims.claims])

text.section("What the simulations show")
half = r.n_blocks // 2
lines = [f"The {model_registry.model(model).label} scores **{pct(r.base_acc)}** held-out (chance {pct(r.chance)}). "
         f"Read after the stem its own head gives **{pct(r.slot_acc[0])}**, halfway (after {half} of "
         f"{r.n_blocks} blocks) "
         f"**{pct(r.slot_acc[half])}**; the tuned lens gives {pct(r.tuned_slot_acc[0])} and "
         f"{pct(r.tuned_slot_acc[half])} there.",
         f"On average **{r.commit['mean']:.2f}** of the {r.n_blocks} blocks run before the answer settles ("
         f"tuned lens: "
         f"{r.tuned_commit['mean']:.2f}); {pct(r.commit['hist'][0] / r.n_test)} of the inputs have their "
         "final answer already after the stem.",
         f"Block influence ranges from {min(r.block_influence):.3f} to {max(r.block_influence):.3f}; deleting "
         f"one block changes the held-out accuracy by {pts_between(-max(r.delete_cost), 0)} to "
         f"{pts_between(-min(r.delete_cost), 0)} "
         f"(Spearman ρ = {r.checks['influence']['rho']:.2f} between the two)."]
if r.change is not None:
    ch = r.change
    lines.append(f"With {figs.change_name(r)} the model gives **{pct(ch.acc)}** "
                 f"({pts_between(ch.acc, r.base_acc)}); {ch.commit_mean:.2f} of its {len(ch.route)} "
                 "blocks run before its answer settles, on average.")
st.markdown("\n".join(f"- {x}" for x in lines))

text.section("Against the paper")
claims_view.show(lens_claims.profile_claims(r),
                 intro=f"Checked on this model at seed {seed}; each rule states its bar and its noise.", page=page)

fewest = min(model_registry.model(m).blocks for m in lens.MODELS)
most = max(model_registry.model(m).blocks for m in lens.MODELS)
text.section("When it breaks")
st.markdown(f"""
- **A lens is a reading, not the model.** The logit lens assumes every layer writes in the head's coordinates. In a
  plain MLP each layer re-encodes everything, so the head reads early states as noise even when the information is
  there; the tuned lens's maps (or a probe) can still find it.
- **Few blocks, few ranks.** With {fewest} to {most} blocks a rank correlation has little to go on: even a perfect
  ranking of {fewest} blocks happens by chance once in {math.factorial(fewest):,} orderings, and a couple of swapped
  ranks make it unremarkable. A claim then says that this run cannot decide.
- **Cosine is not cost.** A block that changes the stream a lot can still be easy to lose if the next blocks undo
  or repeat its work; a quiet block can be the one that moves the decision boundary.
- **Small models, small tasks.** These models have {fewest} to {most} blocks and small tasks (the share of inputs
  whose answer is already final after the stem is under *What the simulations show*); the papers read language
  models with 32 to 80 layers.
""")

text.section("Try this")
page.try_this()

text.section("Going further")
st.markdown("""
- **Delete layers** and **Rearrange layers** change the route and measure the output; with the same change here
  you can see at which slot the answer is lost.
- Does a model trained with **LayerDrop** or **LayerShuffle** commit at a different depth than one trained in order?
  The presets compare them.
- Fit the tuned lens by gradient descent on the KL instead of least squares, as Belrose et al. do: does it read
  earlier layers better?
""")

text.section("Papers")
text.papers([
    ("nostalgebraist. interpreting GPT: the logit lens (2020)",
     "https://www.lesswrong.com/posts/AcKRB8wDpdaN6v6ru/interpreting-gpt-the-logit-lens"),
    ("Belrose et al. Eliciting Latent Predictions from Transformers with the Tuned Lens (2023)",
     "https://arxiv.org/abs/2303.08112"),
    ("Lad, Gurnee, Tegmark. The Remarkable Robustness of LLMs: Stages of Inference? (2024)",
     "https://arxiv.org/abs/2406.19384"),
    ("Men et al. ShortGPT: Layers in Large Language Models are More Redundant Than You Expect (2024)",
     "https://arxiv.org/abs/2403.03853"),
    ("Gromov et al. The Unreasonable Ineffectiveness of the Deeper Layers (2024)", "https://arxiv.org/abs/2403.17887"),
])
