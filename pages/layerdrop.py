"""LayerDrop: widgets -> LayerDropConfig / CompareConfig -> lab.experiments.layerdrop -> figures and text."""


import streamlit as st

from app import charts, claims_view, classroom, controls, query, study_view, task_control, text
from app import figures_layerdrop as figs
from app.text import pts_between
from lab import claims as lab_claims
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import pct
from lab.core import routes
from lab.experiments.layerdrop import claims as layerdrop_claims
from lab.experiments.layerdrop import descriptor as described
from lab.experiments.layerdrop import experiment as layerdrop
from lab.ops import selection

MODEL_NAMES = {"residual": "residual MLP", "vit": "ViT"}
P_OPTIONS = tuple(round(0.05 * i, 2) for i in range(int(layerdrop.P_MAX / 0.05 + 1e-9) + 1))  # 0, 0.05 .. 0.7


def p_control() -> float:
    """The training rate: a slider over 0..0.7 in steps of 0.05, bound to the URL (`p=`)."""
    return float(controls.param(layerdrop.LayerDropConfig, "p", "select_slider", options=P_OPTIONS))


def nearest_option(p: float) -> float:
    return min(P_OPTIONS, key=lambda o: abs(o - p))


st.title(":material/layers_clear: LayerDrop")
st.caption("Train with whole blocks randomly switched off, then cut the model to any depth you like, "
           "with no fine-tuning at all.")

page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    model = controls.param(layerdrop.LayerDropConfig, "model")
    own_task = layerdrop.model_spec(model, 0.0, 0).task
    task = task_control.task_select(layerdrop.LayerDropConfig, "vit" if model == "vit" else "mlp", own_task)
    n = layerdrop.n_blocks(model)
    p = p_control()
    keep = controls.param(layerdrop.LayerDropConfig, "keep", "slider", hi=n)
    strategy = controls.param(layerdrop.LayerDropConfig, "strategy")
    recovery = controls.param(layerdrop.LayerDropConfig, "recovery")
    seed = controls.param(layerdrop.LayerDropConfig, "seed", "number", hi=PAGE_SEED_MAX)
page.toolbar()

view = page.view()  # the descriptor's plan of this setting: every lab call below is one of its calls
p_star = layerdrop_claims.p_star(keep, n)
tf = task_control.facts(task or own_task)
task_words = tf.label if tf else (task or own_task)
model_words = f"{MODEL_NAMES[model]} ({n} blocks) on {task_words}"


def metrics_of(r: layerdrop.LayerDropResult, s: dict) -> list[classroom.Metric]:
    """The number cards of one run (this one or the pinned one)."""
    nb = layerdrop.n_blocks(s["model"])
    third = (classroom.Metric("After distillation", pct(r.recovered_acc),
                              **classroom.delta(r.recovered_acc, r.base_acc, " vs full"),
                              help="500 KD steps on the pruned route, from the full model's outputs.")
             if r.recovered_acc is not None else
             classroom.Metric("Rule of thumb p*", f"{layerdrop_claims.p_star(s['keep'], nb):.2f}",
                              help="p* = 1 - r/N: the rate at which training runs r blocks on average."))
    return [classroom.Metric(f"Full model (p = {s['p']:g})", pct(r.base_acc),
                             help="All blocks running, on held-out data."),
            classroom.Metric(f"Pruned to {s['keep']} of {nb}", pct(r.cut_acc),
                             **classroom.delta(r.cut_acc, r.base_acc),
                             help=f"{selection.LABELS[s['strategy']]}; kept blocks {r.kept}. On the probe set: "
                                  f"{pct(r.cut_probe_acc)}."),
            third,
            classroom.Metric("Chance", pct(r.chance), help="Always guessing the most common held-out class.")]


def main_figure(run: tuple, title: str | None, height: int):
    """Accuracy against blocks kept, one line per training rate, under the run's strategy."""
    s, profiles_, r_ = run
    return figs.versus_p(profiles_, s["strategy"], s["p"], s["keep"], title, height, r_)


def profiles_of(got: dict, s: dict) -> list | None:
    """The comparison's models of a setting, ascending p (what `layerdrop.compare` lists), or None while one is
    missing."""
    out = [got.get(k) for k in described.profile_keys(s)]
    return None if any(x is None for x in out) else out


with page.results():
    got = view.run_all()  # the models at every rate and the baselines train side by side; this run reads them
    r = got["run"]
    if r is None:
        st.stop()
    pin, pinned = page.pinned(), page.pinned_view()
    pgot = pinned.run_all() if pinned else {}
    pr = pgot.get("run")
    profiles = profiles_of(got, page.settings())
    pprofiles = profiles_of(pgot, pin) if pr else None
    page.about(r)  # the workshop question reads this run's claims
    if profiles is not None:
        page.show(metrics_of(r, page.settings()), metrics_of(pr, pin) if pr and pprofiles else None, main_figure,
                  (page.settings(), profiles, r), (pin, pprofiles, pr) if pprofiles else None, key="versus_p")
        if r.scratch_acc is not None:
            st.caption(f"At r = {keep}: the diamond is a model of {keep} blocks trained from scratch with the same "
                       f"recipe and epochs, the square the p = 0 model's every other blocks distilled into {keep} "
                       "blocks. Compare them with the lines' points at r.")
        page.reproduce(figs.versus_p_of_run)

if abs(p - p_star) < 0.025:
    advice = f"You trained at **p = {p:g}**, the rule's choice for keeping {keep} of {n} blocks."
elif p_star > layerdrop.P_MAX:
    advice = (f"To keep {keep} of {n} blocks the rule says **p\\* = {p_star:.2f}**, beyond this lab's limit of "
              f"{layerdrop.P_MAX}; the closest you can train is {layerdrop.P_MAX}.")
else:
    advice = (f"To keep {keep} of {n} blocks the rule of thumb says train with **p\\* = 1 − r/N = {p_star:.2f}**; "
              f"you trained at p = {p:g}, which is the rule's choice for r ≈ {n * (1 - p):.1f}.")
st.markdown(f"**Kept blocks:** {r.kept} · **dropped:** {r.dropped or 'none'}"
            + (f" (the first of the {r.draws} subsets averaged)" if r.draws > 1 else "") + f"  \n{advice}")
target = nearest_option(min(p_star, layerdrop.P_MAX))
if abs(target - p) > 1e-9:
    controls.preset(f"Test the rule: train with p = {target:g}", {"p": target},
                    help="Sets the training rate to the rule's p* for this depth (trains one model if it is new).",
                    key="try_pstar")

if profiles is not None:
    mine = next(q for q in profiles if abs(q.config.p - p) < 1e-9)
    left, right = st.columns(2)
    charts.show(figs.strategies(mine, keep), "fig_strategies", left)
    charts.show(figs.p_star(profiles, p, keep, strategy), "fig_pstar", right)
    spread = max(rows[keep]["test_acc"] for rows in mine.strategies.values()) - min(
        rows[keep]["test_acc"] for rows in mine.strategies.values())
    if spread < 0.01:
        left.caption(f"At r = {keep} all six strategies are within {100 * spread:.1f} points of each other: their "
                     "lines overlap there (each is shifted a little sideways and has its own marker).")
    st.caption("Right: the black line is the rule p* = 1 − r/N; horizontal lines are the rates trained here; "
               "a star marks the trained rate that kept the most accuracy at that depth.")
if r.recovered_acc is not None:
    charts.show(figs.recovery_curve(r), "fig_recovery")

st.download_button("Download this run's numbers (JSON)", text.as_json({"run": r, "profiles": profiles}),
                   file_name=f"layerlab-layerdrop-{model}-{(task or 'own').replace(':', '-')[:24]}-p{p:g}-r{keep}-"
                             f"{strategy}-{recovery}-seed{seed}.json",
                   mime="application/json", help="Every number on this page, for your own analysis.")

text.section("The idea")
st.markdown(f"""
A deep network is trained with all its layers, so removing some later feeds the rest something they never saw.
**LayerDrop** (Fan, Grave and Joulin, 2019) removes the surprise: during training, every block is switched off at
random with probability **p** at every step, so the network learns to work with many sub-networks of itself. Then,
at inference, you can prune it to whatever depth your budget allows, **with no fine-tuning**. Because N(1 − p)
blocks run on average during training, the paper's rule of thumb to keep r of N blocks is **p\\* = 1 − r/N**
(here N = {n}).
""")

text.section("How it works")
st.markdown(f"""
1. Train the model, a {model_words}, with rate p: at each step draw one coin per block, shared by the whole
   batch; a block whose coin says *drop* is skipped, its residual stream passes unchanged, and nothing is rescaled.
   p = 0 is the ordinary model (the same weights, exactly).
2. Prune to r blocks by one of six strategies. **Every other**: drop the blocks at depth d (counted from 1) with
   d ≡ 0 (mod ⌊1/p_prune⌋), p_prune = 1 − r/N; when no whole stride gives exactly N − r blocks, the depths are cut
   into N − r equal windows and the last depth of each is dropped (the same rule when the stride is whole; the
   first block always stays). **Greedy**: delete, one at a time, the block whose removal hurts the probe accuracy least.
   **Influence**: drop the blocks that turn their input least, 1 − cos(input, output). **First / last**: remove a
   contiguous run at the start or the end. **Random**: the mean over every subset of the blocks dropped when
   there are at most {layerdrop.EXACT_SUBSETS} (exact), else over {layerdrop.RANDOM_DRAWS} distinct subsets drawn
   at random (their spread joins the error of any claim that uses them).
3. Measure held-out accuracy of the pruned route. The models for p = {', '.join(f'{q:g}' for q in layerdrop.P_GRID)}
   are always trained as references, plus yours; each is trained once and then stored.
4. The paper's two baselines at your r: a model of r blocks **trained from scratch** with the same recipe and
   epochs, and the ordinary (p = 0) model **distilled into r blocks** (its every other blocks, trained by KD on
   the full model's outputs for as many inputs as training saw; the paper used DistilBERT).
5. Optionally distil the pruned model from the full one, to see what fine-tuning adds.
""")
if tf:
    st.caption(query.plain(f"{tf.label}: {tf.about} Source: {tf.source}."))

text.section("The code")
text.show_code([routes.layerdrop_route, selection.every_other_by_rate, selection.every_other, layerdrop_claims.p_star,
                selection.to_drop,
                layerdrop.scratch, layerdrop.distil, layerdrop_claims.claims],
               "The functions that produced these numbers, read from the running source:")
from lab.core.train import train  # noqa: E402 - shown, not used

text.show_code([train])

text.section("What the simulations show")
lines = [f"Trained at p = {p:g}, the full {model_words} scores **{pct(r.base_acc)}** on {r.n_test:,} held-out "
         f"inputs (chance {pct(r.chance)}); pruned to {keep} blocks by {selection.LABELS[strategy]} it keeps "
         f"**{pct(r.cut_acc)}**."]
if r.scratch_acc is not None:
    lines.append(f"At r = {keep}: depth {keep} from scratch **{pct(r.scratch_acc)}**, distilled from the p = 0 "
                 f"model **{pct(r.distilled_acc)}**, against {pct(r.cut_acc)} for your model pruned by "
                 f"{selection.LABELS[strategy]}.")
if r.recovered_acc is not None:
    lines.append(f"Distillation for 500 steps brings the pruned model to **{pct(r.recovered_acc)}** "
                 f"({pts_between(r.recovered_acc, r.cut_acc)} on top of pruning alone).")
if profiles is not None:
    by_p = {q.config.p: q for q in profiles}
    zero = by_p[0.0].strategies[strategy][keep]["test_acc"]
    lines.append(f"At r = {keep}, under {strategy}: " + ", ".join(
        f"p = {q:g} → {pct(by_p[q].strategies[strategy][keep]['test_acc'])}" for q in sorted(by_p))
        + f". Against the ordinary model (p = 0) your p changes the pruned accuracy by "
          f"{pts_between(by_p[p].strategies[strategy][keep]['test_acc'], zero)}.")
    st_here = {s: mine.strategies[s][keep]["test_acc"] for s in layerdrop.STRATEGIES}
    best, worst = max(st_here, key=st_here.get), min(st_here, key=st_here.get)
    lines.append(f"At p = {p:g} and r = {keep}, the highest measured accuracy is **{best}**'s "
                 f"({pct(st_here[best])}), the lowest **{worst}**'s ({pct(st_here[worst])}); every other "
                 f"{pct(st_here['every-other'])} against greedy {pct(st_here['greedy'])} (a ranking, not a verdict: "
                 "the claims below say which differences are beyond the noise).")
    lines.append(f"Training took {by_p[p].train_seconds:.0f} s for your model and pruning every strategy at "
                 f"every depth {by_p[p].eval_seconds:.1f} s (when each was first computed).")
st.markdown("\n".join(f"- {x}" for x in lines))

text.section("Against the paper")
claims_view.show(layerdrop_claims.run_claims(r),
                 "Each statement is the paper's (or, where named, a related paper's); the verdict is this "
                 f"run's, seed {seed}, with its numbers and its rule. Accuracies on the same {r.n_test:,} held-out "
                 "inputs are compared input by input (paired: only the inputs on which two models disagree add "
                 f"noise), and a difference within {lab_claims.Z:g} standard "
                 "errors decides neither way.", page=page)
mlp_entry, vit_entry = layerdrop.ENTRIES["residual"], layerdrop.ENTRIES["vit"]  # the shapes the text names
st.markdown(f"""
**Where this lab departs from the paper.** Fan et al. trained 16-layer Transformers on language tasks (and RoBERTa
for their pruning comparisons) and report perplexity or accuracy averaged over their runs; here the
{mlp_entry.title} or the {vit_entry.title} is trained once per rate and seed, on small tasks, and only the rates 0,
0.2, 0.5 and yours compete for the p* rule. Pruning is never followed by fine-tuning unless you choose distillation.
The contiguous-cut comparison uses the model trained at p = 0.5; *one block removed* is the mean over every block
removed alone (exact), and block 0 is compared with the mean over the other blocks removed alone (block 0 not among
them).
""")

text.section("When it breaks")
st.markdown("""
- **Too little dropping.** A model trained at small p has rarely seen deep cuts; the rule says p ≈ 0.5 for half
  depth and 0.75 for a quarter, and this lab stops at 0.7.
- **Too much dropping.** A large p is a strong regulariser: the full model may lose accuracy, and very shallow
  training routes learn slowly.
- **Contiguous cuts.** Removing a whole run of first or last blocks changes what the head or the next block sees
  far more than spreading the cuts, the paper reports (perplexity 19.7 against 26-29). Switch the model to the ViT
  and the strategy to *first*, and compare the first point of each line.
- **Searches overfit.** Greedy picks its blocks on a probe set; its held-out accuracy can be lower than the rule's.
- **Small tasks.** Cuts near the full depth can cost little for every rate and strategy here: compare the lines
  at deep cuts (small r) too, not only at the first ones.
""")

text.section("Try this")
page.try_this()

text.section("Going further")
st.markdown("""
- **LayerDrop only at fine-tuning** does not make a model robust to pruning, the paper reports: the dropping has to
  be part of the training that shapes the blocks.
- **Stochastic depth** (Huang et al. 2016) drops residual blocks with a rate that grows with depth, to train faster;
  LayerDrop keeps one rate and uses it for pruning.
- The **Delete layers** page prunes an ordinary model and recovers by distillation: how far does distillation close
  the gap that LayerDrop closes for free?
""")

study_view.show(page.name, lecturer=page.workshop.lecturer, in_class=page.workshop.code is not None,
                workshop=page.workshop)

text.section("Papers")
text.papers([
    ("Fan, Grave, Joulin. Reducing Transformer Depth on Demand with Structured Dropout (ICLR 2020)",
     "https://arxiv.org/abs/1909.11556"),
    ("Huang et al. Deep Networks with Stochastic Depth (2016)", "https://arxiv.org/abs/1603.09382"),
    ("Veit, Wilber, Belongie. Residual Networks Behave Like Ensembles of Relatively Shallow Networks (2016)",
     "https://arxiv.org/abs/1605.06431"),
    ("Men et al. ShortGPT: Layers in Large Language Models are More Redundant Than You Expect (2024)",
     "https://arxiv.org/abs/2403.03853"),
])
