"""The lab's own baselines on MNIST-1D at the published size (4,000 train / 1,000 test), next to the published table.

- logistic regression: scikit-learn's LogisticRegression (lbfgs, L2 with C = 1, up to 5,000 iterations) on the 40
  values as they come from the package (already standardised by it).
- MLP: the lab's own plain MLP (`lab.core.models.MLP`: stem 40 -> 100 and one 100 -> 100 block, i.e. two hidden ReLU
  layers of 100 as in the paper, linear head) trained by the lab's trainer (`lab.core.train.train`) with the paper's
  recipe where the trainer has one: Adam, lr 1e-2, batch 100, no weight decay, 8,000 steps (200 epochs); the lab's
  trainer decays the learning rate on a cosine (the paper's keeps it constant). One run per seed.
Held-out accuracy on the 1,000 test signals (binomial standard error about 1.5 pts at these accuracies).
Published (Greydanus and Kobak, ICML 2024, table 1): logistic regression 32 %, MLP 68 %, CNN 94 %, GRU 91 %,
human 96 %.
Usage: PYTHONPATH=. .venv/bin/python bench/bench_mnist1d.py [--seeds 0,1,2] [--epochs 200] [--task mnist1d]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from lab.core.models import MLP, MLPConfig, accuracy
from lab.core.train import TrainConfig, train
from lab.core.zoo import build, task

PUBLISHED = {"logistic regression": 32, "MLP": 68, "CNN": 94, "GRU": 91, "human": 96}


def logistic(name: str) -> tuple[float, float]:
    """Held-out accuracy of logistic regression on the raw 40 values, and its seconds."""
    from sklearn.linear_model import LogisticRegression

    d = task(name)
    t = time.perf_counter()
    clf = LogisticRegression(max_iter=5_000).fit(d.train.x.numpy(), d.train.y.numpy())
    acc = float((clf.predict(d.test.x.numpy()) == d.test.y.numpy()).mean())
    return acc, time.perf_counter() - t


def mlp(name: str, seed: int, epochs: int) -> tuple[float, float]:
    """Held-out accuracy of the lab's plain MLP (two hidden layers of 100), and its seconds."""
    d = task(name)
    cfg = MLPConfig(arch="plain", n_in=d.n_features, n_out=d.n_classes, width=100, blocks=1)
    model = build(cfg, seed)
    assert isinstance(model, MLP)
    t = time.perf_counter()
    train(model, d.train, TrainConfig(epochs=epochs, batch=100, lr=1e-2, seed=seed, checkpoints=()))
    model.eval()
    with torch.no_grad():
        acc = accuracy(model, d.test.x, d.test.y)
    return float(acc), time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--task", default="mnist1d")
    args = ap.parse_args()
    torch.set_num_threads(1)
    t = time.perf_counter()
    d = task(args.task)
    print(f"{args.task}: {len(d.train):,} train / {len(d.test):,} test, {d.n_features} features, {d.n_classes} classes"
          f" (generated in {time.perf_counter() - t:.1f} s)")
    lr_acc, lr_s = logistic(args.task)
    print(f"logistic regression: {100 * lr_acc:.1f} %  ({lr_s:.1f} s)")
    accs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        acc, s = mlp(args.task, seed, args.epochs)
        accs.append(acc)
        print(f"MLP seed {seed}: {100 * acc:.1f} %  ({s:.1f} s)")
    mean = 100 * float(np.mean(accs))
    sd = 100 * float(np.std(accs, ddof=1)) if len(accs) > 1 else float("nan")
    print("\n| model | this lab | published |\n|---|---|---|")
    print(f"| logistic regression | {100 * lr_acc:.1f} % | {PUBLISHED['logistic regression']} % |")
    print(f"| MLP (2 x 100) | {mean:.1f} % (sd {sd:.1f} over {len(accs)} seeds) | {PUBLISHED['MLP']} % |")
    for k in ("CNN", "GRU", "human"):
        print(f"| {k} | not run | {PUBLISHED[k]} % |")
    print(f"\ntotal {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
