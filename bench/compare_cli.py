"""Behaviour check for refactors: the science fields of the CLI's --json result must not change.

    PYTHONPATH=. .venv/bin/python bench/compare_cli.py --record bench/cli_baseline.json   # before a refactor
    PYTHONPATH=. .venv/bin/python bench/compare_cli.py --check bench/cli_baseline.json    # after it

Runs every experiment's command for its default config and one or two non-default ones (real training, not quick
mode; tens of minutes on 2 cores) in a private store, flattens each JSON answer into (path, value) leaves and
compares every science leaf: every accuracy, every chosen block, every claim. Timings (keys containing "seconds" or
"time_ratio") are left out. Answers are compared by their "result" (the --json envelope's, docs/cli-output.schema.json;
a baseline recorded before the envelope holds bare answers, which were the results themselves but for Shuffle's).
A key renamed on purpose is listed in RENAMES (old path prefix -> new), so a renamed field still has to carry
the same value; a field that vanished without a rename is a failure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from typing import Any, Optional

COMMANDS: dict[str, list[str]] = {
    "delete-default": ["delete"],
    # issue 8 renamed the Delete page's "every-other" (evenly spaced) to "evenly-spaced": one meaning per name
    "delete-plain-every-other-ce": ["delete", "--arch", "plain", "--k", "1", "--select", "evenly-spaced",
                                    "--recovery", "ce", "--steps", "200"],
    "delete-random-none-seed1": ["delete", "--k", "3", "--select", "random", "--recovery", "none", "--seed", "1"],
    "layerdrop-default": ["layerdrop"],
    "layerdrop-greedy-kd": ["layerdrop", "--p", "0.2", "--keep", "6", "--strategy", "greedy", "--recovery", "kd",
                            "--steps", "200"],
    "layerdrop-random-seed1": ["layerdrop", "--p", "0", "--keep", "2", "--strategy", "random", "--seed", "1"],
    "shuffle-default": ["shuffle"],
    "shuffle-sequential-d3": ["shuffle", "--mode", "sequential", "--depth", "3", "--orders", "20"],
    "shuffle-predict-d2-seed1": ["shuffle", "--mode", "predict", "--depth", "2", "--orders", "10", "--seed", "1"],
    "reinit-default": ["reinit"],
    "reinit-residual-focus-kd": ["reinit", "--model", "residual", "--layer", "blocks.2", "--op", "rerand",
                                 "--recovery", "kd", "--steps", "100"],
    "reinit-vit-small-focus": ["reinit", "--model", "vit", "--blocks", "3", "--epochs", "4", "--layer", "head",
                               "--checkpoint", "1"],
    # issue 18 (descriptors and the lab/ layout): the experiments added since
    "iot-default": ["iot"],
    "iot-m2-seed1": ["iot", "--m", "2", "--no-gumbel", "--seed", "1"],
    "rearrange-default": ["rearrange"],
    "rearrange-residual-loop": ["rearrange", "--model", "residual", "--op", "loop", "--loops", "3"],
    "rearrange-vit-repeat-span": ["rearrange", "--model", "vit-sequential", "--op", "repeat", "--span", "2"],
    "lens-default": ["lens"],
    "lens-residual-delete": ["lens", "--model", "residual", "--route-op", "delete", "--block", "3"],
}

# Deliberate renames of result fields since the baseline was recorded: (command-name prefix, old leaf-path prefix)
# -> new leaf-path prefix; a `*` stands for any one segment (the same in the new path), and a new path ending in
# LEN is the length of that list. The renames of issue 8 (`teacher_acc` -> `base_acc` and the like) applied to an
# older baseline and are in the git history. Issue 28 made --json print Shuffle's whole result instead of a subset
# with names of its own: bench/cli_baseline.json (recorded before) holds that subset, found here in the result.
LEN = "#len"
RENAMES: dict[tuple[str, str], str] = {
    ("shuffle", "depth"): "n_blocks",
    ("shuffle", "sequential_acc"): "base_acc",
    ("shuffle", "random_order_acc.n"): "random_orders.accs" + LEN,
    ("shuffle", "random_order_acc"): "random_orders",
    ("shuffle", "all_orders_acc"): "all_orders",
    ("shuffle", "position_probe_acc_unit"): "probe.acc_direction",
    ("shuffle", "position_probe_acc"): "probe.acc",
    ("shuffle", "probe_chance"): "probe.chance",
    ("shuffle", "pruning.*.random_order_mean"): "pruning.*.random_order.mean",
    ("shuffle", "pruning.*.trained_order_mean"): "pruning.*.trained_order.mean",
    ("shuffle", "comparison.*.random_order_acc"): "comparison.*.random_orders",
    ("shuffle", "comparison.*.position_probe_acc"): "comparison.*.probe.acc",
    # Re-initialise counts its model's depth in blocks, as every model of the lab (--blocks 3 is the old --depth 3
    # for the ViT; the default, None, is the same model either way)
    ("reinit", "config.depth"): "config.blocks",
    ("reinit", "focus.config.depth"): "focus.config.blocks",
    # Rearrange's "depth" counted a route's sequential steps, not blocks: it says so now
    ("rearrange", "depth"): "sequential_steps",
}

# Issue 18 moved lab/ into folders: a claim's `source` that names a file names it at its new path.
PATH_RENAMES = {"lab/recover.py": "lab/ops/recover.py", "lab/recipes.py": "lab/core/recipes.py",
                "lab/lens.py": "lab/ops/layer_lens.py", "lab/iot.py": "lab/experiments/iot/routing.py",
                "lab/ops/order_routing.py": "lab/experiments/iot/routing.py",
                "lab/prune.py": "lab/ops/selection.py", "lab/ops/prune.py": "lab/ops/selection.py",
                "lab/selection.py": "lab/ops/selection.py",
                "lab/search.py": "lab/ops/search.py", "lab/surgery.py": "lab/ops/surgery.py",
                "lab/embed.py": "lab/ops/embed.py", "lab/train.py": "lab/core/train.py",
                "lab/streams.py": "lab/core/streams.py", "lab/zoo.py": "lab/core/zoo.py"}
TIMING = ("seconds", "time_ratio")  # wall-clock measurements, not science: left out of the comparison


def flatten(obj: Any, path: str = "") -> dict[str, Any]:
    """JSON value -> {"a.b.3.c": leaf}; timing leaves are dropped."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if any(t in k for t in TIMING):
                continue
            out.update(flatten(v, f"{path}.{k}" if path else k))
        return out
    if isinstance(obj, list):
        out = {}
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{path}.{i}"))
        return out
    return {path: obj}


def renamed(name: str, path: str) -> str:
    """The leaf's path now: the first of RENAMES whose old prefix (segment by segment, `*` for any) it starts with."""
    segs = path.split(".")
    for (cmd, old), new in RENAMES.items():
        o = old.split(".")
        if not name.startswith(cmd) or len(segs) < len(o):
            continue
        pairs = list(zip(o, segs[:len(o)], strict=True))
        if any(a not in ("*", b) for a, b in pairs):
            continue
        stars = [b for a, b in pairs if a == "*"]
        return ".".join([stars.pop(0) if s == "*" else s for s in new.split(".")] + segs[len(o):])
    return path


def leaf(new: dict[str, Any], path: str) -> Optional[tuple[Any]]:
    """(value,) of a flattened answer's leaf, or of the length of a list for a path ending in LEN; None if absent."""
    if path.endswith(LEN):
        prefix = path[:-len(LEN)] + "."
        n = sum(1 for k in new if k.startswith(prefix) and k[len(prefix):].isdigit())
        return (n,) if n else None
    return (new[path],) if path in new else None


def same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        for old, new in PATH_RENAMES.items():
            a = a.replace(old, new)
        return a == b
    if isinstance(a, float) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    return a == b


def run_all(cache: str, only: str = "", quick: bool = False, root: Optional[str] = None) -> dict[str, Any]:
    """Every command's result, run in the checkout `root` (default: this one); `quick`: in quick mode (one epoch per
    model: the same code paths in minutes, for comparing two checkouts with each other, never with a baseline
    recorded in full)."""
    env = {**os.environ, "LAYERLAB_CACHE": cache, "LAYERLAB_THREADS": "1"}
    env.pop("LAYERLAB_QUICK", None)
    if quick:
        env["LAYERLAB_QUICK"] = "1"
    if root:
        env["PYTHONPATH"] = root
    out = {}
    for name, args in COMMANDS.items():
        if not name.startswith(only):
            continue
        print(f"running {name}: python -m lab {' '.join(args)} --json", file=sys.stderr, flush=True)
        p = subprocess.run([sys.executable, "-m", "lab", *args, "--json"], env=env, capture_output=True, text=True,
                           cwd=root)
        if p.returncode != 0:
            raise SystemExit(f"{name} failed ({p.returncode}): {p.stderr.strip()[-500:]}")
        data = json.loads(p.stdout)
        # the envelope's whole result; a checkout from before the envelope printed the bare answer
        out[name] = data["result"] if isinstance(data, dict) and "schema_version" in data else data
    return out


def check(base: dict[str, Any], now: dict[str, Any]) -> list[str]:
    problems = []
    for name, old in base.items():
        if name not in now:
            problems.append(f"{name}: not run")
            continue
        new = flatten(now[name])
        for path, value in flatten(old).items():
            if path.startswith("config."):
                continue  # the echoed config may gain fields; its science is in the other leaves
            p = renamed(name, path)
            now_value = leaf(new, p)
            if now_value is None:
                problems.append(f"{name}: {path} missing (as {p})")
            elif not same(value, now_value[0]):
                problems.append(f"{name}: {path} was {value!r}, now {now_value[0]!r}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", help="write the current answers to this file")
    g.add_argument("--check", help="compare the current answers with this file")
    ap.add_argument("--cache", default=None, help="store to use (default: a fresh temporary folder)")
    ap.add_argument("--only", default="", help="run only the commands whose name starts with this")
    ap.add_argument("--quick", action="store_true", help="quick mode (compare two checkouts recorded alike)")
    ap.add_argument("--root", default=None, help="run the commands of this checkout (default: this one)")
    args = ap.parse_args()
    cache = args.cache or tempfile.mkdtemp(prefix="layerlab-compare-")
    now = run_all(cache, args.only, args.quick, args.root)
    if args.record:
        with open(args.record, "w") as fh:
            json.dump(now, fh, indent=0, sort_keys=True)
        print(f"recorded {len(now)} answers in {args.record}")
        return 0
    with open(args.check) as fh:
        base = json.load(fh)
    base = {k: v for k, v in base.items() if k.startswith(args.only)}
    problems = check(base, now)
    n = sum(len(flatten(v)) for v in base.values())
    for p in problems:
        print(p)
    print(f"{len(base)} commands, {n} leaves compared: {'SAME' if not problems else f'{len(problems)} differences'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
