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
    head += ["after pooled", "moved"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in sorted(set(b) | set(a)):
        bv, av = b.get(k, {}), a.get(k, {})
        moved = any(bv.get(s, "-") != av.get(s, "-") for s in seeds)
        if moved_only and not moved:
            continue
        cells = [k[0], k[1].split(".", 1)[-1], k[2], overs.get(k, "")]
        cells += [bv.get(s, "-") for s in seeds] + [av.get(s, "-") for s in seeds] + [av.get("pool", "-")]
        lines.append("| " + " | ".join(cells + ["yes" if moved else ""]) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--moved", action="store_true", help="only the claims whose verdict moved at some seed")
    args = ap.parse_args()
    with open(args.before) as f, open(args.after) as g:
        print(table(json.load(f), json.load(g), args.moved))


if __name__ == "__main__":
    main()
