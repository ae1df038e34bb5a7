"""`make app` and `make test` install the lock on a plain-PyPI Linux machine without an extra argument: pip runs first
exactly as configured, and only where that index has no torch==2.13.0+cpu once more with PyTorch's CPU index, said in
one line, with pip's 2,000-character lines kept out of the way. Run against a stand-in `python` whose pip fails as
plain PyPI does (the real .venv is never touched)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
pytestmark = pytest.mark.skipif(platform.system() != "Linux" or shutil.which("make") is None,
                                reason="the CPU-index retry is Linux's (macOS's lock takes PyPI's torch)")

# `-c` (the Makefile's Python version check) runs this Python; `-m pip ...` is recorded, then answers as MODE says:
# plain PyPI (no CPU build of torch unless its index is named), a bad hash (not torch's index at all), or nowhere.
STUB = f"""#!/bin/sh
if [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi
echo "$*" >> "$(dirname "$0")/calls"
case "$MODE" in
  served) exit 0 ;;
  hash) echo "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE." >&2; exit 1 ;;
esac
case "$*" in *{CPU_INDEX}*) [ "$MODE" = nowhere ] || exit 0 ;; esac
printf 'ERROR: Ignored the following versions that require a different python version: %s\\n' "$(seq -s ' ' 400)" >&2
printf 'ERROR: Could not find a version that satisfies the requirement torch==2.13.0+cpu (from versions: %s)\\n' \\
  "$(seq -s ', ' 400)" >&2
echo "ERROR: No matching distribution found for torch==2.13.0+cpu" >&2
exit 1
"""


def _make(tmp_path: Path, mode: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stub = venv / "bin" / "python"
    stub.write_text(STUB)
    stub.chmod(0o755)
    env = {**os.environ, "MODE": mode}
    out = subprocess.run(["make", "-C", str(ROOT), f"VENV={venv}", f"{venv}/.installed"], env=env,
                         capture_output=True, text=True, timeout=120)
    calls = (venv / "bin" / "calls").read_text().splitlines() if (venv / "bin" / "calls").exists() else []
    return out, calls


def test_a_served_cpu_build_installs_from_the_configured_index_alone(tmp_path):
    out, calls = _make(tmp_path, "served")
    assert out.returncode == 0, out.stderr
    assert len(calls) == 1 and "-r requirements.txt" in calls[0] and "--extra-index-url" not in calls[0]
    assert "download.pytorch.org" not in out.stdout + out.stderr


def test_plain_pypi_gets_the_cpu_index_once_in_one_line_without_pips_noise(tmp_path):
    out, calls = _make(tmp_path, "pypi")
    assert out.returncode == 0, out.stderr
    assert calls[0].endswith("-r requirements.txt") and calls[1].endswith(f"--extra-index-url {CPU_INDEX}")
    assert len(calls) == 2
    said = [line for line in out.stderr.splitlines() if CPU_INDEX in line]
    assert len(said) == 1 and said[0].startswith("make: ") and "torch==2.13.0+cpu" in said[0]
    assert "Ignored the following" not in out.stderr and "No matching distribution" not in out.stderr


def test_another_failure_is_not_retried_and_is_shown(tmp_path):
    out, calls = _make(tmp_path, "hash")
    assert out.returncode != 0 and len(calls) == 1
    assert "DO NOT MATCH THE HASHES" in out.stderr and "installing requirements.txt failed" in out.stderr


def test_a_cpu_build_found_nowhere_fails_with_short_lines(tmp_path):
    out, calls = _make(tmp_path, "nowhere")
    assert out.returncode != 0 and len(calls) == 2
    assert "No matching distribution found for torch==2.13.0+cpu" in out.stderr
    assert "Ignored the following" not in out.stderr
    assert max(len(line) for line in out.stderr.splitlines()) <= 320
    assert "installing requirements.txt failed" in out.stderr
