"""Rearrange: the rows of a profile (one per operation and arguments, under `row_key`) and what is read from them:
the table's summary per operation, the mean over seeds, and the span sweep. experiment.py writes the rows,
claims.py and the page read them."""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any, Optional, Sequence

from lab.core.routes import middle
from lab.ops.route_ops import BLOCK_OPS, LOOP_OPS, LOOPS, MAX_LOOPS, REDUCE_OPS, SPAN_OPS, valid_blocks, windows


def row_key(op: str, block: Optional[int] = None, reduce: Optional[str] = None, ends: str = "keep",
            loops: int = LOOPS, span: int = 0) -> str:
    """The key of one operation in a profile: arguments the operation does not take are left out."""
    spanned = bool(span) and op in SPAN_OPS
    b = str(block) if op in BLOCK_OPS or spanned else ""
    r = reduce if op in REDUCE_OPS else ""
    k = f"|x{loops}" if op in LOOP_OPS else ""
    return f"{op}|{b}|{r}|{ends}{k}" + (f"|s{span}" if spanned else "")


SUMMARY = (  # (name, label): the table's and the figure's operations, ends kept, parallel by mean
    ("identity", "trained order"), ("skip", "skip one middle block (mean over b)"), ("skip-first", "skip the first"),
    ("skip-last", "skip the last"), ("swap", "swap two middle neighbours (mean)"), ("reverse", "reverse middle"),
    ("random", "random middle order (mean)"), ("repeat", "repeat one middle block (mean over b)"),
    ("skip-middle", "skip the whole middle"), ("loop", "loop the middle (twice)"),
    ("parallel", "parallel middle (mean)"),
    ("parallel-sum", "parallel middle (sum)"), ("parallel-loop", "parallel, looped twice (mean)"))


def summary(prof: Any) -> dict[str, dict[str, float]]:
    """One accuracy and cost per SUMMARY operation (a block operation: the mean over the middle blocks) of a
    profile (`experiment.RearrangeProfile`)."""
    n, ops = prof.n_blocks, prof.ops

    def mean_of(op: str) -> dict[str, float]:
        rows = [ops[row_key(op, b)] for b in valid_blocks(op, n, "keep")]
        return {"acc": statistics.mean(r["acc"] for r in rows), "block_runs": rows[0]["block_runs"]}

    def one(key: str) -> dict[str, float]:
        return {"acc": ops[key]["acc"], "block_runs": ops[key]["block_runs"]}

    out = {}
    for name, _ in SUMMARY:
        if name in BLOCK_OPS:
            out[name] = mean_of(name)
        elif name == "skip-first":
            out[name] = one(row_key("skip", 0, ends="include"))
        elif name == "skip-last":
            out[name] = one(row_key("skip", n - 1, ends="include"))
        elif name == "parallel-sum":
            out[name] = one(row_key("parallel", reduce="sum"))
        else:
            out[name] = one(row_key(name, reduce="mean"))
    return out


def mean_profiles(profiles: Sequence[Any]) -> Any:
    """The mean over seeds of profiles of one model (`experiment.RearrangeProfile`): every accuracy averaged, the
    rest from the first."""
    first = profiles[0]
    ops = {k: {**row, "acc": statistics.mean(p.ops[k]["acc"] for p in profiles)} for k, row in first.ops.items()}
    return dataclasses.replace(first, ops=ops, base_acc=statistics.mean(p.base_acc for p in profiles))


SWEEP_OPS = ("skip", "reverse", "repeat", "parallel")  # the span figure's lines (parallel: by the chosen reduce)


def span_sweep(prof: Any, ends: str = "keep", reduce: str = "mean") -> dict[str, Any]:
    """How far each operation reaches, read from a profile: for every span, the mean accuracy over every window of
    that span (`curves[op][i]` for `spans[i]`), and parallel-loop's accuracy against K (`loop_curves[str(span)]`)."""
    n, ops = prof.n_blocks, prof.ops
    spans = list(range(1, len(middle(n, ends)) + 1))
    ks = list(range(1, MAX_LOOPS + 1))

    def mean_acc(op: str, sp: int, kk: int = LOOPS) -> float:
        red = reduce if op in REDUCE_OPS else None
        return statistics.fmean([ops[row_key(op, w[0], red, ends, kk, sp)]["acc"] for w in windows(n, ends, sp)])

    loops = {str(sp): [mean_acc("parallel-loop", sp, kk) for kk in ks] for sp in spans}
    return {"spans": spans, "ends": ends, "reduce": reduce, "loops": ks,
            "curves": {op: [mean_acc(op, sp) for sp in spans] for op in SWEEP_OPS}, "loop_curves": loops,
            "best_loops": {k: 1 + max(range(len(ks)), key=v.__getitem__) for k, v in loops.items()}}
