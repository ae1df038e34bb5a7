"""The CLI: one JSON envelope whose result has the promised keys; progress in whole lines where stderr is no
terminal; bad arguments exit non-zero with one line; no command prints the whole usage; --version; the program's
name."""

import io
import json
import os
import re
import subprocess
import sys
from typing import Optional

import pytest

from lab.catalog import descriptors
from lab.cli import build_parser, main
from lab.runtime import progress
from lab.runtime.version import version_line

from .apptest_util import ROOT


def run_cli(*args: str, quick: bool = True, cache: Optional[str] = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, LAYERLAB_QUICK="1" if quick else "0", PYTHONPATH=str(ROOT))
    if cache is not None:
        env["LAYERLAB_CACHE"] = cache
    return subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)


def test_delete_json_has_the_promised_keys_and_its_progress_is_lines(tmp_path):
    # a store of its own, so the model is trained here and its progress is reported; stderr is a pipe
    p = run_cli("delete", "--arch", "plain", "--k", "2", "--select", "evenly-spaced", "--recovery", "none", "--json",
                cache=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "\r" not in p.stderr  # no bar redrawing itself in a log
    lines = [ln for ln in p.stderr.splitlines() if re.match(r"\[\s*\d+\.\d% +\d+ s\] ", ln)]
    assert len(lines) >= 2 and "training" in p.stderr and lines[-1].startswith("[100.0%"), p.stderr
    r = json.loads(p.stdout)["result"]
    for key in ("base_acc", "cut_acc", "recovered_acc", "dropped", "cut_probe_acc", "chance", "per_class"):
        assert key in r
    assert r["recovered_acc"] == r["cut_acc"]  # recovery none
    assert r["dropped"] == [1, 5]  # evenly-spaced: the spread-out pair of 7 blocks, original numbering
    assert set(r["per_class"]) >= {"base", "cut", "recovered"}


def test_bad_arguments_exit_nonzero_with_one_line():
    # Each case starts a Python process that imports torch: keep the list short.
    for args in (["delete", "--k", "9"], ["delete", "--arch", "tree"], ["delete", "--steps", "-5"],
                 ["table", "reinit", "--workers", "-1"]):
        p = run_cli(*args)
        assert p.returncode != 0, args
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "error" in lines[0], (args, p.stderr)
        assert "Traceback" not in p.stderr


def test_no_command_prints_the_whole_usage():
    p = run_cli()
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("usage: python -m lab")
    for name in (*descriptors(), "table", "warm", "pack", "seeds", "study", "surgeries", "export"):
        assert re.search(rf"^\s+{name}\s", p.stderr, re.M), name  # each subcommand on a line of its own, with help
    assert "--version" in p.stderr


def test_version_and_the_programs_name(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == version_line() + "\n"
    assert build_parser("layerlab").format_help().startswith("usage: layerlab")
    with pytest.raises(SystemExit) as exit_:  # argparse's own error, from a subcommand's parser
        main(["delete", "--arch", "tree"], prog="layerlab")
    assert exit_.value.code == 2 and capsys.readouterr().err.startswith("layerlab delete: error: ")
    assert main(["delete", "--k", "99"], prog="layerlab") == 2  # a config that refuses its value
    assert capsys.readouterr().err.startswith("layerlab: error: ")
    assert main([], prog="layerlab") == 2 and capsys.readouterr().err.startswith("usage: layerlab")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_few_whole_lines_in_a_file_and_a_bar_on_a_terminal(monkeypatch):
    to_file = io.StringIO()
    monkeypatch.setattr(sys, "stderr", to_file)
    for i in range(101):  # a hundred reports within a second: the first and the last are written
        progress.text_progress(i / 100, f"step {i}\nof 100")
    progress.text_progress(0.5, "a second pool")  # after the end, a new run of reports starts
    lines = to_file.getvalue().splitlines(keepends=True)
    assert [ln.split("] ")[1] for ln in lines] == ["step 0 of 100\n", "step 100 of 100\n", "a second pool\n"]
    assert all(ln.endswith("\n") and "\r" not in ln for ln in lines)
    progress.text_progress(1.0, "done")

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress.text_progress(0.25, "on a terminal")
    progress.text_progress(1.0, "done")
    assert "\r" in terminal.getvalue() and "25.0%" in terminal.getvalue() and "on a terminal" in terminal.getvalue()


def test_seeds_wants_at_least_three_distinct_seeds():
    # a recipe is judged over at least 3 trained networks (lab/claims.MIN_SEEDS): fewer is one clear line, at once
    p = run_cli("seeds", "delete", "--seeds", "0", "1", "1")
    assert p.returncode != 0 and "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "at least 3 distinct seeds" in lines[0], p.stderr
