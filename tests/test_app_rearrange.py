"""AppTest: the Rearrange page runs with default controls, says why a setting cannot run, follows its controls, and
its buttons set them."""

from app.claims_view import expected_verdicts, rendered_verdicts
from lab.experiments.rearrange import claims as rearrange_claims
from lab.experiments.rearrange import experiment as rearrange

from .apptest_util import assert_clean, open_page


def _text(at) -> str:
    return " ".join(md.value for md in at.markdown)


def test_rearrange_page_runs_says_why_a_setting_cannot_run_and_follows_the_controls_and_a_preset():
    at = open_page("rearrange")
    labels = [m.label for m in at.metric]
    assert "Skip block 2" in labels and "Block runs" in labels
    assert "0 → 1 → 3 → 4 → 5" in _text(at)  # the default: skip block 2 of the 6-block ViT
    # The page draws exactly the claims of its result, verdict by verdict (none written by the page itself)
    want = expected_verdicts(rearrange_claims.compare_claims(rearrange.compare(rearrange.SeedConfig(0))))
    assert len(want) == 25 and rendered_verdicts([md.value for md in at.markdown]) == want
    at.slider(key="block").set_value(5).run()  # block 5 of a 6-block ViT is the last: not a middle block
    assert not at.exception
    assert any("out of range" in e.value for e in at.error)
    at.slider(key="block").set_value(3).run()
    assert_clean(at)
    at.slider(key="block").set_value(2).run()  # back to the default block for the operations below
    at.selectbox(key="op").set_value("parallel").run()
    assert_clean(at)
    assert "[1 | 2 | 3 | 4] mean" in _text(at)
    assert "6 in 3 steps" in [m.value for m in at.metric]
    at.selectbox(key="op").set_value("parallel-loop").run()
    at.slider(key="loops").set_value(3).run()
    assert_clean(at)
    assert "[1 | 2 | 3 | 4] mean → [1 | 2 | 3 | 4] mean → [1 | 2 | 3 | 4] mean" in _text(at)
    assert "14 in 5 steps" in [m.value for m in at.metric]
    at.selectbox(key="model").set_value("residual").run()
    assert_clean(at)
    assert "[1 | 2 | 3 | 4 | 5] mean" in _text(at)
    # A preset sets every control, whatever came before (here: the residual model, parallel loops)
    at.button(key="try_repeat").click().run()
    assert_clean(at)
    assert at.selectbox(key="op").value == "repeat" and at.slider(key="block").value == 2
    assert "2 → 2 → 2 → 2" in _text(at)
