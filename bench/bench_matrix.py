"""Train x take apart, measured: for each seed, the time to train each row's model (its training record), the time
to fill each column on the stored model (the row's own timings), the matrix (share of the above-chance accuracy
kept) and every claim's verdict. Rows already in the store are read, not rebuilt (their recorded seconds are the
build's), so a second run prints the same numbers at once.
Usage: PYTHONPATH=. .venv/bin/python bench/bench_matrix.py [--seeds 0,1]
"""

from __future__ import annotations

import argparse
import time

from lab.claims import claim_line
from lab.experiments.matrix import experiment as matrix
from lab.experiments.matrix.descriptor import matrix_lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1", help="comma-separated seeds")
    args = ap.parse_args()
    for seed in (int(s) for s in args.seeds.split(",")):
        t0 = time.perf_counter()
        r = matrix.run(matrix.MatrixConfig(seed=seed))
        print(f"\nseed {seed} (this call {time.perf_counter() - t0:.1f} s)")
        print("\n".join(matrix_lines(r)))
        print(f"\n{'recipe':<20}{'train s':>8}{'fill s':>8}  " + " ".join(f"{op[:9]:>9}" for op in matrix.OPS))
        for rec, row in r["rows"].items():
            secs = row["op_seconds"]
            print(f"{matrix.RECIPE_LABELS[rec]:<20}{row['train_seconds']:8.1f}{row['fill_seconds']:8.1f}  "
                  + " ".join(f"{secs[op]:9.2f}" for op in matrix.OPS))
        for c in r["claims"]:
            print(claim_line(c))


if __name__ == "__main__":
    main()
