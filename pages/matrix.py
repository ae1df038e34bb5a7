"""Train x take apart: widgets -> MatrixConfig -> one job per recipe row, then the matrix's claims -> figures."""

import math

import streamlit as st

from app import charts, claims_view, classroom, controls, jobs, task_control, text
from app import figures_matrix as figs
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import pct
from lab.core import model_registry, page_words, routes
from lab.experiments.matrix import claims as matrix_claims
from lab.experiments.matrix import descriptor as described
from lab.experiments.matrix import experiment as matrix
from lab.experiments.matrix import surgery

Config = matrix.MatrixConfig

st.title(":material/grid_on: Train x take apart")
st.caption("The same small ViT trained six ways, then taken apart nine ways without retraining. Does how a network "
           "was trained decide what you can remove from it?")

page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    model = controls.param(Config, "model")
    family = "vit" if model == "vit" else "mlp"
    own = matrix.own_task_of(model)
    task = task_control.task_select(Config, family, own)
    op = controls.param(described.MatrixPage, "op")
    orders = controls.param(Config, "orders", "slider", hi=60)
    seed = controls.param(Config, "seed", "number", hi=PAGE_SEED_MAX)
page.toolbar()

view = page.view()  # the descriptor's plan of this setting: every lab call below is one of its calls
cfg = view.cfg("matrix")
n_rows = len(cfg.rows())
base = model_registry.model(page_words.matrix_name("sequential", model))  # the shapes the text names
loop = model_registry.model(page_words.matrix_name("looped", model))
what = base.kind
runs_twice = "twice" if loop.loops == 2 else f"{loop.loops} times"


def rows_of(v: jobs.View) -> dict[str, matrix.RowResult]:
    """The rows computed so far (one job per recipe; a row still training is absent)."""
    out = {}
    for key in (k for k in v.calls if k.startswith("row ")):
        got = v.get(key)
        if got is not None:
            out[v.cfg(key).recipe] = got
    return out


def metrics_of(rows: dict, s: dict) -> list[classroom.Metric]:
    """The number cards of one setting: the rows present."""
    if not rows:
        return [classroom.Metric("Rows computed", f"0 of {n_rows}", help="Every row trains one model (see the bars).")]
    out = [classroom.Metric("Rows computed", f"{len(rows)} of {n_rows}",
                            help="One job per recipe; each row is drawn as soon as it exists.")]
    # a recipe at chance has no above-chance accuracy to keep: its share is undefined (NaN), never the best
    shared = [r for r in rows if math.isfinite(rows[r].kept["delete"])]
    if shared:
        best = max(shared, key=lambda r: rows[r].kept["delete"])
        out.append(classroom.Metric("Loses least to one deletion", rows[best].label,
                                    f"keeps {pct(rows[best].kept['delete'])}", delta_color="off",
                                    help="Share of the above-chance accuracy kept, mean over the single-block "
                                         "deletions."))
    else:
        out.append(classroom.Metric("Loses least to one deletion", "none",
                                    help="No recipe is above chance here, so none has accuracy to keep."))
    if "sequential" in rows:
        r = rows["sequential"]
        out.append(classroom.Metric(f"Sequential {what} (held-out)", pct(r.base_acc),
                                    help="The model trained in order (the Shuffle page's ViT, or the LayerDrop page's "
                                         "residual MLP at p = 0)."))
    out.append(classroom.Metric("Chance", pct(next(iter(rows.values())).chance),
                                help="Always guessing the most common held-out class."))
    return out


def main_figure(rows: dict, title: str | None, height: int):
    return figs.heatmap(rows, "" if title is None else title, height=height)


with page.results():
    rows = rows_of(view)
    complete = len(rows) == n_rows
    full = view.get("matrix") if complete else None  # joined once every row is in
    page.about(full)
    pin, pinned = page.pinned(), page.pinned_view(beside=view)
    prows = rows_of(pinned) if pinned else None
    page.show(metrics_of(rows, page.settings()), metrics_of(prows, pin) if prows is not None else None,
              main_figure, rows, prows, key="matrix")
    page.reproduce(figs.of_run)
    st.caption("Each cell: held-out accuracy after the operation as a share of what the intact model has above "
               "chance, (acc - chance) / (base - chance); 100 % = nothing lost, 0 % = chance. The row label gives "
               "the intact model's accuracy. Hover for the accuracy itself.")
    view.show()

if rows:
    charts.show(figs.profile(rows, op, next(iter(rows.values())).chance), "fig_profile")
    st.caption(f"{matrix.OP_LABELS[op]}: {matrix.OP_HELP[op]}. Change the operation under *Profile of* in the "
               "sidebar.")
    charts.show(figs.linearity(rows), "fig_linearity")
    st.caption("R² of each block's least-squares affine map on the block's update (output minus input), every token "
               "of the training digits; the output itself is nearly always > 0.9 linear, because it carries its "
               "input along.")
    charts.show(figs.timings(rows), "fig_timings")
    st.download_button("Download these rows (JSON)", text.as_json(rows),
                       file_name=f"layerlab-matrix-seed{seed}.json", mime="application/json",
                       help="Every number on this page, per-input outcomes included.")

facts = task_control.facts(task or own)  # an uploaded CSV's facts are parsed off this thread, bounded in time
if facts is None:
    st.error("This page's task cannot be read any more (an uploaded file no longer stored?): choose another task.")
    st.stop()
data_words = base.data_words if task in (None, own) else facts.label
shape = base.spec(seed).model
model_words = (f"the Shuffle page's ViT ({base.blocks} pre-norm blocks, width {base.width}, "
               f"{(shape.image // shape.patch) ** 2} patches + CLS)" if model == "vit" else
               f"LayerDrop's {base.kind} ({base.blocks} blocks, width {base.width})")
text.section("The idea")
st.markdown(f"""
Papers that take trained networks apart usually study one recipe. Here the recipe is the variable: the same
tiny {what} is trained **in order**, with **LayerNorm scaling** (Sun et al. 2025: each block's LayerNorm output
times 1/√depth), with **LayerDrop** (Fan et al. 2019, p = 0.5), with **LayerShuffle** (Freiberger et al. 2024: a
new block order every step), **looped** (Saunshi et al. 2025: {loop.blocks} blocks run {runs_twice}, shared
weights) and with an **early-exit loss** (Elhoushi et al. 2024, LayerSkip: the head's loss after every block,
weighted up with depth). Each trained model is then taken apart the ways the recent papers do, and nothing is retrained.
""")

text.section("How it works")
st.markdown(f"""
- **The task**: {facts.label}, {facts.n_train:,} training, {facts.n_probe:,} probe and {facts.n_test:,} held-out
  images, {facts.n_classes} classes, chance {pct(facts.chance)}. Every cell is measured on the same held-out digits.
- **The model**: {model_words}, same optimiser and epochs for every recipe; the sequential and LayerShuffle rows
  are the very models of the other pages.
- **A block and a run**: the looped model has {loop.blocks} distinct blocks run {runs_twice} ({loop.runs} runs).
  *Deleting a block* removes every run of it; swap, random order, the last quarter and the influence order act on
  the {base.runs} runs; a sub-layer deletion or a linear replacement applies at every run of the block.
- **Healed**: after the last-quarter deletion, only the head and the last remaining block are fine-tuned
  (cross-entropy on the training digits, {matrix.FT_STEPS} steps of {matrix.FT_BATCH}, Adam); everything else is
  frozen.
- **The last quarter**: {base.runs} runs / 4 = {base.runs / 4:g}, rounded half up: the last
  **{surgery.quarter(base.runs)}** runs. The influence order deletes as many, those with the lowest block influence
  1 − cos(input, output) on the probe split.
- **Linear**: each block is replaced by the least-squares affine map from its input to its output (every token of
  every training digit, pooled over a looped block's runs).
- **Exit early**: the head read after each run; the column is the mean over the exits before the last.
- **Random order**: the mean of {orders} seeded orders of the runs.
- Each recipe's row is one job and one stored result (the model, trained once, and its {len(matrix.OPS)} columns);
  the claims join the {n_rows} rows of a seed.
""")

text.section("The code")
text.show_code([routes.without_slots, surgery.quarter, surgery.influence_slots, surgery.fit_linear,
                surgery.logits_on, matrix.measure, matrix.kept], "The functions that produced these numbers:")
text.show_code([matrix_claims.robust, matrix_claims.u_shape, matrix_claims.linear, matrix_claims.attention,
                matrix_claims.early_exit, matrix_claims.looped,
                matrix_claims.ln_scale, matrix_claims.influence])

text.section("What the simulations show")
if rows:
    lines = []
    for r in figs.ordered(rows):
        x = rows[r]
        lines.append(f"**{x.label}**: {pct(x.base_acc)} held-out; one block deleted keeps "
                     f"{pct(x.kept['delete'])} of its above-chance accuracy, the last quarter "
                     f"{pct(x.kept['last_quarter'])}, a random order {pct(x.kept['random'])}; trained in "
                     f"{x.train_seconds:.0f} s, taken apart in {x.fill_seconds:.1f} s.")
    st.markdown("\n".join(f"- {x}" for x in lines))
else:
    st.markdown("The rows appear here as they are computed.")

text.section("Against the paper")
if full is not None:
    claims_view.show(matrix_claims.result_claims(full),
                     intro=f"Checked on the {n_rows} rows at seed {seed}; each claim says where it comes "
                     f"from and how this lab departs from it (a {base.title} on {data_words}, not a language "
                     "model). " + matrix_claims.page_error_words(),
                     page=page)
else:
    st.markdown("The claims are judged once every row is in.")

text.section("When it breaks")
st.markdown(f"""
- **{facts.n_test:,} held-out inputs.** Differences of a point or two may be inside the noise: a claim then leaves
  the verdict open, and offers more seeds.
- **One block in {base.runs} is a big cut.** The papers delete a few layers of 32 to 80; here one block is
  1/{base.runs} of the depth, so every deletion is large.
- **The looped model has half the distinct weights.** A loss against the sequential model mixes the loop with the
  smaller parameter count; Saunshi et al. compare at equal effective depth too, as here.
- **Only one column is healed.** Every other column measures the cut, not what fine-tuning would recover; the
  *last quarter + fine-tune* column trains only the head and the last remaining block for a few steps (Lu et al.
  fine-tune longer, on language data). A looped model's last remaining block also runs earlier in its route, so
  fine-tuning it changes that run too.
- **A tiny task.** {facts.label}, {facts.n_classes} classes; what a language model keeps in its deep layers may not
  show here.
""")

text.section("Try this")
page.try_this()

text.section("Going further")
st.markdown("""
- **Delete layers**, **LayerDrop** and **Shuffle** each look at one recipe in depth; **Layer lens** reads the
  early exits of one model slot by slot.
- Which recipe would you train if you knew you had to delete two blocks afterwards? Check the heatmap's
  last-quarter and influence columns.
""")

text.section("Papers")
text.papers([
    ("Fan, Grave, Joulin. Reducing Transformer Depth on Demand with Structured Dropout (LayerDrop, 2019)",
     "https://arxiv.org/abs/1909.11556"),
    ("Freiberger et al. LayerShuffle: Enhancing Robustness in Vision Transformers by Randomizing Layer Execution "
     "Order (2024)", "https://arxiv.org/abs/2407.04513"),
    ("Sun et al. The Curse of Depth in Large Language Models (2025)", "https://arxiv.org/abs/2502.05795"),
    ("Saunshi et al. Reasoning with Latent Thoughts: On the Power of Looped Transformers (ICLR 2025)",
     "https://arxiv.org/abs/2502.17416"),
    ("Elhoushi et al. LayerSkip: Enabling Early Exit Inference and Self-Speculative Decoding (2024)",
     "https://arxiv.org/abs/2404.16710"),
    ("Men et al. ShortGPT: Layers in Large Language Models are More Redundant Than You Expect (2024)",
     "https://arxiv.org/abs/2403.03853"),
    ("Lu et al. Reassessing Layer Pruning in LLMs: New Insights and Methods (2024)", "https://arxiv.org/abs/2411.15558"),
    ("He et al. What Matters in Transformers? Not All Attention Is Needed (2024)", "https://arxiv.org/abs/2406.15786"),
    ("Razzhigaev et al. Your Transformer is Secretly Linear (2024)", "https://arxiv.org/abs/2405.12250"),
    ("Lad, Gurnee, Tegmark. The Remarkable Robustness of LLMs: Stages of Inference? (2024)",
     "https://arxiv.org/abs/2406.19384"),
])
