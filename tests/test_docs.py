"""docs/ARCHITECTURE.md, README.md and docs/API.md stay true to the code: every file path they name exists, and every
`path: name` they name is defined in that file."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "docs" / "ARCHITECTURE.md", ROOT / "README.md", ROOT / "docs" / "API.md"]
ROOTS = ("lab/", "app/", "pages/", "tests/", "bench/", "docs/", ".streamlit/", ".ci/")
# `path` or `path: name(...)`, inside a code span
_ROOT_ALT = "|".join(re.escape(r) for r in ROOTS)
MENTION = re.compile(r"`((?:" + _ROOT_ALT + r")[\w./-]+)(\*?)(?::\s*@?([A-Za-z_][\w.]*))?[^`]*`")


def mentions() -> list[tuple[str, str, str | None]]:
    found = []
    for doc in DOCS:
        for m in MENTION.finditer(doc.read_text()):
            path, glob, name = m.group(1).rstrip("."), m.group(2), m.group(3)
            if "NAME" in path or glob:  # a pattern ("pages/NAME.py", "app/figures_*.py"), not a file
                continue
            name = name.split(".")[-1] if name else None  # `controls.param(...)`: the function is `param`
            found.append((doc.name, path, name))
    return found


MENTIONS = mentions()


def test_the_docs_name_files():
    assert len(MENTIONS) > 40  # the pattern finds what the documents name (a broken pattern would pass anything)


@pytest.mark.parametrize("doc,path,name", MENTIONS, ids=[f"{d}:{p}:{n or ''}" for d, p, n in MENTIONS])
def test_every_named_path_exists_and_names_what_it_defines(doc, path, name):
    target = ROOT / path
    assert target.exists(), f"{doc} names {path}, which does not exist"
    if name and target.is_file() and target.suffix == ".py":
        src = target.read_text()
        assert re.search(rf"^\s*(def|class)\s+{name}\b|^\s*{name}\s*[:=]|^\s*@?{name}\b", src, re.M), \
            f"{doc} names {path}: {name}, which that file does not define"
