"""AppTest: the Shuffle-layers page runs with default controls, draws exactly the claims its lab call returns (the
selected LayerShuffle variant named as itself, never as plain LayerShuffle), follows the depth slider and a Try-this
button."""

from app.claims_view import expected_verdicts
from lab.experiments.shuffle import claims as shuffle_claims
from lab.experiments.shuffle import experiment as shuffle

from .apptest_util import assert_clean, open_page, settle, verdicts


def _text(at) -> str:
    return " ".join(md.value for md in at.markdown)


def test_shuffle_page_runs_draws_its_claims_and_follows_the_controls():
    at = settle(open_page("shuffle", timeout=600))  # a loaded 2-core machine trains the 1-epoch models slowly
    labels = [m.label for m in at.metric]
    assert "Trained order" in labels and "Mean of 50 random orders" in labels and "2 blocks removed" in labels
    assert "All 720 orders" not in _text(at)  # skipped at depth 6 in quick mode
    # The page draws exactly the claims of its result (quick mode), none of its own
    got = verdicts(at)
    assert got and got == expected_verdicts(shuffle_claims.result_claims(shuffle.run(shuffle.ShuffleConfig())))
    assert "it holds" not in _text(at) and "it differs" not in _text(at)

    settle(at.slider(key="depth").set_value(3).run())
    assert_clean(at)
    assert "All 6 orders" in _text(at)
    assert "Mean of all 6 orders" in [m.label for m in at.metric]  # not "50 orders" when only 6 exist
    assert "2 blocks removed" in [m.label for m in at.metric]
    # The selected variant is named as itself in the claims and the prose (at depth 3: a smaller model to train)
    settle(at.selectbox(key="mode").set_value("position").run())
    got = verdicts(at)
    res = shuffle_claims.result_claims(shuffle.run(shuffle.ShuffleConfig(mode="position", depth=3)))
    assert got == expected_verdicts(res)
    assert "slot_decodable" in [c["key"] for c in res]
    text = _text(at)
    assert "LayerShuffle-position training:" in text and "LayerShuffle training:" not in text
    subjects = {c["key"]: c.get("subject") for c in res}
    assert subjects["shuffle_any_order"] == "LayerShuffle-position"

    at.button(key="try_prune").click().run()
    assert_clean(at)
    # A preset is a complete setting: it also brings the depth back to 6, so 3 blocks can be removed.
    assert at.slider(key="removed").value == 3 and at.slider(key="depth").value == 6
    settle(at)
    assert "3 blocks removed" in [m.label for m in at.metric]
