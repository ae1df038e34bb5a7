"""The claims of every page's default view at given seeds, as a table (for before/after comparisons of the rules).

    PYTHONPATH=. .venv/bin/python bench/claims_table.py --seeds 0 1 2 [--pool] [--task mnist1d] --out claims.json
        [--pages layerdrop iot] [--set layerdrop.model=vit iot.model=vit-sequential]

Computes what each page's default setting needs (every call of the descriptor's plan, in this process, into the active
store), then the page's own claim assembly (`Descriptor.claims`) or, where a descriptor has none, the claims of those
results (computed when read: lab/claims.py `attach`). Prints one row per (page, claim, seed): verdict, the deciding
estimate and its error. `--pool` adds each page's claims pooled over the seeds given (lab/claims.py: pool), as rows
of seed "pool" (what `python -m lab seeds PAGE` prints).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from lab import catalog
from lab.claims import VERDICTS, attach, pool, verdict_words
from lab.runtime.threads import configure_threads


def claims_of(d: Any, settings: dict[str, Any]) -> list[dict[str, Any]]:
    page = getattr(d, "claims", None)
    if callable(page):
        return list(page(settings))
    out: dict[str, dict[str, Any]] = {}
    for need in (n for n in d.plan(settings) if not n.optional):
        r = attach(need.fn(need.cfg))
        for c in r.get("claims", []) if isinstance(r, dict) else []:
            out.setdefault(c["key"] + "|" + str(c.get("subject", "")), c)
    return list(out.values())


def parse_overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    """{page: {control: value}} from PAGE.CONTROL=VALUE words; a value is read as JSON where it parses (4, 0.5,
    true), else kept as text (vit)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        head, eq, text = item.partition("=")
        page, dot, control = head.partition(".")
        if not (eq and dot and page and control):
            raise ValueError(f"--set takes PAGE.CONTROL=VALUE, got {item!r}")
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        out.setdefault(page, {})[control] = value
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--pages", nargs="*", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--task", default=None, help="the task of every page's setting (default: each page's own)")
    ap.add_argument("--pool", action="store_true", help="also each page's claims pooled over the seeds")
    ap.add_argument("--set", nargs="*", default=[], metavar="PAGE.CONTROL=VALUE",
                    help="a setting other than the page's default, e.g. layerdrop.model=vit (the page's ViT view)")
    args = ap.parse_args()
    try:
        overrides = parse_overrides(args.set)
    except ValueError as e:
        ap.error(str(e))
    configure_threads()  # one torch thread (LAYERLAB_THREADS): two tables side by side with torch's default 2 threads
    # each oversubscribe 2 cores, and a 40-epoch ViT took 299 s instead of about 21
    rows = []
    chosen = [catalog.descriptors()[p] for p in args.pages] if args.pages else catalog.descriptors().values()
    for d in chosen:
        own = overrides.get(d.name, {})
        page = d.name + (f"[{','.join(f'{k}={v}' for k, v in own.items())}]" if own else "")
        per_seed = []
        for s in [*args.seeds, "pool"] if args.pool else args.seeds:
            t0 = time.perf_counter()
            settings = {**d.defaults, **overrides.get(d.name, {}), "seed": s,
                        **({"task": args.task} if args.task else {})}
            new = []
            if s == "pool":
                got = pool(per_seed, args.seeds)
            else:
                got = claims_of(d, settings)
                per_seed.append(got)
            for c in got:
                m = c["measured"]
                new.append({"page": page, "seed": s, "key": c["key"], "subject": c.get("subject", ""),
                            "holds": c["holds"], "verdict": verdict_words(c) if "over" in c else VERDICTS[c["holds"]],
                            "over": c.get("over"), "seeds": c.get("seeds"), "why": c.get("why"),
                            "se": m.get("se"), "se_kind": m.get("se_kind"),
                            "settle": c.get("settle"), "detail": c["detail"],
                            "tests": [{k: t.get(k) for k in ("name", "value", "threshold", "side", "unit")}
                                      for t in c.get("tests", [])]})
            print(f"# {page} seed {s}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
            for r in new:  # each page's rows as soon as they are known (a long run can be read as it goes)
                se = "" if not isinstance(r["se"], float) else f"se {100 * r['se']:.2f} pts"
                print(f"{r['page']:10s} s{r['seed']} {r['verdict']:14s} {r['over'] or ''} {r['key']} "
                      f"[{r['subject']}] {se} {r['se_kind'] or ''} :: {r['detail']}", flush=True)
            rows += new
            if args.out:
                with open(args.out, "w") as f:
                    json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
