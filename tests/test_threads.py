"""Every native thread pool follows LAYERLAB_THREADS (lab/runtime/threads.py): torch's, the BLAS and OpenMP pools
already loaded when the lab starts, scipy's BLAS loaded after, and numba's; in a fresh process, as a server or a
worker starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json
from lab.runtime.threads import configure_threads
configure_threads()
import sklearn.linear_model  # loads scipy's own OpenBLAS after the limit was set
import numba
import torch
from threadpoolctl import threadpool_info
print(json.dumps({"torch": torch.get_num_threads(), "numba": numba.get_num_threads(),
                  "pools": [(p["internal_api"], p["num_threads"]) for p in threadpool_info()]}))
"""


@pytest.mark.parametrize("n", [1, 2])
def test_every_pool_gets_layerlab_threads(n):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env.update(LAYERLAB_THREADS=str(n), PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["torch"] == n and got["numba"] == n
    assert {a for a, _ in got["pools"]} >= {"openblas"}, got  # the pools the probes and PCAs run on were found
    assert all(k == n for _, k in got["pools"]), got


def test_a_probe_fits_on_one_blas_thread_whatever_the_process_set(monkeypatch):
    """lbfgs's rounding follows the BLAS thread count, so a probe's verdict would follow the machine's cores: the
    probe runs on one thread even in a process that allows more."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_info, threadpool_limits

    from lab.ops import embed

    seen: list[int] = []
    fit = LogisticRegression.fit

    def watched(self, *a, **k):
        seen.extend(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
        return fit(self, *a, **k)

    monkeypatch.setattr(LogisticRegression, "fit", watched)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(200, 8)), rng.integers(0, 3, 200)
    with threadpool_limits(2):
        embed.linear_probe_correct(x[:100], y[:100], x[100:], y[100:])
        assert max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas") == 2  # restored after
    assert seen and set(seen) == {1}, seen
