"""The README's screenshots come from the real recipe (tests/screenshots.py, `make screenshots`): the script refuses
quick mode and a store that lacks a page's default view (it must not photograph a page still training), saying what
to run; and the browser tests never write into docs/screenshots."""

from __future__ import annotations

from pathlib import Path

from tests import screenshots

ROOT = Path(__file__).resolve().parents[1]


def test_quick_mode_is_refused(monkeypatch, capsys):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    assert screenshots.main(["--pages", "delete"]) == 2
    assert "quick mode is on" in capsys.readouterr().err


def test_a_store_without_the_default_views_is_refused_with_what_to_run(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("LAYERLAB_QUICK", "0")
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "empty"))
    assert screenshots.check_ready(["delete"])  # an empty store lacks them: the check can fail
    assert screenshots.main(["--pages", "delete"]) == 2
    assert "python -m lab warm --defaults-only" in capsys.readouterr().err


def test_no_browser_test_writes_the_readmes_pictures():
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        if path == Path(__file__).resolve():
            continue
        text = path.read_text()
        assert '"docs" / "screenshots"' not in text, path
