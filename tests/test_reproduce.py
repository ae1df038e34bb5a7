"""Reproduce a view (lab/classroom/reproduce.py): the command, run as shown, prints the lab call's numbers; a generated
notebook runs (nbclient, quick mode, a fresh store) and prints the same numbers; the worksheet is offline HTML."""

import contextlib
import io
import json
import os
import shlex
from pathlib import Path

import pytest

from lab.classroom import reproduce
from lab.cli import main
from lab.experiments.delete import experiment as delete
from lab.experiments.layerdrop import experiment as layerdrop
from lab.experiments.rearrange import experiment as rearrange

CFG = delete.DeleteConfig(arch="plain", k=1, recovery="kd", steps=100, seed=3)


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")


def test_the_command_names_every_flag_and_a_config_without_a_subcommand_has_none():
    assert reproduce.command(CFG) == ("python -m lab delete --arch plain --k 1 --select greedy --recovery kd "
                                      "--steps 100 --seed 3 --task synthetic")
    mine = reproduce.command(delete.DeleteConfig(task="csv:0123456789abcdef"))
    assert shlex.split(mine, comments=True)[-2:] == ["--task", "csv:0123456789abcdef"]  # runs where it is stored
    assert "# csv:0123456789abcdef: an uploaded CSV; on another machine pass the file with --data PATH" in mine
    assert "--task" not in reproduce.command(rearrange.RearrangeConfig(task="digits"))  # the model's own: None
    assert reproduce.command(rearrange.RearrangeConfig()).startswith("python -m lab rearrange --model ")
    assert reproduce.command(layerdrop.LayerDropConfig(p=0.2)).count("--p 0.2") == 1
    assert reproduce.command(delete.SweepConfig()) is None  # the sweep has no subcommand of its own
    with pytest.raises(ValueError, match="width=64 has no command-line flag"):
        reproduce.command(delete.DeleteConfig(width=64))


def test_the_command_run_as_shown_prints_the_lab_calls_numbers(quick):
    cmd = reproduce.command(CFG)
    assert cmd.startswith("LAYERLAB_QUICK=1 python -m lab delete ")
    argv = shlex.split(cmd)[4:]  # after `LAYERLAB_QUICK=1 python -m lab`
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    printed = json.loads(out.getvalue())["result"]
    expected = delete.run(CFG)
    assert reproduce.numbers(printed) == reproduce.numbers(expected)
    assert {"base_acc", "cut_acc", "recovered_acc", "chance"} <= set(reproduce.numbers(expected))
    assert any(k.startswith("claim:") for k in reproduce.numbers(expected))  # computed when read: none is stored


def last_numbers(nb) -> dict:
    """The numbers an executed notebook printed in its last cell."""
    text = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []) if o.get("output_type") == "stream")
    return json.loads(text.strip().splitlines()[-1])


def test_a_generated_notebook_recomputes_the_same_numbers(quick, tmp_path):
    nbclient = pytest.importorskip("nbclient", reason="nbclient is a test dependency (requirements-dev.txt)")
    from app import figures_delete

    expected = reproduce.numbers(delete.run(CFG))
    nb = reproduce.notebook(delete.run, CFG, figures_delete.per_class, "Delete", store=str(tmp_path / "fresh"))
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3").execute()
    assert last_numbers(nb) == expected
    assert any(o.get("data", {}).get("application/vnd.plotly.v1+json") for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", [])), "the figure cell drew nothing"
    assert any(p.suffix == ".json" for p in (tmp_path / "fresh").rglob("*")), "the notebook used its own store"


def test_numbers_are_accuracies_chance_and_verdicts():
    r = {"base_acc": 0.9, "cut_acc": 0.5, "chance": 0.05, "n_blocks": 7, "route": [0, 2],
         "claims": [{"key": "a.b", "holds": None}]}
    assert reproduce.numbers(r) == {"base_acc": 0.9, "cut_acc": 0.5, "chance": 0.05, "claim:a.b": None}


def test_the_worksheet_is_offline_html_with_everything_escaped():
    import plotly.graph_objects as go

    from app.worksheet import worksheet_html

    fig = go.Figure(go.Bar(x=["a"], y=[1]))
    html = worksheet_html([
        {"kind": "view", "page": "delete", "title": "Delete <b>", "describe": "k: 1", "at": "10:00",
         "link": "http://x/delete?k=1&a=<script>", "figure": fig.to_json()},
        {"kind": "prediction", "question": "What <i>happens</i>?", "chosen": "<img src=x onerror=alert(1)>",
         "matched": True, "detail": "a & b", "verdict": "holds", "at": "10:01", "link": "javascript:alert(1)"},
    ])
    assert "<img src=x" not in html and "&lt;img src=x" in html
    assert "Delete &lt;b&gt;" in html and "<script>" not in html.split("</h1>")[1].split("<div")[0]
    assert "href='javascript" not in html  # only http(s) links become links
    assert "<script src=" not in html  # Plotly inlined: no script fetched from the network
    assert len(html) > 1_000_000  # plotly.js itself is in the file


def test_the_notebook_is_valid_and_says_its_setting():
    nbformat = pytest.importorskip("nbformat")
    text = reproduce.notebook_text(delete.run, CFG, None, "Delete", "http://host/delete?k=1")
    nb = nbformat.reads(text, as_version=4)
    src = "\n".join(c.source for c in nb.cells)
    assert "DeleteConfig(arch='plain', k=1, select='greedy', recovery='kd', steps=100, seed=3" in src
    assert os.path.basename(__file__)  # (keeps the import list honest)


def test_the_reinit_focus_command_prints_the_focus_numbers(quick):
    from lab.experiments.reinit import experiment as reinit

    fc = reinit.FocusConfig(model="plain", layer="blocks.0", op="rerand", recovery="ce", steps=20, blocks=2, width=16,
                            epochs=2, seed=1)
    cmd = reproduce.command(fc)
    assert cmd.startswith("LAYERLAB_QUICK=1 python -m lab reinit --model plain --seed 1 --blocks 2 --width 16 ")
    assert "--layer blocks.0 --op rerand --checkpoint 0 --recovery ce --steps 20" in cmd
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*shlex.split(cmd)[4:], "--json"]) == 0
    printed, expected = json.loads(out.getvalue())["result"]["focus"], reinit.focus(fc)
    assert {k: printed[k] for k in ("cut_acc", "recovered_acc")} == {k: getattr(expected, k) for k in ("cut_acc",
                                                                                                     "recovered_acc")}


def test_downloads_name_no_folder_of_the_server(monkeypatch):
    """The snippet and the notebook a student downloads must not tell where the server keeps its checkout or its
    store; the notebook finds the reader's own checkout."""
    root = str(Path(__file__).resolve().parents[1])
    store = os.environ.get("LAYERLAB_CACHE", "")
    text = reproduce.snippet(delete.run, CFG) + reproduce.notebook_text(delete.run, CFG, None, "Delete",
                                                                         "http://host/delete?k=1")
    assert root not in text and (not store or store not in text)
    assert "/work/" not in text and "/home/" not in text and "/tmp/" not in text


def test_the_command_says_layerlab_when_the_lab_is_installed_and_python_m_lab_in_a_checkout(monkeypatch, tmp_path):
    """Installed (setup.py puts lab/ inside the `layerlab` package), `python -m lab` finds no module: the command is
    the console script's. In this checkout it stays `python -m lab`."""
    assert not reproduce.installed()  # this checkout: lab/ beside layerlab/, no package around it
    assert reproduce.command(CFG).startswith("python -m lab delete --arch plain ")
    package = tmp_path / "site-packages" / "layerlab"
    (package / "lab").mkdir(parents=True)
    monkeypatch.setattr(reproduce, "LAB_HOME", package)
    assert not reproduce.installed()  # a folder that is no package: not the installed layout
    (package / "__init__.py").write_text("")
    assert reproduce.installed()
    assert reproduce.command(CFG) == ("layerlab delete --arch plain --k 1 --select greedy --recovery kd --steps 100 "
                                      "--seed 3 --task synthetic")


def test_layerlab_takes_every_reproduce_command_as_python_m_lab_does(quick, monkeypatch):
    """The installed command's arguments are `python -m lab`'s: every page's default command parses alike under both
    names, and one run through the console script's entry point (layerlab/__init__.py: main) prints the lab call's
    numbers."""
    import layerlab
    from lab.catalog import descriptors
    from lab.cli import build_parser
    from lab.experiments.reinit import experiment as reinit

    monkeypatch.setattr(reproduce, "installed", lambda: True)
    for d in descriptors().values():
        cmd = reproduce.command(d.reproduce(d.defaults).cfg)
        assert cmd.startswith(f"LAYERLAB_QUICK=1 layerlab {d.name} "), cmd
        argv = shlex.split(cmd)[2:]
        mine, lab = (vars(build_parser(prog).parse_args(argv)) for prog in ("layerlab", "python -m lab"))
        assert mine.pop("func").__qualname__ == lab.pop("func").__qualname__ and mine == lab, d.name
    fc = reinit.FocusConfig(model="plain", layer="blocks.0", op="rerand", recovery="ce", steps=20, blocks=2, width=16,
                            epochs=2, seed=1)
    argv = shlex.split(reproduce.command(fc))[2:]  # after `LAYERLAB_QUICK=1 layerlab`
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert layerlab.main([*argv, "--json"]) == 0
    printed, expected = json.loads(out.getvalue())["result"]["focus"], reinit.focus(fc)
    assert (printed["cut_acc"], printed["recovered_acc"]) == (expected.cut_acc, expected.recovered_acc)
