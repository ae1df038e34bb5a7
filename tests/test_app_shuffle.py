"""AppTest: the Shuffle-layers page runs with default controls, follows the depth slider and a Try-this button."""

from .apptest_util import assert_clean, open_page, settle


def test_shuffle_page_runs_and_follows_the_controls():
    at = settle(open_page("shuffle", timeout=600))  # a loaded 2-core machine trains the 1-epoch models slowly
    labels = [m.label for m in at.metric]
    assert "Trained order" in labels and "Mean of 50 random orders" in labels and "2 blocks removed" in labels
    assert "All 720 orders" not in " ".join(md.value for md in at.markdown)  # skipped at depth 6 in quick mode
    settle(at.slider(key="depth").set_value(3).run())
    assert_clean(at)
    assert "All 6 orders" in " ".join(md.value for md in at.markdown)
    assert "Mean of all 6 orders" in [m.label for m in at.metric]  # not "50 orders" when only 6 exist
    assert "2 blocks removed" in [m.label for m in at.metric]
    at.button(key="try_prune").click().run()
    assert_clean(at)
    # A preset is a complete setting: it also brings the depth back to 6, so 3 blocks can be removed.
    assert at.slider(key="removed").value == 3 and at.slider(key="depth").value == 6
    settle(at)
    assert "3 blocks removed" in [m.label for m in at.metric]
