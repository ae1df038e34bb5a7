"""CPU-seconds per check of a hostile upload: csv.Sniffer on the sample (what lab/core/data_csv.py ran before its
linear delimiter check) against the lab's whole check now (data_csv.read_csv), at 16 / 32 / 64 kB of quote and
delimiter soup, as a ratio within this one run; and how long another thread's small task (a 1 ms pause, then 1,000
additions: a stand-in for another session's page) took at worst meanwhile, since a check holds the GIL while it runs
C code.

The hostile text repeats a delimiter, a space and a quote (`, "a`): each quote starts a match of Sniffer's regular
expression that scans to the end of the sample for a closing quote followed by the same delimiter, so its cost grows
with the square of the sample. Reported, never asserted (the issue's goal: each check <= 0.5 CPU-s).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_upload_check.py [--sizes 16,32,64] [--pattern ', "a']
"""

from __future__ import annotations

import argparse
import csv
import os
import threading
import time
from typing import Callable

from lab.core import data_csv


def hostile(size: int, pattern: str) -> bytes:
    """`size` bytes of `pattern` repeated."""
    return (pattern * (size // len(pattern) + 1))[:size].encode()


def old_check(data: bytes) -> None:
    """What the lab ran first on an upload: csv.Sniffer on the first 64 kB (its regular expression)."""
    try:
        csv.Sniffer().sniff(data.decode()[:65536], delimiters=",;\t")
    except csv.Error:
        pass


def new_check(data: bytes) -> None:
    """The lab's whole check of an upload now (refused with a message, as every hostile file is)."""
    try:
        data_csv.read_csv(data)
    except ValueError:
        pass


def _task() -> float:
    """Wall seconds of a 1 ms pause (which gives up the GIL) and 1,000 additions: what a page asking for the GIL
    waits, beyond its own 1 ms."""
    t = time.perf_counter()
    time.sleep(0.001)
    sum(range(1000))
    return time.perf_counter() - t - 0.001


def measured(check: Callable[[bytes], None], data: bytes) -> tuple[float, float]:
    """(CPU-s of `check(data)` on its own thread, the longest another thread's small task took meanwhile)."""
    cpu: list[float] = []

    def work() -> None:
        t = time.thread_time()
        check(data)
        cpu.append(time.thread_time() - t)

    th = threading.Thread(target=work)
    th.start()
    worst = 0.0
    while th.is_alive():
        worst = max(worst, _task())
    th.join()
    return cpu[0], worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,32,64", help="kB of hostile text, comma-separated")
    ap.add_argument("--pattern", default=', "a', help="the text repeated")
    args = ap.parse_args()
    new_check(hostile(1024, args.pattern))  # imports and first-call costs out of the figures
    alone = max(_task() for _ in range(200))
    print(f"load average {os.getloadavg()[0]:.2f}; pattern {args.pattern!r}; another thread's small task alone: "
          f"{1000 * alone:.2f} ms at worst")
    print(f"{'kB':>4} {'old CPU-s':>10} {'new CPU-s':>10} {'old/new':>9} {'other task, old':>16} "
          f"{'other task, new':>16}")
    for kb in (int(s) for s in args.sizes.split(",")):
        data = hostile(kb * 1024, args.pattern)
        old_cpu, old_wait = measured(old_check, data)
        new_cpu, new_wait = measured(new_check, data)
        print(f"{kb:>4} {old_cpu:>10.3f} {new_cpu:>10.4f} {old_cpu / max(new_cpu, 1e-6):>8.0f}x "
              f"{old_wait:>15.3f}s {new_wait:>15.4f}s")


if __name__ == "__main__":
    main()
