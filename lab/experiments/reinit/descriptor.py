"""Re-initialise a layer: the descriptor (page, presets, CLI, table) of lab/experiments/reinit/experiment.py."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Any, Optional

from lab import claims as C
from lab.catalog.descriptor import Axis, Descriptor, Table, TableRows, config_from, controls, defaults
from lab.catalog.presets import Need, preset
from lab.claims import Claim, claim_lines
from lab.core.task_fit import readable
from lab.experiment import Pool, add_arguments, check, param
from lab.experiments.reinit import claims as reinit_claims
from lab.experiments.reinit import experiment as reinit
from lab.experiments.reinit.experiment import (
    MODEL_NAMES,
    MODELS,
    WIDTH_MODELS,
    WIDTHS,
    FocusConfig,
    GroupConfig,
    GroupResult,
    ReinitConfig,
    ReinitResult,
)
from lab.ops import weight_ops
from lab.runtime.progress import text_progress


@dataclass(frozen=True)
class ReinitPage:
    """The Re-initialise page's own controls: which layers change together, and whether to sweep the width."""

    group: tuple[str, ...] = param(("blocks.1", "blocks.2"), "These layers get the operation above (same checkpoint "
                                   "or a fresh draw) all at once; the chart compares it with their single damages.",
                                   label="Layers changed together")
    sweep: str = param("off", "The MLP in focus trained at four widths (same depth, recipe and seed): each layer's "
                       "accuracy after re-initialising it to t = 0. Trains up to three more models.",
                       label="Width sweep (MLPs)", choices=("off", "on"),
                       labels={"off": "off", "on": "widths " + ", ".join(map(str, WIDTHS))})

    def __post_init__(self) -> None:
        check(self)


CONTROLS = controls(ReinitConfig, FocusConfig, ReinitPage,
                    names=("model", "task", "seed", "layer", "op", "checkpoint", "recovery", "steps", "group",
                           "sweep"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "stem", "Plain MLP: reset the stem, distil", "The bottom layer of a fully connected "
           "net is critical in the paper: reset it to its initial draw, then distil for 300 steps. How fast "
           "does it come back?", model="plain", layer="stem", op="reinit", checkpoint=0, recovery="kd"),
    preset(DEFAULTS, "resblock", "Residual: reset a middle block", "Residual blocks only add a correction: "
           "the paper found most of them robust.", model="residual", layer="blocks.3", op="reinit", checkpoint=0),
    preset(DEFAULTS, "rerand_kd", "Re-randomise, then distil", "A fresh draw of the plain stem, then 300 "
           "distillation steps: how many bring it back?", op="rerand", recovery="kd", steps=300),
    preset(DEFAULTS, "vit_head", "ViT: reset the head", "The classifier on top of the ViT, back to its "
           "initial draw, no recovery: what is left when it forgets all it learned?", model="vit",
           layer="head", op="reinit", checkpoint=0),
    preset(DEFAULTS, "together", "Residual: three blocks at once", "Re-randomise blocks 2, 3 and 4 of the "
           "residual MLP together: do the three keep what their single damages, taken as independent, would "
           "leave?",
           model="residual", layer="blocks.3", op="rerand", group=("blocks.2", "blocks.3", "blocks.4")),
    preset(DEFAULTS, "widths", "Plain MLP at four widths", "The same plain MLP at widths 32, 64, 128 and 256 "
           "(three more models to train): do the wider ones have more robust top layers?", model="plain",
           sweep="on"),
)


def focus_config(settings: dict[str, Any]) -> FocusConfig:
    """The focus config of a complete page setting (the page's main config)."""
    return config_from(FocusConfig, settings, CONTROLS, model=settings["model"], seed=settings["seed"],
                       task=settings["task"])


def group_config(settings: dict[str, Any]) -> Optional[GroupConfig]:
    """The group of a page setting (its layers changed together, with the focus's operation), None for no group."""
    names = [x for x in reinit.layer_names(ReinitConfig(settings["model"], settings["seed"],
                                                        task=settings["task"]))
             if x in settings["group"]]
    if not names:
        return None
    return GroupConfig(model=settings["model"], seed=settings["seed"], layers=",".join(names), op=settings["op"],
                       checkpoint=settings["checkpoint"], task=settings["task"])


def map_config(model: str, seed: int, task: Optional[str], width: Optional[int] = None,
               epochs: Optional[int] = None) -> ReinitConfig:
    """The robustness map of one of the page's three models on the page's task (the ViT keeps its own task when it
    cannot read the page's: a table). `width` and `epochs` (a study's knob, lab/study; None on every page: the
    classroom recipe) size the two MLPs; the ViT keeps its own recipe."""
    mlp = model != "vit"
    return ReinitConfig(model=model, seed=seed, task=readable(task, "mlp" if mlp else "vit"),
                        width=width if mlp else None, epochs=epochs if mlp else None)


def width_configs(settings: dict[str, Any]) -> list[ReinitConfig]:
    """The maps of the width sweep (the MLP in focus at every width), when the page's sweep is on."""
    if settings["sweep"] != "on" or settings["model"] not in WIDTH_MODELS:
        return []
    return [ReinitConfig(model=settings["model"], seed=settings["seed"], width=w, task=settings["task"])
            for w in WIDTHS]


def plan(settings: dict[str, Any]) -> list[Need]:
    """The lab calls of a setting, as the page makes them: the three robustness maps (the page always shows all of
    them), the change in focus, the group, and the width sweep when it is on."""
    f = focus_config(settings)
    maps = [Need(f"Robustness map of the {MODEL_NAMES[m]} ({i + 1} of {len(MODELS)})", reinit.run,
                 map_config(m, f.seed, f.task, f.width, f.epochs), f"map {m}") for i, m in enumerate(MODELS)]
    g = group_config(settings)
    extra = [Need("Changing the group of layers", reinit.group, g, "group")] if g else []
    extra += [Need(f"The {MODEL_NAMES[c.model]} at width {c.width}", reinit.run, c, f"width {c.width}")
              for c in width_configs(settings)]
    return maps + [Need(f"Changing {f.layer} of the {MODEL_NAMES[f.model]}", reinit.focus, f, "focus")] + extra


def claims_of(results: dict[str, ReinitResult], focus: Optional[reinit.FocusResult] = None,
              group: Optional[GroupResult] = None, widths: Optional[dict[str, Any]] = None) -> list[Claim]:
    """The page's claims from what it computed, computed now: the maps' (and plain against residual), the change in
    focus, the group, the width sweep (the page draws exactly this list)."""
    return (reinit_claims.maps_claims(results) + (C.of(focus) if focus is not None else [])
            + (C.of(group) if group is not None else [])
            + (reinit_claims.width_claims(widths) if widths is not None else []))


def claims(settings: dict[str, Any]) -> list[Claim]:
    """The claims the page shows for a complete setting, computing (cached entries) what they rest on."""
    seed = settings["seed"]
    results = {m: reinit.run(map_config(m, seed, settings["task"], settings.get("width"), settings.get("epochs")))
               for m in MODELS}
    g = group_config(settings)
    wcfgs = width_configs(settings)
    for c in wcfgs:
        reinit.run(c)
    w = reinit.width_sweep(settings["model"], seed, task=settings["task"]) if wcfgs else None
    return claims_of(results, reinit.focus(focus_config(settings)), reinit.group(g) if g else None, w)


# -- the command line ------------------------------------------------------------------------------------------
def _fmt(v: Optional[float]) -> str:
    return "n/a" if v is None else f"{v:+.2f}"


def heatmap_text(r: ReinitResult) -> str:
    """The robustness map as a fixed-width table: one row per layer, held-out accuracy per column."""
    cols = r.checkpoints
    lines = [f"{r.model_name} ({r.task}): trained {r.base_acc:.4f}, chance {r.chance:.4f}; "
             f"held-out accuracy after changing one layer (columns: re-randomise, then re-initialise to epoch t)",
             f"{'layer':<10} " + " ".join(f"{c:>12}" for c in cols) + f" {'rel dist':>9} {'inf dist':>9}  verdict t=0"]
    for i, layer in enumerate(r.layers):
        rel = r.distance["rel2"][i]
        lines.append(f"{layer:<10} " + " ".join(f"{a:>12.4f}" for a in r.acc[i])
                     + f" {'n/a' if rel is None else f'{rel:.3f}':>9} {r.distance['inf'][i]:>9.3f}"
                     + f"  {r.verdict_t0[i]}")
    rc = r.rank_corr
    lines.append(f"Spearman(distance, damage at t=0): rel 2-norm {_fmt(rc['rel2'])}, inf-norm {_fmt(rc['inf'])}; "
                 f"heatmap computed in {r.heatmap_seconds:.2f} s "
                 f"({r.heatmap_cpu_seconds:.2f} s of CPU)")
    return "\n".join(lines)


SHARED = ("model", "seed", "blocks", "width", "epochs", "task")  # FocusConfig fields that ReinitConfig already has


def answer(cfg: ReinitConfig, args: argparse.Namespace) -> dict[str, Any]:
    """The map's fields (a ReinitResult's, unchanged) and its claims, plus the layer in focus (--layer) under "focus"
    and the group (--layers) under "group" when asked for, each whole (their claims are added when they are printed:
    lab.claims.attach)."""
    m = reinit.run(cfg, progress=text_progress)
    r: dict[str, Any] = {f.name: getattr(m, f.name) for f in fields(m)}
    r["claims"] = reinit_claims.model_claims(m)
    if args.layer is not None:
        focus = {f: getattr(args, f) for f in ("op", "checkpoint", "recovery", "steps")}
        fc = FocusConfig(**{f: getattr(cfg, f) for f in SHARED}, layer=args.layer, **focus)
        r["focus"] = reinit.focus(fc, progress=text_progress)
    if args.layers is not None:
        gc = GroupConfig(**{f: getattr(cfg, f) for f in SHARED}, layers=args.layers, op=args.op,
                         checkpoint=args.checkpoint)
        r["group"] = reinit.group(gc, progress=text_progress)
    return r


def map_of(answer: dict[str, Any]) -> ReinitResult:
    """The map of an `answer` (its ReinitResult fields, without the focus and the group)."""
    return ReinitResult(**{f.name: answer[f.name] for f in fields(ReinitResult)})


def summary(r: dict[str, Any]) -> str:
    m = map_of(r)
    text = heatmap_text(m)
    f = r.get("focus")
    if f:
        c = f.config
        what = weight_ops.done(c.op, c.checkpoint, "epoch ")
        text += (f"\n{c.layer} {what}: {f.cut_acc:.4f} (keeps {f.kept_share:.0%} of the above-chance "
                 f"accuracy); after {c.recovery} {c.steps} steps: {f.recovered_acc:.4f}, back within 1 point "
                 f"after {f.steps_to_recover if f.steps_to_recover is not None else 'never'} steps")
    g = r.get("group")
    g_claims = C.of(g) if g else []
    if g:
        text += (f"\ngroup {g.layers}: together {g.group_acc:.4f} (damage {g.group_damage:+.4f}); alone "
                 + ", ".join(f"{name} {a:.4f}" for name, a in zip(g.layers, g.single_accs, strict=True))
                 + f"; sum of single damages {g.sum_single_damage:+.4f}; share of the above-chance accuracy "
                 f"kept: together {g_claims[0]['measured']['group_kept_share']:.3f}, the product of the single "
                 f"shares (independent damages) {g_claims[0]['measured']['product_of_single_shares']:.3f}")
    return text + "\nAgainst the paper:\n" + claim_lines(reinit_claims.model_claims(m) + g_claims
                                                        + (C.of(f) if f else []))


def focus_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layer", default=None, help="also focus on this layer (e.g. stem, blocks.0, head)")
    p.add_argument("--layers", default=None, help="also change these layers together, comma-separated (e.g. "
                   "blocks.1,blocks.2), with --op and --checkpoint: the group against its single damages")
    add_arguments(p, FocusConfig, skip=(*SHARED, "layer"))


def width_text(w: dict[str, Any]) -> str:
    """One model's width sweep: held-out accuracy after re-initialising each layer to t = 0, one column per width."""
    ws = w["widths"]
    lines = [f"{w['model_name']}, seed {w['seed']}: held-out accuracy after re-initialising one layer to t = 0, by "
             f"width (chance {w['chance']:.4f})", f"{'layer':<10} " + " ".join(f"{'w=' + str(x):>9}" for x in ws)]
    lines.append(f"{'trained':<10} " + " ".join(f"{a:>9.4f}" for a in w["base_acc"]))
    for i, layer in enumerate(w["layers"]):
        lines.append(f"{layer:<10} " + " ".join(f"{w['t0_acc'][j][i]:>9.4f}" for j in range(len(ws))))
    return "\n".join(lines)


def table(args: argparse.Namespace, pool: Pool) -> TableRows:
    """The robustness maps of the models (or, with --widths, the MLPs' width sweep) and the claims."""
    if args.widths:
        models = [m for m in args.models if m in WIDTH_MODELS]
        if not models:
            raise ValueError("the width sweep is for the MLPs: choose --models plain and/or residual")
        claims, rows = [], []
        for m in models:
            w = reinit.width_sweep(m, args.seed, tuple(args.widths), text_progress, pool)
            claims += reinit_claims.width_claims(w)
            print(width_text(w))
            print()
            rows += [{"model": m, "seed": w["seed"], "width": x, "layer": layer, "column": "t=0",
                      "acc": w["t0_acc"][j][i], "base_acc": w["base_acc"][j], "chance": w["chance"]}
                     for j, x in enumerate(w["widths"]) for i, layer in enumerate(w["layers"])]
        print("Against the paper:\n" + claim_lines(claims))
        return TableRows(rows, claims)
    if args.tasks:  # the same models on several tasks: the critical layers by task (one model per task and seed)
        claims, rows = [], []
        for m in args.models:
            tasks = list(dict.fromkeys(readable(t, "vit" if m == "vit" else "mlp") for t in args.tasks))
            maps = pool([(reinit.run, map_config(m, args.seed, t)) for t in tasks], text_progress)
            for r in maps:
                print(heatmap_text(r))
                print()
                rows += _map_rows(r, args.seed)
            claims += [c for c in [reinit_claims.task_claim(maps)] if c is not None]
        print("Against the paper:\n" + claim_lines(claims))
        return TableRows(rows, claims)
    cfgs = [ReinitConfig(model=model, seed=args.seed) for model in args.models]
    results, rows = {}, []
    for r in pool([(reinit.run, c) for c in cfgs], text_progress):
        results[r.model] = r
        print(heatmap_text(r))
        print()
        rows += _map_rows(r, args.seed)
    claims = reinit_claims.maps_claims(results)
    print("Against the paper:\n" + claim_lines(claims))
    return TableRows(rows, claims)


def _map_rows(r: ReinitResult, seed: int) -> list[dict[str, Any]]:
    """A robustness map as rows: one per layer and column (re-randomise, then t = e)."""
    return [{"model": r.model, "task": r.task, "seed": seed, "layer": layer, "column": str(c), "acc": r.acc[i][j],
             "base_acc": r.base_acc, "chance": r.chance, "verdict_t0": r.verdict_t0[i]}
            for i, layer in enumerate(r.layers) for j, c in enumerate(r.checkpoints)]


DESCRIPTOR = Descriptor(
    name="reinit", order=30, title="Re-initialise a layer", icon=":material/restart_alt:",
    summary="Are all layers created equal? Reset one layer to an earlier checkpoint, or draw it afresh.",
    about="""are all layers created equal? Reset one layer of a trained
  network to its weights from the start of training (or from a later checkpoint), or draw it afresh, and map
  which layers are critical and which are robust, for plain and residual MLPs and the ViT.""",
    config=ReinitConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=focus_config, run=reinit.run,
    config_entry=reinit.focus,
    cli_help="re-initialise or re-randomise each layer of a trained model", cli_summary=summary, cli_answer=answer,
    cli_extra=focus_flags, cli_views={FocusConfig: lambda fc: fc.base},  # the page's focus: --layer, --op, ...
    demo=("model", "layer", "op", "recovery"), page_controls=ReinitPage, claims=claims,
    table=Table("robustness maps of the plain MLP, residual MLP and ViT", (
        Axis("seed", "the seed of the models", int, 0),
        Axis("models", "the models to map", str, list(MODELS), choices=MODELS, nargs="+"),
        Axis("widths", "a width sweep of the MLPs instead (e.g. 32 64 128 256): each layer's robustness by width",
             int, None, nargs="+"),
        Axis("tasks", "the maps on these tasks instead (e.g. digits mnist1d): the critical layers by task", str, None,
             nargs="+")), table),
)
