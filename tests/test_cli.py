"""The CLI: one JSON envelope whose result has the promised keys; bad arguments exit non-zero with one line."""

import json
import os
import subprocess
import sys

from .apptest_util import ROOT


def run_cli(*args: str, quick: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, LAYERLAB_QUICK="1" if quick else "0", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)


def test_delete_json_has_the_promised_keys():
    p = run_cli("delete", "--arch", "plain", "--k", "2", "--select", "evenly-spaced", "--recovery", "none", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["result"]
    for key in ("base_acc", "cut_acc", "recovered_acc", "dropped", "cut_probe_acc", "chance", "per_class"):
        assert key in r
    assert r["recovered_acc"] == r["cut_acc"]  # recovery none
    assert r["dropped"] == [1, 5]  # evenly-spaced: the spread-out pair of 7 blocks, original numbering
    assert set(r["per_class"]) >= {"base", "cut", "recovered"}


def test_bad_arguments_exit_nonzero_with_one_line():
    # Each case starts a Python process that imports torch: keep the list short.
    for args in (["delete", "--k", "9"], ["delete", "--arch", "tree"], ["delete", "--steps", "-5"],
                 ["table", "reinit", "--workers", "-1"]):
        p = run_cli(*args)
        assert p.returncode != 0, args
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "error" in lines[0], (args, p.stderr)
        assert "Traceback" not in p.stderr
