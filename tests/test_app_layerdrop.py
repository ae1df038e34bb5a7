"""AppTest: the LayerDrop page runs with default controls, follows its controls, its buttons set them, and it
draws exactly the claims its result carries."""

from app import claims_view
from lab.experiments.layerdrop import claims as layerdrop_claims
from lab.experiments.layerdrop import descriptor as described
from lab.experiments.layerdrop import experiment as layerdrop

from .apptest_util import assert_clean, open_page


def _drawn(at) -> list[tuple[str, str]]:
    return claims_view.rendered_verdicts([md.value for md in at.markdown])


def _expected(**changes) -> list[tuple[str, str]]:
    r = layerdrop.run(described.config_of({**described.DEFAULTS, **changes}))  # stored by the page: a file read
    return claims_view.expected_verdicts(layerdrop_claims.run_claims(r))


def test_layerdrop_page_runs_follows_the_controls_and_the_rule_button():
    at = open_page("layerdrop")
    labels = [m.label for m in at.metric]
    assert "Pruned to 4 of 8" in labels
    assert "Kept blocks:" in " ".join(md.value for md in at.markdown)
    assert _drawn(at) == _expected() and len(_drawn(at)) == 8  # 6 claims, 2 on the baselines
    at.slider(key="keep").set_value(6).run()
    assert_clean(at)
    assert "Pruned to 6 of 8" in [m.label for m in at.metric]
    assert _drawn(at) == _expected(keep=6)
    at.selectbox(key="strategy").set_value("last").run()
    assert_clean(at)
    assert "kept blocks [0, 1, 2, 3, 4, 5]" in " ".join(m.help or "" for m in at.metric)
    # The rule's button: keep = 6 gives p* = 1 - 6/8 = 0.25, while p is still the default 0.5
    at.button(key="try_pstar").click().run()
    assert_clean(at)
    assert at.select_slider(key="p").value == 0.25
    assert "Full model (p = 0.25)" in [m.label for m in at.metric]
    assert "the rule's choice for keeping 6 of 8" in " ".join(md.value for md in at.markdown)
