"""AppTest: the Re-initialise page runs with default controls, follows its controls and its Try-this buttons."""

from .apptest_util import assert_clean, open_page


def test_reinit_page_runs_and_follows_the_controls():
    at = open_page("reinit")
    labels = [m.label for m in at.metric]
    assert "Trained (held-out)" in labels and "stem re-initialised" in labels
    assert "Robust:" in " ".join(c.value for c in at.caption)
    at.selectbox(key="layer").set_value("blocks.1").run()
    at.selectbox(key="op").set_value("rerand").run()
    assert_clean(at)
    assert "blocks.1 re-randomised" in [m.label for m in at.metric]
    # a layer the ViT lacks falls back to the stem instead of failing
    at.selectbox(key="layer").set_value("blocks.6").run()
    at.selectbox(key="model").set_value("vit").run()
    assert_clean(at)
    assert at.selectbox(key="layer").value == "stem"


def test_reinit_page_try_this_with_recovery():
    at = open_page("reinit")
    at.button(key="try_rerand_kd").click().run()
    assert_clean(at)
    assert at.selectbox(key="recovery").value == "kd"
    assert any(m.label.startswith("After 300 steps of kd") for m in at.metric)
