"""A page's "Where it appears" section (issue 58, part 4): cells missing are counted and offered, not computed on the
page's thread; once every cell is stored the page draws the map with a mark at every value and a dot per seed."""

from __future__ import annotations

import json

from lab.study import compute, shipped
from lab.study.spec import Study
from tests.apptest_util import open_page

TINY = Study(page="delete", claim="delete.plain-one-deletion-to-chance", subject="plain MLP", knob="blocks",
             values=(2, 3), seeds=(0, 1, 2), base=(("width", 16),), margin=0.05, name="tiny-depth",
             title="Tiny study of depth")


def _maps(at) -> list[dict]:
    out = []
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        names = {t.get("name") or "" for t in spec["data"]}
        if any(n.startswith("one seed") for n in names):
            out.append(spec)
    return out


def test_the_page_counts_missing_cells_then_draws_the_stored_map(monkeypatch):
    monkeypatch.setattr(shipped, "STUDIES", (TINY,))
    at = open_page("delete")
    assert any("0 of 6 cells stored, 6 left" in i.value for i in at.info)
    assert any(b.label == "Compute the 6 missing cells" for b in at.button)
    assert not _maps(at)  # nothing drawn, nothing computed on the page's thread
    assert not any(c.done for c in compute.plan(TINY))
    compute.read(TINY)  # the cells, computed here (as the engine would)
    at.run()
    maps = _maps(at)
    assert len(maps) == 1, [i.value for i in at.info]
    data = maps[0]["data"]
    dots = [x for t in data if (t.get("name") or "").startswith("one seed") for x in t["x"]]
    assert sorted(dots) == ["2", "2", "2", "3", "3", "3"]  # a dot per seed at every value
    marks = [x for t in data if t.get("error_y") for x in t["x"]]
    assert sorted(marks) == ["2", "3"]  # every value has its pooled mark with its interval
    assert any("Over 3 seeds" in m.value for m in at.markdown)  # the sentence made from the numbers
