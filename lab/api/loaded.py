"""`load(page_or_model, **settings)`: the trained model a page would use, with its config and held-out data, its
hook points (lab/api/hooks.py) and every surgery of the registry (lab/ops/registry.py) as a method.

`load("delete")` is the Delete page's default model (its teacher), `load("shuffle", mode="sequential", seed=1)` the
Shuffle page's at those settings (a setting is a page control's name, or a field of the page's config), and
`load("vit6.shuffle")` a model of the registry by name (lab/core/model_registry.py; settings `seed` and `task`). The
model comes from the store, or is trained now and stored (lab/core/zoo.py: trained), so it is the very model the page
and the CLI read and `accuracy()` is their held-out accuracy, to the bit.

A surgery returns a new `Loaded` on the same data: a route surgery (`delete`, `surgery("swap", block=2)`, `shuffle`,
`no_attn`, ...) the same model on another route, a weight surgery (`reinit`, `rerand`) a copy of the model with one
layer's values swapped (lab/ops/surgery.py: with_layer). Surgeries compose, and the trained model is never changed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import torch

from lab.api import hooks
from lab.core import metrics, model_registry, page_models, streams
from lab.core.data import Dataset
from lab.core.models.base import RoutedModel, StepLike, evaluating
from lab.core.routes import Steps, blocks_of, label, random_orders, steps_of, without_block
from lab.core.train import eval_route
from lab.core.zoo import ModelSpec, Trained, task, trained
from lab.ops import registry, route_ops, surgery, weight_ops
from lab.runtime.progress import Progress, silent
from lab.runtime.store import Store

BATCH = 4096  # inputs per forward pass of accuracy() and logits() (lab/core/models/base.py: logits_of)
SHUFFLE_STREAM = "orders.random"  # the Shuffle page's random orders (lab/experiments/shuffle/experiment.py)
MODEL_SETTINGS = ("seed", "task")  # what a registry model takes


def _pages() -> dict[str, Any]:
    from lab.catalog import descriptors  # the catalog walks lab/experiments on first use

    return descriptors()


def _spec_of(cfg: Any, recipe: Optional[str]) -> tuple[Any, ModelSpec]:
    """(the config that names the trained model, its spec) of a page's config: the page's own config, or the part
    of it that names the model (Re-initialise's `base`, Layer lens's and Rearrange's `model_cfg`, LayerDrop's
    `profile_cfg`, one row of the matrix)."""
    if hasattr(cfg, "rows"):  # the matrix: one model per recipe
        rows = cfg.rows()
        names = [r.recipe for r in rows]
        if recipe is not None and recipe not in names:
            raise ValueError(f"unknown recipe {recipe!r}; the matrix's recipes for this model: {', '.join(names)}")
        row = rows[names.index(recipe)] if recipe is not None else rows[0]
        return row, row.spec
    for part in (None, "base", "model_cfg", "profile_cfg"):
        owner = cfg if part is None else getattr(cfg, part, None)
        if owner is not None and hasattr(type(owner), "spec"):
            return owner, owner.spec
    raise ValueError(f"{type(cfg).__name__} names no trained model")  # pragma: no cover - every page's does


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def page_settings(page: str) -> list[str]:
    """The settings `load(page, ...)` takes: the page's controls, then its config's other fields (`preset` too, and
    the matrix's `recipe`)."""
    d = _pages()[page]
    controls = [c.name for c in d.controls]
    cfg_type = type(d.config_of(d.defaults))
    extra = [n for n in _field_names(cfg_type) if n not in controls]
    return controls + extra + ["preset"] + (["recipe"] if hasattr(cfg_type, "rows") else [])


def _resolve(what: str, settings: Mapping[str, Any]) -> tuple[Optional[str], Any, Any, ModelSpec]:
    """(page or None, the page's config or the model's ModelSeed, the config naming the model, its spec)."""
    pages = _pages()
    if not isinstance(what, str):
        raise ValueError(f"load takes a page's or a model's name, got {what!r}")
    if what in pages:
        d = pages[what]
        allowed = page_settings(what)
        bad = [k for k in settings if k not in allowed]
        if bad:
            raise ValueError(f"the {what} page has no setting {', '.join(map(repr, bad))}; its settings: "
                             f"{', '.join(allowed)}")
        given = dict(settings)
        recipe = given.pop("recipe", None)
        start = dict(d.defaults)
        if "preset" in given:
            key = given.pop("preset")
            found = {p.key: p for p in d.presets}
            if key not in found:
                raise ValueError(f"unknown preset {key!r} of the {what} page; choose one of {', '.join(found)}")
            start = found[key].settings
        try:
            cfg = d.config_of({**start, **given})
        except TypeError as e:  # a value of the wrong kind
            raise ValueError(f"the {what} page cannot take {given}: {e}") from None
        owner, spec = _spec_of(cfg, recipe)
        return what, cfg, owner, spec
    try:
        entry = model_registry.model(what)
    except ValueError as e:
        raise ValueError(f"{what!r} is neither a page ({', '.join(pages)}) nor a model of the lab: {e}") from None
    bad = [k for k in settings if k not in MODEL_SETTINGS]
    if bad:
        raise ValueError(f"model {entry.name!r} takes the settings {', '.join(MODEL_SETTINGS)}, not "
                         f"{', '.join(map(repr, bad))}")
    cfg = page_models.ModelSeed(model=entry.name, seed=int(settings.get("seed", 0)), task=settings.get("task"))
    return None, cfg, cfg, cfg.spec


def load(page_or_model: str, progress: Progress = silent, store: Optional[Store] = None,
         **settings: Any) -> "Loaded":
    """The trained model a page uses at its default settings (overridden by `settings`: a control's name or a field
    of its config, e.g. `load("delete", arch="plain", seed=1)`; `preset="kd6"` starts from a preset), or a model of
    the registry by name (`load("vit6.shuffle", seed=1)`), with its config and held-out data. Trained now when the
    store lacks it, else read from the store. ValueError, saying what is allowed, for an unknown name or setting."""
    page, cfg, owner, spec = _resolve(page_or_model, settings)
    t = trained(spec, progress, store)
    data = task(t.spec.task, store, t.spec.train.seed)
    route = eval_route(t.spec.train, t.model.n_blocks)
    return Loaded(name=page_or_model, page=page, config=cfg, model_config=owner, trained=t, model=t.model, data=data,
                  route=steps_of(t.model.full_route if route is None else route))


Hook = tuple[hooks.Selector, hooks.HookFn]


@dataclass(frozen=True, eq=False)
class Loaded:
    """A trained model of the lab on one route, with its data (see the module docstring). `model` is shared with
    the lab (the zoo's): read it, never change it in place (the surgeries return copies)."""

    name: str  # what was asked for: a page or a model
    page: Optional[str]  # the page whose model this is (None: a registry model by name)
    config: Any  # the page's config (DeleteConfig, ...), or the model's ModelSeed
    model_config: Any  # the part of `config` that names the trained model (the config itself for most pages)
    trained: Trained
    model: RoutedModel
    data: Dataset
    route: Steps  # the route this object runs: the trained route, until a route surgery
    changes: tuple[str, ...] = field(default=())  # the surgeries done so far, in words

    # -- what it is -----------------------------------------------------------------------------------------------
    @property
    def spec(self) -> ModelSpec:
        """The spec that really trained (quick mode's one epoch included)."""
        return self.trained.spec

    @property
    def x_test(self) -> torch.Tensor:
        return self.data.test.x

    @property
    def y_test(self) -> torch.Tensor:
        return self.data.test.y

    @property
    def chance(self) -> float:
        return self.data.chance

    @property
    def n_blocks(self) -> int:
        return self.model.n_blocks

    @property
    def trained_route(self) -> Steps:
        """The route the model was trained and is scored on (a looped model's blocks, `loops` times)."""
        route = eval_route(self.spec.train, self.model.n_blocks)
        return steps_of(self.model.full_route if route is None else route)

    def __repr__(self) -> str:
        done = "; ".join(self.changes) or "as trained"
        return (f"Loaded({self.name!r}: {type(self.model).__name__} of {self.n_blocks} blocks on {self.spec.task}, "
                f"seed {self.spec.train.seed}, route {label(self.route)}; {done})")

    def _route(self, route: Optional[Sequence[StepLike]]) -> Steps:
        return self.route if route is None else steps_of(route)

    # -- measuring ------------------------------------------------------------------------------------------------
    @torch.no_grad()
    def logits(self, x: Optional[torch.Tensor] = None, route: Optional[Sequence[StepLike]] = None,
               fwd_hooks: Sequence[Hook] = ()) -> torch.Tensor:
        """Logits on `x` (default: the held-out inputs) along `route` (default: this object's), in batches, no
        gradients; with `fwd_hooks` applied on every batch."""
        x = self.x_test if x is None else x
        steps = self._route(route)
        with evaluating(self.model):
            return torch.cat([hooks.run(self.model, x[i:i + BATCH], steps, fwd_hooks)[0]
                              for i in range(0, len(x), BATCH)])

    def correct(self, route: Optional[Sequence[StepLike]] = None, x: Optional[torch.Tensor] = None,
                y: Optional[torch.Tensor] = None, fwd_hooks: Sequence[Hook] = ()) -> torch.Tensor:
        """Per-input right/wrong (default: on the held-out split)."""
        if (x is None) != (y is None):
            raise ValueError("give both x and y, or neither (the held-out split)")
        y = self.y_test if y is None else y
        return metrics.correct(self.logits(x, route, fwd_hooks), y)

    def accuracy(self, route: Optional[Sequence[StepLike]] = None, x: Optional[torch.Tensor] = None,
                 y: Optional[torch.Tensor] = None, fwd_hooks: Sequence[Hook] = ()) -> float:
        """Held-out accuracy on `route` (default: this object's): the number the lab's pages and CLI report."""
        return float(self.correct(route, x, y, fwd_hooks).float().mean())

    # -- hook points ----------------------------------------------------------------------------------------------
    def hook_names(self, route: Optional[Sequence[StepLike]] = None) -> list[str]:
        """The hook points a route fires, in order (lab/api/hooks.py)."""
        return hooks.hook_names(self.model, self._route(route))

    def run_with_cache(self, x: Optional[torch.Tensor] = None, route: Optional[Sequence[StepLike]] = None,
                       names: hooks.Names = None, fwd_hooks: Sequence[Hook] = ()
                       ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(logits, {hook point: activation}) of one forward pass on `x` (default: the held-out inputs); `names`: the
        hook points to keep (a name, a list, a predicate; None: all)."""
        return hooks.run(self.model, self.x_test if x is None else x, self._route(route), fwd_hooks, names)

    def run_with_hooks(self, x: Optional[torch.Tensor] = None, fwd_hooks: Sequence[Hook] = (),
                       route: Optional[Sequence[StepLike]] = None) -> torch.Tensor:
        """The logits of one forward pass with `fwd_hooks` [(hook point or predicate, fn(tensor, name))]: a fn that
        returns a tensor replaces the activation. The hooks are gone afterwards, whatever happened."""
        return hooks.run(self.model, self.x_test if x is None else x, self._route(route), fwd_hooks)[0]

    def patch(self, clean_x: torch.Tensor, corrupt_x: torch.Tensor, name: str,
              route: Optional[Sequence[StepLike]] = None, clean_route: Optional[Sequence[StepLike]] = None,
              positions: Union[None, int, Sequence[int]] = None) -> torch.Tensor:
        """Logits of the corrupted run with hook point `name` patched in from the clean run (lab/api/hooks.py:
        patch); `positions`: only these tokens (ViT)."""
        return hooks.patch(self.model, clean_x, corrupt_x, name, self._route(route),
                           None if clean_route is None else steps_of(clean_route), positions)

    def patch_scan(self, clean_x: torch.Tensor, corrupt_x: torch.Tensor, metric: Callable[[torch.Tensor], float],
                   names: hooks.Names = None, route: Optional[Sequence[StepLike]] = None,
                   by_position: bool = False) -> dict[str, Any]:
        """{hook point: metric(logits)} with each hook point patched alone (lab/api/hooks.py: patch_scan)."""
        return hooks.patch_scan(self.model, clean_x, corrupt_x, metric, names, self._route(route), by_position)

    # -- surgeries --------------------------------------------------------------------------------------------------
    @staticmethod
    def surgeries() -> list[dict[str, str]]:
        """Every surgery of the registry: name, label, what it acts on, its parameters, the pages' words for it."""
        return registry.table()

    def layers(self) -> list[str]:
        """The model's layers, as the weight surgeries name them: stem, blocks.0, ..., head."""
        return list(surgery.layers(self.model))

    def with_route(self, route: Sequence[StepLike], change: str = "") -> "Loaded":
        """The same model on another route."""
        steps = steps_of(route)
        hooks.hook_names(self.model, steps)  # checks the route's blocks and variants
        return replace(self, route=steps, changes=self.changes + ((change or f"route {label(steps)}"),))

    def surgery(self, name: str, **params: Any) -> "Loaded":
        """One surgery of the registry by name (or a page's word for it: `delete`, `none`), with its parameters:
        route surgeries take block, reduce, loops, span, ends ("keep": the first and last slots stay) and, for
        `random`, redraw (a seed: the Shuffle page's stream) or gen; weight surgeries take layer and checkpoint
        (`reinit`) or redraw (`rerand`; default: the page's own redraw seed)."""
        sg = registry.get(name)
        if sg.acts_on == "weights":
            allowed = ("layer", *(p for p in sg.params if p != "layer"))
        else:
            allowed = (*sg.params, "ends", *(("gen",) if sg.name == "random" else ()))
        bad = [k for k in params if k not in allowed]
        if bad:
            raise ValueError(f"{sg.name} ({sg.label}) takes {', '.join(allowed) or 'no parameters'}, not "
                             f"{', '.join(map(repr, bad))}")
        if sg.acts_on == "weights":
            if "layer" not in params:
                raise ValueError(f"{sg.name} needs layer=...; this model's layers: {', '.join(self.layers())}")
            return self._weights(sg.name, params["layer"], int(params.get("checkpoint", 0)), params.get("redraw"))
        if sg.takes("block") and "block" not in params:
            ok = route_ops.valid_blocks(sg.name, self.route, params.get("ends", "keep"))
            raise ValueError(f"{sg.name} ({sg.label}) needs block=b; on this route choose b from "
                             f"{', '.join(map(str, ok)) or 'none'}")
        gen = params.get("gen")
        if sg.name == "random" and gen is None:
            seed = self.spec.train.seed if params.get("redraw") is None else int(params["redraw"])
            gen = streams.generator(SHUFFLE_STREAM, seed, len(self.route))
        steps = route_ops.route_of(sg.name, self.route, block=int(params.get("block", 1)),
                                   reduce=params.get("reduce", "mean"), ends=params.get("ends", "keep"),
                                   loops=int(params.get("loops", route_ops.LOOPS)), span=int(params.get("span", 0)),
                                   gen=gen)
        words = ", ".join(f"{k}={v}" for k, v in params.items() if k != "gen")
        return self.with_route(steps, f"{sg.name}" + (f" ({words})" if words else ""))

    def _weights(self, op: str, layer: str, checkpoint: int, redraw: Optional[int]) -> "Loaded":
        if layer not in surgery.layers(self.model):
            raise ValueError(f"unknown layer {layer!r}; this model has {', '.join(self.layers())}")
        seed = streams.seed_of("init.redraw", self.spec.train.seed) if redraw is None else int(redraw)
        source = weight_ops.source_weights(self.trained, op, checkpoint, seed)
        changed = surgery.with_layer(self.model, layer, source)
        what = weight_ops.done(op, checkpoint) + ("" if op == "reinit" or redraw is None else f" (redraw {redraw})")
        return replace(self, model=changed, changes=self.changes + (f"{layer} {what}",))

    # the pages' surgeries by name
    def delete(self, *blocks: Union[int, Sequence[int]]) -> "Loaded":
        """The route without these blocks (every run of each): the Delete and LayerDrop pages' cut."""
        flat = [int(b) for item in blocks for b in ((item,) if isinstance(item, int) else item)]
        steps = self.route
        for b in flat:
            runs = blocks_of(steps)
            if b not in runs:
                raise ValueError(f"block {b} does not run on the route {label(steps)}; it runs blocks "
                                 f"{', '.join(map(str, sorted(runs))) or 'none'}")
            steps = without_block(steps, b)
        return self.with_route(steps, f"deleted block{'s' if len(flat) != 1 else ''} {', '.join(map(str, flat))}")

    def keep(self, *blocks: Union[int, Sequence[int]]) -> "Loaded":
        """The route of only these blocks, in the route's order (LayerDrop's pruned model)."""
        flat = {int(b) for item in blocks for b in ((item,) if isinstance(item, int) else item)}
        gone = sorted(set(blocks_of(self.route)) - flat)
        return self.delete(gone) if gone else self

    def swap(self, block: int) -> "Loaded":
        """Blocks at slots b and b + 1 exchanged (Rearrange, the matrix)."""
        return self.surgery("swap", block=block)

    def reverse(self, ends: str = "include") -> "Loaded":
        """The route reversed (default: every slot; ends="keep" keeps the first and last)."""
        return self.surgery("reverse", ends=ends)

    def shuffle(self, seed: Optional[int] = None, ends: str = "include") -> "Loaded":
        """A random order of the route: on the trained route, the Shuffle page's first random order at `seed`
        (default: the model's training seed)."""
        return self.surgery("random", redraw=self.spec.train.seed if seed is None else seed, ends=ends)

    def orders(self, n: int, seed: Optional[int] = None) -> list["Loaded"]:
        """The Shuffle page's `n` random orders of the route at `seed` (default: the training seed), each a Loaded."""
        seed = self.spec.train.seed if seed is None else int(seed)
        return [self.with_route(r, f"random order {label(r)}")
                for r in random_orders(self.route, n, SHUFFLE_STREAM, seed, len(self.route))]

    def no_attn(self, block: int) -> "Loaded":
        """Block b without its attention sub-layer (ViT)."""
        return self.surgery("no-attn", block=block, ends="include")

    def no_mlp(self, block: int) -> "Loaded":
        """Block b without its MLP sub-layer (ViT)."""
        return self.surgery("no-mlp", block=block, ends="include")

    def reinit(self, layer: str, checkpoint: int = 0) -> "Loaded":
        """A copy of the model with `layer` re-initialised to its values at epoch `checkpoint` (0: the initial draw):
        the Re-initialise page's surgery."""
        return self.surgery("reinit", layer=layer, checkpoint=checkpoint)

    def rerand(self, layer: str, redraw: Optional[int] = None) -> "Loaded":
        """A copy of the model with `layer` drawn afresh from its initialisation (default: the page's redraw seed)."""
        return self.surgery("rerand", layer=layer, redraw=redraw)
