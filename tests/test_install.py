"""The lab as a package: a wheel built from this tree runs outside any checkout as the `layerlab` command, pip installs
it from a git URL at an exact commit (and `layerlab --version` names that commit), and a Reproduce notebook opened
with no checkout installs the lab at its commit by itself.

The wheels are installed with `--no-deps` into a folder of their own (`pip install --target`), reusing this
environment's libraries: what is under test is the lab's packaging, not PyPI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
SCHEMA = "docs/cli-output.schema.json"


def _tree_copy(dest: Path) -> str:
    """This working tree's files (tracked and untracked, as `git ls-files` lists them) committed into a new git
    repository at `dest`; returns the commit."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split("\n")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file() and not name.startswith(("docs/screenshots/", "cache/")):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git = ["git", "-C", str(dest), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tree under test"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def _env(site: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAYERLAB_", "PYTHONPATH"))}
    env.update(PYTHONPATH=str(site), LAYERLAB_CACHE=str(cache), LAYERLAB_QUICK="1", LAYERLAB_ENGINE="threads",
               PIP_NO_DEPS="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _layerlab(site: Path, cache: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    code = "import sys, layerlab; sys.exit(layerlab.main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=_env(site, cache), capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    dest = tmp_path_factory.mktemp("repo")
    return dest, _tree_copy(dest)


@pytest.fixture(scope="module")
def installed(repo, tmp_path_factory):
    """The lab pip-installed from `git+file://...@COMMIT` into a folder of its own."""
    dest, commit = repo
    site = tmp_path_factory.mktemp("site")
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--target", str(site), f"layer-lab @ git+file://localhost{dest}@{commit}"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return site, commit


def test_the_wheel_holds_the_lab_inside_one_package(repo, tmp_path):
    dest, _ = repo
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                          str(tmp_path), str(dest)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("layer_lab-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"layerlab"}, f"the wheel must not install top-level {tops - {'layerlab'}}"
    for needed in ("layerlab/lab/cli/__init__.py", "layerlab/app/main.py", "layerlab/pages/delete.py",
                   "layerlab/streamlit_config/config.toml", "layerlab/app/hall/page.html", "layerlab/app/hall/hall.js",
                   "layerlab/app/hall/hall.css"):  # the light student view's page (app/hall_route.py)
        assert needed in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "layerlab = layerlab:main" in zipfile.ZipFile(wheel).read(entry).decode()


def _pip(*args: str) -> None:
    out = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert out.returncode == 0, out.stderr[-2000:]


@pytest.fixture(scope="module")
def sdist(repo, tmp_path_factory):
    """The sdist of the tree under test, built by setuptools' own PEP 517 hook (pip builds no sdists)."""
    dest, _ = repo
    out = tmp_path_factory.mktemp("sdist")
    code = f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})"
    made = subprocess.run([sys.executable, "-c", code], cwd=dest, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    (found,) = out.glob("layer_lab-*.tar.gz")
    return found


def test_the_wheel_records_its_version_commit_and_schema(repo, tmp_path):
    dest, commit = repo
    _pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(dest))
    (wheel,) = tmp_path.glob("layer_lab-*.whl")
    with zipfile.ZipFile(wheel) as z:
        info = json.loads(z.read("layerlab/lab/runtime/build_info.json"))
        assert z.read(f"layerlab/{SCHEMA}") == (ROOT / SCHEMA).read_bytes()
    assert info == {"version": VERSION, "commit": commit}
    # installed from the wheel file, outside any checkout: no .git, and pip records no commit for a wheel
    site = tmp_path / "site"
    _pip("install", "-q", "--no-deps", "--target", str(site), str(wheel))
    out = _layerlab(site, tmp_path / "cache", "--version", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"layer-lab {VERSION} (commit {commit})", out.stdout
    code = "import layerlab, lab; print(lab.__version__)"
    where = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(site, tmp_path / "cache"),
                           capture_output=True, text=True, check=True)
    assert where.stdout.strip() == VERSION
    # --help names the installed file (argparse wraps a long path, at its hyphens too: compared without spaces)
    (tmp_path / "work").mkdir()  # outside the install, as a user's working folder is (inside it: a relative path)
    helped = "".join(_layerlab(site, tmp_path / "cache", "delete", "--help", cwd=tmp_path / "work").stdout.split())
    assert f"JSONSchema:{site / 'layerlab' / SCHEMA})" in helped, helped


def test_the_sdist_carries_the_locks_makefile_and_schema_and_its_wheel_the_commit(repo, sdist, tmp_path):
    _, commit = repo
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
        t.extractall(tmp_path / "unpacked", filter="data")
    for needed in ("Makefile", "requirements.txt", "requirements-dev.txt", "requirements-macos.txt",
                   "requirements-macos-dev.txt", "pyproject.toml", "setup.py", "CITATION.cff", SCHEMA,
                   "lab/runtime/build_info.json"):
        assert needed in names, f"the sdist lacks {needed}"
    (tree,) = (tmp_path / "unpacked").iterdir()
    assert not (tree / ".git").exists()
    _pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "w"), str(tree))
    (wheel,) = (tmp_path / "w").glob("layer_lab-*.whl")
    with zipfile.ZipFile(wheel) as z:
        assert json.loads(z.read("layerlab/lab/runtime/build_info.json"))["commit"] == commit
        assert f"layerlab/{SCHEMA}" in z.namelist()


def test_installed_from_git_names_its_commit_and_runs_outside_a_checkout(installed, tmp_path):
    site, commit = installed
    out = _layerlab(site, tmp_path / "cache", "--version", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("layer-lab ") and f"commit {commit}" in out.stdout
    where = subprocess.run([sys.executable, "-c", "import layerlab, lab; print(lab.__file__)"], cwd=tmp_path,
                           env=_env(site, tmp_path / "cache"), capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(site / "layerlab"), "the lab must come from the install"


def test_installed_layerlab_runs_an_experiment(installed, tmp_path):
    site, _ = installed
    out = _layerlab(site, tmp_path / "cache", "delete", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["command"] == "delete" and 0.0 <= doc["result"]["base_acc"] <= 1.0
    assert any((tmp_path / "cache").rglob("*.meta.json")), "the result must land in LAYERLAB_CACHE"


def test_bare_command_prints_usage_naming_every_subcommand(installed, tmp_path):
    site, _ = installed
    out = _layerlab(site, tmp_path / "cache", cwd=tmp_path)
    text = out.stdout + out.stderr
    assert out.returncode == 2 and "usage: layerlab" in text
    for name in ("app", "delete", "lens", "matrix", "warm", "seeds", "table"):
        assert name in text


def test_a_notebook_without_a_checkout_installs_the_lab_at_its_commit(repo, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    dest, commit = repo
    from lab.classroom import reproduce
    from lab.experiments.delete import experiment as delete
    from lab.runtime import version

    monkeypatch.setenv("LAYERLAB_SOURCE_URL", f"file://localhost{dest}")
    monkeypatch.setattr(version, "commit", lambda: commit)
    nb = reproduce.notebook(delete.run, delete.DeleteConfig(), title="Delete layers")
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert f"git+file://localhost{dest}@{commit}" in setup.source
    made_with = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "torch" in made_with and "numpy" in made_with
    # a "hosted" kernel: no checkout above the working folder, the lab not importable until the cell installs it
    site, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    site.mkdir()
    env = _env(site, tmp_path / "cache")
    env["PIP_TARGET"], env["PIP_NO_BUILD_ISOLATION"] = str(site), "0"
    code = setup.source + "\nimport lab; print('LAB_AT', lab.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"commit {commit}" in out.stdout
    assert str(site) in out.stdout.split("LAB_AT", 1)[1]
    assert nbformat.validate(nb) is None
