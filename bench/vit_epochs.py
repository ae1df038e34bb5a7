"""How many epochs the digits ViT recipes need: held-out accuracy at a few epoch budgets (a recipe decision's sweep).

    PYTHONPATH=. .venv/bin/python bench/vit_epochs.py --epochs 20 30 40 --seeds 0 1 2 [--models vit6.shuffle ...]

Each registry model (lab/core/model_registry.py) is trained at each budget with the recipe otherwise unchanged (the
cosine anneals over the budget), into the active store (a budget's model is stored under its own key, so a rerun reads
it). Reports each model's held-out accuracy in its trained order and, for a LayerShuffle or LayerDrop recipe, the mean
over 20 random block orders or over 20 random halves of its blocks (what those pages test), and the training seconds.
Accuracy is on the held-out split; the sweep reads nothing else.
"""

from __future__ import annotations

import argparse
import math
import statistics

import torch

from lab.core import model_registry, page_models, recipes
from lab.core import routes as R
from lab.core.models.base import accuracy
from lab.core.zoo import trained
from lab.runtime.threads import configure_threads

DEFAULT_MODELS = ("vit6", "vit6.shuffle", "vit6.layerdrop0.5", "vit6.ln-scale", "vit6.early-exit", "vit3.looped2")
DRAWS = 20


def scores(name: str, epochs: int, seed: int) -> tuple[float, float, float]:
    """(held-out accuracy in the trained order, the mean over random orders or halves (NaN for other recipes),
    training seconds) of registry model `name` trained for `epochs` at `seed`."""
    spec = page_models.resized(model_registry.model(name).spec(seed), epochs=epochs)
    t = trained(spec)
    d = t.data
    own = accuracy(t.model, d.test.x, d.test.y)
    route = spec.model.depth  # the plain order (the shuffle and LayerDrop recipes are not looped)
    gen = torch.Generator().manual_seed(1234 + seed)
    if spec.train.mode == "shuffle":
        other = [accuracy(t.model, d.test.x, d.test.y, R.random_order(route, "include", gen)) for _ in range(DRAWS)]
    elif spec.train.mode == "layerdrop":
        n = len(R.steps_of(route))
        other = [accuracy(t.model, d.test.x, d.test.y, tuple(sorted(torch.randperm(n, generator=gen)[: n // 2]
                                                                   .tolist()))) for _ in range(DRAWS)]
    else:
        other = [float("nan")]
    return own, statistics.mean(other), float(t.info.get("seconds", float("nan")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, nargs="+", default=[20, 30, recipes.VIT_EPOCHS])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    args = ap.parse_args()
    configure_threads()
    print(f"{'model':20s} {'epochs':>6s} {'in order (each seed)':28s} {'mean':>6s} {'orders/halves':>13s} "
          f"{'s/training':>10s}", flush=True)
    for name in args.models:
        for epochs in args.epochs:
            got = [scores(name, epochs, s) for s in args.seeds]
            other = [g[1] for g in got]
            print(f"{name:20s} {epochs:6d} {' '.join(f'{g[0]:.1%}' for g in got):28s} "
                  f"{statistics.mean(g[0] for g in got):6.1%} "
                  f"{'' if math.isnan(other[0]) else format(statistics.mean(other), '.1%'):>13s} "
                  f"{statistics.mean(g[2] for g in got):10.1f}", flush=True)


if __name__ == "__main__":
    main()
