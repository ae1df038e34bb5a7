"""Held-out accuracy and training time of every trained digits ViT in a store: the figures of a ViT recipe decision.

    PYTHONPATH=. .venv/bin/python bench/recipe_accuracy.py [--store DIR] [--out vit.json]

Reads each stored model's own record (its config from the sidecar, its per-epoch held-out accuracy and training
seconds from the weights file's metadata); trains and computes nothing. Run it on a store that two checkouts filled
(the recipe before and after a change) to list both recipes' models side by side: a model's key includes its epochs,
so the two never share an entry. Prints one row per model and a summary per recipe and epochs: the mean held-out
accuracy over the seeds present, and the seconds per training.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from safetensors import safe_open

from lab.classroom.pack import stored_entries
from lab.runtime.store import Store, default_root


def describe(config: dict[str, Any]) -> str:
    """A ViT's recipe in a few words, from its canonical config: depth, slot mode, LayerNorm scaling, training mode."""
    m, t = config["model"], config["train"]
    words = [f"vit{m['depth']}", t["mode"]]
    if m.get("slot_mode", "none") != "none":
        words.append(m["slot_mode"])
    if m.get("ln_scale"):
        words.append("ln-scale")
    if t["mode"] == "layerdrop":
        words.append(f"p={t['drop_p']}")
    if t["mode"] == "looped":
        words.append(f"x{t['loops']}")
    if t.get("early_exit"):
        words.append("early-exit")
    return " ".join(words)


def rows(root: Path) -> list[dict[str, Any]]:
    out = []
    for about, path in stored_entries(Store(root), include_quick=False):
        if about.get("kind") != "model" or path.suffix != ".safetensors":
            continue
        try:
            config = json.loads(about["config"])
            with safe_open(str(path), framework="pt") as fh:
                meta = json.loads((fh.metadata() or {})["lab_meta"])
        except (OSError, KeyError, ValueError) as e:
            print(f"# skipped {path.name}: {e}")
            continue
        if config.get("task") != "digits" or "depth" not in config.get("model", {}):
            continue
        out.append({"recipe": describe(config), "epochs": config["train"]["epochs"], "seed": config["train"]["seed"],
                    "acc": meta["test_acc"][-1], "seconds": meta["seconds"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", default=None, help="the store (default: the active one, $LAYERLAB_CACHE)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    got = rows(Path(args.store) if args.store else default_root())
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in sorted(got, key=lambda r: (r["recipe"], r["epochs"], r["seed"])):
        groups.setdefault((r["recipe"], r["epochs"]), []).append(r)
    print(f"{'recipe':32s} {'epochs':>6s} {'seeds':12s} {'held-out (each seed)':34s} {'mean':>6s} {'s/training':>10s}")
    for (recipe, epochs), rs in groups.items():
        accs = [r["acc"] for r in rs]
        print(f"{recipe:32s} {epochs:6d} {','.join(str(r['seed']) for r in rs):12s} "
              f"{' '.join(f'{a:.1%}' for a in accs):34s} {statistics.mean(accs):6.1%} "
              f"{statistics.mean(r['seconds'] for r in rs):10.1f}")
    if args.out:
        Path(args.out).write_text(json.dumps(got, indent=1))


if __name__ == "__main__":
    main()
