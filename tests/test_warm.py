"""`python -m lab warm`: every default view and preset, deduplicated, computed once, idempotent."""

from __future__ import annotations

import pytest

from lab import warm
from lab.store import Store, use_store


@pytest.fixture
def fake_page(monkeypatch):
    monkeypatch.setitem(warm.PAGES, "fake", "tests.warm_fake_page")
    return "fake"


def test_plan_deduplicates_and_warm_is_idempotent(tmp_path, fake_page):
    store = Store(tmp_path / "s")
    with use_store(store):
        items = warm.plan([fake_page])
        assert sorted(i.need.cfg.x for i in items) == [2, 3]  # default and "recolour" need the same result
        first = warm.warm(items, workers=1)
        assert len(first["built"]) == 2 and not first["failed"]
        assert all(store.has("warm-test-square", i.need.cfg) for i in items)
        again = warm.warm(warm.plan([fake_page]), workers=1)
        assert again["built"] == [] and again["already_stored"] == 2


def test_seeds_and_unknown_pages():
    with pytest.raises(ValueError, match="unknown page"):
        warm.plan(["nope"])
    named = warm.settings_of("delete", seeds=[3, 4])
    assert {s["seed"] for _, s in named} == {3, 4}
    assert len(named) == 2 * (1 + len(__import__("lab.experiments.delete", fromlist=["x"]).PRESETS))


def test_every_classroom_page_describes_its_presets():
    for page in ("delete", "shuffle", "reinit", "layerdrop"):
        assert warm.describes(page)
        items = warm.plan([page], defaults_only=True)
        assert items, page  # the default view needs at least one stored result
