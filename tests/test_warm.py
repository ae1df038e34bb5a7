"""`python -m lab warm`: every default view and preset, deduplicated, computed once, idempotent."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lab.catalog import descriptors, get
from lab.classroom import warm
from lab.experiment import KINDS
from lab.runtime.engine import BACKGROUND, ThreadEngine
from lab.runtime.store import Store, active_store, use_store


@pytest.fixture(autouse=True)
def _recipe_seeds(monkeypatch):
    """These tests are about the seeds a quick view pools without a click (the suite's page tests set it to 1)."""
    monkeypatch.setenv("LAYERLAB_RECIPE_SEEDS", "3")



@pytest.fixture
def fake_page(monkeypatch):
    from lab import catalog
    from tests.warm_fake_page import DESCRIPTOR

    catalog.descriptors()  # found once; then the fake joins them for this test
    monkeypatch.setitem(catalog._FOUND, "fake", DESCRIPTOR)
    return "fake"


def test_plan_deduplicates_and_warm_is_idempotent(tmp_path, fake_page):
    store = Store(tmp_path / "s")
    with use_store(store):
        items = warm.plan([fake_page])
        assert sorted(i.need.cfg.x for i in items) == [2, 3]  # default and "recolour" need the same result
        first = warm.warm(items, workers=1)  # on a local Dask cluster of one worker process
        assert len(first["built"]) == 2 and not first["failed"]
        assert all(0 <= b["seconds"] <= first["seconds"] for b in first["built"])  # each within the whole run
        assert all(store.has("warm-test-square", i.need.cfg) for i in items)
        again = warm.warm(warm.plan([fake_page]), workers=1)
        assert again["built"] == [] and again["already_stored"] == 2


def test_interleaved_keeps_every_item_once_and_parts_neighbours_of_one_setting():
    items = warm.plan(warm.pages())
    dealt = warm.interleaved(items)
    assert sorted(i.key for i in dealt) == sorted(i.key for i in items)  # a permutation: nothing lost or doubled
    group = {i.key: (i.page, i.setting) for i in items}
    for g in set(group.values()):  # each setting's results keep their order (its first usually trains the model)
        assert [i.key for i in dealt if group[i.key] == g] == [i.key for i in items if group[i.key] == g]
    sizes = {g: list(group.values()).count(g) for g in set(group.values())}
    assert max(sizes.values()) > 1  # else the next check would hold for any order
    # neighbours share a setting only once the other settings have run out of results
    for n in range(1, len(dealt)):
        if group[dealt[n - 1].key] == group[dealt[n].key]:
            assert {group[i.key] for i in dealt[n:]} == {group[dealt[n].key]}
    assert [i.key for i in dealt[:len(sizes)]] == [next(i.key for i in items if group[i.key] == g)
                                                   for g in dict.fromkeys(group[i.key] for i in items)]


def test_seeds_and_unknown_pages():
    with pytest.raises(ValueError, match="unknown page"):
        warm.plan(["nope"])
    named = warm.settings_of("delete", seeds=[3, 4])
    assert {s["seed"] for _, s in named} == {3, 4}
    assert len(named) == 2 * (1 + len(get("delete").presets))


def test_every_page_is_described_and_its_default_view_needs_stored_results():
    assert warm.pages() == list(descriptors()) and len(warm.pages()) == len(list(Path("pages").glob("*.py"))) - 1
    assert {i.page for i in warm.default_views()} == set(warm.pages())  # what a starting server warms
    for page in warm.pages():
        items = warm.plan([page], defaults_only=True)
        assert items, page  # the default view needs at least one stored result
        assert all(i.need.fn.kind in KINDS for i in items), page  # each an @entry the engine can store


def test_background_warmer_waits_for_students_and_warms_at_the_lowest_priority(fake_page):
    from tests.test_engine import Slow, slow

    # The thread engine's jobs (and the warmer's planning) use the process's default store: this session's own.
    eng = ThreadEngine(workers=1)
    try:
        busy = eng.submit("busy", slow, Slow(steps=3, pause=0.2, tag=70))
        student = eng.submit("student", slow, Slow(steps=1, pause=0.0, tag=71))  # queued behind `busy`
        warmer = warm.Background(eng, lambda: warm.plan([fake_page]), poll=0.05)
        deadline = time.monotonic() + 30
        while not warmer.state.startswith("paused") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert warmer.state.startswith("paused")  # a student's job is queued: the warmer submits nothing
        assert all(j.priority > BACKGROUND for j in eng.jobs.values())
        warmer.thread.join(60)
        assert warmer.state == "done" and warmer.built == 2 and not warmer.failed
        assert student.future.done() and busy.future.done()
        assert len([j for j in eng.jobs.values() if j.priority == BACKGROUND]) == 2
        assert all(active_store().has("warm-test-square", i.need.cfg) for i in warm.plan([fake_page]))
        assert warm.missing(warm.plan([fake_page])) == []
    finally:
        eng.close()


def test_a_presets_cost_is_measured_never_guessed(tmp_path, fake_page):
    from lab.catalog import presets
    from tests.warm_fake_page import DESCRIPTOR

    store = Store(tmp_path / "costs")
    with use_store(store):
        needs = DESCRIPTOR.plan(DESCRIPTOR.defaults)
        assert presets.cost(needs) is None  # never built here: no number is made up
        assert presets.describe_cost(None) == "trains (first run here)"
        warm.warm(warm.plan([fake_page]), workers=1)
        assert presets.cost(needs) == 0.0 and presets.describe_cost(0.0) == "ready"
        # a missing entry of the same kind and config is estimated from the recorded build of that config
        for p in sorted((store.root / "warm-test-square").glob("*.json")):
            if not p.name.endswith(".meta.json"):
                p.unlink()  # the results are gone; their timings stay
        est = presets.cost(needs)
        assert est is not None and 0.0 <= est < 60.0


def test_default_views_are_warmed_at_the_seeds_their_recipe_claims_pool_over_a_vits_too():
    for page in ("layerdrop", "shuffle"):
        items = warm.plan([page], defaults_only=True)
        at = {i.need.cfg.seed for i in items if hasattr(i.need.cfg, "seed")}
        assert at == {0, 1, 2}, page  # layerdrop's MLPs and shuffle's ViT alike (lab/classroom/seeds.course_seeds)
        own = {i.key for i in warm.plan([page], seeds=[0], defaults_only=True) if i.setting == "default, seed 0"}
        assert own <= {i.key for i in items}
        # at the other seeds, only what the claims read: shuffle's UMAP (a view, `for_claims` False) at seed 0 alone
        umap = {i.need.cfg.seed for i in items if i.need.key == "umap"}
        assert umap == ({0} if page == "shuffle" else set()), page
    for page in ("layerdrop", "shuffle"):
        extra = warm.recipe_seeds(page, "default", get(page).defaults)
        assert [st["seed"] for _, st in extra] == [1, 2], page


def test_warm_submits_the_dearest_first_and_the_never_timed_before_them(tmp_path, monkeypatch):
    items = warm.plan(["delete", "iot"])  # file checks only: nothing is computed here
    assert len(items) > 4
    known = {i.key: float(n % 7) * 10.0 for n, i in enumerate(items) if n % 5}  # every fifth never timed here
    monkeypatch.setattr(Store, "estimate", lambda self, kind, cfg: known.get(f"{kind}:{warm.config_json(cfg)}"))
    sent: list[list[str]] = []
    monkeypatch.setattr(warm, "compute", lambda calls, workers, progress, engine, labels: (
        sent.append(labels), {"built": [], "failed": []})[1])
    with use_store(Store(tmp_path / "empty")):
        one = warm.order(items, workers=1)
        assert sorted(i.key for i in one) == sorted(i.key for i in items)  # a permutation of what is missing
        never = [i.key for i in items if i.key not in known]
        assert [i.key for i in one[:len(never)]] == never  # the never timed first, in the plan's order
        costs = [known[i.key] for i in one[len(never):]]
        assert costs == sorted(costs, reverse=True) and costs[0] > costs[-1]  # then the dearest first
        warm.warm(items, workers=1)
        assert sent[-1] == [f"{i.page}: {i.setting}: {i.need.label}" for i in one]  # submitted in that order
        dealt = warm.order(items, workers=2)
        assert [i.key for i in dealt] == [i.key for i in warm.interleaved(one)]  # on two workers, dealt out
        asked: list[str] = []
        monkeypatch.setattr(Store, "estimate", lambda self, kind, cfg: (
            asked.append(f"{kind}:{warm.config_json(cfg)}"), known.get(f"{kind}:{warm.config_json(cfg)}"))[1])
        todo, est = warm.timed_order(items, workers=2)
        assert [i.key for i in todo] == [i.key for i in dealt]
        assert sorted(asked) == sorted(i.key for i in items)  # each missing result's cost read once, not per sort
        assert est == {i.key: known.get(i.key) for i in items}
