"""Charts readable by everyone: a text alternative for every Plotly figure, and colour never the only cue.

`show(fig, key)` draws a figure the way every page should: with a caption that says what it shows and its main
numbers (built from the figure's own traces, so it cannot disagree with what is drawn), a "Show the data" table of
every value drawn, and a second cue besides colour where several series share one plot (bar patterns, line dashes
and marker symbols), unless the figure already sets its own; on a dark page, in the palette's dark form
(`theme.dark`), chosen by the browser's theme as Streamlit reports it (`st.context.theme`).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Optional

import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa
import streamlit as st

from app import figcache, hall_publish, theme

PATTERNS = ("", "/", "x", ".", "\\", "+", "-", "|")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross", "pentagon")
MAX_ROWS = 2000  # a table beyond this is not read by anyone; it says how many rows it left out
MAX_PREPARED = 256  # shared figures whose cued copy, caption and table are kept (a few hundred kB each at most)
_lock = threading.Lock()
# (id(shared figure), what, scheme) -> (that figure, its cued frozen copy, caption, table). A shared figure
# (app/figcache.py) lives as long as the figure cache holds it and must not be changed, so its cued copy, one per
# scheme (light, dark), is made once and reused by every rerun and session: a cached view pays no copy, caption or
# table again (its budget is 0.1 s of server CPU). The key holds the scheme: a light copy is never served dark.
_prepared: OrderedDict[tuple[int, str, str], tuple[go.Figure, go.Figure, str, pd.DataFrame]] = OrderedDict()
_arrows: OrderedDict[int, tuple[pd.DataFrame, "pa.Table"]] = OrderedDict()  # table -> its Arrow form (`_arrow`)


def _name(trace: Any, i: int) -> str:
    return str(trace.name) if trace.name else f"series {i + 1}"


def _values(v: Any) -> list[Any]:
    if v is None:
        return []
    try:
        return list(v)
    except TypeError:
        return [v]


def second_cue(fig: go.Figure) -> go.Figure:
    """Give each bar series a pattern and each line series a dash and marker symbol of its own (the first keeps
    the plain look), where the figure set none: colour is then never the only thing that tells series apart."""
    bars = [t for t in fig.data if t.type == "bar" and t.showlegend is not False]
    lines = [t for t in fig.data if t.type == "scatter" and t.showlegend is not False and _values(t.x)]
    if len(bars) > 1:
        for i, t in enumerate(bars):
            if not (t.marker and t.marker.pattern and t.marker.pattern.shape):
                t.update(marker_pattern_shape=PATTERNS[i % len(PATTERNS)])
    if len(lines) > 1:
        for i, t in enumerate(lines):
            mode = t.mode or "lines"
            if "lines" in mode and not (t.line and t.line.dash):
                t.update(line_dash=DASHES[i % len(DASHES)])
            if "markers" in mode and not (t.marker and t.marker.symbol):
                t.update(marker_symbol=SYMBOLS[i % len(SYMBOLS)])
    return fig


def table(fig: go.Figure) -> pd.DataFrame:
    """Every value the figure draws: one row per point (series, x, y, and text where a point has it); a heatmap
    gives one row per cell."""
    rows: list[dict[str, Any]] = []
    for i, t in enumerate(fig.data):
        name = _name(t, i)
        if t.type == "heatmap":
            z, xs, ys = _values(t.z), _values(t.x), _values(t.y)
            for r, row in enumerate(z):
                for c, v in enumerate(_values(row)):
                    rows.append({"series": name, "x": xs[c] if c < len(xs) else c, "y": ys[r] if r < len(ys) else r,
                                 "value": v})
            continue
        xs, ys = _values(getattr(t, "x", None)), _values(getattr(t, "y", None))
        if getattr(t, "orientation", None) == "h":
            xs, ys = ys, xs  # a horizontal bar: the category is on y, its value on x
        texts = _values(getattr(t, "text", None))
        for j in range(max(len(xs), len(ys))):
            x = xs[j] if j < len(xs) else None
            y = ys[j] if j < len(ys) else None
            if x is None and y is None:
                continue  # legend-only entries
            row = {"series": name, "x": x, "value": y}
            if j < len(texts) and texts[j] not in (None, ""):
                row["label"] = texts[j]
            rows.append(row)
    data = pd.DataFrame(rows)
    for col in ("x", "y", "label"):  # categories and numbers may mix in one column: Arrow wants one type
        if col in data:
            data[col] = data[col].map(lambda v: "" if v is None else str(v))
    return data


def _fmt(v: Any, pct: bool, unit: str = "") -> str:
    if isinstance(v, float):
        v = v if round(v, 3) != 0 else 0.0  # a tiny negative would print as "-0"
        return f"{100 * v:.1f} %" if pct else f"{v:.3g}" + (f" {unit}" if unit else "")
    return str(v) + (f" {unit}" if unit and isinstance(v, int) else "")


def unit_of(fig: go.Figure) -> str:
    """The unit a figure declares for its values (`layout.meta = {"unit": "pts"}`), or "" where it declares none."""
    meta = fig.layout.meta
    return str(meta.get("unit", "")) if isinstance(meta, dict) else ""


def _percent(fig: go.Figure, vals: list[float]) -> bool:
    """Whether a series' values are shares: its axis says so (a % tick format), or, with no tick format and no
    declared unit, every value lies in [0, 1]. Decided per series, never per value (a PCA coordinate of 0.1 is not
    10 %; a margin of 1 point is not 100 %)."""
    if unit_of(fig):
        return False
    fmt = fig.layout.yaxis.tickformat if fig.layout.yaxis else None
    if fmt:
        return "%" in fmt
    return all(0.0 <= v <= 1.0 for v in vals)


_BREAK = re.compile(r"\s*<br\s*/?>\s*", re.IGNORECASE)


def caption(fig: go.Figure, what: str = "", data: Optional[pd.DataFrame] = None) -> str:
    """What the figure shows, in words, with its main numbers: per series its count and range of values."""
    title = what or (fig.layout.title.text if fig.layout.title and fig.layout.title.text else "")
    title = _BREAK.sub(" ", title)  # a line break in a chart's title is Plotly markup, not words for the caption
    data = table(fig) if data is None else data
    parts = []
    if not data.empty:
        for name, g in data.groupby("series", sort=False):
            vals = [v for v in g["value"] if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if not vals:
                continue
            lo, hi = min(vals), max(vals)
            pct, unit = _percent(fig, vals), unit_of(fig)
            parts.append(f"{name}: {len(vals)} values" + (f", {_fmt(lo, pct, unit)} to {_fmt(hi, pct, unit)}"
                                                           if lo != hi else f", {_fmt(lo, pct, unit)}"))
    head = (title if title.endswith((".", "?", "!", ":")) else f"{title}.") + " " if title else ""
    return head + ("; ".join(parts) + "." if parts else "No values drawn yet.")


def prepare(fig: go.Figure, what: str = "", scheme: str = "light") -> tuple[go.Figure, str, pd.DataFrame]:
    """The figure with its second cue, its caption and its table, for a `scheme` ("light" or "dark") page; made
    once per scheme for a shared figure (a copy is cued, the shared one is never changed), each time for any other
    (cued in place; drawn dark on a copy)."""
    if not isinstance(fig, figcache.SharedFigure):
        second_cue(fig)
        data = table(fig)
        text = caption(fig, what, data)
        return (go.Figure(theme.dark(fig.to_dict())) if scheme == "dark" else fig), text, data
    key = (id(fig), what, scheme)
    with _lock:
        hit = _prepared.get(key)
        if hit is not None and hit[0] is fig:
            _prepared.move_to_end(key)
            return hit[1], hit[2], hit[3]
    work = second_cue(go.Figure(fig.to_dict()))
    data = table(work)
    text = caption(work, what, data)
    if scheme == "dark":
        work = go.Figure(theme.dark(work.to_dict()))
    out = (figcache.freeze(work), text, data)
    with _lock:
        _prepared[key] = (fig, *out)
        while len(_prepared) > MAX_PREPARED:
            _prepared.popitem(last=False)
    return out


def show(fig: Optional[go.Figure], key: str, where: Any = None, what: str = "") -> None:
    """Draw a figure with its caption and its "Show the data" table (in `where`, default the page)."""
    where = st if where is None else where
    if fig is None:
        return
    fig, text, data = prepare(fig, what, scheme())
    hall_publish.offer(fig)  # a lesson's revealed step: the phones' copy of the projector's figure
    where.plotly_chart(fig, theme=None, key=key)  # the lab's own styling: Streamlit's would restyle every figure
    where.caption(text)
    with where.expander("Show the data", icon=":material/table:"):
        if len(data) > MAX_ROWS:
            st.caption(f"The first {MAX_ROWS} of {len(data)} rows.")
        st.dataframe(_arrow(data), hide_index=True, key=f"{key}_data")


def scheme() -> str:
    """"dark" when the browser shows this page dark, else "light" (also before the browser has said, and outside a
    page). Streamlit learns a change of theme with the next rerun: until then a chart keeps its scheme (a light chart
    on a dark page stays readable)."""
    try:
        return "dark" if st.context.theme.type == "dark" else "light"
    except Exception:  # noqa: BLE001 - no page session (a script, a test): light, as every figure is built
        return "light"


def _arrow(data: pd.DataFrame) -> pa.Table:
    """The table as Arrow (its first MAX_ROWS rows), converted once per table: a shared figure's table is one object
    for every rerun, and converting it again costs a cached view 3-4 ms a chart."""
    with _lock:
        hit = _arrows.get(id(data))
        if hit is not None and hit[0] is data:
            _arrows.move_to_end(id(data))
            return hit[1]
    table = pa.Table.from_pandas(data.head(MAX_ROWS), preserve_index=False)
    with _lock:
        _arrows[id(data)] = (data, table)  # holding `data` keeps its id from being reused
        while len(_arrows) > MAX_PREPARED:
            _arrows.popitem(last=False)
    return table
