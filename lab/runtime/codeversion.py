"""Code versions: a hash of what a lab module's code does, and of every lab module it imports, transitively.

What is hashed is each file's syntax tree without its docstrings (comments are never in it), without the text of
the messages its `raise` statements give, and without line numbers: fixing a typo in a docstring, rewording an
error, re-wrapping a comment or reformatting keeps every stored result, while a changed constant, statement or
signature gives a fresh entry (tests/test_codeversion.py and tests/test_rekey.py check both).

The store names entries by (kind, config, code version of the config's module). Hashing only what an
experiment actually depends on means that editing one experiment (or the CLI) does not throw away every other
experiment's trained models, while any change to code a result depends on still gives a fresh entry. An entry
whose computation reaches code by name rather than by import (a trained model, its task's loader: lab/core/tasks.py)
names it too: its code version is that of `module+other.module:function`, every part's code and the names.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import threading
from functools import lru_cache
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parents[1]  # the lab package
# ast.parse from two threads at once can fail in CPython 3.11 ("AST constructor recursion depth mismatch"; seen when
# the server's warmer planned while a page computed a store key): parse one file at a time.
_PARSE = threading.Lock()


def _stamp(path: Path) -> tuple[str, int, int]:
    """A file's identity for the caches below: an edited file gets a new one (its mtime and size change)."""
    st = path.stat()
    return str(path), st.st_mtime_ns, st.st_size


@lru_cache(maxsize=2048)
def _tree(stamp: tuple[str, int, int]) -> ast.Module:
    # Parsed once per file version: a server computes the code versions of ~30 config modules, each reaching ~40
    # files, and parsing them afresh each time cost seconds of the web server's CPU at start-up. Read-only.
    with _PARSE:
        return ast.parse(Path(stamp[0]).read_text())


def _parse(path: Path) -> ast.Module:
    return _tree(_stamp(path))


def module_file(module: str) -> Path | None:
    """The source file of a module of the `lab` package, or None if it is not one."""
    parts = module.split(".")
    if parts[0] != "lab":
        return None
    base = LAB_DIR.joinpath(*parts[1:])
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(module: str, path: Path) -> set[str]:
    """Names of lab modules imported by one file (absolute `lab.x` and relative `.x` / `from .. import x`)."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "lab")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "lab":
                continue
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)  # `from .. import search` imports a module
    return {m for m in out if module_file(m) is not None}


NEUTRAL_MARK = "CODE_VERSION_NEUTRAL"


def _neutral(path: Path) -> bool:
    """Whether a module declares `CODE_VERSION_NEUTRAL = True`: plumbing that cannot change a number (the store,
    progress reports, notices, the experiment contract), so editing it must not throw away every trained model."""
    for node in _parse(path).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == NEUTRAL_MARK for t in node.targets):
            return isinstance(node.value, ast.Constant) and node.value.value is True
    return False


COVERS_MARK = "CODE_COVERS"


def _covers(path: Path) -> tuple[str, ...]:
    """The module patterns a module declares in `CODE_COVERS = ("lab.core.data_*", ...)`: code its results rest on
    though it reaches it by name, not import (every task's loader: lab/core/recipes.py), named without importing it."""
    for node in _parse(path).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == COVERS_MARK for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


@lru_cache(maxsize=64)
def _matching(pattern: str) -> tuple[str, ...]:
    """The lab modules whose dotted names match a glob pattern (`lab.core.data_*`), sorted."""
    names = ("lab." + ".".join(f.relative_to(LAB_DIR).with_suffix("").parts) for f in LAB_DIR.rglob("*.py")
             if f.name != "__init__.py")
    return tuple(sorted(n for n in names if fnmatch.fnmatchcase(n, pattern)))


def dependencies(module: str) -> dict[str, Path]:
    """`module` and every lab module it reaches through imports (and their packages), with their files; a neutral
    module (see `_neutral`) other than `module` itself is left out, and so is what only it imports."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        m = todo.pop()
        path = module_file(m)
        if m in seen or path is None:
            continue
        if m != module and _neutral(path):
            continue
        seen[m] = path
        todo.extend(_imports(m, path))
        todo.extend(c for pattern in _covers(path) for c in _matching(pattern))
        # A package's __init__ runs whenever one of its modules is imported.
        parent = m.rsplit(".", 1)[0]
        if parent != m and parent not in seen:
            todo.append(parent)
    return seen


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """The tree with the docstring of the module and of every class and function removed (a body left empty gets
    `pass`, so the tree is still valid Python)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _is_text(node: ast.expr) -> bool:
    """Whether an expression is a message: a string, an f-string, or strings joined by + or formatted by %."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_text(node.left) or _is_text(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _is_text(node.left)
    return False


def _strip_messages(tree: ast.AST) -> ast.AST:
    """The tree with the text arguments of every `raise X(...)` removed. An exception's message cannot change a
    number (raising ends the computation; the type, its cause and any other argument stay hashed), so rewording an
    error, say in lab/core/data_csv.py's checks of an upload, keeps every trained model and result. This is the general
    rule; a text built before the `raise` (a variable, a helper's sentence) is still code, and a task's loader is
    hashed only into its own task's models (lab/core/tasks.py), which bounds what such an edit re-keys."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            node.exc.args = [a for a in node.exc.args if not _is_text(a)]
            node.exc.keywords = [k for k in node.exc.keywords if not _is_text(k.value)]
    return tree


def semantic_digest(source: str) -> bytes:
    """What the code in `source` does, as bytes to hash: its syntax tree without docstrings, comments, raise
    statements' messages, layout or line numbers."""
    with _PARSE:
        tree = ast.parse(source)
    return ast.dump(_strip_messages(_strip_docstrings(tree)), annotate_fields=False, include_attributes=False).encode()


@lru_cache(maxsize=2048)
def _digest(stamp: tuple[str, int, int]) -> bytes:
    return hashlib.sha256(semantic_digest(Path(stamp[0]).read_text())).digest()


def parts(module: str) -> list[str]:
    """The modules a code version names: one lab module, or several joined by "+", each optionally naming a function
    of it after ":" (`lab.core.zoo+lab.core.data_digits:digits`)."""
    return [p.split(":", 1)[0] for p in module.split("+")]


def names_lab_code(module: str) -> bool:
    """Whether every part of `module` (`parts`) is a module of the lab package."""
    return all(module_file(m) is not None for m in parts(module))


@lru_cache(maxsize=256)
def code_version(module: str) -> str:
    """12-hex hash over what `module` and all lab modules it reaches through imports do (`semantic_digest`); for
    several parts (`parts`), over all of theirs and the parts' names (which function of a module it calls)."""
    seen: dict[str, Path] = {}
    for m in parts(module):
        seen.update(dependencies(m))
    h = hashlib.sha256()
    if module != parts(module)[0]:
        h.update(module.encode())
    for m in sorted(seen):
        h.update(m.encode())
        h.update(_digest(_stamp(seen[m])))
    return h.hexdigest()[:12]
