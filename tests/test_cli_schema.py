"""`python -m lab ... --json` prints one envelope, {schema_version, command, config, result, versions}, with the whole
result: every experiment subcommand's output, and `warm`'s, `seeds`' and `table NAME`'s, is valid against
docs/cli-output.schema.json (run at the settings, and so on the stored models, of the per-experiment CLI tests, or at
the cheapest quick settings), and the schema says what the lab says (descriptors, tables, claim fields, libraries)."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from lab import claims as C
from lab.catalog import descriptors
from lab.cli import build_parser, main
from lab.cli.common import SCHEMA_VERSION
from lab.estimates import SE_KINDS
from lab.runtime.version import COMPUTING, DISTRIBUTION, libraries

from .apptest_util import ROOT
from .test_layerdrop import tiny_specs  # noqa: F401 - the fixture, for LayerDrop's run

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test dependency (requirements-dev.txt)")

SCHEMA = json.loads((ROOT / "docs" / "cli-output.schema.json").read_text())

# name -> (arguments, quick mode, fixture): the quickest settings of each experiment's own CLI test, so a full run of
# the suite finds their models (and mostly their results) already stored in the session's store. An experiment without
# a row runs at its defaults in quick mode (`run_of`): a new one is checked with no line to add here.
RUNS: dict[str, tuple[list[str], bool, str | None]] = {
    "delete": (["--arch", "plain", "--k", "2", "--select", "evenly-spaced", "--recovery", "none"], True, None),
    "shuffle": (["--mode", "shuffle", "--depth", "3", "--orders", "5", "--seed", "0"], True, None),
    # the map, a layer in focus and a group: every part the command can add (tests/test_reinit.py's tiny MLP)
    "reinit": (["--model", "plain", "--seed", "0", "--blocks", "2", "--width", "32", "--epochs", "2", "--layer",
                "blocks.0", "--steps", "20", "--layers", "blocks.0,blocks.1"], False, None),
    "layerdrop": (["--p", "0.2", "--keep", "3", "--strategy", "last"], False, "tiny_specs"),
    "iot": (["--model", "residual", "--m", "3", "--explore", "0.3", "--seed", "2"], True, None),
    "rearrange": (["--model", "residual", "--op", "parallel", "--reduce", "sum"], True, None),
    "matrix": (["--seed", "0"], True, None),
    "lens": (["--model", "residual", "--route-op", "swap", "--block", "1"], True, None),
}
# The lab's own commands, each at its cheapest in quick mode, computed here (--workers 0): warm only plans; the seeds
# pool Lens's default view (its quickest page); IOT's table is the cheapest, and prints text or (--ms) its own JSON.
LAB_RUNS: dict[str, list[str]] = {
    "warm": ["warm", "--pages", "delete", "lens", "--seeds", "3", "--dry-run"],
    "seeds": ["seeds", "lens", "--seeds", "2", "1", "0", "--workers", "0"],
    "study": ["study", "delete", "--knob", "blocks", "--values", "3", "5", "--seeds", "0", "1", "2", "--dry-run"],
    "surgeries": ["surgeries"],
    "table": ["table", "iot", "--model", "residual", "--m", "2", "--seeds", "1", "--workers", "0"],
    "table-reinit": ["table", "reinit", "--models", "plain", "--workers", "0"],
    "table-sweep": ["table", "iot", "--model", "residual", "--ms", "1", "2", "--seeds", "1", "--workers", "0"],
}
_printed: dict[str, dict[str, Any]] = {}  # each command runs once per session; the other tests read its envelope


def run_of(name: str) -> tuple[list[str], bool, str | None]:
    """How an experiment's subcommand is run here: its row of RUNS, else its defaults in quick mode."""
    return RUNS.get(name, ([], True, None))


def valid(definition: str, value: Any) -> bool:
    """Whether `value` is valid against the schema's `$defs/definition`."""
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": SCHEMA["$defs"]}).is_valid(value)


def _json_of(argv: list[str]) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())  # one JSON object and nothing else on stdout


def envelope(name: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The JSON that `python -m lab NAME ... --json` prints (run in this process, once)."""
    if name not in _printed:
        if name in LAB_RUNS:
            monkeypatch.setenv("LAYERLAB_QUICK", "1")
            _printed[name] = _json_of(LAB_RUNS[name])
            return _printed[name]
        argv, quick, fixture = run_of(name)
        monkeypatch.setenv("LAYERLAB_QUICK", "1" if quick else "0")
        if fixture:
            request.getfixturevalue(fixture)
        _printed[name] = _json_of([name, *argv])
    return _printed[name]


def test_the_schema_is_valid_and_names_what_the_lab_has():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["properties"]["schema_version"]["const"] == SCHEMA_VERSION
    # Experiments are named by a pattern, not listed: the output of an experiment added later is valid too
    # (tests/test_adding_an_experiment.py checks a toy one's), and no name of the lab's own commands is one.
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    own = set(sub) - set(descriptors())
    assert set(SCHEMA["$defs"]["experiment_command"]["not"]["enum"]) == own
    assert all(valid("experiment_command", n) for n in descriptors())
    assert not any(valid("experiment_command", c) for c in [*own, "table delete", "Delete", "", 3])
    assert all(valid("table_command", f"table {n}") for n, d in descriptors().items() if d.table)
    assert not any(valid("table_command", c) for c in ["table", "warm", "delete"])
    assert SCHEMA["$defs"]["versions"]["propertyNames"]["enum"] == ["python", DISTRIBUTION, *COMPUTING]
    assert set(RUNS) <= set(descriptors()), "a row for an experiment the catalog does not have"
    assert set(C.FIELDS) <= set(SCHEMA["$defs"]["claim"]["required"])
    assert SCHEMA["$defs"]["se_kind"]["enum"] == list(SE_KINDS)


def test_the_schema_of_a_claim_says_what_it_generalises_over():
    """`over` is required; a verdict over seeds lists at least 3 seeds; a claim that says why it cannot tell has no
    verdict; a test carries its packed per-input scores and, pooled, its error's parts (claims built here: no run)."""
    import numpy as np

    from lab import estimates as E
    from lab.runtime.plain import to_plain

    v = jsonschema.Draft202012Validator({"$ref": "#/$defs/claims", "$defs": SCHEMA["$defs"]})
    gen = np.random.default_rng(0)

    def seed_claim(seeds: list[int]) -> dict[str, Any]:
        t = C.test("d", E.paired(gen.random(200) < 0.9, gen.random(200) < 0.5), ">=", 0.0)
        return C.claim("k", "s", "src", {"d": t["value"]}, "r", [t], "d", seeds=seeds, over="seeds")

    one, three = seed_claim([0]), seed_claim([0, 1, 2])
    pooled = C.pool([[seed_claim([s])] for s in range(3)], [0, 1, 2])
    inputs = C.claim("k", "s", "src", {"x": 1.0}, "r", [C.test("x", E.exact(1.0, "all"), ">=", 0.5)], "d")
    good = json.loads(json.dumps(to_plain([one, three, inputs, *pooled])))
    v.validate(good)
    assert "scores" in good[0]["tests"][0] and {"varying", "repeating"} <= set(good[3]["tests"][0])
    assert good[0]["why"] == "one trained network" and good[3]["holds"] is True
    for broken in ({k: x for k, x in good[1].items() if k != "over"},
                   {**good[1], "over": "tasks"},
                   {**good[1], "seeds": [0, 1]},                   # a verdict over 2 seeds
                   {k: x for k, x in good[1].items() if k != "seeds"},
                   {**good[0], "holds": True},                     # says why it cannot tell, yet a verdict
                   {**good[2], "seeds": [0, 1, 2]},                # over inputs lists no seeds
                   {**good[0], "tests": [{**good[0]["tests"][0], "scores": "0101"}]}):
        with pytest.raises(jsonschema.ValidationError):
            v.validate([broken])


@pytest.mark.parametrize("name", list(descriptors()))  # every experiment: its row of RUNS, or its defaults
def test_every_commands_json_is_the_envelope_of_its_whole_result(name, request, monkeypatch):
    out = envelope(name, request, monkeypatch)
    jsonschema.Draft202012Validator(SCHEMA).validate(out)
    assert out["command"] == name and out["schema_version"] == SCHEMA_VERSION
    assert out["versions"] == libraries() and set(COMPUTING) & set(out["versions"]) >= {"torch", "numpy"}
    assert out["config"] == out["result"].get("config", out["config"])  # the result's own echo, where it has one
    C.check(out["result"]["claims"])
    if name == "reinit":  # the parts the command adds, whole, each with its own claims
        r = out["result"]
        assert r["focus"]["config"]["layer"] == "blocks.0" and r["group"]["layers"] == ["blocks.0", "blocks.1"]
        C.check(r["focus"]["claims"] + r["group"]["claims"])


def test_shuffles_json_holds_what_the_page_draws(request, monkeypatch):
    r = envelope("shuffle", request, monkeypatch)["result"]
    pc = r["position_contribution"]  # the block x slot map, for this model and the comparison model
    assert set(pc) == {"shuffle", "sequential"}
    assert len(pc["shuffle"]) == 3 and all(len(row) == 3 for row in pc["shuffle"])
    assert {"random_orders", "all_orders", "pruning", "probe", "view", "comparison"} <= set(r)


def test_the_schema_rejects_an_envelope_without_its_result(request, monkeypatch):
    out = envelope("delete", request, monkeypatch)
    v = jsonschema.Draft202012Validator(SCHEMA)
    for broken in ({k: x for k, x in out.items() if k != "result"},
                   {**out, "schema_version": 2},
                   {**out, "result": {k: x for k, x in out["result"].items() if k != "claims"}},
                   {**out, "result": {**out["result"], "claims": [{"key": "k", "holds": True}]}}):
        with pytest.raises(jsonschema.ValidationError):
            v.validate(broken)


def test_quick_mode_is_recorded_with_what_really_ran(request, monkeypatch):
    quick, full = (envelope(n, request, monkeypatch) for n in ("delete", "reinit"))  # quick mode on, then off
    assert full["quick"] is None
    asked, ran = quick["config"], quick["quick"]
    assert asked["steps"] == 500 and ran["steps"] == 10 and asked["epochs"] > ran["epochs"] == 1  # 12 asked
    assert ran["model_epochs"] == 1 and ran["max_steps"] == 10 and ran["max_orders"] >= 1
    v = jsonschema.Draft202012Validator(SCHEMA)
    for broken in ({k: x for k, x in quick.items() if k != "quick"}, {**quick, "quick": True},
                   {**quick, "quick": {"epochs": 1}}):
        with pytest.raises(jsonschema.ValidationError):
            v.validate(broken)


@pytest.mark.parametrize("name", list(LAB_RUNS))
def test_the_lab_commands_json_is_the_envelope_of_its_whole_result(name, request, monkeypatch):
    out = envelope(name, request, monkeypatch)
    jsonschema.Draft202012Validator(SCHEMA).validate(out)
    assert out["schema_version"] == SCHEMA_VERSION and out["versions"] == libraries()
    r, config = out["result"], out["config"]
    if name == "warm":  # the plan, nothing computed
        assert out["command"] == "warm"
        assert config == {"pages": ["delete", "lens"], "seeds": [3], "workers": 2, "defaults_only": False,
                          "dry_run": True, "lesson": None}
        assert r["planned"] == r["already_stored"] + len(r["todo"]) and r["todo"]
        assert {i["page"] for i in r["todo"]} <= {"delete", "lens"} and any("seed 3" in i["setting"] for i in r["todo"])
    elif name == "seeds":  # pooled over the distinct seeds, in order, with each seed's own verdict
        assert out["command"] == "seeds" and config == {"page": "lens", "seeds": [0, 1, 2], "workers": 0}
        assert r["seeds"] == [0, 1, 2] and r["claims"]
        C.check(r["claims"])
        assert all(c["over"] == "seeds" and c["seeds"] == [0, 1, 2] for c in r["claims"])
        assert all(set(v) == {"0", "1", "2"} for v in r["per_seed"].values())
    elif name == "study":  # the cells a study would compute, nothing computed
        assert out["command"] == "study" and config["knob"] == "blocks" and config["values"] == [3, 5]
        assert [(c["value"], c["seed"]) for c in r["cells"]] == [(v, s) for v in (3, 5) for s in (0, 1, 2)]
    elif name == "surgeries":  # the registry, row by row
        assert out["command"] == "surgeries" and config == {}
        from lab.ops import registry

        assert [row["name"] for row in r["rows"]] == list(registry.surgeries())
    elif name == "table":  # a table: its rows, every seed's own, the numbers the experiment gives, and its text
        from lab.experiments.iot import experiment as iot

        assert out["command"] == "table iot"
        assert config == {"model": "residual", "seeds": 1, "m": 2, "ms": None, "space": "blocks", "workers": 0}
        assert set(r) == {"rows", "claims", "text"} and r["text"].startswith("IOT with M = 2 candidate orders")
        direct = iot.table(["residual"], [0], 2)  # the experiment's own function, not the table's printing
        assert [(row["model"], row["seed"]) for row in r["rows"]] == [("residual", 0)]
        for k in iot.METHODS:
            assert r["rows"][0][k] == direct["rows"][0]["values"][k][0], k
    elif name == "table-reinit":  # every layer x column of the map, each the experiment's own number
        from lab.experiments.reinit import experiment as reinit

        direct = reinit.run(reinit.ReinitConfig(model="plain", seed=0))
        assert len(r["rows"]) == len(direct.layers) * len(direct.checkpoints)
        for row in r["rows"]:
            i, j = direct.layers.index(row["layer"]), [str(c) for c in direct.checkpoints].index(row["column"])
            assert row["acc"] == direct.acc[i][j] and row["model"] == "plain"
    else:  # a table that prints its own JSON: that JSON is the result
        assert out["command"] == "table iot" and config["ms"] == [1, 2]
        assert [row["m"] for row in r[0]["rows"]] == [1, 2] and r[0]["config"]["model"] == "residual"


def test_the_schema_rejects_a_lab_commands_envelope_that_is_not_its_own(request, monkeypatch):
    warm, seeds, table = (envelope(n, request, monkeypatch) for n in ("warm", "seeds", "table"))
    v = jsonschema.Draft202012Validator(SCHEMA)
    for broken in ({k: x for k, x in warm.items() if k != "versions"},
                   {**warm, "versions": {**warm["versions"], "torch": 2}},
                   {**warm, "result": seeds["result"]},
                   {**warm, "result": {**warm["result"], "built": []}},  # half a plan, half a summary
                   {**seeds, "config": {**seeds["config"], "seeds": [0, 1]}},  # a recipe needs 3 seeds
                   {**seeds, "result": {**seeds["result"], "claims": [{"key": "k", "holds": True}]}},
                   {**table, "command": "table"}, {**table, "command": "table of lens"},  # no name, not a name
                   {**table, "result": {"text": ""}},
                   {**table, "result": {"text": table["result"]["text"]}},  # a table's JSON has its rows
                   {**table, "result": {**table["result"], "rows": []}},
                   {**table, "result": table["result"]["text"]}):
        with pytest.raises(jsonschema.ValidationError):
            v.validate(broken)
