"""Measure IOT against its baselines on the residual MLP teacher and the digits ViT (1 thread).

python bench/iot_runs.py residual|vit-sequential [seed] [space] [key=value ...]
  -> prints a summary, writes /tmp/iot_out/iot_*.json
"""

import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab.core import model_registry  # noqa: E402
from lab.experiments.iot import experiment as iot  # noqa: E402

torch.set_num_threads(1)
which = sys.argv[1]
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
space = sys.argv[3] if len(sys.argv) > 3 else "blocks"
kw = dict(a.split("=") for a in sys.argv[4:])
spec = model_registry.model(which).spec(seed)
tkw = {k: type(getattr(spec.train, k))(v) for k, v in kw.items() if hasattr(spec.train, k)}
spec = replace(spec, train=replace(spec.train, **tkw))
ikw = {}
for k, v in kw.items():
    if hasattr(iot.IOTConfig, k) and not hasattr(spec.train, k):
        t = type(getattr(iot.IOTConfig(), k))
        ikw[k] = (v in ("1", "true", "True")) if t is bool else t(v)
cfg = iot.IOTConfig(model=which, space=space, seed=seed, **ikw)
t0, c0 = time.perf_counter(), time.process_time()
r = iot.compare(spec, cfg)
r["total_seconds"], r["total_cpu_seconds"] = time.perf_counter() - t0, time.process_time() - c0
r["config"] = asdict(cfg)
r["train_config"] = asdict(spec.train)
f = lambda v: [round(x, 3) for x in v]  # noqa: E731
print(which, seed, cfg, spec.train)
for k in ("orders", "sequential_acc", "fixed_acc", "fixed_probe_acc", "best_fixed_acc", "fixed_oracle_acc",
          "fixed_ensemble_acc", "fixed_best_share", "order_acc", "order_probe_acc", "shared_best_acc", "ensemble_acc",
          "oracle_acc", "best_share", "iot_acc", "choice_share", "oracle_agreement", "chance", "predictor_share"):
    v = r.get(k)
    print(f"  {k}: {f(v) if isinstance(v, list) and v and isinstance(v[0], float) else v}")
print("  cost:", {k: round(v, 2) for k, v in r["cost"].items()})
print("  curves test_acc:", f(r["curves"]["test_acc"]))
print("  curves entropy:", f(r["curves"]["choice_entropy"]))
print("  curves top_share:", f(r["curves"]["top_share"]))
print("  total", round(r["total_seconds"], 1), "s wall,", round(r["total_cpu_seconds"], 1), "s cpu")
out = Path("/tmp/iot_out")
out.mkdir(exist_ok=True)
name = f"iot_{which}_{space}_s{seed}" + "".join(f"_{k}{v}" for k, v in kw.items()) + ".json"
(out / name).write_text(json.dumps(r, default=str, indent=1))
