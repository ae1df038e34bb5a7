"""AppTest: the Re-initialise page runs with default controls, follows its controls and its Try-this buttons, and
draws exactly the claims its results carry (its presets, with recovery: tests/test_app_classroom.py)."""

from app import claims_view
from lab.experiments.reinit import claims as RC
from lab.experiments.reinit import descriptor as described
from lab.experiments.reinit import experiment as reinit

from .apptest_util import assert_clean, open_page


def _page_claims(settings: dict) -> list[dict]:
    """The claims the page must draw, computed here from the same (stored, quick-mode) results."""
    maps = {m: reinit.run(reinit.ReinitConfig(model=m, seed=settings["seed"])) for m in reinit.MODELS}
    out = RC.maps_claims(maps) + RC.result_focus_claims(reinit.focus(described.focus_config(settings)))
    g = described.group_config(settings)
    out += RC.result_group_claims(reinit.group(g)) if g else []
    if described.width_configs(settings):
        out += RC.width_claims(reinit.width_sweep(settings["model"], settings["seed"]))
    return out


def test_reinit_page_runs_and_follows_the_controls():
    at = open_page("reinit")
    labels = [m.label for m in at.metric]
    assert "Trained (held-out)" in labels and "stem re-initialised" in labels
    drawn = claims_view.rendered_verdicts([md.value for md in at.markdown])
    assert drawn == claims_view.expected_verdicts(_page_claims(described.DEFAULTS))
    assert len(drawn) == 13  # plain 6, residual 2, ViT 2, plain vs residual, the layer in focus, the group
    at.selectbox(key="layer").set_value("blocks.1").run()
    at.selectbox(key="op").set_value("rerand").run()
    assert_clean(at)
    assert "blocks.1 re-randomised" in [m.label for m in at.metric]
    settings = {**described.DEFAULTS, "layer": "blocks.1", "op": "rerand"}
    assert claims_view.rendered_verdicts([md.value for md in at.markdown]) == claims_view.expected_verdicts(
        _page_claims(settings))
    # a layer the ViT lacks falls back to the stem instead of failing
    at.selectbox(key="layer").set_value("blocks.6").run()
    at.selectbox(key="model").set_value("vit").run()
    assert_clean(at)
    assert at.selectbox(key="layer").value == "stem"


def test_reinit_page_group_and_width_sweep():
    at = open_page("reinit")
    at.multiselect(key="group").set_value(["stem", "blocks.0", "blocks.3"]).run()
    assert_clean(at)
    settings = {**described.DEFAULTS, "group": ("stem", "blocks.0", "blocks.3")}
    assert claims_view.rendered_verdicts([md.value for md in at.markdown]) == claims_view.expected_verdicts(
        _page_claims(settings))
    at.multiselect(key="group").set_value([]).run()
    assert_clean(at)
    assert "reinit.group-jointly-fragile" not in str(_page_claims({**described.DEFAULTS, "group": ()}))
    at.button(key="try_widths").click().run()
    assert_clean(at)
    assert at.selectbox(key="sweep").value == "on"
    drawn = claims_view.rendered_verdicts([md.value for md in at.markdown])
    want = _page_claims({**described.DEFAULTS, "sweep": "on"})
    assert drawn == claims_view.expected_verdicts(want)
    assert want[-1]["key"] == "reinit.plain-wider-more-robust-top"


def test_reinit_group_link_is_parsed_and_a_bad_one_is_ignored():
    import os

    from streamlit.testing.v1 import AppTest

    from .apptest_util import MAIN, ROOT

    os.environ["LAYERLAB_QUICK"] = "1"
    cases = (("head,stem", ("stem", "head"), False), ("blocks.1,nope", ("blocks.1", "blocks.2"), True),
             ("none", (), False))
    for link, want, notice in cases:
        at = AppTest.from_file(MAIN, default_timeout=600)
        at.run()
        at.query_params["group"] = link
        at.switch_page(str(ROOT / "pages" / "reinit.py"))
        at.run()
        assert_clean(at)
        assert tuple(at.multiselect(key="group").value) == want, link
        assert any("was ignored" in w.value for w in at.warning) is notice, link
