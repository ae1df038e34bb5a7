"""The study rules' false rates and power (the figures behind tests/test_study_nulls.py), at 2,000 simulated studies
each, through lab.claims.pool and lab/study/stats.py, with the naive rule beside on the same draws.

    PYTHONPATH=. .venv/bin/python bench/study_nulls.py [--sims 2000]
"""

from __future__ import annotations

import argparse

import numpy as np

from lab.study import stats
from tests import study_sim as S
from tests.test_study_nulls import MARGIN, J, naive_trend


def rate(hits: int, n: int) -> str:
    return f"{100 * hits / n:5.1f} % (95 % CI {100 * S.lower(hits, n):.1f}-{100 * S.upper(hits, n):.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=2000)
    n = ap.parse_args().sims
    rng = np.random.default_rng(58)
    sd = np.linspace(0.01, 0.04, J)
    null = [S.cells(rng, [0.0] * J, model=sd, inputs=0.25, noise=0.15, margin=MARGIN) for _ in range(n)]
    print(f"{n} simulated studies of {J} values x 5 seeds each")
    print("appears from, global null:   new", rate(sum(stats.appears_from(c) is not None for c in null), n),
          "| naive", rate(sum(any(x.holds for x in c) for c in null), n))
    print("trend, no trend:             new", rate(sum(stats.trend(c).direction is not None for c in null), n),
          "| naive", rate(sum(naive_trend(c) for c in null), n))
    part = [S.cells(rng, [0.0, 0.0, 0.0, 0.0, 0.08], margin=MARGIN) for _ in range(n)]
    print("appears from, partial null:  new", rate(sum((a := stats.appears_from(c)) is not None and a < 4
                                                       for c in part), n),
          "| naive", rate(sum(any(x.holds for x in c[:4]) for c in part), n))
    at_m = [S.cells(rng, [MARGIN] * J, margin=MARGIN) for _ in range(n)]
    print("absent up to, effect = m:    new", rate(sum(stats.absent_to(c) is not None for c in at_m), n),
          "| naive", rate(sum(not c[0].holds for c in at_m), n))
    m = n // 4
    for eff in (0.03, 0.05, 0.08):
        got = [S.cells(rng, [eff] * J, margin=MARGIN) for _ in range(m)]
        print(f"power, {100 * eff:.0f} pts at every value: appears from the first value",
              rate(sum(stats.appears_from(c) == 0 for c in got), m))
    zero = [S.cells(rng, [0.0] * J, margin=0.05) for _ in range(m)]
    print("power, no effect with a margin of 5 pts: absent up to the last value",
          rate(sum(stats.absent_to(c) == J - 1 for c in zero), m))

if __name__ == "__main__":
    main()
