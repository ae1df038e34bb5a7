"""AppTest: the Shuffle and IOT pages draw exactly the claims their lab call returns (quick mode), so a page cannot
drift from its numbers; the selected LayerShuffle variant is named as itself, never as plain LayerShuffle."""

from __future__ import annotations

import time

from app.claims_view import expected_verdicts, rendered_verdicts
from lab.experiments import iot, shuffle

from .apptest_util import assert_clean, open_page


def _verdicts(at, limit: float = 400.0) -> list[tuple[str, str]]:
    """Rerun until the "Against the paper" section has drawn its claims (pieces land one by one)."""
    deadline = time.monotonic() + limit
    while True:
        got = rendered_verdicts([md.value for md in at.markdown])
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.5)
        at.run()
        assert_clean(at)


def _text(at) -> str:
    return " ".join(md.value for md in at.markdown)


def test_shuffle_page_draws_its_result_s_claims():
    at = open_page("shuffle", timeout=600)
    got = _verdicts(at)
    want = expected_verdicts(shuffle.run(shuffle.ShuffleConfig())["claims"])
    assert got and got == want
    assert "it holds" not in _text(at) and "it differs" not in _text(at)


def test_shuffle_page_names_the_selected_variant():
    at = open_page("shuffle", timeout=600)
    at.selectbox(key="mode").set_value("position").run()
    got = _verdicts(at)
    res = shuffle.run(shuffle.ShuffleConfig(mode="position"))
    assert got == expected_verdicts(res["claims"])
    assert "slot_decodable" in [c["key"] for c in res["claims"]]
    text = _text(at)
    assert "LayerShuffle-position training:" in text and "LayerShuffle training:" not in text
    subjects = {c["key"]: c.get("subject") for c in res["claims"]}
    assert subjects["shuffle_any_order"] == "LayerShuffle-position"


def test_iot_page_draws_its_result_s_claims():
    at = open_page("iot")
    got = _verdicts(at)
    res = iot.run(iot.IOTConfig())
    assert "collapse_without_exploration" in [c["key"] for c in res["claims"]]
    assert got and got == expected_verdicts(res["claims"])
    text = _text(at)
    assert "blind guess" not in text and "the paper's observation, at this scale" not in text
