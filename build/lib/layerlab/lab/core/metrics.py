"""One definition per metric: every experiment, search, lens and page calls these (and nothing else computes them).

- `correct` / `accuracy`: the arg-max of the logits against the label, per input / as a share.
- `cosine`: cosine similarity of two hidden states per position (token), averaged over positions: one number per
  input. For the MLPs a state has one position, so it is the plain cosine.
- `block_influence` (Men et al. 2024, ShortGPT, eq. 1): BI = 1 - E_{x, t} cos(X_t, Y_t), per token t of each input,
  averaged over tokens and inputs; per input here, the caller averages over inputs.
- `angular_distance` (Gromov et al. 2024): arccos(cos) / pi per token, averaged, computed as 2 atan2(|u - v|,
  |u + v|) of the unit vectors, exactly 0 for a state and itself.
- `linear_cka` / `debiased_cka` (Kornblith et al. 2019; the unbiased HSIC of Song et al. 2012): similarity of two
  representations of the same inputs (rows), tokens flattened into features.
- `spearman` (average ranks for ties) and `permutation_p` (exact over orderings up to 8 items).
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

# Definitions: editing the prose here re-keys nothing that the code does not change (lab/runtime/codeversion.py).


def correct(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-input right/wrong (bool): the arg-max logit is the label."""
    return logits.argmax(-1) == y


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Share of inputs whose arg-max logit is the label."""
    return float(correct(logits, y).float().mean())


def per_input(v: torch.Tensor) -> torch.Tensor:
    """Average a per-position quantity over positions, leaving one number per input."""
    return v.mean(dim=tuple(range(1, v.dim()))) if v.dim() > 1 else v


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity per position (last axis = features), averaged over positions: one number per input."""
    return per_input(F.cosine_similarity(a.double(), b.double(), dim=-1, eps=1e-12))


def block_influence(h_in: torch.Tensor, h_out: torch.Tensor) -> torch.Tensor:
    """ShortGPT's block influence 1 - cos(input, output) per token, averaged over tokens: one number per input; 0
    for a block that leaves its input's direction unchanged."""
    return 1 - cosine(h_in, h_out)


def angular_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """arccos(cos(a, b)) / pi per position, averaged over positions: one number per input, in [0, 1]."""
    u = F.normalize(a.double(), dim=-1)
    v = F.normalize(b.double(), dim=-1)
    return per_input(2 * torch.atan2((u - v).norm(dim=-1), (u + v).norm(dim=-1)) / math.pi)


def gram(x: torch.Tensor) -> torch.Tensor:
    """The linear-kernel Gram matrix of a representation (rows = inputs), features centred, in float64."""
    x = x.reshape(len(x), -1).double()
    x = x - x.mean(0)
    return x @ x.T


def cka_of_grams(k: torch.Tensor, m: torch.Tensor) -> float:
    return float((k * m).sum() / (k.norm() * m.norm()).clamp_min(1e-30))


def linear_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    """Linear CKA (Kornblith et al. 2019): <K, L> / (|K| |L|) of the centred Gram matrices. 1 for the same
    representation, invariant to rotations and scaling; biased upward when features outnumber inputs."""
    return cka_of_grams(gram(x), gram(y))


def unbiased_hsic(k: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """The unbiased HSIC estimator of Song et al. (2012) for two n x n Gram matrices (n >= 4):
    [tr(K~ L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2/(n-2) 1'K~L~1] / (n (n-3)), with K~, L~ the Grams, diagonals zeroed."""
    n = k.shape[0]
    if n < 4:
        raise ValueError(f"the unbiased HSIC needs at least 4 inputs, got {n}")
    k = k - torch.diag(torch.diag(k))
    m = m - torch.diag(torch.diag(m))
    ones = torch.ones(n, dtype=k.dtype)
    trace = (k * m).sum()
    cross = (ones @ k @ ones) * (ones @ m @ ones) / ((n - 1) * (n - 2))
    middle_term = 2.0 / (n - 2) * (ones @ k) @ (m @ ones)
    return (trace + cross - middle_term) / (n * (n - 3))


def debiased_cka_of_grams(k: torch.Tensor, m: torch.Tensor) -> float:
    denom = torch.sqrt((unbiased_hsic(k, k) * unbiased_hsic(m, m)).clamp_min(1e-30))
    return float(unbiased_hsic(k, m) / denom)


def debiased_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    """Linear CKA from the unbiased HSIC (Nguyen, Raghu, Kornblith 2021): near 0 for independent representations
    however many features they have, 1 for the same one; it can dip slightly below 0."""
    return debiased_cka_of_grams(gram(x), gram(y))


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rho with average ranks for ties; NaN when either side has no spread."""
    from scipy.stats import rankdata

    ra, rb = rankdata(np.asarray(a, float)), rankdata(np.asarray(b, float))
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def permutation_p(a: Sequence[float], b: Sequence[float], draws: int = 20_000, seed: int = 0) -> float:
    """One-sided p-value of rho(a, b) against every ordering of b (exact up to 8 items, else `draws` random ones):
    the share of orderings whose rho is at least the observed one."""
    from scipy.stats import rankdata

    ra, rb = rankdata(np.asarray(a, float)), rankdata(np.asarray(b, float))
    n = len(ra)
    if n < 3 or ra.std() == 0 or rb.std() == 0:
        return 1.0
    if n <= 8:
        perms = np.array(list(itertools.permutations(range(n))))
    else:
        rng = np.random.default_rng(seed)
        perms = np.array([rng.permutation(n) for _ in range(draws)])
    za = (ra - ra.mean()) / ra.std()
    zb = (rb - rb.mean()) / rb.std()
    rhos = (zb[perms] * za).mean(1)
    observed = float((za * zb).mean())
    return float((rhos >= observed - 1e-12).mean())
