"""Watching a model learn: its training curve under a job's progress bar while it trains, and on a cached view in the
expander "How this model learned".

Live: the engine keeps each job's training curves, read from its epoch reports (lab/runtime/progress.py: `Curves`;
on the Dask engine they cross in the job's progress file), and `LiveChart` redraws them under the bar whenever an
epoch arrived (app/jobs.py). Stored: the zoo keeps every model's loss and held-out accuracy per epoch in its stored
record, beside the weights; which models a view's results were computed from is what the store's timing record of
each result says it used (lab/runtime/timings.py: `uses`), so `learned(plan)` finds them for any page without
asking the page, reading only the files' headers. A result whose timing record is missing (a store filled from a
pack, which carries no timings) shows no expander.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import streamlit as st

from app import charts, theme
from app import figures_training as figs
from lab.core.models import MLPConfig, ViTConfig
from lab.core.tasks import TASKS
from lab.core.train import TrainConfig
from lab.core.zoo import BUILDERS, ModelSpec
from lab.runtime import timings
from lab.runtime.engine import Job
from lab.runtime.progress import Curves
from lab.runtime.store import Store, active_store, config_json, model_record

LIVE_TITLE = "The model learning, epoch by epoch"
LIVE_HEIGHT = 320
LEARNED_KEY = "layerlab_learned"  # the expander's key: it tracks whether it is open (the figure is drawn only then)
OWN_TASK = {MLPConfig: "synthetic", ViTConfig: "digits"}  # a family's usual task, left out of a model's name


# -- live: under a job's progress bar -------------------------------------------------------------------------
def live_curves(curves: Curves) -> list[figs.Curve]:
    """A job's curves so far, one per model it trained (its newest ones), named by their order when several."""
    runs = curves.runs()[-figs.MAX_MODELS:]
    return [figs.Curve("" if len(runs) == 1 else f"model {i + 1}", r[0].epochs, [e.epoch for e in r],
                       [e.loss for e in r], [e.acc for e in r]) for i, r in enumerate(runs)]


class LiveChart:
    """A place under a progress bar that draws a job's training curves, redrawn only when an epoch arrived (a
    waiting page polls twice a second; thirty students must not each get the same figure again)."""

    def __init__(self, key: str, where: Any = None) -> None:
        self.slot = (st if where is None else where).empty()
        self.key, self.drawn = key, 0

    def update(self, job: Job) -> None:
        points = job.curves.points
        if points == self.drawn:
            return
        self.drawn = points
        fig = figs.training_figure(live_curves(job.curves), LIVE_TITLE, LIVE_HEIGHT)
        if fig is not None:  # each drawing a key of its own: a run may not draw two elements with one key
            charts.show(fig, f"{self.key}_{points}", self.slot.container())

    def clear(self) -> None:
        self.slot.empty()


def live(job: Job, key: str) -> None:
    """A job's training curves so far, drawn once (in a polling fragment, which redraws everything each time)."""
    fig = figs.training_figure(live_curves(job.curves), LIVE_TITLE, LIVE_HEIGHT)
    if fig is not None:
        charts.show(fig, key)


# -- stored: the models a view's results were computed from ----------------------------------------------------
@dataclass(frozen=True)
class Learned:
    """A stored model and its training record (`loss`, `test_acc` per epoch, `seconds`: lab/core/zoo.py)."""

    spec: ModelSpec
    info: dict[str, Any]


MAX_CACHED = 1024
_cache: OrderedDict[str, tuple[int, Any]] = OrderedDict()  # file -> (its mtime, what was read from it)
_cache_lock = threading.Lock()


def _read(path: Any, parse: Any) -> Any:
    """What `parse(path)` gives, read again only when the file changed; None when it is missing or unreadable."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return None
    with _cache_lock:
        hit = _cache.get(str(path))
        if hit is not None and hit[0] == stamp:
            _cache.move_to_end(str(path))
            return hit[1]
    try:
        value = parse(path)
    except Exception:  # noqa: BLE001 - a torn or foreign file shows no curve; it never stops a page
        return None
    with _cache_lock:
        _cache[str(path)] = (stamp, value)
        while len(_cache) > MAX_CACHED:
            _cache.popitem(last=False)
    return value


def _uses(path: Any) -> tuple[str, ...]:
    """The model configs a timing record says its build used (read or trained)."""
    rec = json.loads(path.read_text())
    return tuple(u["config"] for u in rec.get("uses", [])
                 if u.get("kind") == "model" and isinstance(u.get("config"), str))


def _header(path: Any) -> dict[str, Any]:
    """A stored model's record, from its file's header once the whole file matches its checksum (a damaged or
    altered model shows no curve)."""
    return model_record(path)


def spec_of(config: str) -> Optional[ModelSpec]:
    """The ModelSpec of a model's canonical config JSON (lab/runtime/store.py: config_json); None when it is not
    one or does not give the same JSON back."""
    classes = {c.__name__: c for c in (ModelSpec, TrainConfig, *BUILDERS)}

    def build(o: Any) -> Any:
        if isinstance(o, dict):
            fields = {k: build(v) for k, v in o.items() if k != "__class__"}
            return classes[o["__class__"]](**fields) if "__class__" in o else fields
        if isinstance(o, list):
            return tuple(build(v) for v in o)
        return o

    try:
        spec = build(json.loads(config))
    except (KeyError, TypeError, ValueError):
        return None
    return spec if isinstance(spec, ModelSpec) and config_json(spec) == config else None


def models_of(calls: Iterable[Any], store: Optional[Store] = None) -> list[Learned]:
    """The stored models that the stored results of `calls` (each with `fn`, an entry point, and `cfg`) were computed
    from, each once, in the order the calls name them."""
    store = active_store() if store is None else store
    out: dict[str, Learned] = {}
    for call in calls:
        kind = getattr(call.fn, "kind", None)
        if kind is None:
            continue
        try:
            key = store.key(kind, call.cfg)
        except (TypeError, ValueError):
            continue
        for config in _read(timings.record_path(store.root, kind, key), _uses) or ():
            spec = spec_of(config)
            if spec is None or config in out:
                continue
            info = _read(store.path(store.key("model", spec), ".safetensors"), _header)
            if isinstance(info, dict) and info.get("loss"):
                out[config] = Learned(spec, info)
    return list(out.values())


def _blocks(n: int) -> str:
    return f"{n} block" + ("" if n == 1 else "s")


def model_words(spec: ModelSpec) -> str:
    """A model in a few words: family, depth, how it was trained, its data when not its family's usual, seed."""
    m, t = spec.model, spec.train
    if isinstance(m, MLPConfig):
        parts = [f"{m.arch} MLP, {_blocks(m.blocks)}"]
    elif isinstance(m, ViTConfig):
        parts = [f"ViT, {_blocks(m.depth)}" + (", LayerNorm scaling" if m.ln_scale else "")]
    else:
        parts = [type(m).__name__]
    slot = getattr(m, "slot_mode", "none")
    how = {"shuffle": "LayerShuffle", "layerdrop": f"LayerDrop p = {t.drop_p:g}",
           "looped": f"looped {t.loops} x"}.get(t.mode)
    parts += [f"LayerShuffle-{slot}" if slot in ("position", "predict") else how,
              "early-exit loss" if t.early_exit else None]
    if spec.task != OWN_TASK.get(type(m)):
        parts.append(TASKS[spec.task].label.split(" (")[0] if spec.task in TASKS else "your data")
    parts.append(f"seed {t.seed}")
    return ", ".join(p for p in parts if p)


def colour_of(spec: ModelSpec) -> str:
    """The architecture's colour (app/theme.py)."""
    m = spec.model
    arch = m.arch if isinstance(m, MLPConfig) else "vit" if isinstance(m, ViTConfig) else ""
    return theme.ARCH_COLOURS.get(arch, theme.ORIGINAL)


def curves_of(models: Iterable[Learned]) -> list[figs.Curve]:
    """The figure's curves of stored models, each named (a repeated name numbered)."""
    out: list[figs.Curve] = []
    seen: dict[str, int] = {}
    for m in models:
        name = model_words(m.spec)
        seen[name] = seen.get(name, 0) + 1
        curve = figs.stored_curve(name if seen[name] == 1 else f"{name} ({seen[name]})", m.info, colour_of(m.spec))
        if curve is not None:
            out.append(curve)
    return out


def learned(calls: Iterable[Any]) -> None:
    """The expander "How this model learned" of a view whose plan is `calls`: the stored training curve of every
    model its stored results were computed from; nothing when none is stored yet. The figure is drawn only while the
    expander is open (it reruns the page when opened: a closed one costs a cached view nothing)."""
    models = models_of(calls)
    if not models:
        return
    label = "How this model learned" if len(models) == 1 else f"How these {len(models)} models learned"
    box = st.expander(label, icon=":material/show_chart:", key=LEARNED_KEY, on_change="rerun")
    with box:
        for m in models[: figs.MAX_MODELS]:
            acc = m.info.get("test_acc") or []
            held = f"; held-out accuracy after the last epoch {100 * acc[-1]:.1f} %" if acc else ""
            st.markdown(f"**{model_words(m.spec)}**: {len(m.info['loss'])} epochs, "
                        f"{float(m.info.get('seconds', 0.0)):.1f} s of training{held}.")
        if box.open:
            charts.show(figs.training_figure(curves_of(models), "Loss and held-out accuracy per epoch"),
                        f"{LEARNED_KEY}_fig")
