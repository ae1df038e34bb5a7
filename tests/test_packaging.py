"""What an install reports and needs: the lab's version is pyproject.toml's (its one source), PostgreSQL's driver is
an extra that the test tools still pull, and a missing driver says how to install it; CITATION.cff parses and names
this version; quick mode says what really ran. The built wheel and sdist themselves: tests/test_install.py."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import lab
from lab.classroom import class_engine
from lab.runtime import version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_lab_reports_pyprojects_version():
    assert lab.__version__ == version.version() == PROJECT["version"]
    assert "__version__ =" not in (ROOT / "lab" / "__init__.py").read_text(), "a second copy of the version"
    with pytest.raises(AttributeError):
        lab.no_such_name  # noqa: B018


def test_a_built_copys_recorded_version_and_commit_are_read(tmp_path, monkeypatch):
    info = tmp_path / "build_info.json"
    info.write_text('{"version": "9.8.7", "commit": "' + "ab" * 20 + '"}')
    monkeypatch.setattr(version, "BUILD_INFO", info)
    monkeypatch.setattr(version, "ROOT", tmp_path)  # no pyproject.toml, no .git: an installed copy
    for cached in (version.built, version.version, version.commit):
        cached.cache_clear()
    try:
        assert version.version() == "9.8.7" and version.commit() == "ab" * 20
        assert version.version_line() == f"layer-lab 9.8.7 (commit {'ab' * 20})"
    finally:
        for cached in (version.built, version.version, version.commit):
            cached.cache_clear()


def _names(reqs: list[str]) -> set[str]:
    return {Requirement(r).name for r in reqs}


def test_postgresqls_driver_is_an_extra_that_the_tests_still_pull():
    extras = PROJECT["optional-dependencies"]
    assert "psycopg" not in _names(PROJECT["dependencies"]), "only PostgreSQL deployments need psycopg"
    assert [Requirement(r) for r in extras["postgres"]] == [Requirement("psycopg[binary]>=3.1")]
    assert {str(Requirement(r)) for r in extras["postgres"]} <= {str(Requirement(r)) for r in extras["test"]}


@pytest.mark.parametrize("url", ["postgresql+psycopg://ann:s3cret@db.example/lab", "postgresql://ann@db.example/x"])
def test_a_missing_postgresql_driver_says_which_extra_to_install(url, monkeypatch):
    for name in ("psycopg", "psycopg2"):
        monkeypatch.setitem(sys.modules, name, None)  # `import psycopg` now fails as if it were not installed
    with pytest.raises(class_engine.MissingDriver) as why:
        class_engine.engine(url)
    said = str(why.value)
    assert 'pip install "layer-lab[postgres]"' in said and "PostgreSQL" in said
    assert "s3cret" not in said and "db.example" not in said
    assert ("postgresql+psycopg://" in said) == (not url.startswith("postgresql+psycopg://"))


def test_the_citation_parses_and_names_this_version():
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["title"] == "Layer Lab" and cff["message"] and cff["license"] == PROJECT["license"] == "MIT"
    assert str(cff["version"]) == PROJECT["version"], "CITATION.cff's version must follow pyproject.toml's"
    assert cff["authors"] == [{"name": "Layer Lab contributors"}]
    refs = cff["references"]
    assert {r["url"].rsplit("/", 1)[1] for r in refs} == {"2407.04513", "2103.03457", "1909.11556", "1902.01996"}
    for r in refs:  # what CFF 1.2.0 requires of a reference: a type, a title and authors, each a person or an entity
        assert r["type"] in ("article", "conference-paper") and r["title"] and isinstance(r["year"], int)
        assert r["authors"] and all({"family-names", "given-names"} <= set(a) for a in r["authors"])


def test_quick_mode_says_what_really_ran_beside_a_text_summary(monkeypatch, capsys):
    from lab.cli.common import emit, quick_mode

    monkeypatch.setenv("LAYERLAB_QUICK", "0")
    assert quick_mode({"epochs": 12, "steps": 500}) is None
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    ran = quick_mode({"epochs": 12, "steps": 500, "seed": 0})
    assert ran is not None and (ran["epochs"], ran["steps"], ran["model_epochs"], ran["max_steps"]) == (1, 10, 1, 10)
    emit("delete", {"epochs": 12, "steps": 500}, None, False, lambda _: "summary line")
    out, err = capsys.readouterr()
    assert out == "summary line\n" and "quick mode" in err and "1 epoch" in err and "10 steps" in err
