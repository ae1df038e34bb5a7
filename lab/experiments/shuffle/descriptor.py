"""Shuffle layers: the descriptor (page, presets, CLI, table) of lab/experiments/shuffle/experiment.py."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import Any

from lab.catalog.descriptor import Axis, Descriptor, Table, TableRows, config_from, controls, defaults, seeds_axis
from lab.catalog.presets import Need, preset
from lab.claims import Claim, claim_lines
from lab.experiment import Pool, check, param
from lab.experiments.shuffle import claims as shuffle_claims
from lab.experiments.shuffle import experiment as shuffle
from lab.experiments.shuffle.experiment import ModelConfig, ShuffleConfig
from lab.runtime.progress import silent, text_progress

COLOURS = ("slot", "block", "digit")  # the page's embedding colouring (a view, not part of the experiment)


@dataclass(frozen=True)
class ShufflePage:
    """The Shuffle page's own controls: how it shows a run (they change no result)."""

    colour: str = param("slot", "slot: the position a block ran at. block: which block it was. digit: the class of "
                        "the image.", label="Colour the embedding by", choices=COLOURS)
    removed: int = param(2, "Highlighted on the pruning curve: random subsets of the blocks are removed at test "
                         "time, the rest run in random order.", label="Blocks removed", lo=0, hi=7)

    def __post_init__(self) -> None:
        check(self)


CONTROLS = controls(ShuffleConfig, ShufflePage, names=("mode", "task", "depth", "orders", "colour", "removed", "seed"))
DEFAULTS = defaults(CONTROLS)
PRESETS = (
    preset(DEFAULTS, "seq", "Sequential in random order", "How much does an ordinary ViT lose when its "
           "blocks run in another order?", mode="sequential"),
    preset(DEFAULTS, "prune", "Prune half the blocks", f"LayerShuffle, {DEFAULTS['depth'] // 2} of "
           f"{DEFAULTS['depth']} blocks removed at test time: how much accuracy does each model keep?", mode="shuffle",
           removed=DEFAULTS["depth"] // 2),
    preset(DEFAULTS, "position", "Do blocks know their slot?", "The -position variant, embedding coloured "
           "by slot: does it separate by slot?", mode="position", colour="slot"),
    preset(DEFAULTS, "shallow", "Shallow: 3 blocks", "With 3 blocks only 6 orders exist: every one is "
           "tested; 1 block removed.", depth=3, mode="shuffle", removed=1),
)


def config_of(settings: dict[str, Any]) -> ShuffleConfig:
    """The experiment config of a complete page setting."""
    return config_from(ShuffleConfig, settings, CONTROLS)


def claims(settings: dict[str, Any]) -> list[Claim]:
    """The claims the page shows for a setting (the page computes them from the same stored pieces). The pieces are
    joined here, not read as the stored join (`shuffle.run`): the page never asks for that join, so a warmed course
    has the pieces of every seed but not the join, and a view pools stored seeds without computing (claims_view)."""
    return shuffle_claims.result_claims(shuffle.run.__wrapped__(config_of(settings), silent))


def plan(settings: dict[str, Any]) -> list[Need]:
    """The lab calls of a setting, as the page makes them: this model and the comparison model (sequential, or plain
    LayerShuffle for a sequential run), the pieces of each (slot probe, pruning curve, random orders, and the table
    of all orders where every order is walked), plain LayerShuffle's slot probe when neither model is it (the
    reference of the claims), the UMAP view, and (on request) the slot probe of the remaining modes."""
    cfg = config_of(settings)
    other = "sequential" if cfg.mode != "sequential" else "shuffle"
    mine = ModelConfig.of(cfg)
    theirs = replace(mine, mode=other)
    name, their_name = shuffle.MODE_LABELS[cfg.mode], shuffle.MODE_LABELS[other]
    out = [Need(f"Training the {name} ViT", shuffle.model_summary, mine, "model"),
           Need(f"Training the {their_name} ViT for comparison", shuffle.model_summary, theirs, "their model")]
    for who, words, mcfg, rcfg in (("", name, mine, cfg), ("their ", their_name, theirs, replace(cfg, mode=other))):
        out += [Need(f"Slot probe of the {words} model", shuffle.probe_and_view, mcfg, f"{who}probe"),
                Need(f"Pruning curve of the {words} model", shuffle.pruning, mcfg, f"{who}pruning"),
                Need(f"Random orders of the {words} model", shuffle.random_order_stats, rcfg, f"{who}random orders")]
        if shuffle.walks_all_orders(cfg.depth):
            out.append(Need(f"All orders of the {words} model", shuffle.orders_table, mcfg, f"{who}all orders"))
    if "shuffle" not in (cfg.mode, other):  # the claims compare this probe with plain LayerShuffle's
        out.append(Need("Slot probe of the LayerShuffle model (the reference for this probe)",
                        shuffle.probe_and_view, replace(mine, mode="shuffle"), "reference probe"))
    out.append(Need(f"UMAP of the {name} features", shuffle.umap_view, mine, "umap", for_claims=False))
    out += [Need(f"Training the {shuffle.MODE_LABELS[m]} ViT for the probe comparison", shuffle.probe_and_view,
                 replace(mine, mode=m), f"probe of {m}", optional=True)
            for m in shuffle.MODES if m not in (cfg.mode, other, "shuffle")]
    return out


def summary(r: shuffle.ShuffleResult) -> str:
    """The command's text answer from the whole result (`--json` prints all of it)."""
    ro, probe = r.random_orders, r.probe
    return (f"{shuffle.MODE_LABELS[r.mode]} ViT, {r.n_blocks} blocks: trained order {r.base_acc:.4f}, "
            f"{len(ro['accs'])} random orders mean {ro['mean']:.4f} (min {ro['min']:.4f}, max {ro['max']:.4f}), "
            f"reversed {r.reversed_acc:.4f}; position probe {probe['acc']:.3f} "
            f"(chance {probe['chance']:.3f}); trained in {r.train_seconds:.0f} s\n"
            + claim_lines(shuffle_claims.result_claims(r)))


def table(args: argparse.Namespace, pool: Pool) -> TableRows:
    """mode x seed: trained order, random orders, slot probe."""
    print(f"ViT on digits, {args.depth} blocks; held-out accuracy; {args.orders} random orders")
    print(f"{'mode':<12} {'seed':>4} {'trained':>8} {'rand mean':>9} {'rand min':>8} {'probe':>6} {'train s':>7}")
    cfgs = {(mode, s): ShuffleConfig(mode=mode, depth=args.depth, orders=args.orders, seed=s)
            for mode in shuffle.MODES for s in range(args.seeds)}
    results = dict(zip(cfgs, pool([(shuffle.run, c) for c in cfgs.values()], text_progress), strict=True))
    for mode in shuffle.MODES:
        for s in range(args.seeds):
            r = results[mode, s]
            ro = r.random_orders
            print(f"{mode:<12} {s:>4} {r.base_acc:>8.4f} {ro['mean']:>9.4f} {ro['min']:>8.4f} "
                  f"{r.probe['acc']:>6.3f} {r.train_seconds:>7.1f}")
    print(f"position-probe chance: {1 / args.depth:.3f}")
    return TableRows([{"mode": mode, "seed": s, "depth": args.depth, "trained_acc": r.base_acc,
                       "random_mean_acc": r.random_orders["mean"], "random_min_acc": r.random_orders["min"],
                       "probe_acc": r.probe["acc"], "probe_chance": 1 / args.depth, "train_seconds": r.train_seconds}
                      for (mode, s), r in results.items()])


_D = ShuffleConfig()
DESCRIPTOR = Descriptor(
    name="shuffle", order=20, title="Shuffle layers", icon=":material/shuffle:",
    summary="Train a tiny ViT with its blocks in a random order at every step (LayerShuffle); run it in any order.",
    about="""train a tiny Vision Transformer on handwritten digits with its
  blocks in a fresh random order at every step (LayerShuffle), optionally telling each block its position or asking
  it to guess it. Does the network still work in any order? Does each block know where it sits? A slot probe and
  UMAP views of the features after every position let you check.""",
    config=ShuffleConfig, controls=CONTROLS, presets=PRESETS, plan=plan, config_of=config_of, run=shuffle.run,
    cli_help="train a digits ViT sequentially or with LayerShuffle; test it in any order", cli_summary=summary,
    demo=("mode", "depth", "removed"), page_controls=ShufflePage, claims=claims,
    table=Table("mode x seed table", (seeds_axis(), Axis("depth", "blocks of the ViT", int, _D.depth),
                                      Axis("orders", "random orders per model", int, _D.orders)), table),
)
