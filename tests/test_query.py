"""The link parser (app/query.py) on a table of inputs, and the controls that use it (app/controls.py) in AppTest.

The AppTest part runs tests/apps/controls_demo.py, a page with one control of each kind and no training.
"""

from __future__ import annotations

import logging
import re
import sys

import pytest
from streamlit.testing.v1 import AppTest

from app import query
from app.query import Rejected

from .apptest_util import ROOT

DEMO = str(ROOT / "tests" / "apps" / "controls_demo.py")


class No:
    """An expected rejection, with a piece of its reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

WHOLE = No("whole number")
INTS = [  # (values in the link, accepted value or No(a piece of the rejection reason)), range 0..99
    (["7"], 7), (["0"], 0), (["99"], 99), (["+5"], 5), (["-0"], 0), (["007"], 7),
    (["100"], No("whole number from 0 to 99")), (["-1"], WHOLE), (["1e400"], WHOLE), (["9" * 400], WHOLE),
    (["1e2"], WHOLE), (["5.0"], WHOLE), (["inf"], WHOLE), (["nan"], WHOLE), (["0x10"], WHOLE), (["1_0"], WHOLE),
    ([" 5"], WHOLE), (["5\n"], WHOLE), (["３"], WHOLE), (["٣"], WHOLE), (["५"], WHOLE), (["²"], WHOLE),
    ([""], No("empty")), (["5", "5"], No("2 times")), (["abc", "1"], No("2 times")), ([], No("0 times")),
]
NUMBER = No("number from")
FLOATS = [
    (["0.25"], 0.25), (["1"], 1.0), (["-0.5"], -0.5), (["1e0"], NUMBER), (["inf"], NUMBER), (["nan"], NUMBER),
    (["2.5"], NUMBER), (["0.２"], NUMBER), ([".5"], NUMBER), (["1" * 30], NUMBER), (["0.1", "0.2"], No("2 times")),
]
CHOICES = [  # options ("none", 500, 0.25)
    (["none"], "none"), (["500"], 500), (["0.25"], 0.25), (["None"], No("expected one of none, 500, 0.25")),
    (["５00"], No("expected one of")), (["0.250"], No("expected one of")), (["none "], No("expected one of")),
    ([""], No("empty")), (["none", "none"], No("2 times")),
]


def _check(parse, values, expected):
    if isinstance(expected, No):
        with pytest.raises(Rejected, match=expected.reason):
            parse(values)
    else:
        got = parse(values)
        assert got == expected and type(got) is type(expected)


def _choice(values):
    return query.parse_choice(values, ("none", 500, 0.25))


@pytest.mark.parametrize(("values", "expected"), INTS)
def test_parse_int(values, expected):
    _check(lambda v: query.parse_int(v, 0, 99), values, expected)


@pytest.mark.parametrize(("values", "expected"), FLOATS)
def test_parse_float(values, expected):
    _check(lambda v: query.parse_float(v, -1.0, 1.0), values, expected)


@pytest.mark.parametrize(("values", "expected"), CHOICES)
def test_parse_choice(values, expected):
    _check(_choice, values, expected)


def test_shown_makes_look_alikes_visible_and_cannot_close_the_code_span():
    assert query.shown("３") == "\\uff13"
    assert "`" not in query.shown("a`![x](http://x)`")
    assert query.shown("9" * 400) == "9" * query.SHOWN_CHARS + "..."


def test_the_streamlit_internals_controls_relies_on_still_exist():
    """app/controls.py uses three methods below Streamlit's public API; an upgrade that drops one fails here."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext
    from streamlit.runtime.state.query_params import QueryParams
    from streamlit.runtime.state.safe_session_state import SafeSessionState

    assert callable(QueryParams.remove_param) and callable(QueryParams.set_corrected_value)
    assert callable(SafeSessionState.is_new_state_value) and callable(SafeSessionState.query_params)
    assert isinstance(ScriptRunContext.page_script_hash, property)


# -- the controls, in AppTest ---------------------------------------------------------------------------------

def _demo(link: dict) -> AppTest:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    at = AppTest.from_file(DEMO, default_timeout=30)
    for key, value in link.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _shown(at: AppTest) -> str:
    return at.markdown[0].value


HOSTILE = [
    ({"seed": "1e400"}, "seed"), ({"seed": "9" * 400}, "seed"), ({"seed": "inf"}, "seed"), ({"seed": "３"}, "seed"),
    ({"seed": ["5", "1"]}, "seed"), ({"k": ["1", "3"]}, "k"), ({"k": "٣"}, "k"), ({"k": "5.0"}, "k"), ({"k": ""}, "k"),
    ({"rec": "KD"}, "rec"), ({"rec": ["ce", "kd"]}, "rec"), ({"p": "0.30"}, "p"), ({"p": ["0.0", "0.25"]}, "p"),
]


@pytest.mark.parametrize(("link", "key"), HOSTILE)
def test_a_hostile_link_value_is_reported_never_used_and_leaves_the_link(link, key):
    at = _demo(link)
    assert _shown(at) == "k=2 rec=kd seed=0 p=0.5"  # every control at its default: nothing leaked through
    notes = [w.value for w in at.warning]
    assert len(notes) == 1 and f"`{key}=" in notes[0] and "was ignored" in notes[0], notes
    assert key not in at.query_params


def test_a_good_link_is_used_and_kept():
    at = _demo({"k": "5", "rec": "ce", "seed": "42", "p": "0.25"})
    assert _shown(at) == "k=5 rec=ce seed=42 p=0.25"
    assert not at.warning
    assert at.query_params == {"k": "5", "rec": "ce", "seed": "42", "p": "0.25"}


def test_the_notice_stays_through_reruns_until_its_control_changes():
    at = _demo({"seed": "1e400", "k": "4"})
    for _ in range(3):  # the bad parameter left the link after the first run; the notice must not leave with it
        at.button(key="rerun").click().run()
        assert [w.value for w in at.warning if "`seed=" in w.value], "the notice went missing on a rerun"
    at.slider(key="k").set_value(6).run()  # another control moving does not dismiss it
    assert any("`seed=" in w.value for w in at.warning)
    at.number_input(key="seed").set_value(3).run()  # the student chose a seed: the notice has done its job
    assert not at.warning
    assert _shown(at) == "k=6 rec=kd seed=3 p=0.5"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("order", [("others", "low", "defaults", "low"), ("low", "rerun", "others", "defaults")])
def test_presets_set_the_controls_and_the_link_without_the_session_state_warning(order, monkeypatch):
    from streamlit.elements.lib import policies

    records = _Records()
    logging.getLogger("streamlit.elements.lib.policies").addHandler(records)
    try:
        at = _demo({})
        expected = {"others": ("k=5 rec=ce seed=7 p=0.25", {"k": "5", "rec": "ce", "seed": "7", "p": "0.25"}),
                    "low": ("k=0 rec=none seed=0 p=0.0", {"k": "0", "rec": "none", "p": "0.0"}),
                    "defaults": ("k=2 rec=kd seed=0 p=0.5", {})}
        for button in order:
            # Streamlit logs the warning once per process: re-arm it so every click could show it
            monkeypatch.setattr(policies, "_shown_default_value_warning", False)
            before = _shown(at)
            at.button(key=button).click().run()
            assert not at.exception
            if button == "rerun":
                assert _shown(at) == before
                continue
            shown, link = expected[button]
            assert _shown(at) == shown
            # the link states exactly the non-default values (the minimum / first option is not the default)
            assert dict(at.query_params) == link
    finally:
        logging.getLogger("streamlit.elements.lib.policies").removeHandler(records)
    assert not [m for m in records.messages if "Session State API" in m], records.messages


# -- pins: a whole setting in one link value ------------------------------------------------------------------
def test_pin_round_trip_and_rules():
    from app import query

    parsers = {"k": lambda v: query.parse_int(v, 0, 7), "arch": lambda v: query.parse_choice(v, ("plain", "residual")),
               "layer": lambda v: query.parse_choice(v, ("stem", "blocks.3"))}
    text = query.pin_text({"k": "1", "arch": "plain", "layer": "blocks.3"})
    assert text == "k.1_arch.plain_layer.blocks.3"
    assert query.parse_pin([text], parsers) == {"k": 1, "arch": "plain", "layer": "blocks.3"}
    assert query.pin_text({}) == "default" and query.parse_pin(["default"], parsers) == {}
    for bad in ("k.99", "k.1_k.2", "colour.red", "k", "k.３", "arch.tree", "", "x" * 500):
        with pytest.raises(query.Rejected):
            query.parse_pin([bad], parsers)
    with pytest.raises(query.Rejected):
        query.parse_pin(["k.1", "k.2"], parsers)  # the key given twice
    with pytest.raises(ValueError):
        query.pin_text({"k": "a_b"})


def test_plain_text_is_never_markup_and_errors_show_no_paths():
    from app.jobs import without_paths
    from app.query import plain

    hostile = "[Log in](http://evil.example) ![x](http://e/p.png) **b** <b>h</b> :red[x] `c`"
    shown = plain(hostile)
    assert not re.search(r"(?<!\\)[\[\]()*`<>]", shown.replace("&lt;", "").replace("&gt;", "")), shown
    assert "<b>" not in shown
    exc = OSError("[Errno 2] No such file or directory: '/srv/layerlab/cache/delete/ab12.json' (C:\\lab\\x.txt)")
    text = without_paths(exc)
    assert "/srv" not in text and "layerlab/cache" not in text and "C:\\lab" not in text and "<path>" in text
    assert without_paths(ValueError("k must be 1 to 6, got 9")) == "k must be 1 to 6, got 9"
    assert len(without_paths(ValueError("x" * 1000))) <= 203
