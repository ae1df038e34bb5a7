"""AppTest: the Layer-lens page runs with default controls, follows its controls, draws its claims as the result
has them, and its presets set every control."""

from app import claims_view
from lab.experiments.lens import claims as lens_claims
from lab.experiments.lens import experiment as lens

from .apptest_util import assert_clean, open_page


def _charts(at) -> int:
    return len(at.get("plotly_chart"))


def test_lens_page_runs_follows_the_controls_and_its_presets_and_draws_its_claims():
    at = open_page("lens", timeout=600)  # a bound for a loaded 2-core machine, not a timing
    labels = [m.label for m in at.metric]
    assert "Blocks before the answer settles" in labels and "Model (held-out)" in labels
    assert _charts(at) >= 6  # lens curve, confidence, commitment, digits, influence, triangle
    r = lens.run(lens.LensConfig())  # the page's default result, from the test store
    drawn = claims_view.rendered_verdicts([md.value for md in at.markdown])
    assert drawn == claims_view.expected_verdicts(lens_claims.profile_claims(r)) and len(drawn) == 3
    at.selectbox(key="change").set_value("swap").run()
    assert_clean(at)
    assert any(m.label.startswith("After: blocks 2 and 3 swapped") for m in at.metric)
    at.slider(key="block").set_value(5).run()  # swap 5 and 6 on a 6-block ViT: a message, not a traceback
    assert not at.exception and any("out of range" in e.value for e in at.error)
    at.slider(key="block").set_value(2).run()  # a setting that runs again: the page draws its presets
    assert_clean(at)
    # The presets set every control, whatever came before (here: a swap)
    at.button(key="try_plain").click().run()
    assert_clean(at)
    assert at.selectbox(key="model").value == "plain" and at.selectbox(key="change").value == "none"
    assert _charts(at) >= 5  # the MLP has no digit images
    at.button(key="try_delete").click().run()
    assert_clean(at)
    assert at.selectbox(key="change").value == "delete" and at.slider(key="block").value == 2
