"""When the server's garbage collector may walk the heap: after start-up and between runs, never inside one.

A full (generation 2) collection walks every container object the collector tracks and holds the GIL while it does:
0.28 s with the 570k objects of a server that has drawn every page, so any page that reran at that moment took that
long. Python starts one by itself whenever enough survivors pile up, i.e. at a random page run.

The policy:
- after every page run, a collection of the objects made since the last run frees the run's own garbage cycles
  (it walks only those: everything older is frozen), then `gc.freeze()` moves the survivors out of the collector's
  view (O(1): the tracked lists are spliced). Automatic collections then only ever walk objects younger than the
  last run. Freezing stops nothing from being freed by reference counting; only an old object that later dies in
  a reference cycle (an evicted cache entry, say) waits, in the frozen set, for the next step.
- `sweep()` gives everything back to the collector, collects it all once, and freezes the survivors again. A
  daemon thread runs it when no page has run for IDLE_S and the frozen set has grown by SWEEP_GROWTH objects since
  the last sweep, so the walk happens when no student waits for it; on a server that is never idle it runs anyway
  once the frozen set has grown by FORCE_GROWTH, so memory held by cycles stays bounded.
"""

from __future__ import annotations

import gc
import logging
import threading
import time

log = logging.getLogger(__name__)

IDLE_S = 5.0  # no page run for this long: the server is idle enough for a full collection
SWEEP_GROWTH = 200_000  # objects frozen since the last sweep before another one is worth its pause
FORCE_GROWTH = 2_000_000  # ... and before one is due even while pages keep running
CHECK_EVERY_S = 2.0

_lock = threading.Lock()
_state = {"last_run": time.monotonic(), "frozen_after_sweep": 0, "sweeps": 0, "started": False}


def after_run() -> None:
    """End of a page run: what survived it leaves the collector's view."""
    with _lock:
        _state["last_run"] = time.monotonic()
    gc.collect()
    gc.freeze()


def sweep() -> int:
    """One full collection of everything, frozen objects included, then freeze the survivors; returns the objects
    collected."""
    gc.unfreeze()
    found = gc.collect()
    gc.freeze()
    with _lock:
        _state["frozen_after_sweep"] = gc.get_freeze_count()
        _state["sweeps"] += 1
    return found


def due(now: float) -> bool:
    """Whether the sweeper should sweep now: idle long enough and enough frozen since the last sweep, or so much
    frozen that it cannot wait for idle time."""
    with _lock:
        idle = now - _state["last_run"] >= IDLE_S
        grown = gc.get_freeze_count() - _state["frozen_after_sweep"]
    return (idle and grown >= SWEEP_GROWTH) or grown >= FORCE_GROWTH


def _sweeper() -> None:
    while True:
        time.sleep(CHECK_EVERY_S)
        try:
            if due(time.monotonic()):
                t0 = time.perf_counter()
                found = sweep()
                log.info("idle sweep: %d objects collected in %.2f s", found, time.perf_counter() - t0)
        except Exception:  # noqa: BLE001 - the sweeper must outlive a bad moment; the next check tries again
            log.exception("the idle garbage sweep failed")


def start() -> None:
    """Once per server, after start-up: collect and freeze what lives as long as the server (modules, torch,
    plotly, the catalog), and start the idle sweeper."""
    with _lock:
        if _state["started"]:
            return
        _state["started"] = True
    sweep()
    threading.Thread(target=_sweeper, name="layerlab-gc-sweeper", daemon=True).start()
