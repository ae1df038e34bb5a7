"""app/figcache.py: a cached figure equals a fresh build, is built once per (arguments, palette), follows any change
of its arguments (registered results included), and refuses to be changed in place."""

import plotly.graph_objects as go
import pytest

from app import figcache
from app.figures_delete import per_class


def _result(base=0.9):
    return {"base_acc": base, "cut_acc": 0.5, "recovered_acc": 0.8, "chance": 0.1,
            "per_class": {"base": [0.9, 0.8, 0.7], "cut": [0.4, 0.5, 0.6], "recovered": [0.8, 0.7, 0.9]},
            "config": {"k": 2, "recovery": "ce"}}


def setup_function():
    figcache.clear()


def test_a_cached_figure_is_the_fresh_build_and_is_built_once():
    r = _result()
    fresh = per_class.uncached(r, "t", 420)
    a = per_class(r, "t", 420)
    b = per_class(_result(), "t", 420)  # equal data in a new object: the same figure
    assert a is b and figcache.stats["builds"] == 1
    assert a.to_dict() == fresh.to_dict() and isinstance(a, go.Figure)


def test_any_change_of_the_arguments_builds_anew():
    r = _result()
    a = per_class(r, "t", 420)
    assert per_class(r, "t", 400) is not a
    assert per_class(r, "other title", 420) is not a
    r2 = _result()
    r2["per_class"]["cut"][1] = 0.55  # deep inside the result
    c = per_class(r2, "t", 420)
    assert c is not a and c.to_dict()["data"] != a.to_dict()["data"]


def test_a_registered_result_stands_for_its_key():
    r = _result()
    figcache.register("entry-1", r)
    assert figcache.token(r) == ("@", "entry-1")
    assert figcache.token(r["per_class"]) == ("@", "entry-1/per_class")
    composed = {**r, "extra": 1}  # a dict a page built from it: its parts still stand for the key
    assert ("per_class", ("@", "entry-1/per_class")) in figcache.token(composed)[1]
    other = _result()  # equal but not registered: walked, so it cannot alias another entry's key
    assert figcache.token(other) != figcache.token(r)


def test_tokens_tell_numbers_apart():
    assert figcache.token(True) != figcache.token(1)
    assert figcache.token(float("nan")) == figcache.token(float("nan"))
    assert figcache.token([1, 2]) != figcache.token((1, 2))


def test_a_cached_figure_refuses_changes():
    fig = per_class(_result(), "t", 420)
    with pytest.raises(TypeError, match="cached"):
        fig.update_layout(height=100)
    with pytest.raises(TypeError, match="cached"):
        fig.add_trace(go.Bar(y=[1]))
    assert go.Figure(fig.to_dict()).layout.height == 420  # a copy can be changed


def test_a_large_container_stands_for_a_digest_of_its_content():
    a = [float(i) for i in range(100)]
    b = list(a)
    assert figcache.token(a) == figcache.token(b) and figcache.token(a)[0] == "#"
    c = list(a)
    c[50] = -1.0
    assert figcache.token(c) != figcache.token(a)
    assert figcache.token(a) is figcache.token(a)  # computed once per object


def test_the_chart_spec_is_plotlys_own_encoding():
    import plotly.io as pio

    r = _result()
    fig = per_class(r, "t", 420)
    assert pio.to_json(fig.to_dict(), validate=False) == figcache._to_json(per_class.uncached(r, "t", 420).to_dict(),
                                                                           validate=False)
    assert pio.to_json({"data": [], "layout": {}}) == figcache._to_json({"data": [], "layout": {}})  # others as before


def test_a_typed_result_is_walked_by_its_fields():
    """A typed result (a dataclass) registers and tokens like the dict it stores as: by its fields, so a changed
    field gives another token and a registered part stands for its key."""
    from dataclasses import dataclass, replace

    @dataclass(frozen=True)
    class Part:
        accs: list

    @dataclass(frozen=True)
    class Result:
        base_acc: float
        part: Part

    r = Result(0.9, Part([0.1, 0.2]))
    assert figcache.token(r) == figcache.token(Result(0.9, Part([0.1, 0.2])))
    assert figcache.token(r) != figcache.token(replace(r, part=Part([0.1, 0.25])))
    figcache.register("entry-2", r)
    assert figcache.token(r) == ("@", "entry-2") and figcache.token(r.part) == ("@", "entry-2/part")
