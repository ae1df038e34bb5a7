"""Speed of the Delete experiment on this machine (reported, never asserted in tests).

Measures, in one run so that the figures share the machine's load: teacher training (goal <= 15 s), the greedy
search for k = 6 (goal <= 2 s), one KD recovery of 500 steps, and the server work of a cached slider change
(goal <= 0.3 s: the lab call served from the store plus building the page's figures).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_delete.py   (uses a fresh temporary store)
"""

import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ["LAYERLAB_CACHE"] = tempfile.mkdtemp(prefix="layerlab-bench-")
ROOT = Path(__file__).resolve().parents[1]

from app import figures_delete as figs  # noqa: E402
from lab.core.zoo import trained  # noqa: E402
from lab.experiments.delete import experiment as delete  # noqa: E402
from lab.ops import search  # noqa: E402
from lab.runtime.threads import configure_threads  # noqa: E402


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    threads = configure_threads()
    print(f"torch threads: {threads}; load average at start: {os.getloadavg()[0]:.2f}")
    cfg = delete.DeleteConfig()
    t_train, t = timed(lambda: trained(cfg.spec))
    print(f"teacher training (residual 8x128, {cfg.epochs} epochs): {t_train:.2f} s   (goal <= 15 s)")
    d = t.data
    t_greedy, _ = timed(lambda: search.greedy(t.model, 6, d.probe.x, d.probe.y), repeat=3)
    print(f"greedy search, k = 6: {t_greedy:.3f} s   (goal <= 2 s)")
    t_run, r = timed(lambda: delete.run(cfg))
    print(f"first delete.run (cut + KD 500 steps + selection comparison, teacher cached): {t_run:.2f} s "
          f"(of which recovery {r.recovery_seconds:.2f} s)")
    t_sweep, sw = timed(lambda: delete.sweep(delete.SweepConfig.of(cfg)))
    print(f"first sweep (both archs, k = 0..7, KD each): {t_sweep:.2f} s")

    def cached_change() -> None:  # what the server does when a slider moves to an already computed setting
        rr = delete.run(cfg)
        ss = delete.sweep(delete.SweepConfig.of(cfg))
        for f in (figs.per_class(rr), figs.recovery_curve(rr), figs.selections(rr), figs.single_block(ss),
                  figs.versus_k(ss)):
            f.to_json()

    t_cached, _ = timed(cached_change, repeat=5)
    print(f"cached slider change (store reads + 5 figures serialised): {t_cached:.3f} s   (goal <= 0.3 s)")
    # The whole page script on a slider change between two stored settings, as the server runs it (AppTest).
    from streamlit.testing.v1 import AppTest

    delete.run(replace(cfg, k=3))
    delete.sweep(delete.SweepConfig.of(replace(cfg, k=3)))
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
    at.run()
    at.switch_page(str(ROOT / "pages" / "delete.py"))
    at.run()
    times = []
    for k in (3, 2, 3, 2, 3, 2):
        t0 = time.perf_counter()
        at.slider(key="k").set_value(k).run()
        times.append(time.perf_counter() - t0)
        assert not at.exception
    t_page = sorted(times)[len(times) // 2]
    print(f"cached slider change, whole page script (AppTest, median of {len(times)}): {t_page:.3f} s "
          f"(goal <= 0.3 s)")
    print(f"ratios: greedy/teacher {t_greedy / t_train:.3f}, cached/teacher {t_cached / t_train:.4f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
