"""Each seed's own value beside a claim pooled over seeds (app/seed_dots.py, issue 57 part 3): one dot per seed at
its own value (x 100 for points), coloured by the side of the threshold its gap puts it on, and no figure for a
claim that lists no seeds."""

from __future__ import annotations

import pytest

from app import seed_dots, theme
from lab import claims as C
from lab import estimates as E


def _at_seed(seed: int, value: float, side: str = ">=", threshold: float = 0.0, unit: str = "pts") -> C.Claim:
    t = C.test("recipe minus baseline", E.Estimate(value, 0.004, "paired", 1000, "paired over 1,000 inputs"), side,
               threshold, unit=unit)
    return C.claim("demo.recipe", "the recipe trains better models", "a stand-in", {"gain": value},
                   "recipe above baseline by 2 se over training seeds", [t], f"gain at seed {seed}", seeds=[seed],
                   over="seeds")


def _pooled(values: dict[int, float], **kw: object) -> C.Claim:
    seeds = list(values)
    (c,) = C.pool([[_at_seed(s, v, **kw)] for s, v in values.items()], seeds)
    return c


def _dots(fig) -> list[tuple[str, float, str, str]]:
    """(x label, y, colour, legend name) of every seed dot the figure draws."""
    out = []
    for t in fig.data:
        if t.type == "scatter" and t.mode == "markers":
            out += [(x, y, t.marker.color, t.name) for x, y in zip(t.x, t.y, strict=True)]
    return out


def test_one_dot_per_seed_at_its_own_value_in_points():
    c = _pooled({0: 0.031, 1: 0.012, 2: -0.004, 3: 0.05})
    (t,) = c["tests"]
    assert [p["value"] for p in t["per_seed"]] == pytest.approx([0.031, 0.012, -0.004, 0.05])
    fig = seed_dots.figure(c)
    dots = sorted(_dots(fig))
    assert [x for x, *_ in dots] == ["seed 0", "seed 1", "seed 2", "seed 3"]
    assert [y for _, y, *_ in dots] == pytest.approx([3.1, 1.2, -0.4, 5.0])
    (bar,) = [d for d in fig.data if d.type == "bar"]
    assert bar.y[0] == pytest.approx(100 * t["value"])
    assert bar.error_y.array[0] == pytest.approx(100 * E.Z * t["se"])
    (line,) = [d for d in fig.data if d.name == "threshold"]
    assert list(line.y) == [0.0, 0.0]


def test_a_unit_other_than_points_is_drawn_as_it_is():
    c = _pooled({0: 0.31, 1: 0.12, 2: 0.2}, unit="CKA", threshold=0.1)
    assert sorted(y for _, y, *_ in _dots(seed_dots.figure(c))) == pytest.approx([0.12, 0.2, 0.31])


def test_colours_follow_the_gap_not_the_value():
    # a "<=" rule at 0.01: a seed below it lies on the holds side, whatever the sign of its value
    c = _pooled({0: -0.02, 1: 0.005, 2: 0.03, 3: 0.01}, side="<=", threshold=0.01)
    by_seed = {x: (colour, name) for x, _, colour, name in _dots(seed_dots.figure(c))}
    assert by_seed["seed 0"][0] == by_seed["seed 1"][0] == theme.HOLDS_SIDE
    assert by_seed["seed 2"][0] == theme.AGAINST_SIDE
    assert by_seed["seed 3"] == (theme.MARK, "seed on the threshold")
    assert theme.HOLDS_SIDE != theme.AGAINST_SIDE
    assert seed_dots.flip_words(c).startswith("2 of 4 seeds on the rule's side;")  # the seed on the line is not


def test_the_line_says_the_sign_flip_p_and_that_it_does_not_decide():
    c = _pooled({0: 0.031, 1: 0.012, 2: 0.02})
    (t,) = c["tests"]
    words = seed_dots.flip_words(c)
    assert t["flip_p"] == pytest.approx(0.125)  # every seed on the holds side: 1 pattern in 2^3
    assert words == ("3 of 3 seeds on the rule's side; sign-flip p = 0.125; shown, not deciding (3 seeds give no p "
                     "below 0.125).")


def test_a_claim_without_seeds_draws_nothing():
    one = _at_seed(0, 0.03)
    assert "per_seed" not in one["tests"][0]
    assert seed_dots.figure(one) is None and seed_dots.flip_words(one) == ""
    assert seed_dots.figure({"tests": []}) is None


def test_each_test_of_a_claim_gets_its_own_panel_and_a_name_is_not_markup():
    def at(seed: int, a: float, b: float) -> C.Claim:
        est = lambda v: E.Estimate(v, 0.004, "paired", 1000, "")  # noqa: E731
        ts = [C.test("first <b>skip</b>", est(a), ">=", 0.0), C.test("last skip", est(b), ">=", 0.0)]
        return C.claim("demo.two", "two tests", "a stand-in", {}, "both above 0", ts, "", seeds=[seed], over="seeds")

    (c,) = C.pool([[at(0, 0.02, 0.01)], [at(1, 0.03, -0.01)], [at(2, 0.01, 0.02)]], [0, 1, 2])
    fig = seed_dots.figure(c)
    assert len(_dots(fig)) == 6
    assert {t.xaxis for t in fig.data} == {"x", "x2"}
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0] == "first &lt;b&gt;skip&lt;/b&gt;" and titles[1] == "last skip"
    assert min(a.font.size for a in fig.layout.annotations) >= theme.SMALL_FONT
    assert fig.layout.font.size >= theme.SMALL_FONT and 120 <= fig.layout.height <= 260
    assert seed_dots.flip_words(c) == ("first <b>skip</b>: 3 of 3 seeds on the rule's side, sign-flip p = 0.125; "
                                       "last skip: 2 of 3 seeds on the rule's side, sign-flip p = 0.375; shown, not "
                                       "deciding (3 seeds give no p below 0.125).")


def test_a_view_pooled_over_seeds_draws_each_seed_beside_its_claim(monkeypatch):
    """The stand-in page (tests/apps/seeds_demo.py, quick models): its recipe claim, pooled over seeds 0, 1, 2 without
    a click, has a chart with one dot per seed and the sign-flip line; the claim about these networks has none."""
    import json
    import time
    import uuid

    from lab import catalog

    from .apptest_util import open_test_app

    monkeypatch.setenv("LAYERLAB_RECIPE_SEEDS", "3")
    monkeypatch.setenv("SEEDS_DEMO", "auto")
    monkeypatch.setenv("SEEDS_DEMO_RUN", uuid.uuid4().hex)
    try:
        at = open_test_app("seeds_demo")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("Each seed alone" in m.value for m in at.markdown):
            time.sleep(0.3)
            at.run()
            assert not at.exception, at.exception
        charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
        assert len(charts) == 1, "one pooled claim, one chart"
        dots = [y for t in charts[0]["data"] if t.get("mode") == "markers" for y in t["y"]]
        assert len(dots) == 3
        assert any("3 of 3 seeds on the rule's side; sign-flip p = 0.125" in c.value for c in at.caption)
    finally:
        catalog._FOUND.pop("seedsdemo", None)
