"""What a Plotly chart really drew in the browser: its marks counted in the DOM, per subplot.

A figure can be valid JSON and still draw nothing: Plotly infers an axis's type from the first trace with values
on it, and a legend-only trace with x = [None] made the IOT page's categorical axis numeric, so every bar got the
blank path "M0,0Z". Counting `<path>` elements is not enough (those blank bars are paths too): a mark counts only
when it has a size and lies inside its subplot's plot area.

Selectors, checked against the DOM of Plotly.js 4 (what Streamlit 1.67 bundles) for every kind the lab draws:
- bars and histograms: `.barlayer .trace.bars .point path` (a blank bar is "M0,0Z", zero-sized);
- scatter lines: `.scatterlayer .trace path.js-line` (the legend draws its own samples outside `.cartesianlayer`);
- scatter markers: `.scatterlayer .trace .points path.point`;
- heatmaps: `.heatmaplayer .hm image` (one raster image per trace);
- box and violin bodies, for completeness;
- WebGL traces (scattergl) draw on a canvas shared by all subplots: the DOM cannot count them, so a subplot that
  holds one is marked `gl` and the caller counts coloured pixels in a screenshot of its plot area (`gl_pixels`).
Shapes (hline/vline, chance lines) and annotations are not marks: a chart of only reference lines drew nothing.
"""

from __future__ import annotations

import io
from typing import Any

MARKS_JS = r"""
(gd) => {
  const overlaps = (b, r) => b.right >= r.left - 1 && b.left <= r.right + 1 && b.bottom >= r.top - 1
                             && b.top <= r.bottom + 1;
  const kinds = {  // selector, and whether a mark needs both a width and a height (a flat line has no height)
    bars: ['.barlayer .trace.bars .point path', true],
    lines: ['.scatterlayer .trace path.js-line', false],
    points: ['.scatterlayer .trace .points path.point', true],
    cells: ['.heatmaplayer .hm image', true],
    boxes: ['.boxlayer .trace path.box, .violinlayer .trace path.violin', true],
  };
  const gl = new Set((gd._fullData || []).filter(t => t.visible === true && /gl$/.test(t.type))
                                           .map(t => (t.xaxis || 'x') + (t.yaxis || 'y')));
  const title = gd.querySelector('.gtitle');
  const o = gd.getBoundingClientRect();
  const subplots = Array.from(gd.querySelectorAll('.cartesianlayer > g.subplot')).map(sp => {
    const id = Array.from(sp.classList).find(c => c !== 'subplot');
    const drag = gd.querySelector('.draglayer > g.' + id + ' rect.nsewdrag');
    const r = (drag || sp).getBoundingClientRect();
    const marks = {};
    for (const [kind, [selector, both]] of Object.entries(kinds)) {
      marks[kind] = Array.from(sp.querySelectorAll(selector)).filter(el => {
        if (el.tagName === 'path' && ['', 'M0,0Z'].includes(el.getAttribute('d') || '')) return false;
        const b = el.getBoundingClientRect();
        const sized = both ? (b.width > 0 && b.height > 0) : (b.width > 0 || b.height > 0);
        return sized && overlaps(b, r);
      }).length;
    }
    // the plot area in the chart's own pixels, where a screenshot of the chart can crop it
    return {id, marks, gl: gl.has(id), box: [r.left - o.left, r.top - o.top, r.right - o.left, r.bottom - o.top]};
  });
  // untitled charts (panels side by side) are named by their first annotation, a subplot title
  const note = gd.querySelector('.annotation-text');
  return {title: title ? title.textContent : (note ? note.textContent : ''), subplots};
}
"""


def chart_marks(chart: Any) -> dict[str, Any]:  # noqa: ANN401 - a Playwright locator of one `.js-plotly-plot`
    """{"title": str, "subplots": [{"id", "marks": {kind: n}, "gl", "box"}]} for one drawn Plotly chart."""
    return chart.evaluate(MARKS_JS)


GL_MIN_PIXELS = 30  # a handful of coloured markers; an empty WebGL plot area has none


def gl_pixels(png: bytes, box: list[float]) -> int:
    """Coloured pixels inside `box` (left, top, right, bottom) of a chart's screenshot: WebGL marks are coloured;
    the white background, the grey grid and the zero lines are not."""
    from PIL import Image

    rgb = Image.open(io.BytesIO(png)).convert("RGB").crop(tuple(round(v) for v in box)).tobytes()
    return sum(1 for i in range(0, len(rgb), 3) if max(rgb[i:i + 3]) - min(rgb[i:i + 3]) > 40)


def marks_per_subplot(info: dict[str, Any], png: bytes | None = None) -> dict[str, dict[str, int]]:
    """{subplot id: {kind: marks}}; a WebGL subplot also gets `webgl_pixels`, the coloured pixels of its plot area in
    `png`, the chart's screenshot."""
    out = {}
    for sp in info["subplots"]:
        out[sp["id"]] = dict(sp["marks"])
        if sp["gl"]:
            out[sp["id"]]["webgl_pixels"] = gl_pixels(png, sp["box"]) if png is not None else 0
    return out


def empty_subplots(info: dict[str, Any], png: bytes | None = None) -> list[str]:
    """The subplots of a chart that have axes and drew no mark; a WebGL subplot counts as drawn when its plot area
    in `png` (the chart's screenshot) has at least GL_MIN_PIXELS coloured pixels."""
    empty = []
    for sid, marks in marks_per_subplot(info, png).items():
        pixels = marks.pop("webgl_pixels", 0)
        if sum(marks.values()) == 0 and pixels < GL_MIN_PIXELS:
            empty.append(sid)
    return empty
