"""Two claims tables (bench/claims_table.py --out) side by side: every (page, claim, subject) with its verdict at each
seed before and after, the moved ones marked, as a markdown table (for a closing note on a change of the rules).

    PYTHONPATH=. .venv/bin/python bench/claims_compare.py before.json after.json [--moved]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

SHORT = {"holds": "holds", "does not hold": "no", "cannot tell": "?"}


def _word(r: dict[str, Any]) -> str:
    v = r.get("verdict") or {True: "holds", False: "does not hold", None: "cannot tell"}[r["holds"]]
    for long, short in SHORT.items():
        if v.startswith(long):
            return short + ("(1 net)" if "one trained network" in v else "(no pool)" if "cannot be pooled" in v
                            else "")
    return v


def table(before: list[dict[str, Any]], after: list[dict[str, Any]], moved_only: bool = False) -> str:
    def index(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, str]]:
        out: dict[tuple[str, str, str], dict[str, str]] = {}
        for r in rows:
            out.setdefault((r["page"], r["key"], r.get("subject") or ""), {})[str(r["seed"])] = _word(r)
        return out

    b, a = index(before), index(after)
    overs = {(r["page"], r["key"], r.get("subject") or ""): r.get("over") or "" for r in after
             if str(r["seed"]) != "pool"}  # a pool is over seeds whatever the claim is; the claim's own is at a seed
    seeds = sorted({str(r["seed"]) for r in before + after if str(r["seed"]) != "pool"}, key=int)
    head = ["page", "claim", "subject", "over"] + [f"before s{s}" for s in seeds] + [f"after s{s}" for s in seeds]
    head += ["before pooled", "after pooled", "moved"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in sorted(set(b) | set(a)):
        bv, av = b.get(k, {}), a.get(k, {})
        moved = any(bv.get(s, "-") != av.get(s, "-") for s in seeds)
        if moved_only and not moved:
            continue
        cells = [k[0], k[1].split(".", 1)[-1], k[2], overs.get(k, "")]
        cells += [bv.get(s, "-") for s in seeds] + [av.get(s, "-") for s in seeds]
        cells += [bv.get("pool", "-"), av.get("pool", "-")]
        lines.append("| " + " | ".join(cells + ["yes" if moved else ""]) + " |")
    return "\n".join(lines)


def _base(word: str) -> str:
    return word.split("(")[0]


def moves(pairs: list[tuple[str, str]]) -> dict[str, int]:
    """How verdicts moved between two tables: flips (holds <-> does not hold), decided -> cannot tell, cannot tell
    -> decided, and unchanged; a verdict absent on either side is left out."""
    out = {"flipped": 0, "lost": 0, "gained": 0, "same": 0}
    for x, y in pairs:
        x, y = _base(x), _base(y)
        if "-" in (x, y):
            continue
        out["same" if x == y else "gained" if x == "?" else "lost" if y == "?" else "flipped"] += 1
    return out


def summary(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str:
    """The recipe decision's counts: before vs after at each seed and pooled over the seeds, beside the noise of
    retraining alone (each pair of seeds within the before table: another network of the same recipe)."""
    def index(rows: list[dict[str, Any]]) -> dict[str, dict[tuple[str, str, str], str]]:
        out: dict[str, dict[tuple[str, str, str], str]] = {}
        for r in rows:
            out.setdefault(str(r["seed"]), {})[(r["page"], r["key"], r.get("subject") or "")] = _word(r)
        return out

    b, a = index(before), index(after)
    seeds = sorted((s for s in b if s != "pool"), key=int)
    lines = ["| compared | same | flipped | decided -> cannot tell | cannot tell -> decided |", "|---|---|---|---|---|"]

    def row(name: str, x: dict[tuple[str, str, str], str], y: dict[tuple[str, str, str], str]) -> None:
        m = moves([(x[k], y[k]) for k in sorted(set(x) & set(y))])
        lines.append(f"| {name} | {m['same']} | {m['flipped']} | {m['lost']} | {m['gained']} |")

    for s in seeds:
        row(f"before vs after, seed {s}", b[s], a.get(s, {}))
    if "pool" in b and "pool" in a:
        row("before vs after, pooled over seeds " + ", ".join(seeds), b["pool"], a["pool"])
    for i, s in enumerate(seeds):
        for t in seeds[i + 1:]:
            row(f"noise: before seed {s} vs before seed {t}", b[s], b[t])
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--moved", action="store_true", help="only the claims whose verdict moved at some seed")
    args = ap.parse_args()
    with open(args.before) as f, open(args.after) as g:
        before, after = json.load(f), json.load(g)
    print(table(before, after, args.moved))
    print()
    print(summary(before, after))


if __name__ == "__main__":
    main()
