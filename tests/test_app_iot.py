"""AppTest: the IOT page runs with default controls, fills in as its pieces land, follows its controls, says why
a setting cannot run, and its buttons set the controls."""

import time

from .apptest_util import assert_clean, open_page, settle


def _all_figures(at, n=4, limit=300.0):
    """The explore-off twin has no metric of its own: rerun until its figure is drawn too."""
    deadline = time.monotonic() + limit
    while len(at.get("plotly_chart")) < n and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
        assert_clean(at)
    return at


def test_iot_page_runs_fills_in_and_follows_the_controls():
    at = settle(open_page("iot"))
    labels = [m.label for m in at.metric]
    assert labels == ["Sequential model", "Best fixed order", "Ensemble, M = 4", "IOT", "Oracle"]
    assert all(m.value.endswith("%") for m in at.metric)
    _all_figures(at)
    assert len(at.get("plotly_chart")) == 4
    text = " ".join(md.value for md in at.markdown)
    assert "Candidate orders:" in text and "order 3:" in text and "With the exploration term off" in text
    at.slider(key="m").set_value(3).run()
    settle(at)
    assert "Ensemble, M = 3" in [m.label for m in at.metric]
    assert "order 3:" not in " ".join(md.value for md in at.markdown)


def test_iot_page_explains_an_impossible_setting_and_presets_set_controls():
    at = open_page("iot")
    at.selectbox(key="space").set_value("sublayers").run()  # the residual MLP has no sub-layers
    assert not at.exception
    assert any("only in the ViT" in e.value for e in at.error)
    at.selectbox(key="space").set_value("blocks").run()
    at.button(key="try_collapse").click().run()
    settle(at)
    assert_clean(at)
    assert at.selectbox(key="explore").value == 0.0
