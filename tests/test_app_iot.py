"""AppTest: the IOT page runs with default controls, fills in as its pieces land, draws exactly the claims its lab
call returns, follows its controls and says why a setting cannot run (its presets: tests/test_app_classroom.py)."""

import time

from app.claims_view import expected_verdicts
from lab.experiments.iot import claims as iot_claims
from lab.experiments.iot import experiment as iot

from .apptest_util import assert_clean, open_page, settle, verdicts


def _all_figures(at, n=4, limit=300.0):
    """The explore-off twin has no metric of its own: rerun until its figure is drawn too."""
    deadline = time.monotonic() + limit
    while len(at.get("plotly_chart")) < n and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
        assert_clean(at)
    return at


def _text(at) -> str:
    return " ".join(md.value for md in at.markdown)


def test_iot_page_runs_fills_in_draws_its_claims_and_follows_the_controls():
    at = settle(open_page("iot"))
    labels = [m.label for m in at.metric]
    assert labels == ["Sequential model", "Best fixed order", "Ensemble, M = 4", "IOT", "Oracle"]
    assert all(m.value.endswith("%") for m in at.metric)
    _all_figures(at)
    assert len(at.get("plotly_chart")) == 4
    text = _text(at)
    assert "Candidate orders:" in text and "order 3:" in text and "With the exploration term off" in text
    # The page draws exactly the claims of its result (quick mode), none of its own
    got = verdicts(at)
    res = iot_claims.run_claims(iot.run(iot.IOTConfig()))
    assert "collapse_without_exploration" in [c["key"] for c in res]
    assert got and got == expected_verdicts(res)
    text = _text(at)
    assert "blind guess" not in text and "the paper's observation, at this scale" not in text

    at.slider(key="m").set_value(3).run()
    settle(at)
    assert "Ensemble, M = 3" in [m.label for m in at.metric]
    assert "order 3:" not in _text(at)
    at.selectbox(key="space").set_value("sublayers").run()  # the residual MLP has no sub-layers
    assert not at.exception
    assert any("only in the ViT" in e.value for e in at.error)
