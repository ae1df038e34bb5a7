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
