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
