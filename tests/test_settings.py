"""The LAYERLAB_* settings (lab/runtime/settings.py) and the lab's logging (lab/runtime/logs.py): a mistyped value is
one line naming the variable, at the CLI's and the server's start; README's table is the declared one; the
`layerlab` logger reaches stderr with a timestamp."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab.runtime import settings

ROOT = Path(__file__).resolve().parents[1]
# Values a setting may be given by mistake; the one with a newline checks that the message stays one line.
BAD = ("abc", "abc\nrm -rf /", "-1", "99999", "1.5", "")
# Kinds every text is allowed for: nothing to get wrong.
ANY_TEXT = {settings.TEXT.words, settings.LIST.words}
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without any LAYERLAB_ setting (a developer's own would change the outcome), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAYERLAB_")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _run(args: list[str], timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=_clean_env(**extra), capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("name", sorted(settings.SETTINGS))
def test_a_bad_value_is_one_line_naming_the_variable(name):
    setting = settings.SETTINGS[name]
    refused = []
    for value in BAD:
        try:
            setting.read({name: value})
        except settings.SettingError as exc:
            refused.append(str(exc))
    if setting.kind.words not in ANY_TEXT:
        assert refused, f"{name}: none of {BAD!r} was refused"
    for message in refused:
        assert "\n" not in message and message.startswith(f"{name}="), message
        assert "is not allowed: use " in message


def test_the_defaults_are_all_readable_and_a_bad_value_is_reported():
    assert settings.check_all({}) == []
    assert settings.errors({"LAYERLAB_THREADS": "x", "LAYERLAB_ENGINE": "threads"}) == [
        "layerlab: error: LAYERLAB_THREADS='x' is not allowed: use a whole number from 1 to 64"]
    assert settings.get("LAYERLAB_THREADS", {"LAYERLAB_THREADS": " 3 "}) == 3
    assert settings.get("LAYERLAB_WARM", {"LAYERLAB_WARM": "0"}) is False and settings.get("LAYERLAB_WARM", {}) is True
    # Flags are 1 or 0 only: lab/runtime/quick.py takes any other value of LAYERLAB_QUICK as on
    with pytest.raises(settings.SettingError):
        settings.get("LAYERLAB_QUICK", {"LAYERLAB_QUICK": "false"})


def test_unknown_names_are_found():
    env = {"LAYERLAB_THRAEDS": "2", "LAYERLAB_THREADS": "2", "LAYERLAB_TEST_TIMEOUT": "9", "HOME": "/"}
    assert settings.unknown(env) == ["LAYERLAB_THRAEDS"]


def _env_reads(source: str) -> set[str]:
    """LAYERLAB_ names a module's code reads from the environment: `environ.get(...)`, `getenv(...)`, `environ[...]`."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and node.args and (func.attr == "getenv" or func.attr == "get" and (
                isinstance(func.value, ast.Attribute) and func.value.attr == "environ")):
            key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and isinstance(node.value, ast.Attribute) and node.value.attr == "environ":
            key = node.slice
        else:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.startswith("LAYERLAB_"):
            names.add(key.value)
    return names


def test_the_direct_reads_left_are_the_known_ones():
    """Every LAYERLAB_ setting of lab/ and app/ is read through settings.get, but for these (file, name)."""
    known = {
        # any value but 0 is on; editing quick.py would re-key every stored result (lab/runtime/codeversion.py)
        ("lab/runtime/quick.py", "LAYERLAB_QUICK"),
        ("lab/runtime/engine/cluster.py", "LAYERLAB_QUICK"),  # the server's text, forwarded to a worker's quick.py
    }
    assert _env_reads("os.environ.get('LAYERLAB_X', '')\nos.getenv('LAYERLAB_Y')\nos.environ['LAYERLAB_Z']\n"
                      "os.environ['LAYERLAB_W'] = '1'") == {"LAYERLAB_X", "LAYERLAB_Y", "LAYERLAB_Z"}
    found = set()
    for path in [*ROOT.joinpath("lab").rglob("*.py"), *ROOT.joinpath("app").rglob("*.py")]:
        rel = path.relative_to(ROOT).as_posix()
        if rel != "lab/runtime/settings.py":
            found.update((rel, name) for name in _env_reads(path.read_text()))
    assert found - known == set()


def test_the_cli_stops_with_one_line_on_a_bad_setting():
    out = _run(["-m", "lab", "warm", "--help"], LAYERLAB_THREADS="abc")
    assert out.returncode == 2, out.stderr
    assert out.stderr == "layerlab: error: LAYERLAB_THREADS='abc' is not allowed: use a whole number from 1 to 64\n"


def test_the_server_stops_with_one_line_before_streamlit_starts():
    # A server that got as far as Streamlit would keep running: the timeout fails the test then.
    out = _run(["-m", "app.serve", "--server.headless", "true", "--server.port", "1"], timeout=60,
               LAYERLAB_ENGINE="spark")
    assert out.returncode == 2, out.stderr
    assert out.stderr == "layerlab: error: LAYERLAB_ENGINE='spark' is not allowed: use 'dask' or 'threads'\n"
    assert out.stdout == ""


def test_readme_settings_table_is_the_declared_one():
    text = ROOT.joinpath("README.md").read_text()
    section = text.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    assert table == settings.markdown_table(), (
        "README.md's Settings table differs from lab/runtime/settings.py; paste the output of .venv/bin/python -c "
        "'from lab.runtime.settings import markdown_table; print(markdown_table())'")


LOG = ("import logging; from lab.runtime import logs; logs.configure(); logs.configure(); "
       "logging.getLogger('layerlab.x').info('a job was resubmitted'); "
       "logging.getLogger('layerlab.db').warning('refused postgresql+psycopg://ann:s3cret@db.example/layerlab')")


def test_layerlab_lines_reach_stderr_once_with_a_timestamp_and_no_password():
    out = _run(["-c", LOG], timeout=60, LAYERLAB_THRAEDS="secret-value")
    lines = out.stderr.splitlines()
    assert out.returncode == 0 and len(lines) == 3, out.stderr  # configured twice, each line once
    assert re.fullmatch(rf"{STAMP} WARNING layerlab\.settings: LAYERLAB_THRAEDS is not a Layer Lab setting.*",
                        lines[0])
    assert re.fullmatch(rf"{STAMP} INFO layerlab\.x: a job was resubmitted", lines[1])
    assert lines[2].endswith("refused postgresql+psycopg://ann:***@db.example/layerlab")
    assert "s3cret" not in out.stderr and "secret-value" not in out.stderr


def test_the_log_level_is_a_setting():
    out = _run(["-c", LOG], timeout=60, LAYERLAB_LOG_LEVEL="warning")
    assert out.returncode == 0 and "resubmitted" not in out.stderr and "refused" in out.stderr


def test_a_page_says_the_line_and_does_nothing_else(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("LAYERLAB_WORKER_NICE", "high")  # `streamlit run` users have no app/serve.py check
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "layerlab: error: LAYERLAB_WORKER_NICE='high' is not allowed: use a whole number from 0 to 19"]
    assert len(at.main.children) == 1 and not at.sidebar.children  # no page, no navigation after it
