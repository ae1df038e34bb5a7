"""Choose an order per input (IOT): widgets -> IOTConfig -> lab.experiments.iot (three stored pieces) -> figures."""


import streamlit as st

from app import charts, claims_view, classroom, controls, study_view, task_control, text
from app import figures_iot as figs
from lab.catalog.descriptor import PAGE_SEED_MAX
from lab.claims import of, pct
from lab.core import model_registry
from lab.experiments.iot import claims as iot_claims
from lab.experiments.iot import descriptor as described
from lab.experiments.iot import experiment as iot
from lab.experiments.iot import routing

C = iot.IOTConfig
WEIGHTS_EXPLORE = (0.0, 0.1, 0.3, 1.0, 3.0)
WEIGHTS_EXPLOIT = (0.0, 0.1, 0.3, 1.0, 3.0)
PENDING = "…"  # a metric still computing (tests/apptest_util.py: settle waits for it to go)

st.title(":material/alt_route: Choose an order per input")
st.caption("Instance-wise layer reordering (IOT): one set of weights, several layer orders, and a tiny predictor "
           "that picks the order for each input.")

page = classroom.Page.of(described.DESCRIPTOR)
with page.controls():
    model = controls.param(C, "model")
    task = task_control.task_select(C, model_registry.model(model).family, model_registry.model(model).task)
    space = controls.param(C, "space")
    m = controls.param(C, "m", "slider", lo=2)
    explore = controls.param(C, "explore", options=WEIGHTS_EXPLORE)
    exploit = controls.param(C, "exploit", options=WEIGHTS_EXPLOIT)
    gumbel = controls.param(C, "gumbel", options=(True, False))
    seed = controls.param(C, "seed", "number", hi=PAGE_SEED_MAX)
page.toolbar()

view = page.view()  # the descriptor's plan of this setting: every lab call below is one of its calls
cfg = view.cfg("training")


def _value(x: float | None) -> str:
    return PENDING if x is None else pct(x)


def metrics_of(tr: iot.IOTTraining | None, obs: iot.IOTObservation | None, s: dict) -> list[classroom.Metric]:
    """The number cards of one setting (this one or the pinned one); a piece still computing shows "…"."""
    iot_delta = {}
    if tr is not None:
        iot_delta = classroom.delta(tr.iot_acc, max(tr.sequential_acc, obs.best_fixed_acc if obs else 0.0),
                                    " vs best")
    return [classroom.Metric("Sequential model", _value(tr and tr.sequential_acc),
                             help="Trained as usual, run in its trained order (the stored model the Delete / Shuffle "
                                  "pages use). All accuracies are on held-out data."),
            classroom.Metric("Best fixed order", _value(obs and obs.best_fixed_acc),
                             help="One model trained alone in each candidate order; the one with the best probe "
                                  "accuracy (a split apart from the test set)."),
            classroom.Metric(f"Ensemble, M = {s['m']}", _value(tr and tr.ensemble_acc),
                             help=f"IOT's weights run in all {s['m']} orders, logits averaged: {s['m']}x the compute "
                                  "at inference."),
            classroom.Metric("IOT", _value(tr and tr.iot_acc), **iot_delta,
                             help="Each input runs once, in the order the predictor chooses for it. The change is "
                                  "against the better of the sequential model and the best fixed order."),
            classroom.Metric("Oracle", _value(tr and tr.oracle_acc),
                             help="IOT's weights, counted right when any of the orders is right: the upper bound of "
                                  "any predictor over these orders.")]


def main_figure(run: tuple, title: str | None, height: int):
    """Every candidate order and every method of one setting; None (a sentence instead) until IOT has trained."""
    tr_, obs_ = run
    # Alone it keeps its title (the page's message); side by side with a pinned run, the headings name the runs.
    title = title or (figs.TITLE_ACCURACY if page.pinned() is None else None)
    return None if tr_ is None else figs.accuracy(tr_, obs_, title, height)


with page.results():
    tr, obs, twin = view.get("training"), view.get("observe"), view.get("twin")
    on, off = (tr, twin) if cfg.explore > 0 else (twin, tr)
    pin, pinned = page.pinned(), page.pinned_view(beside=view)
    ptr = pinned.get("training") if pinned else None
    pobs = pinned.get("observe") if pinned else None
    view.show()
    if tr is not None and obs is not None:  # the workshop question reads the joined run's claims
        page.about(iot.join(cfg, obs, tr, twin))
    page.show(metrics_of(tr, obs, page.settings()), metrics_of(ptr, pobs, pin) if pinned else None, main_figure,
              (tr, obs), (ptr, pobs) if pinned else None, key="accuracy")
    page.reproduce(figs.accuracy_of_run)

if tr is not None:
    left, right = st.columns(2)
    charts.show(figs.class_choices(tr), "fig_classes", left)
    charts.show(figs.confusion(tr), "fig_confusion", right)
    st.markdown("**Candidate orders:** " + " · ".join(f"order {j}: `{o}`" for j, o in enumerate(tr.orders))
                + ("  \nThe paper's space: one sub-layer order for every block, which a block of two sub-layers "
                   "(attention, MLP) reduces to these 2 orders." if space == "shared" else "")
                + ("  \n(A = attention first, M = MLP first, one letter per block)" if space != "blocks" else ""))
if on is not None and off is not None:
    charts.show(figs.collapse(on, off), "fig_collapse")
else:
    st.caption("The collapse figure (exploration on against off) appears when both trainings have finished.")

# Accuracy against M: opt-in (it trains IOT at each M of the sweep, and each order alone once per seed).
sw_ms = described.sweep_ms(space)
sweep_result = None
if st.toggle(f"Accuracy against M (trains M = {', '.join(map(str, sw_ms))} for this setting)", key="sweep",
             help="IOT and its baselines at several numbers of candidate orders; each stored once trained."):
    sw_runs = []
    for m_ in sw_ms:  # the plan's optional calls: each M's orders trained alone and its IOT training
        o, t_ = view.run(f"sweep {m_} observe"), view.run(f"sweep {m_} training")
        if o is None or t_ is None:
            st.stop()
        sw_runs.append(iot.join(view.cfg(f"sweep {m_} training"), o, t_))
    sweep_result = iot.sweep_of(cfg, sw_runs)
    charts.show(figs.sweep(sweep_result), "fig_sweep")
    st.caption("M = 1 is the sequential model itself (IOT training with one order is the ordinary loop). Look at how "
               "far the oracle line pulls away from the best single order as M grows, and how much of that the IOT "
               "line follows; and whether the oracle over the orders trained alone rises faster than the oracle "
               "over as many seeds of the trained order (the seed control).")

if tr is not None:
    st.download_button("Download this run's numbers (JSON)",
                       text.as_json({"iot": tr, "observation": obs, "twin": twin}),
                       file_name=f"layerlab-iot-{model}-{space}-m{m}-e{explore:g}-x{exploit:g}-g{int(gumbel)}-"
                                 f"seed{seed}.json",
                       mime="application/json", help="Every number on this page, for your own analysis.")

text.section("The idea")
st.markdown("""
Zhu et al. (2021) trained the same translation network with its sub-layers in each of six orders: the orders scored
about the same on average, yet **single inputs preferred different orders** (each order was the best one for
14-18 % of sentences). Is that so for the small models here? "Against the paper" below checks it on this run.
**IOT** (instance-wise layer reordering) keeps one set of weights, M candidate orders,
and a predictor so light it adds under 1 % of the parameters, which picks for each input the order to run. At
inference each input still runs once: the extra cost is paid in training.
""")

text.section("How it works")
st.markdown("""
1. **Candidates.** Order 0 is the trained order; M − 1 others are drawn by the seed: permutations of the blocks;
   or (ViT) the paper's space, one sub-layer order shared by every block (all attention first, or all MLP first:
   only 2 orders with two sub-layers); or (ViT, the lab's extension) the blocks in order with each one running
   attention first (A) or its MLP first (M) on its own, same weights.
2. **Part 1, the observation.** Train one model alone in each candidate order (order 0 is the sequential model),
   then count, per held-out input, which order has the lowest loss, and how often *any* order is right (oracle).
   The seed control does the same with M sequential models trained from M seeds; order j is trained at the seed of
   the control's model j, so the two sets differ only by the order.
3. **Part 2, IOT training.** Per batch the stem runs once; every candidate order runs from its output. A linear
   predictor on the (detached) stem output gives choice probabilities p(x). The loss is
   Σₘ wₘ(x)·CEₘ(x) + **explore**·KL(uniform ‖ batch-mean p) + **exploit**·mean entropy of p(x), with
   w = Gumbel-softmax(log p) (plain softmax with Gumbel off). A weight of 0 switches its term off.
4. **Inference**: run each input in its argmax order. Compare with the same weights in their best single order
   (chosen on the probe split), with the ensemble of all M orders and with the oracle.
5. Everything is stored: the sequential model is shared with other pages, each order trained alone is kept once
   per seed (raising M trains only the new ones), and each IOT training is kept per setting.
""")

text.section("The code")
text.show_code([routing.train_iot, routing.iot_predict, routing.observe, routing.Predictor, routing.pooled,
                routing.block_orders, routing.shared_sublayer_orders, routing.sublayer_orders],
               "The functions that produced these numbers, read from the running source:")
text.show_code([iot.training, iot.observe])

text.section("What the simulations show")
lines = []
if tr is not None:
    lines.append(f"The sequential model ({model_registry.model(model).label}) scores **{pct(tr.sequential_acc)}** "
                 f"(chance {pct(tr.chance)}). IOT's shared weights score {', '.join(pct(a) for a in tr.order_acc)} in "
                 f"the {m} orders; the best on the probe split gives **{pct(tr.shared_best_acc)}**, the ensemble "
                 f"**{pct(tr.ensemble_acc)}**, IOT's predicted order **{pct(tr.iot_acc)}**, the oracle "
                 f"**{pct(tr.oracle_acc)}**.")
    lines.append(f"The predictor sends {', '.join(f'{s:.0%}' for s in tr.choice_share)} of the inputs to orders "
                 f"0-{m - 1}, and its choice is the input's lowest-loss order for **{tr.oracle_agreement:.0%}** "
                 f"of them; always choosing the most common lowest-loss order would give {max(tr.best_share):.0%}"
                 f" (1/M = {1 / m:.0%}). It has {tr.predictor_params} parameters ({tr.predictor_share:.2%} "
                 f"of the model).")
    cost = tr.cost
    lines.append(f"Training cost: {cost['train_block_run_ratio']:.0f}x the block runs of sequential training "
                 f"({cost['iot_train_seconds']:.0f} s, against {cost['sequential_train_seconds']:.0f} s for the "
                 f"sequential model when each was trained); inference runs 1 order per input "
                 f"({cost['infer_time_ratio']:.1f}x the sequential time measured here), the ensemble {m}.")
    if obs is not None:
        n_test = obs.n_test
        lines.append(f"Orders trained alone: {', '.join(pct(a) for a in obs.fixed_acc)}; each is the lowest-loss "
                     f"order for {', '.join(f'{s:.0%}' for s in obs.fixed_best_share)} of the inputs, and their "
                     f"oracle reaches {pct(obs.fixed_oracle_acc)}. The sequential model, forced into the other "
                     "orders without training for them, scores "
                     + ", ".join(pct(a) for a in obs.sequential_order_acc) + ".")
        sc = obs.seed_control
        lines.append(f"Seed control: {len(sc.seeds)} models of the trained order that differ only in their seed "
                     f"score {', '.join(pct(a) for a in sc.acc)}; their oracle reaches {pct(sc.oracle_acc)}, "
                     f"{100 * (sc.oracle_acc - sc.best_acc):.1f} points above the best of them (the orders': "
                     f"{100 * (obs.fixed_oracle_acc - obs.best_fixed_acc):.1f}). Training noise alone opens "
                     "this much of a gap.")
        lines.append(f"Noise: every accuracy here is on the same {n_test:,} held-out inputs, so one input is "
                     f"{100 / n_test:.2f} points; the verdicts below compare accuracies input by input (paired), "
                     "each with its own standard error.")
if on is not None and off is not None:
    lines.append(f"With the exploration term off, the most chosen order ends with "
                 f"{off.curves['top_share'][-1]:.0%} of the inputs (with it on: "
                 f"{on.curves['top_share'][-1]:.0%}); IOT then scores {pct(off.iot_acc)}.")
st.markdown("\n".join(f"- {x}" for x in lines) if lines else "The numbers appear here as the trainings finish.")

text.section("Against the paper")
if tr is None or obs is None or twin is None:
    claims_view.pending()
else:
    claims_view.show(of(iot.join(cfg, obs, tr, twin)), "Each statement of the paper, checked against this "
                     "run's numbers with its rule and the noise of the held-out inputs (paired input by input):",
                     page=page)
sweep_claims = iot_claims.sweep_claims(cfg.space, sw_runs) if sweep_result is not None else []
if sweep_claims:
    claims_view.show(sweep_claims, f"Over the sweep of M ({', '.join(map(str, sw_ms))}):")

text.section("When it breaks")
st.markdown("""
- **No exploration.** With the exploration weight at 0 nothing stops the predictor's first preference from training
  its order most, which then has the lowest loss, which makes it preferred. Does the choice collapse, and after how
  many epochs? The collapse figure shows the share of the most chosen order per epoch.
- **Too much exploitation** without exploration pushes the same way: sharp choices are cheap to make.
- **A model that fits its training set.** The predictor learns from the gaps between the orders' losses on
  training inputs. The digits ViT gets almost every training image right: how far from uniform does its choice
  get? Compare the choice shares with the ViT and with the MLP.
- **Small test sets.** The ViT is scored on 397 digits (one image is 0.25 points), the MLP on 4,000 inputs; the
  verdicts above use each run's own standard errors, so the same difference can be clear for the MLP and inside
  the noise for the ViT.
- **Block orders are partly a seed effect.** Training a permuted order from scratch is also a re-draw of which block
  gets which initial weights, so part of the oracle gap would be there for any two seeds. That is why "inputs
  prefer different orders" is judged against the seed control: the same oracle over M models of the trained order
  that differ only in their seed (their initial weights and the order of the training batches), trained at the
  orders' own seeds. An order whose training is only noisier also opens a larger oracle gap, so the comparison
  charges the orders half of each input they lose against the control: noise costs more inputs than it adds.
- **The paper's sub-layer space is small here.** The paper shares one sub-layer order across all blocks; a
  decoder's three sub-layers give 6 orders, a ViT block's two give only 2 (M = 2). The per-block space (2^D orders)
  is the lab's extension, not the paper's.
""")

text.section("Try this")
page.try_this()

text.section("Going further")
st.markdown("""
- **A harder task**, where the model does not fit every training input, gives the predictor a signal to learn
  from; so does choosing with a held-out split instead of training losses.
- **Richer predictors** (an MLP, or a choice after a few blocks) can only approach the oracle; the oracle gap here
  says how much room there is.
- The **Shuffle layers** page trains with a random order per *step* (LayerShuffle); IOT trains all orders at every
  step and learns which to use.
- **Mixture of experts** routes each token to a few of many blocks; IOT routes each input to one of a few orders
  of the same blocks.
""")

study_view.show(page.name, lecturer=page.workshop.lecturer, in_class=page.workshop.code is not None,
                workshop=page.workshop)

text.section("Papers")
text.papers([
    ("Zhu, Wu, Xia, Qin, Li, Liu. IOT: Instance-wise Layer Reordering for Transformer Structures (ICLR 2021)",
     "https://arxiv.org/abs/2103.03457"),
    ("Jang, Gu, Poole. Categorical Reparameterization with Gumbel-Softmax (ICLR 2017)",
     "https://arxiv.org/abs/1611.01144"),
    ("Shazeer et al. Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts Layer (2017)",
     "https://arxiv.org/abs/1701.06538"),
    ("Veit, Wilber, Belongie. Residual Networks Behave Like Ensembles of Relatively Shallow Networks (2016)",
     "https://arxiv.org/abs/1605.06431"),
])
