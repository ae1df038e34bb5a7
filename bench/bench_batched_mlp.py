"""Training time of the pages' MLP recipes (issue 59): M seeds trained one at a time by the lab's own loop
(lab/core/train.py: train, exactly as lab/core/zoo.py: trained fits a spec) against the same M seeds trained together
as one batched model (torch.func: stacked weights, vmap over the lab's own MLP forward). The MLPs are small (about
120 k weights, batches of 256), so a step's Python overhead may dominate its arithmetic, unlike the digits ViT's
(bench/bench_batched.py). Reported, never asserted; every figure is a ratio or a difference within this one run, with
the load average before and after.

Each batched member keeps everything its seed decides in the lab: its initial draw (zoo.build), its own training data
(zoo.task(task, seed=seed): the seed's bootstrap of the training split, lab/core/data_draw.py), its batch order (the
stream `train.batches`) and its routes (the stream `train.routes`: LayerDrop's dropped blocks, a mask per member), the
recipe's optimizer (lab/core/train.py: make_optimizer, Adam) and cosine schedule, and the held-out accuracy after
every epoch that train() records. Two batched optimizers are measured:
  stacked:    one Adam over the stacked weights (Adam is elementwise and every member steps at every step, so it is
              the M optimizers in one); not for LayerDrop, where a dropped block has no gradient and torch's Adam
              skips it (its moments and step count stay), which a stacked tensor cannot do per member;
  per-member: each member's own model and optimizer (make_optimizer on that model), the stacked weights built from
              them on every step; a block a member dropped gets no gradient (None), exactly as in train().
Neither keeps bit equality: a batched matmul rounds differently from one model's, and 1,000+ Adam steps carry the
difference forward. Per member the bench prints the largest |logit difference| on the held-out inputs between the
batched member and the model trained alone from the same draws, the share of held-out inputs whose prediction
differs, and both held-out accuracies.

Measured on a loaded 2-core host (1 thread, seeds 0-4, issue 59): batching does not pay for these MLPs.
One at a time / batched CPU time: x1.02 (plain, synthetic, stacked), x0.98 (residual on digits, stacked), x0.96 /
x0.83 per-member, x0.47 LayerDrop (per-member: its masks and per-member optimizers cost more than they save). A step
at batch 256 is ~65 % arithmetic already (3.8 ms, of which ~1.4 ms is the fixed cost of a batch-1 step). Members
were bit-equal to the alone-trained models on the synthetic task (plain and LayerDrop); on digits they drift (max
|logit diff| 4e-4 .. 3.7 over 1,525 steps) because the head's weight gradient at 10 outputs takes another matmul path
in the batched product (bmm and mm round differently there; at 20 outputs they agree).

Usage: PYTHONPATH=. .venv/bin/python bench/bench_batched_mlp.py [--models 5] [--recipes plain,residual-digits,layerdrop]
       [--threads 1] [--epochs N (override, for a quick look)]
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from dataclasses import replace
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from bench.machine import load_text
from lab.core import streams
from lab.core.models import MLP, accuracy
from lab.core.models.base import logits_of
from lab.core.page_models import model_spec_on
from lab.core.train import lr_factor, make_optimizer, route_sampler, train
from lab.core.zoo import ModelSpec, build, task

# the pages' MLP recipes: (registry model, task; None: its own)
RECIPES: dict[str, tuple[str, Optional[str]]] = {
    "plain": ("mlp7-plain", None),  # Delete / Re-initialise: the plain teacher on the synthetic task
    "residual": ("mlp7-residual", None),  # Delete / Re-initialise: the residual teacher
    "residual-digits": ("mlp7-residual", "digits"),  # Delete on digits (305 epochs of 5 small steps)
    "plain-digits": ("mlp7-plain", "digits"),
    "layerdrop": ("mlp8-residual.layerdrop0.5", None),  # LayerDrop's residual MLP at p = 0.5
}


class _Masked(nn.Module):
    """The lab's MLP forward with a per-block keep mask: a dropped block leaves the stream as it is, as a route
    without it does (the MLP ignores the slot; a residual block adds nothing, h exactly)."""

    def __init__(self, m: MLP) -> None:
        super().__init__()
        self.m = m

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        h = self.m.embed(x)
        for b in range(self.m.n_blocks):
            h = torch.where(keep[b], self.m.run_block(h, b, b), h)
        return self.m.readout(h)


def train_batched(specs: list[ModelSpec], stacked: bool = True) -> list[MLP]:
    """Train the MLPs of `specs` (one shape, one recipe, each its own seed) as one batched model; returns the trained
    models (each member's weights in a model of its own)."""
    cfg = specs[0].train
    assert all(replace(s.train, seed=0) == replace(cfg, seed=0) and s.model == specs[0].model for s in specs)
    m = len(specs)
    models: list[MLP] = [build(s.model, s.train.seed) for s in specs]  # type: ignore[misc]
    datas = [task(s.task, seed=s.train.seed) for s in specs]
    n = len(datas[0].train)
    assert all(len(d.train) == n for d in datas)
    xs = torch.stack([d.train.x for d in datas])
    ys = torch.stack([d.train.y for d in datas])
    test = datas[0].test
    masked = cfg.mode != "sequential"
    if masked and (cfg.mode != "layerdrop" or not models[0].residual):
        raise ValueError(f"mode {cfg.mode!r}: only LayerDrop on a residual MLP is masked here")
    if masked and stacked:
        raise ValueError("LayerDrop needs per-member optimizers (a dropped block's Adam state must stay)")
    base = copy.deepcopy(models[0]).to("meta")
    wrap = _Masked(base)
    nb = base.n_blocks

    def loss_one(p: dict, x: torch.Tensor, y: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        logits = functional_call(wrap, p, (x, keep)) if masked else functional_call(base, p, (x,))
        return F.cross_entropy(logits, y)

    def logits_one(p: dict, x: torch.Tensor) -> torch.Tensor:
        return functional_call(base, p, (x,))

    losses = vmap(loss_one, in_dims=(0, 0, 0, 0))
    logits = vmap(logits_one, in_dims=(0, None))
    names = [k for k, _ in models[0].named_parameters()]
    steps = math.ceil(n / cfg.batch)
    total = cfg.epochs * steps
    warm = round(cfg.warmup * total)
    if stacked:
        params, _ = stack_module_state(models)
        holder = nn.ParameterList([nn.Parameter(params[k].detach().clone()) for k in names])
        opts = [make_optimizer(holder, cfg)]  # type: ignore[arg-type]
        assert cfg.optimizer == "adam"  # AdamW's decay split reads ndim: a stacked matrix has 3
    else:
        opts = [make_optimizer(mod, s.train) for mod, s in zip(models, specs, strict=True)]
    scheds = [torch.optim.lr_scheduler.LambdaLR(o, lambda s: lr_factor(s, total, warm)) for o in opts]
    batch_gens = [streams.generator("train.batches", s.train.seed) for s in specs]
    route_gens = [streams.generator("train.routes", s.train.seed) for s in specs]
    sampler = route_sampler(cfg, nb)
    member_params = [dict(mod.named_parameters()) for mod in models]
    block_params = {b: [k for k in names if k.startswith(f"blocks.{b}.")] for b in range(nb)}
    keep = torch.ones(m, nb, dtype=torch.bool)
    prefix = "m." if masked else ""

    def current() -> dict[str, torch.Tensor]:
        if stacked:
            return {prefix + k: v for k, v in zip(names, holder, strict=True)}
        return {prefix + k: torch.stack([mp[k] for mp in member_params]) for k in names}

    curve: list[list[float]] = []
    for _ in range(cfg.epochs):
        orders = torch.stack([torch.randperm(n, generator=g) for g in batch_gens])
        for s in range(steps):
            idx = orders[:, s * cfg.batch:(s + 1) * cfg.batch]
            routes = [sampler(g) for g in route_gens]  # every member draws its route, as train() does
            if masked:
                keep = torch.zeros(m, nb, dtype=torch.bool)
                for i, r in enumerate(routes):
                    keep[i, list(r)] = True
            loss = losses(current(), torch.gather(xs, 1, idx[..., None].expand(-1, -1, xs.shape[2])),
                          torch.gather(ys, 1, idx), keep).sum()  # each member's own mean: its own gradient
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss.backward()
            if masked:  # a block a member's route dropped has no gradient, as in train()
                for i, b in torch.nonzero(~keep).tolist():
                    for k in block_params[b]:
                        member_params[i][k].grad = None
            for o, sc in zip(opts, scheds, strict=True):
                o.step()
                sc.step()
        with torch.no_grad():  # the held-out accuracy train() records after every epoch
            p = {k: v for k, v in zip(names, holder, strict=True)} if stacked else \
                {k: torch.stack([mp[k] for mp in member_params]) for k in names}
            curve.append([float((lg.argmax(-1) == test.y).float().mean()) for lg in logits(p, test.x)])
    if stacked:
        with torch.no_grad():
            for i in range(m):
                for k, v in zip(names, holder, strict=True):
                    member_params[i][k].copy_(v[i])
    for mod in models:
        mod.eval()
    return models


def train_alone(spec: ModelSpec) -> MLP:
    """One model trained as lab/core/zoo.py: trained fits it (its seed's data draw, the lab's loop)."""
    data = task(spec.task, seed=spec.train.seed)
    model = build(spec.model, spec.train.seed)
    train(model, data.train, spec.train, data.test)
    return model  # type: ignore[return-value]


def timed(fn: Any) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def compare(name: str, specs: list[ModelSpec], variants: list[str]) -> None:
    spec0 = specs[0]
    print(f"\n== {name}: {spec0.model.blocks}-block {spec0.model.arch} MLP on {spec0.task}, {spec0.train.epochs} "
          f"epochs, mode {spec0.train.mode}; seeds {[s.train.seed for s in specs]}", flush=True)
    test = task(spec0.task).test
    for s in specs:  # the data and its draws are built (and cached) before any clock starts
        task(s.task, seed=s.train.seed)
    w1, c1, alone = 0.0, 0.0, []
    for s in specs:
        w, c, mod = timed(lambda s=s: train_alone(s))
        w1, c1 = w1 + w, c1 + c
        alone.append(mod)
    print(f"one at a time: {w1:.1f} s wall, {c1:.1f} s CPU ({w1 / len(specs):.2f} s a model); {load_text()}",
          flush=True)
    ref = [logits_of(mod, test.x) for mod in alone]
    for v in variants:
        w, c, models = timed(lambda v=v: train_batched(specs, stacked=v == "stacked"))
        print(f"batched ({v}): {w:.1f} s wall, {c:.1f} s CPU; one at a time / batched: x{w1 / w:.2f} wall, "
              f"x{c1 / c:.2f} CPU; {load_text()}", flush=True)
        for s, a, b, r in zip(specs, alone, models, ref, strict=True):
            lg = logits_of(b, test.x)
            flips = float((lg.argmax(1) != r.argmax(1)).float().mean())
            same = all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values(),
                                                         strict=True))
            print(f"  seed {s.train.seed}: max |logit diff| {float((lg - r).abs().max()):.2e} (max |logit| "
                  f"{float(r.abs().max()):.1f}); predictions differ on {flips:.2%}"
                  f" of {len(test)}; held-out alone {accuracy(a, test.x, test.y):.2%}, batched "
                  f"{accuracy(b, test.x, test.y):.2%}; weights bit-equal: {same}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=5, help="seeds 0..M-1")
    ap.add_argument("--recipes", default="plain,residual-digits,layerdrop", help=f"of {', '.join(RECIPES)}")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: a per-core comparison)")
    ap.add_argument("--epochs", type=int, default=0, help="override the recipe's epochs (0: the recipe's)")
    ap.add_argument("--variants", default="stacked,per-member", help="batched optimizers: stacked, per-member")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); {load_text()}", flush=True)
    for name in args.recipes.split(","):
        reg, on = RECIPES[name]
        specs = [model_spec_on(reg, s, on) for s in range(args.models)]
        if args.epochs:
            specs = [replace(s, train=replace(s.train, epochs=args.epochs, checkpoints=())) for s in specs]
        variants = [v for v in args.variants.split(",") if v != "stacked" or specs[0].train.mode == "sequential"]
        compare(name, specs, variants)
    print(f"\n{load_text()}")


if __name__ == "__main__":
    main()
