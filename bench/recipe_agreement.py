"""Does a cheaper training recipe agree with the full one, claim by claim? (issue 59, item 1)

    PYTHONPATH=. .venv/bin/python bench/recipe_agreement.py full.json cheap.json [--margin 0.02] [--markdown]

Both files are `bench/claims_table.py --seeds ... --pool --out` tables of the same pages at the same training seeds,
one computed with the full recipe and one with the cheaper one (two checkouts sharing one store). A claim agrees
when either
- both recipes give the same decided pooled verdict (holds / does not hold, pooled over the seeds), or
- every one of its tests moves by less than the margin: the paired difference of the test's value over the seeds
  (cheap minus full, seed by seed: the two recipes share each seed's data draw and initial weights) has a 90 %
  interval inside +-margin (two one-sided t tests at 5 %, seeds as the unit).
Otherwise it moves, and the row says how: its verdicts and its largest paired difference with its interval.
The margin defaults to a study's (2 points); it is a share for accuracies, in the test's own unit otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from scipy import stats

SHORT = {True: "holds", False: "does not hold", None: "cannot tell"}


def _index(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, dict[str, Any]]]:
    out: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for r in rows:
        page = r["page"].split("[", 1)[0]  # the two recipes' settings differ (shuffle[epochs=30]): the page is one
        out.setdefault((page, r["key"], r.get("subject") or ""), {})[str(r["seed"])] = r
    return out


def paired(full: list[float], cheap: list[float]) -> tuple[float, float, float]:
    """(mean difference, half-width of its 90 % t interval, n) of cheap - full, seed by seed."""
    d = [c - f for f, c in zip(full, cheap, strict=True)]
    n = len(d)
    mean = sum(d) / n
    if n < 2:
        return mean, math.inf, n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    return mean, stats.t.ppf(0.95, n - 1) * sd / math.sqrt(n), n


def compare(full: list[dict[str, Any]], cheap: list[dict[str, Any]], margin: float = 0.02) -> list[dict[str, Any]]:
    """One row per claim in both tables: its pooled verdicts, its largest test move and whether it agrees."""
    a, b = _index(full), _index(cheap)
    out = []
    for claim in sorted(set(a) & set(b)):
        fa, fb = a[claim], b[claim]
        seeds = sorted((s for s in fa if s != "pool" and s in fb), key=int)
        va = fa.get("pool", {}).get("holds")
        vb = fb.get("pool", {}).get("holds")
        moves = []
        for name in {t["name"] for s in seeds for t in fa[s].get("tests", [])}:
            xs = [next((t["value"] for t in fa[s]["tests"] if t["name"] == name), None) for s in seeds]
            ys = [next((t["value"] for t in fb[s].get("tests", []) if t["name"] == name), None) for s in seeds]
            pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if isinstance(x, (int, float))
                     and isinstance(y, (int, float)) and math.isfinite(x) and math.isfinite(y)]
            if len(pairs) < 2:
                moves.append({"test": name, "mean": math.nan, "half": math.inf, "n": len(pairs)})
                continue
            mean, half, n = paired([p[0] for p in pairs], [p[1] for p in pairs])
            moves.append({"test": name, "mean": mean, "half": half, "n": n})
        worst = max(moves, key=lambda m: (abs(m["mean"]) + m["half"]) if math.isfinite(m["mean"]) else math.inf,
                    default=None)
        within = bool(moves) and all(math.isfinite(m["mean"]) and abs(m["mean"]) + m["half"] < margin for m in moves)
        same = va is not None and va == vb
        out.append({"page": claim[0], "key": claim[1], "subject": claim[2], "seeds": len(seeds),
                    "full": SHORT[va], "cheap": SHORT[vb], "worst": worst, "agrees": same or within,
                    "how": "same decided verdict" if same else f"every test within +-{margin:g}" if within
                    else "moves"})
    return out


def markdown(rows: list[dict[str, Any]], margin: float) -> str:
    lines = ["| page | claim | subject | full recipe (pooled) | cheaper (pooled) | largest paired move (90 % CI) "
             "| agrees |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        w = r["worst"]
        move = "" if w is None or not math.isfinite(w["mean"]) else \
            f"{w['test']}: {w['mean']:+.3f} +- {w['half']:.3f} ({w['n']} seeds)"
        lines.append(f"| {r['page']} | {r['key']} | {r['subject']} | {r['full']} | {r['cheap']} | {move} | "
                     f"{'yes, ' + r['how'] if r['agrees'] else 'no'} |")
    agree = sum(r["agrees"] for r in rows)
    lines.append(f"\n{agree} of {len(rows)} claims agree (margin {margin:g}); {len(rows) - agree} move.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("full")
    ap.add_argument("cheap")
    ap.add_argument("--margin", type=float, default=0.02)
    args = ap.parse_args()
    with open(args.full) as f, open(args.cheap) as g:
        rows = compare(json.load(f), json.load(g), args.margin)
    print(markdown(rows, args.margin))


if __name__ == "__main__":
    main()
