"""A trained model exported for a researcher's tools: its weights as safetensors, its config, its training curve and
a model card, in one folder, each naming the lab's version and commit.

`model.safetensors` loads into `lab.core.zoo.build(spec.model, seed)` and gives the stored model's logits exactly
(tests/test_export.py); `training.csv` (epoch, loss, held-out accuracy) is what TensorBoard or MLflow would hold,
written as plain CSV because both read it in a few lines and neither is worth a dependency of the lab; `config.json`
holds the whole ModelSpec, the store's key and what quick mode ran; `MODEL_CARD.md` says what the model is, what it
was trained on, how well it does on held-out data and what it is not for.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from lab.core import model_registry
from lab.core.models import correct
from lab.core.zoo import Trained, trained
from lab.runtime.atomic import write_atomically, write_json_atomically
from lab.runtime.plain import to_plain
from lab.runtime.quick import quick
from lab.runtime.store import active_store
from lab.runtime.version import commit, version

FILES = ("model.safetensors", "config.json", "training.csv", "MODEL_CARD.md")


def held_out(t: Trained) -> tuple[float, int, float]:
    """The model's held-out accuracy, the number of held-out inputs and chance, computed now from the test split."""
    data = t.data
    ok = correct(t.model, data.test.x, data.test.y)
    return float(ok.double().mean()), len(data.test), data.chance


def _config(name: str, t: Trained, acc: float, n: int, chance: float) -> dict[str, Any]:
    about = active_store().describe("model", t.spec)
    return {"lab": {"version": version(), "commit": commit()}, "model": name, "spec": to_plain(t.spec),
            "store_key": {k: about[k] for k in ("kind", "code", "module")}, "quick": quick(),
            "held_out": {"accuracy": acc, "inputs": n, "chance": chance},
            "parameters": sum(p.numel() for p in t.model.parameters())}


def _curve(t: Trained) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["epoch", "loss", "held_out_accuracy"])
    for i, (loss, acc) in enumerate(zip(t.info.get("loss", []), t.info.get("test_acc", []), strict=False), 1):
        w.writerow([i, f"{loss:.6g}", f"{acc:.6g}"])
    return out.getvalue()


def _card(name: str, m: model_registry.Model, t: Trained, cfg: dict[str, Any]) -> str:
    tr, h, lab = t.spec.train, cfg["held_out"], cfg["lab"]
    quick_line = ("\n**Quick mode**: trained for a smoke test (one epoch, a few steps); its numbers are not the "
                  "lab's.\n"
                  if cfg["quick"] else "")
    return f"""# Model card: {m.label} (`{name}`, seed {tr.seed})
{quick_line}
## Model
- Architecture: {m.family.upper()}, {m.blocks} blocks of width {m.width}{f" ({m.arch})" if m.arch else ""}, \
{cfg["parameters"]:,} parameters; built by Layer Lab's `lab.core.zoo.build`.
- Training: {tr.epochs} epochs, batch {tr.batch}, learning rate {tr.lr}, optimizer {tr.optimizer}, mode {tr.mode}\
{f", LayerDrop p = {tr.drop_p}" if tr.drop_p else ""}; seed {tr.seed} fixes the weights, the batch order and the data \
draw ({t.info.get("data_draw", "")}).

## Data
- Task: `{t.spec.task}`; accuracy on its held-out test split, never seen in training.

## Held-out accuracy
- {100 * h["accuracy"]:.2f} % on {h["inputs"]:,} held-out inputs (chance {100 * h["chance"]:.2f} %); the curve per
  epoch is in `training.csv`.

## Intended use
Teaching and small-scale research on what layers do: deleting, reordering and re-initialising them. It is a small
model trained on a CPU in seconds; the papers the lab checks ran at other scales, so an effect seen or missed here
says what holds at this scale only.

## Reproduce
Layer Lab {lab["version"]} (commit {lab["commit"] or "unknown"}); store key {cfg["store_key"]["code"]}. Load the
weights with `safetensors.torch.load_file("model.safetensors")` into `lab.core.zoo.build(spec.model, seed)` (the spec is
in `config.json`). Cite the lab with its `CITATION.cff`.
"""


def export(name: str, seed: int, out: Path) -> dict[str, Any]:
    """Write a registry model (a name or a page's word for it: `lab.core.model_registry.model`) at a training seed into
    folder `out` (`FILES`), training it first if the store lacks it; returns its config.json."""
    m = model_registry.model(name)
    t = trained(m.spec(seed))
    acc, n, chance = held_out(t)
    cfg = _config(m.name, t, acc, n, chance)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().clone() for k, v in t.model.state_dict().items()}
    meta = {"layerlab_version": cfg["lab"]["version"], "layerlab_commit": str(cfg["lab"]["commit"]),
            "model": m.name, "spec": json.dumps(cfg["spec"])}
    write_atomically(out / "model.safetensors", lambda tmp: save_file(state, tmp, metadata=meta))
    write_json_atomically(out / "config.json", cfg)
    for file, text in (("training.csv", _curve(t)), ("MODEL_CARD.md", _card(m.name, m, t, cfg))):
        write_atomically(out / file, lambda tmp, text=text: Path(tmp).write_text(text))
    return cfg


def load_state(folder: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """An exported folder's weights and their metadata (the lab's version and commit, the model, its spec)."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = folder / "model.safetensors"
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    return load_file(str(path)), meta
