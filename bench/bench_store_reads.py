"""The store's read cost before and after sealing (lab/runtime/sealed.py), in one run on the same entries.

The store before is loaded from git (`--before`, default the commit before sealing came in), so both read the same
values from the same disk in the same process: JSON results and models, each written by its own store, read through
`Store.json` / `Store.tensors` (the fast path, no lock), rounds interleaved; the median per entry is kept.
Entries come from `--from STORE` (a store of either format; nothing is written there) or are made up at the sizes
of a warmed store (results 1-180 kB, models 0.5-7 MB).

    PYTHONPATH=. .venv/bin/python bench/bench_store_reads.py [--from /path/to/store] [--rounds 15]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lab.runtime import store as new_store

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class BenchCfg:
    i: int


def _before_rev() -> str:
    first = subprocess.run(["git", "log", "--format=%H", "--", "lab/runtime/sealed.py"], cwd=ROOT, text=True,
                           capture_output=True).stdout.split()
    return f"{first[-1]}^" if first else "HEAD"


def _old_module(rev: str) -> Any:
    text = subprocess.run(["git", "show", f"{rev}:lab/runtime/store.py"], cwd=ROOT, text=True, capture_output=True,
                          check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="bench-old-store-")) / "old_store.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("old_store", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _entries(source: Path | None) -> tuple[list[Any], list[tuple[dict[str, torch.Tensor], Any]]]:
    """(JSON values, (tensors, meta) models) to store."""
    from safetensors.torch import load

    if source is None:
        g = torch.Generator().manual_seed(0)
        values = [{"acc": [float(x) for x in torch.rand(n, generator=g)]} for n in (50, 500, 2_000, 9_000)]
        models = [({"w": torch.randn(n, generator=g)}, {"loss": [1.0, 0.5]}) for n in (120_000, 800_000, 1_800_000)]
        return values, models
    values, models = [], []
    for p in sorted(source.glob("*/*.json")):
        if p.name.endswith(".meta.json") or p.parent.name in ("timings", "jobs"):
            continue
        data = json.loads(p.read_bytes())
        values.append(data["entry"]["value"] if isinstance(data, dict) and "sha256" in data else data)
    for p in sorted(source.glob("*/*.safetensors")):
        data = p.read_bytes()
        n = int.from_bytes(data[:8], "little")
        meta = json.loads(json.loads(data[8:8 + n])["__metadata__"]["lab_meta"])
        models.append((load(data), meta))
    return values, models


def _time(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="source", default=None, help="a store to take entries from (read only)")
    ap.add_argument("--before", default=None, help="git revision of the store before sealing")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    rev = args.before or _before_rev()
    old = _old_module(rev)
    values, models = _entries(Path(args.source) if args.source else None)
    work = Path(tempfile.mkdtemp(prefix="bench-store-reads-"))
    stores = {"before": old.Store(work / "before"), "after": new_store.Store(work / "after")}
    for s in stores.values():
        for i, v in enumerate(values):
            s.json("benchr", BenchCfg(i), lambda v=v: v)
        for i, m in enumerate(models):
            s.tensors("benchm", BenchCfg(i), lambda m=m: m)

    def fail() -> Any:
        raise AssertionError("a read rebuilt")

    def reads(s: Any, what: str, count: int) -> list[float]:
        read = s.json if what == "json" else s.tensors
        kind = "benchr" if what == "json" else "benchm"
        return [_time(lambda i=i: read(kind, BenchCfg(i), fail)) for i in range(count)]

    times: dict[tuple[str, str], list[list[float]]] = {}
    for _ in range(args.rounds):
        for name, s in stores.items():
            times.setdefault((name, "json"), []).append(reads(s, "json", len(values)))
            times.setdefault((name, "model"), []).append(reads(s, "model", len(models)))
    print(f"# before = git {rev} (store.py), after = this checkout; {args.rounds} rounds, median per entry, "
          f"{sys.platform}, torch threads {torch.get_num_threads()}")
    for what, count in (("json", len(values)), ("model", len(models))):
        per = {name: [statistics.median(r[i] for r in times[(name, what)]) for i in range(count)]
               for name in stores}
        folder = work / "after" / ("benchr" if what == "json" else "benchm")
        suffix = ".json" if what == "json" else ".safetensors"
        sizes = sorted(p.stat().st_size for p in folder.iterdir()
                       if p.name.endswith(suffix) and not p.name.endswith(".meta.json"))
        b, a = sum(per["before"]) * 1e3, sum(per["after"]) * 1e3
        print(f"{what:5s} {count:3d} entries ({sizes[0] / 1e3:.0f}-{sizes[-1] / 1e3:.0f} kB): before {b:.2f} ms, "
              f"after {a:.2f} ms, ratio after/before {a / b:.2f}")


if __name__ == "__main__":
    main()
