"""AppTest: the Train x take apart page runs in quick mode, draws its rows as they land, then the heatmap, the
profiles and the claims as the result has them; its profile control and presets work."""

import time

from app import claims_view
from lab.experiments.matrix import claims as matrix_claims
from lab.experiments.matrix import experiment as matrix

from .apptest_util import assert_clean, open_page, verdicts


def _rows_done(at) -> str:
    return next((m.value for m in at.metric if m.label == "Rows computed"), "")


def test_matrix_page_draws_rows_as_they_land_then_its_claims_and_follows_its_controls():
    at = open_page("matrix", timeout=600)  # a bound for a loaded 2-core machine, not a timing
    deadline = time.monotonic() + 600
    while _rows_done(at) != "6 of 6" and time.monotonic() < deadline:  # one job per row; AppTest runs no timers
        time.sleep(0.5)
        at.run()
        assert_clean(at)
    assert _rows_done(at) == "6 of 6"
    drawn = verdicts(at)
    r = matrix.run(matrix.MatrixConfig())  # the page's default result, from the test store
    assert drawn == claims_view.expected_verdicts(matrix_claims.result_claims(r)) and len(drawn) == 8
    assert len(at.get("plotly_chart")) >= 4  # heatmap, profile, linearity, timings
    cards = [f"{m.label} {m.value} {m.proto.delta}" for m in at.metric]
    assert not any("nan" in c.lower() for c in cards), cards  # a recipe at chance has no share to show
    at.selectbox(key="op").set_value("exit").run()
    assert_clean(at)
    assert len(at.get("plotly_chart")) >= 4
    at.button(key="try_linear").click().run()
    assert_clean(at)
    assert at.selectbox(key="op").value == "linear"
