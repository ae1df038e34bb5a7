"""AppTest: the Home and Delete pages run with default controls and after moving the deletion slider."""

from app.claims_view import expected_verdicts, rendered_verdicts
from lab.experiments import delete

from .apptest_util import assert_clean, open_page


def test_home_page_runs():
    at = open_page("home")
    assert "Layer Lab" in at.title[0].value


def test_delete_page_runs_and_follows_the_slider():
    at = open_page("delete")
    metrics = {m.label: m.value for m in at.metric}
    assert "Cut: 2 deleted" in metrics
    # The page draws exactly the claims of its results (the run's and the sweep's), none of its own
    cfg = delete.DeleteConfig()
    want = expected_verdicts(delete.page_claims(delete.run(cfg), delete.sweep(delete.SweepConfig.of(cfg))))
    assert len(want) == 7 and rendered_verdicts([md.value for md in at.markdown]) == want
    at.slider(key="k").set_value(5).run()
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert "Cut: 5 deleted" in labels
    assert "Deleted blocks:" in " ".join(md.value for md in at.markdown)


def test_delete_page_try_this_button_sets_the_controls():
    at = open_page("delete")
    at.button(key="try_plain1").click().run()
    assert_clean(at)
    assert at.selectbox(key="arch").value == "plain"
    assert at.slider(key="k").value == 1
    assert at.selectbox(key="recovery").value == "none"
    assert at.selectbox(key="select").value == "greedy" and at.number_input(key="seed").value == 0
