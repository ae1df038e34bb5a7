"""Cache keys follow what the code does: a docstring or comment edit in lab/core/models/base.py keeps every stored
model's key; a changed constant, statement or argument changes it (on a copy of the lab package); an error's message
is not code; a code version of several parts (a model and its task's loader) covers each of them."""

import re
import shutil
from pathlib import Path

import pytest

from lab.runtime import codeversion

ROOT = Path(__file__).resolve().parents[1]
BASE = Path("core/models/base.py")


@pytest.fixture
def lab_copy(tmp_path, monkeypatch):
    dst = tmp_path / "lab"
    shutil.copytree(ROOT / "lab", dst, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(codeversion, "LAB_DIR", dst)
    codeversion.code_version.cache_clear()
    yield dst
    codeversion.code_version.cache_clear()


def version(module="lab.core.models.base"):
    codeversion.code_version.cache_clear()
    return codeversion.code_version(module)


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, count))


def test_docstrings_comments_and_layout_keep_the_key(lab_copy):
    before, model_before = version(), version("lab.core.models.mlp")
    path = lab_copy / BASE
    text = path.read_text()
    doc = re.search(r'"""(.+?)"""', text, re.S)
    assert doc is not None  # the module has a docstring to edit
    edit(path, doc.group(1), doc.group(1) + " A typo fixed, a sentence added.")
    edit(path, "\nimport", "\n# a new comment explaining why\n\n\nimport")
    assert version() == before
    assert version("lab.core.models.mlp") == model_before  # every model built on base keeps its stored entries
    # a docstring of a function, the only statement of its body, is not code either
    edit(path, "\ndef ", '\ndef _helper_added_for_test():\n    """Only a docstring."""\n\n\ndef ')
    assert version() != before  # but a new function is new code


def test_a_changed_constant_or_statement_changes_the_key(lab_copy):
    before, model_before = version(), version("lab.core.models.mlp")
    path = lab_copy / BASE
    nums = re.findall(r"(?<![\w.])(\d+\.\d+|\d+)(?![\w.])", re.sub(r'""".*?"""|#.*', "", path.read_text(), flags=re.S))
    assert nums, "base.py has a numeric constant to change"
    original = path.read_text()
    # change the first constant that appears in code (not in a docstring or a comment)
    code_at = [m for m in re.finditer(rf"(?<![\w.]){re.escape(nums[0])}(?![\w.])", original)
               if not _in_text(original, m.start())][0]
    path.write_text(original[:code_at.start()] + nums[0] + "1" + original[code_at.end():])
    assert version() != before
    path.write_text(original)
    assert version() == before
    edit(path, "\nimport", "\nimport math as _unused\nimport")  # a statement, even one that changes no number
    assert version("lab.core.models.mlp") != model_before


def _in_text(source: str, at: int) -> bool:
    """Whether position `at` lies inside a triple-quoted string or a comment."""
    before = source[:at]
    if before.count('"""') % 2 == 1:
        return True
    line_start = before.rfind("\n") + 1
    return "#" in source[line_start:at]


def test_semantic_digest_ignores_only_what_does_nothing():
    a = 'def f(x):\n    """Add one."""\n    return x + 1  # why\n'
    assert codeversion.semantic_digest(a) == codeversion.semantic_digest("def f(x):\n\n    return (x + 1)\n")
    assert codeversion.semantic_digest(a) != codeversion.semantic_digest("def f(x):\n    return x + 2\n")
    assert codeversion.semantic_digest(a) != codeversion.semantic_digest("def f(y):\n    return y + 1\n")
    # a string that is not a docstring is data, and stays
    assert codeversion.semantic_digest('x = 1\n"note"\n') != codeversion.semantic_digest("x = 1\n")


def test_an_errors_message_is_not_code_but_its_type_and_its_other_arguments_are():
    """Rewording an error keeps every key (raising ends the computation: its text changes no number); what is raised,
    when, and any argument that is not text still count."""
    d = codeversion.semantic_digest
    a = 'def f(x):\n    if x < 0:\n        raise ValueError(f"x is {x}: it must be positive")\n    return x\n'
    assert d(a) == d(a.replace('f"x is {x}: it must be positive"', '"x must be at least 0, not " + str(x)'))
    assert d(a) == d(a.replace('f"x is {x}: it must be positive"', '"x=%s" % x'))
    assert d(a) != d(a.replace("ValueError", "TypeError"))
    assert d(a) != d(a.replace("x < 0", "x < 1"))
    assert d("raise Stop(value)\n") != d("raise Stop(other)\n")  # an exception carrying data keeps it
    assert d('msg = "a"\nraise ValueError(msg)\n') != d('msg = "b"\nraise ValueError(msg)\n')  # text built before


def test_a_code_version_of_several_parts_covers_each_and_names_the_function(lab_copy):
    zoo, joint = version("lab.core.zoo"), version("lab.core.zoo+lab.core.data_digits:digits")
    assert joint != zoo and joint != version("lab.core.zoo+lab.core.data_digits:other")
    edit(lab_copy / "core/data_digits.py", "N_TEST = 397", "N_TEST = 398")
    assert version("lab.core.zoo") == zoo and version("lab.core.zoo+lab.core.data_digits:digits") != joint
    assert codeversion.parts("lab.core.zoo+lab.core.data_csv:load_csv") == ["lab.core.zoo", "lab.core.data_csv"]
    assert codeversion.names_lab_code("lab.core.zoo+lab.core.data_csv:load_csv")
    assert not codeversion.names_lab_code("lab.core.zoo+os:getcwd")
