"""Re-initialise's bootstraps, computed at once on every rerun of the page, give what the plain loops give: each
draw's Spearman rho as `metrics.spearman`, and the paired bootstrap as gathering the resampled inputs."""

import math

import numpy as np
import pytest

from lab.core import metrics
from lab.experiments.reinit import claims as R


def test_spearman_rows_is_spearman_row_by_row_with_ties_and_constant_rows():
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 4, size=(300, 7)).astype(float)  # many ties
    rows[5] = 2.0  # no spread: NaN
    for a in ([0.3, 0.1, 0.1, 0.9, 0.5, 0.2, 0.7], [1.0] * 7):
        got = R._spearman_rows(a, rows)
        want = [metrics.spearman(a, r) for r in rows]
        for g, w in zip(got, want, strict=True):
            assert (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w, abs=1e-12)
    assert math.isnan(R._spearman_rows([0.3, 0.1, 0.2, 0.9, 0.5, 0.4, 0.7], rows)[5])


def test_paired_bootstrap_is_the_gathered_resamples_mean():
    rng = np.random.default_rng(4)
    vectors = [(rng.random(500) < p).astype(float) for p in (0.9, 0.6, 0.7)]

    def fn(accs):
        return accs[0] - accs[1] * accs[2]

    m = np.stack(vectors)
    idx = np.random.default_rng(7).integers(0, 500, size=(300, 500))
    want = float(np.std(fn(m[:, idx].mean(-1)), ddof=1))  # the gather the product replaces
    assert R.paired_bootstrap(vectors, fn, draws=300, seed=7) == pytest.approx(want, rel=1e-12)
