"""Measure the IOT page's default configs (M = 4, 1 torch thread) through the cached entry points.

python bench/iot_page_runs.py SEED MODEL:SPACE [MODEL:SPACE ...]  -> one summary line per piece, JSON in /tmp/iot_out
Each piece is timed (wall and CPU s) in a private store, so every number is a fresh training.
"""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LAYERLAB_CACHE", "/tmp/iot-bench-cache")
from lab.core.zoo import trained  # noqa: E402
from lab.experiments.iot import experiment as iot  # noqa: E402
from lab.runtime.store import to_plain  # noqa: E402
from lab.runtime.threads import configure_threads  # noqa: E402

configure_threads()
seed = int(sys.argv[1])
out = Path("/tmp/iot_out")
out.mkdir(exist_ok=True)


def timed(fn, *args):
    t0, c0 = time.perf_counter(), time.process_time()
    r = fn(*args)
    return r, time.perf_counter() - t0, time.process_time() - c0


for item in sys.argv[2:]:
    model, space = item.split(":")
    cfg = iot.IOTConfig(model=model, space=space, seed=seed)
    _, sw, sc = timed(trained, cfg.spec)
    obs, ow, oc = timed(iot.observe, cfg.observe_cfg)
    tr, tw, tc = timed(iot.training, cfg)
    col, cw, cc = timed(iot.collapse, cfg)
    r = iot.run(cfg)
    f = lambda v: [round(x, 3) for x in v]  # noqa: E731
    print(f"== {model} {space} seed {seed}: sequential model {sw:.1f} s wall / {sc:.1f} s cpu (0 if stored); "
          f"Part 1 (3 fixed orders) {ow:.1f} / {oc:.1f}; IOT {tw:.1f} / {tc:.1f} (loop alone "
          f"{tr.cost['iot_train_seconds']:.1f} / {tr.cost['iot_train_cpu_seconds']:.1f}); explore-off twin "
          f"{cw:.1f} / {cc:.1f}")
    for k in ("orders", "sequential_acc", "fixed_acc", "best_fixed_order", "best_fixed_acc", "fixed_oracle_acc",
              "fixed_ensemble_acc", "fixed_best_share", "sequential_order_acc", "order_acc", "shared_best_acc",
              "ensemble_acc", "oracle_acc", "best_share", "iot_acc", "choice_share", "oracle_agreement", "chance"):
        v = r[k]
        print(f"  {k}: {f(v) if isinstance(v, list) and v and isinstance(v[0], float) else v}")
    print("  entropy:", f(r["curves"]["choice_entropy"])[:: max(1, len(r["curves"]["choice_entropy"]) // 10)])
    print("  explore off: iot", round(col["off"]["iot_acc"], 4), "shares", f(col["off"]["choice_share"]),
          "order_acc", f(col["off"]["order_acc"]))
    (out / f"page_{model}_{space}_s{seed}.json").write_text(json.dumps(to_plain({"run": r, "collapse": col,
        "seconds": {"seq": [sw, sc], "observe": [ow, oc], "iot": [tw, tc], "collapse": [cw, cc]}}), indent=1))
    sys.stdout.flush()
