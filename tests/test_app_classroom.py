"""AppTest: the classroom tools (app/classroom.py) on real pages: complete presets, pin and compare, presentation
and student links, labelled select boxes whose links carry the short value."""


import pytest
from streamlit.testing.v1 import AppTest

from lab.catalog import get

from .apptest_util import assert_clean, open_page, open_with_link, settle


def _settings_of(at: AppTest, keys) -> dict:
    return {k: at.session_state[k] for k in keys}


def test_a_preset_sets_every_control_of_its_page_whatever_came_before():
    at = open_page("reinit")
    presets = {p.key: p for p in get("reinit").presets}
    # The case: "ViT: reset the head" inherited recovery = kd from the preset clicked before it.
    at.button(key="try_rerand_kd").click().run()
    assert_clean(at)
    assert _settings_of(at, get("reinit").defaults) == presets["rerand_kd"].settings
    assert any(m.label.startswith("After 300 steps of kd") for m in at.metric)  # and the page runs the recovery
    at.button(key="try_vit_head").click().run()
    assert_clean(at)
    assert _settings_of(at, get("reinit").defaults) == presets["vit_head"].settings
    assert at.selectbox(key="recovery").value == "none"
    # Reset brings back every default.
    at.button(key="try_reset").click().run()
    assert_clean(at)
    assert _settings_of(at, get("reinit").defaults) == get("reinit").defaults


def test_pin_then_change_shows_both_runs_and_the_link_holds_both():
    at = open_page("delete")
    at.button(key="layerlab_pin").click().run()  # pins the defaults: residual, k = 2
    assert_clean(at)
    assert at.query_params["pin"] == "default"
    # A labelled select box shows words and links the short value (checked below: arch=plain)
    box = at.selectbox(key="arch")
    assert "plain MLP" in box.options and "plain" not in box.options  # what the student reads
    box.set_value("plain").run()
    at.slider(key="k").set_value(1).run()
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert labels.count("Original (held-out)") == 2, labels  # the pinned run's cards and this run's
    assert "Cut: 2 deleted" in labels and "Cut: 1 deleted" in labels
    text = " ".join(md.value for md in at.markdown)
    assert "Pinned" in text and "Architecture: plain MLP" in text
    assert at.query_params["arch"] == "plain" and at.query_params["k"] == "1"  # what the link carries
    # Unpin: one run again.
    at.button(key="layerlab_unpin").click().run()
    assert_clean(at)
    assert [m.label for m in at.metric].count("Original (held-out)") == 1
    assert "pin" not in at.query_params


def test_a_compared_link_opens_with_both_runs_and_a_bad_pin_is_reported():
    at = open_with_link("delete", {"arch": "plain", "k": "1", "pin": "k.1"})
    labels = [m.label for m in at.metric]
    assert labels.count("Cut: 1 deleted") == 2, labels
    at = open_with_link("delete", {"pin": "k.99_arch.tree"})
    assert any("pin=" in w.value and "was ignored" in w.value for w in at.warning)
    assert [m.label for m in at.metric].count("Original (held-out)") == 1


def test_presentation_flag_moves_the_controls_out_of_the_sidebar():
    at = open_with_link("delete", {"present": "1"})
    assert not at.sidebar.selectbox and not at.sidebar.slider and not at.sidebar.number_input
    assert at.selectbox(key="arch").value == "residual"  # still there, inline above the figure
    assert at.button(key="try_plain1")  # presets stay
    at = open_with_link("delete", {"student": "1", "arch": "plain"})
    assert not at.sidebar.selectbox
    assert not [b for b in at.button if b.key and b.key.startswith("try_")]  # no presets, no pin for students
    assert "Cut: 2 deleted" in [m.label for m in at.metric]
    assert at.selectbox(key="arch").value == "plain"  # the link's setting, with its control hidden


@pytest.mark.parametrize("page, first, second", [("iot", "gumbel", "collapse"), ("rearrange", "shuffle", "first")])
def test_new_pages_presets_set_every_control_and_present_hides_the_sidebar(page, first, second):
    d = get(page)
    at = open_page(page, timeout=600)  # the first visit trains the page's quick models: a bound for a loaded machine
    presets = {p.key: p for p in d.presets}
    for key in (first, second):  # the second must undo whatever the first set that it does not name
        at.button(key=f"try_{key}").click().run()
        settle(at)
        assert_clean(at)
        assert _settings_of(at, d.defaults) == presets[key].settings, key
    at.button(key="try_reset").click().run()
    settle(at)
    assert _settings_of(at, d.defaults) == d.defaults
    at = open_with_link(page, {"present": "1"})
    assert not at.sidebar.selectbox and not at.sidebar.slider and not at.sidebar.number_input
    assert at.button(key=f"try_{first}")  # presets stay when presenting
