"""The claims mechanism: three-way verdicts against an independent computation, records, and the renderer's round
trip (what a page draws reads back as the claims it was given)."""

import math
import re
from pathlib import Path

import pytest

from lab import claims as C
from lab import estimates as E
from lab.estimates import Estimate


def test_binomial_se_matches_the_formula_and_has_a_floor():
    assert E.binomial_se(0.9, 400) == pytest.approx(math.sqrt(0.9 * 0.1 / 400))
    assert E.binomial_se(1.0, 400) == pytest.approx(1 / 400)  # a perfect score is not certainty
    with pytest.raises(ValueError):
        E.binomial_se(0.5, 0)


@pytest.mark.parametrize("est,thr,se,want", [
    (0.50, 0.40, 0.02, True),    # 5 standard errors above
    (0.30, 0.40, 0.02, False),   # 5 below
    (0.43, 0.40, 0.02, None),    # 1.5 above: inside the band
    (0.37, 0.40, 0.02, None),
])
def test_at_least_three_ways(est, thr, se, want):
    assert C.at_least(est, thr, se) is want
    assert C.at_most(est, thr, se) is (None if want is None else not want)


def test_conjunction_and_disjunction():
    assert C.all_of([True, True]) is True
    assert C.all_of([True, None]) is None
    assert C.all_of([None, False]) is False
    assert C.any_of([False, None]) is None
    assert C.any_of([False, True]) is True
    assert C.any_of([False, False]) is False


def _t(value: float, side: str = ">=", threshold: float = 0.4, se: float = 0.02) -> dict:
    return C.test("x", Estimate(value, se, "binomial", 400), side, threshold)


def test_records_are_checked():
    good = C.claim("k", "a claim", "Lad et al. (2024)", {"x": 0.5}, "x >= 0.4", [_t(0.5)], "x is 50 %")
    C.check([good])
    assert good["holds"] is True and good["measured"]["se_kind"] == "binomial"
    with pytest.raises(ValueError):
        C.check([{**good, "holds": "yes"}])
    with pytest.raises(ValueError):
        C.check([{k: v for k, v in good.items() if k != "rule"}])
    with pytest.raises(ValueError):
        C.check([{**good, "tests": []}])
    with pytest.raises(ValueError):
        C.claim("k", "a", "s", {"x": 1}, "r", [], "d")
    with pytest.raises(ValueError):
        C.test("x", Estimate(0.5, 0.01, "binomial"), "=>", 0.4)


def test_renderer_reads_back_what_it_drew():
    from app import claims_view

    cs = [C.claim("a", "first and last layers are the most sensitive", "Lad et al. (2024)", {"x": 0.1}, "r",
                  [_t(0.5)], "d", subject="residual MLP"),
          C.claim("b", "repeat is worse than skip ($5 * 2_x)", "Sun et al.", {"x": 0.1}, "r", [_t(0.3)], "d"),
          C.claim("c", "inside the noise", "s", {"x": 0.1}, "r", [_t(0.42)], "d")]
    drawn = [claims_view.block(c) for c in cs]
    assert claims_view.rendered_verdicts(drawn) == claims_view.expected_verdicts(cs)
    assert [v for v, _ in claims_view.rendered_verdicts(drawn)] == ["holds", "does not hold", "cannot tell"]
    assert "To decide: about" in drawn[2] and "To decide" not in drawn[0]  # only an open claim says what settles it
    assert "binomial" in drawn[0]  # the error's kind is drawn with the verdict


VERDICT_PHRASES = re.compile(r"(it holds|it differs|: holds|does not hold|is fatal|cannot tell)", re.I)


def test_pages_write_no_verdict_of_their_own():
    """Verdict words belong to claims (lab/), drawn by app/claims_view.py; a page's own strings never carry one."""
    root = Path(__file__).resolve().parent.parent
    bad = {}
    for p in sorted((root / "pages").glob("*.py")):
        hits = VERDICT_PHRASES.findall(p.read_text())
        if hits:
            bad[p.name] = hits
    assert not bad, f"pages with verdict text of their own: {bad}"


# -- typed claims, computed when a result is read ----------------------------------------------------------------
def _typed_claim(subject=None):
    t = C.test("acc", Estimate(0.6, 0.01, "binomial", 2500, "one accuracy"), ">=", 0.5)
    return C.claim("k.typed", "it holds", "A et al. (2020)", {"acc": 0.6}, "acc >= 0.5", [t], "acc 60 %", subject)


def test_a_claim_is_a_frozen_record_whose_plain_form_is_the_dict_it_always_was():
    import dataclasses
    import json

    from lab.runtime.plain import to_plain

    c = _typed_claim()
    assert isinstance(c, C.Claim) and c.holds is True and c["holds"] is True and c.get("subject") is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.holds = False  # type: ignore[misc]
    # the keys of the plain form, in their order; the optional ones only when set
    assert list(to_plain(c)) == ["key", "claim", "source", "measured", "tests", "combine", "rule", "holds", "detail",
                                 "settle", "over"]
    assert list(to_plain(_typed_claim("a model")))[-2:] == ["subject", "over"] and "subject" not in c
    assert c["over"] == "inputs" and "seeds" not in c and "why" not in c
    plain = json.loads(json.dumps(to_plain([c])))[0]
    assert plain == dict(c) and C.Claim.from_plain(plain) == c and C.claim_line(plain) == C.claim_line(c)
    C.check([c, plain])
    seeded = dataclasses.replace(c, seed=3)
    assert to_plain(seeded)["seed"] == 3
    assert C.claim_line(seeded).endswith("(seed 3; for these trained networks): acc 60 %")


def test_a_recipe_claim_says_what_it_generalises_over_and_reads_back():
    import json

    from lab.runtime.plain import to_plain

    t = C.test("acc", Estimate(0.6, 0.01, "binomial", 2500, "one accuracy"), ">=", 0.5)
    one = C.claim("k.recipe", "a recipe", "A et al. (2020)", {"acc": 0.6}, "acc >= 0.5", [t], "acc 60 %",
                  seeds=[4], over="seeds")
    three = C.claim("k.recipe", "a recipe", "A et al. (2020)", {"acc": 0.6}, "acc >= 0.5", [t], "acc 60 %",
                    seeds=[0, 1, 2], over="seeds")
    assert list(to_plain(one))[-3:] == ["over", "seeds", "why"] and list(to_plain(three))[-2:] == ["over", "seeds"]
    assert C.claim_line(one) == ("- [cannot tell (one trained network)] a recipe (about the recipe, over training "
                                 "seeds: trained at seed 4 only): acc 60 %")
    assert C.claim_line(three).startswith("- [holds] a recipe (over training seeds 0, 1, 2)")
    for c in (one, three):
        plain = json.loads(json.dumps(to_plain(c)))
        assert C.Claim.from_plain(plain) == c
        C.check([plain])
    old = {k: v for k, v in dict(three).items() if k not in ("over", "seeds")}  # a record written before `over`
    assert C.Claim.from_plain(old).over == "inputs"
    with pytest.raises(ValueError, match="lacks"):
        C.check([old])


def test_claims_are_computed_when_a_result_is_read_never_stored_with_it():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Part:
        acc: float

    @dataclasses.dataclass(frozen=True)
    class Whole:
        acc: float
        part: Part

    read = []
    C.reads(Part)(lambda r: read.append(r) or [_typed_claim("part")])
    with pytest.raises(ValueError, match="no claims are declared for a Whole"):
        C.of(Whole(0.5, Part(0.6)))
    assert C.reader(Whole(0.5, Part(0.6))) is None and [c.subject for c in C.of(Part(0.6))] == ["part"]
    out = C.attach({"whole": Whole(0.5, Part(0.6)), "claims": [_typed_claim()]})
    assert out["whole"] == {"acc": 0.5, "part": {"acc": 0.6, "claims": [dict(_typed_claim("part"))]}}
    assert out["claims"] == [dict(_typed_claim())]  # plain data's own claims, as plain dicts
    assert len(read) == 2  # each read computes them again: nothing is kept


def test_a_test_carries_only_scores_whose_mean_is_its_value():
    """The pool recomputes a test's value from its packed scores: scores of another quantity (an estimate rebuilt
    around an abs or a sign flip) are not packed, so the pool falls back to the values themselves."""
    import dataclasses

    import numpy as np

    d = E.paired(np.array([1, 1, 0, 0, 1]), np.array([0, 1, 0, 1, 0]))
    assert "scores" in C.test("d", d, ">=", 0.0) and E.unpack_scores(C.test("d", d, ">=", 0.0)["scores"]).mean() == 0.2
    flipped = dataclasses.replace(d, value=-d.value)
    assert "scores" not in C.test("-d", flipped, "<=", 0.0)
    assert "scores" not in C.test("d", Estimate(0.2, 0.1, "paired", 5), ">=", 0.0)


def test_a_claim_over_seeds_lists_its_seeds():
    t = C.test("acc", Estimate(0.6, 0.01, "binomial", 2500), ">=", 0.5)
    with pytest.raises(ValueError, match="lists the seeds"):
        C.claim("k", "s", "src", {"acc": 0.6}, "r", [t], "d", seeds=3, over="seeds")
    default = C.claim("k", "s", "src", {"acc": 0.6}, "r", [t], "d", over="seeds")  # one seed, unnamed
    assert default["holds"] is None and default["why"] == "one trained network"
    C.check([default])
