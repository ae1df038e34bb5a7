"""AppTest: the Home and Delete pages run with default controls (Delete: its claims, its Reproduce expander), after
moving the deletion slider and after a Try-this button."""

import time

from app.claims_view import expected_verdicts, rendered_verdicts
from lab.experiments.delete import claims as delete_claims
from lab.experiments.delete import experiment as delete

from .apptest_util import assert_clean, open_page


def test_home_page_runs():
    at = open_page("home")
    assert "Layer Lab" in at.title[0].value


def test_delete_page_runs_follows_the_slider_and_a_try_this_button():
    at = open_page("delete")
    metrics = {m.label: m.value for m in at.metric}
    assert "Cut: 2 deleted" in metrics
    # The page draws exactly the claims of its results (the run's, the sweep's and the KD/CE race's), none of its
    # own: what its descriptor gives for the setting (Descriptor.claims), once every piece has landed
    cfg = delete.DeleteConfig()
    want = expected_verdicts(delete_claims.claims_of(cfg))
    deadline = time.monotonic() + 400
    while rendered_verdicts([md.value for md in at.markdown]) != want and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
        assert_clean(at)
    assert len(want) == 8 and rendered_verdicts([md.value for md in at.markdown]) == want
    # Its Reproduce expander: the same view as a command (quick mode named) and as Python
    code = [c.value for c in at.code]
    assert any(c.startswith("LAYERLAB_QUICK=1 python -m lab delete --arch residual --k 2") and "--seed 0" in c
               for c in code), code
    assert any("DeleteConfig(" in c for c in code)
    at.slider(key="k").set_value(5).run()
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert "Cut: 5 deleted" in labels
    assert "Deleted blocks:" in " ".join(md.value for md in at.markdown)
    # A "Try this" button sets every control of its setting, whatever the slider said
    at.button(key="try_plain1").click().run()
    assert_clean(at)
    assert at.selectbox(key="arch").value == "plain"
    assert at.slider(key="k").value == 1
    assert at.selectbox(key="recovery").value == "none"
    assert at.selectbox(key="select").value == "greedy" and at.number_input(key="seed").value == 0
    assert "Cut: 1 deleted" in [m.label for m in at.metric]
