"""AppTest: the Shuffle-layers page runs with default controls, follows the depth slider and a Try-this button."""

from .apptest_util import assert_clean, open_page


def test_shuffle_page_runs_and_follows_the_controls():
    at = open_page("shuffle", timeout=600)  # a loaded 2-core machine trains the two 1-epoch models slowly
    labels = [m.label for m in at.metric]
    assert "Trained order" in labels and "Mean of 50 orders" in labels and "2 blocks removed" in labels
    assert "All 720 orders" not in " ".join(md.value for md in at.markdown)  # skipped at depth 6 in quick mode
    at.slider(key="depth").set_value(3).run()
    assert_clean(at)
    assert "All 6 orders" in " ".join(md.value for md in at.markdown)
    assert "2 blocks removed" in [m.label for m in at.metric]
    at.button(key="try_prune").click().run()
    assert_clean(at)
    assert at.slider(key="removed").value == 3
    assert "2 blocks removed" in [m.label for m in at.metric]  # clamped: 3 blocks leave at most 2 to remove
