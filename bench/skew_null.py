"""Issue 57, part 3: the skewed seed null (9 seeds in 10 slightly positive, 1 strongly negative, mean 0) against the
lab's pooled rule alone and with the exact sign-flip test over seeds at 5 % beside it. Shows why the sign-flip is
reported and does not decide: at 3 seeds it can never decide (its smallest p is 1/8); from 5 seeds it passes whenever
no negative seed was drawn (0.9^k of the time), so it cannot hold this null at 5 % for any k a course can train.

    PYTHONPATH=. .venv/bin/python bench/skew_null.py
"""
import numpy as np

from lab import claims as C
from lab import estimates as E

rng = np.random.default_rng(1)
n, sims = 400, 1000
for skew in (2.0, 4.0, 8.0):
    for k in (3, 5, 12):
        t_only = both = 0
        for _ in range(sims):
            se_in = 0.01
            a = skew * se_in
            eff = np.where(rng.random(k) < 0.9, a, -9 * a)
            rows = eff[:, None] + rng.normal(0, se_in * np.sqrt(n), (k, n))
            t = C.test("d", E.over_design(rows), ">=", 0.0)
            h = t["holds"] is True
            t_only += h
            both += h and E.sign_flip(list(rows.mean(1)))[0] <= 0.05
        print(f"skew {skew} k {k}: pooled rule {100 * t_only / sims:.1f} %, "
              f"with sign-flip at 5 % {100 * both / sims:.1f} %", flush=True)
