"""Charts readable by everyone (app/charts.py): the data table holds every value drawn, the caption states the
main numbers, and several series never differ by colour alone."""

import plotly.graph_objects as go

from app import charts, figures_delete


def _result():
    return {"per_class": {"base": [0.9, 0.8, 0.7], "cut": [0.5, 0.4, 0.1], "recovered": [0.85, 0.8, 0.6]},
            "chance": 0.05, "config": {"recovery": "kd"}}


def test_the_table_has_every_value_drawn_and_the_caption_its_range():
    fig = figures_delete.per_class(_result())
    data = charts.table(fig)
    for series, values in (("original", [0.9, 0.8, 0.7]), ("cut", [0.5, 0.4, 0.1])):
        assert list(data[data.series == series]["value"]) == values
    assert list(data[data.series == "cut"]["x"]) == ["0", "1", "2"]
    text = charts.caption(fig)
    assert "cut: 3 values, 10.0 % to 50.0 %" in text and "original: 3 values, 70.0 % to 90.0 %" in text


def test_a_heatmap_gives_one_row_per_cell_and_horizontal_bars_keep_category_and_value():
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], x=["a", "b"], y=["r", "s"], name="map"))
    data = charts.table(fig)
    assert len(data) == 4 and list(data[(data.x == "b") & (data.y == "s")]["value"]) == [4]
    bars = charts.table(go.Figure(go.Bar(y=["A", "B"], x=[3, 5], orientation="h", name="votes")))
    assert list(bars["x"]) == ["A", "B"] and list(bars["value"]) == [3, 5]


def test_series_get_a_second_cue_unless_they_have_one():
    fig = figures_delete.per_class.uncached(_result())  # a fresh build: cached figures are shared, never cued
    charts.second_cue(fig)
    shapes = [t.marker.pattern.shape for t in fig.data if t.type == "bar"]
    assert len(set(shapes)) == len(shapes) == 3
    lines = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], mode="lines+markers", name=n) for n in "ab"]
                      + [go.Scatter(x=[0, 1], y=[1, 0], mode="lines", name="c", line_dash="dot")])
    charts.second_cue(lines)
    assert [t.line.dash for t in lines.data] == ["solid", "dash", "dot"]  # "c" keeps its own
    assert lines.data[0].marker.symbol != lines.data[1].marker.symbol


def test_an_empty_figure_says_so():
    assert charts.caption(go.Figure()) == "No values drawn yet."


def test_a_shared_figure_is_cued_on_a_copy_made_once():
    """Figures from app/figcache.py are shared by every session: the second cue goes on a copy, made once."""
    from app import figcache

    fig = figcache.freeze(go.Figure([go.Scatter(x=[1, 2], y=[0.1, 0.2], name="a"),
                                     go.Scatter(x=[1, 2], y=[0.3, 0.4], name="b")]))
    before = fig.to_dict()
    cued, text, data = charts.prepare(fig)
    assert fig.to_dict() == before and cued is not fig  # the shared figure is unchanged
    assert cued.to_dict()["data"][1]["line"]["dash"] == charts.DASHES[1]
    assert charts.prepare(fig)[0] is cued and len(data) == 4 and "a: 2 values" in text


def test_the_caption_adds_no_full_stop_after_a_question():
    assert charts.caption(figures_delete.per_class(_result())).startswith("Which classes suffer? original: ")
    assert charts.caption(go.Figure(go.Bar(x=[1], y=[2], name="a")), "Votes").startswith("Votes. a: 1 values")


def test_a_line_break_in_a_title_is_a_space_in_the_caption():
    fig = go.Figure(go.Bar(x=[1], y=[2], name="a"), layout={"title": {"text": "Settled earliest:<br>true digit"}})
    assert charts.caption(fig).startswith("Settled earliest: true digit. a: 1 values")


def test_every_page_chart_goes_through_charts_show():
    from pathlib import Path

    pages = Path(__file__).resolve().parents[1] / "pages"
    direct = [p.name for p in pages.glob("*.py") if "plotly_chart(" in p.read_text()]
    assert not direct, f"charts drawn without caption and data table: {direct}"


def test_a_caption_reads_shares_as_percent_per_series_never_per_value():
    coords = go.Figure(go.Scatter(x=[0, 1, 2], y=[-0.08, 0.03, 0.108], name="slot 0"))  # PCA coordinates
    assert "-0.08 to 0.108" in charts.caption(coords) and "%" not in charts.caption(coords)
    acc = go.Figure(go.Bar(x=["a", "b"], y=[0.5, 0.925], name="acc"))
    assert "50.0 % to 92.5 %" in charts.caption(acc)
    acc.update_yaxes(tickformat=".2f")  # the axis says these are plain numbers
    assert "0.5 to 0.925" in charts.caption(acc)


def test_a_caption_speaks_the_unit_a_figure_declares():
    margin = go.Figure(go.Scatter(x=["2", "12"], y=[1.0, 1.0], name="margin"))  # a 1-point margin, in [0, 1]
    assert "100.0 %" in charts.caption(margin)  # undeclared: read as a share
    margin.update_layout(meta={"unit": "pts"})
    assert "margin: 2 values, 1 pts." in charts.caption(margin) and "%" not in charts.caption(margin)
    seeds = go.Figure(go.Scatter(x=["2", "4"], y=[-31.1, -0.0004], name="seed"), layout={"meta": {"unit": "pts"}})
    assert "-31.1 pts to 0 pts" in charts.caption(seeds)  # no "-0"


def test_the_study_maps_caption_is_in_points():
    from app import figures_study

    cell = {"value": 2, "effect": 0.004, "se": 0.01, "unit": "pts", "family": "cannot tell", "verdict": "cannot tell",
            "seeds": [0, 1, 2], "per_seed": [0.01, -0.002, 0.004]}
    fig = figures_study.figure({"cells": [cell, {**cell, "value": 4}], "margin": 0.01, "knob": "m",
                                "appears_from": None})
    text = charts.caption(fig)
    assert "margin: 2 values, 1 pts" in text and "%" not in text, text


# -- light and dark pages (app/theme.py: dark) -------------------------------------------------------------------
def _luminance(colour: str) -> float:
    from plotly.colors import unlabel_rgb

    colour = {"white": "#ffffff", "black": "#000000"}.get(colour, colour)
    if colour.startswith("#"):
        r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    else:
        r, g, b = unlabel_rgb(colour)[:3]
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def _trace_colours(fig: go.Figure) -> list:
    return [(t.name, t.marker.color if t.type == "bar" else t.line.color) for t in fig.data]


def _drawn(fig: go.Figure, attr: str):
    """A layout colour as the browser draws it: the figure's own, else its template's."""
    own = fig.layout[attr] if "." not in attr else fig.layout.font.color
    tpl = fig.layout.template.layout
    return own or (tpl[attr] if "." not in attr else tpl.font.color)


def test_a_figure_drawn_for_a_dark_page_has_dark_paper_light_ink_and_its_colours_by_meaning():
    from app import figcache, theme

    fig = figures_delete.per_class(_result())  # a cached, shared figure: original / cut / recovered bars, chance
    assert isinstance(fig, figcache.SharedFigure)
    light, _, _ = charts.prepare(fig, scheme="light")
    dark, _, _ = charts.prepare(fig, scheme="dark")
    for f, paper_dark in ((light, False), (dark, True)):
        for attr in ("paper_bgcolor", "plot_bgcolor"):
            assert (_luminance(_drawn(f, attr)) < 0.1) is paper_dark, (attr, _drawn(f, attr))
        assert (_luminance(_drawn(f, "font.color")) > 0.8) is paper_dark, _drawn(f, "font.color")
    assert _drawn(dark, "paper_bgcolor") == theme.DARK_PAPER  # the chart sits on the page without an edge
    hued = [tc for tc in _trace_colours(light) if tc[0] != "chance"]
    assert [tc for tc in _trace_colours(dark) if tc[0] != "chance"] == hued  # meaning colours as in light
    chance = [dict(_trace_colours(f))["chance"] for f in (light, dark)]  # mid grey: its own opposite, to a level
    assert abs(_luminance(chance[0]) - _luminance(chance[1])) < 0.01, chance
    assert [c for _, c in _trace_colours(light)][:3] == [theme.ORIGINAL, theme.CUT, theme.RECOVERED]
    # one copy per scheme, reused by every rerun: a light copy is never served to a dark page, nor the reverse
    assert charts.prepare(fig, scheme="dark")[0] is dark and charts.prepare(fig, scheme="light")[0] is light
    assert dark is not light and fig.layout.template.layout.paper_bgcolor == "white"  # the shared one unchanged


def test_on_a_dark_page_ink_turns_light_and_greys_keep_their_distance_from_the_paper():
    from app import theme

    fig = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name="trained order", line={"color": theme.TRAINED_ORDER}),
                     go.Scatter(x=[0, 1], y=[1, 0], name="random order", line={"color": theme.RANDOM_ORDER}),
                     go.Bar(x=["a", "b"], y=[1, 2], name="methods", marker={"color": ["#444444", "#9c9c9c"],
                                                                           "line": {"color": "white"}})])
    fig.add_annotation(x=0, y=0, text="label", bgcolor="rgba(255,255,255,0.8)")
    d = go.Figure(theme.dark(theme.layout(fig, "t").to_dict()))
    assert d.data[0].line.color == "#ffffff" and d.data[1].line.color == theme.RANDOM_ORDER
    strong, faded = d.data[2].marker.color  # a grey faded toward the paper fades toward the dark paper
    assert _luminance(strong) > _luminance(faded) > _luminance(theme.DARK_PAPER)
    assert d.data[2].marker.line.color == "black" and d.layout.annotations[0].bgcolor == "rgba(0,0,0,0.8)"


def test_charts_show_draws_dark_when_the_browser_says_dark():
    import pytest
    from streamlit.testing.v1 import AppTest, app_test

    if "theme" not in getattr(app_test, "_CONTEXT_INFO_FIELDS", {}):  # AppTest.context: Streamlit 1.67 has it
        pytest.skip("this Streamlit's AppTest cannot say which theme the browser shows")

    def page():
        import plotly.graph_objects as go

        from app import charts, theme

        fig = theme.layout(go.Figure(go.Bar(x=["a"], y=[1], name="cut", marker_color=theme.CUT)), "t")
        charts.show(fig, "chart")

    import json

    for scheme, want in ((None, "white"), ("light", "white"), ("dark", "#0e1117")):
        at = AppTest.from_function(page)
        at.context = {"theme": scheme}
        at.run()
        assert not at.exception, at.exception
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)
        assert spec["layout"]["template"]["layout"]["paper_bgcolor"] == want, scheme
        assert spec["data"][0]["marker"]["color"] == "#D55E00"
