"""The code's comments and docstrings stay true to the tree: every file path a comment or a docstring in lab/, app/,
pages/, tests/ or bench/ names exists (tests/test_docs.py does the same for the Markdown documents).

A mention is a path from one of the repository's folders (lab/core/routes.py, lab/runtime/engine/); a pattern with
NAME stands for an experiment's folder name (pages/NAME.py) and must match for at least one experiment, one with `*`
must match some file; lab/core/model_registry.MODELS (a module's path with a name in it) names a file that defines that
name, and so does a code span `lab/core/page_models.py: matrix_spec` (outside a code span the words after a colon are
prose: "lab/runtime/cores.py: this thread ...").
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("lab", "app", "pages", "tests", "bench")
ROOTS = ("lab/", "app/", "pages/", "tests/", "bench/", "docs/", ".streamlit/", ".ci/")
_PATH = r"((?:" + "|".join(re.escape(r) for r in ROOTS) + r")[\w./*-]*)"
MENTION = re.compile(r"(?<![\w./-])" + _PATH)  # a path from one of ROOTS, not the tail of a longer path or word
IN_CODE = re.compile(r"`" + _PATH + r":[ \t]*@?([A-Za-z_]\w*)[^`]*`")  # `path: name ...` in a code span
EXPERIMENTS = sorted(p.name for p in (ROOT / "lab" / "experiments").iterdir() if (p / "experiment.py").is_file())


def _comments_and_docstrings(src: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every module, class and function docstring of a source file."""
    out = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(src).readline)
           if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                     str):
                out.append((first.lineno, first.value.value))
    return out


def mentions() -> list[tuple[str, str, str | None]]:
    """(where: file and line, path, name or None) of every path named in a comment or a docstring."""
    found = []
    for top in SCANNED:
        for f in sorted((ROOT / top).rglob("*.py")):
            for line, text in _comments_and_docstrings(f.read_text()):
                where = f"{f.relative_to(ROOT)}:{line}"
                found += [(where, m.group(1).rstrip(".,;:"), None) for m in MENTION.finditer(text)]
                found += [(where, m.group(1), m.group(2)) for m in IN_CODE.finditer(text)]
    return found


MENTIONS = mentions()


def defines(py: Path, name: str) -> bool:
    """Whether a Python file defines `name` (a function, a class, an assignment or an import)."""
    pattern = rf"^\s*(async\s+def|def|class)\s+{name}\b|^\s*{name}\s*[:=]|^(from|import)\s.*\b{name}\b"
    return re.search(pattern, py.read_text(), re.M) is not None


def resolves(path: str, name: str | None) -> bool:
    """Whether a mentioned path (and the name after it) is in the tree; see the module docstring."""
    if "NAME" in path:
        return any(any(ROOT.glob(path.replace("NAME", e))) for e in EXPERIMENTS)
    if "*" in path:
        return any(ROOT.glob(path))
    target = ROOT / path
    if target.exists():
        return not name or target.suffix != ".py" or defines(target, name)
    head, _, tail = path.rpartition("/")
    module, _, attr = tail.partition(".")
    py = ROOT / head / f"{module}.py"
    return py.is_file() and (not attr or defines(py, attr.split(".")[0]))


def test_the_comments_name_paths():
    assert len(MENTIONS) > 300  # the pattern finds what the code names (a broken pattern would pass anything)
    assert ("tests/test_comment_paths.py:1", "tests/test_docs.py", None) in MENTIONS


def test_a_stale_path_or_name_is_caught():
    assert not resolves("lab/catalog/NAME.py", None)  # the catalog held one file per experiment once
    assert not resolves("lab/cli.py", None)  # now a package
    assert not resolves("lab/core/routes.py", "no_such_function")
    assert not resolves("lab/core/recipes.NO_SUCH_NAME", None)
    assert resolves("lab/experiments/NAME/descriptor.py", None) and resolves("lab/core/model_registry.MODELS", None)
    assert resolves("lab/ops/route_ops.py", "route_of") and resolves("app/figures_*.py", None)


@pytest.mark.parametrize("where,path,name", MENTIONS, ids=[f"{w}:{p}" for w, p, _ in MENTIONS])
def test_every_path_named_in_a_comment_exists(where, path, name):
    assert resolves(path, name), f"{where} names {path}{': ' + name if name else ''}, which is not in the tree"
