"""The suite's tiers (tests/conftest.py): each test lands in the tier its place says, so `make test-fast` leaves out
exactly the browser, slow and simulated-null tests, and every test is in some tier."""

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import LONGEST, TIERS, tiers_of

ROOT = Path(__file__).resolve().parents[1]


class Item:
    def __init__(self, nodeid: str, marks=()) -> None:  # noqa: ANN001
        self.nodeid, self.marks = nodeid, [pytest.mark.__getattr__(m).mark for m in marks]

    def iter_markers(self):  # noqa: ANN202
        return iter(self.marks)


def test_each_test_lands_in_the_tier_its_place_says():
    assert tiers_of(Item("tests/test_metrics.py::test_x")) == {"unit"}
    assert tiers_of(Item("tests/test_app_delete.py::test_x")) == {"page"}
    assert tiers_of(Item("tests/test_browser.py::test_x", ["browser"])) == {"browser"}
    assert tiers_of(Item("tests/test_study_nulls.py::test_x[3]")) == {"nulls"}
    assert tiers_of(Item("tests/test_deployment.py::test_x")) == {"slow"}
    assert tiers_of(Item(LONGEST[0] + "[a]", ["browser"])) == {"browser", "slow"}
    assert set(TIERS) == {"unit", "page", "browser", "slow", "nulls"}


def test_the_fast_tier_leaves_out_the_browser_slow_and_null_tests():
    def ids(*args: str) -> set[str]:
        out = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "--collect-only", "-q", *args,
                              "tests/test_hall.py", "tests/test_browser_lesson.py", "tests/test_study_nulls.py"],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
        return {line for line in out.stdout.splitlines() if "::" in line}

    every, fast = ids(), ids("-m", "not browser and not slow and not nulls")
    assert fast and fast < every
    assert all(i.startswith("tests/test_hall.py") for i in fast)
    assert any(i.startswith("tests/test_browser_lesson.py") for i in every - fast)
    assert any(i.startswith("tests/test_study_nulls.py") for i in every - fast)
