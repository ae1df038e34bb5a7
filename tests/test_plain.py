"""Typed results at the store boundary: to_plain / from_plain round-trip, and an entry point with a result type
returns the same type whether it built the result or read it back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import pytest

from lab.experiment import KINDS, entry
from lab.runtime.plain import from_plain, to_plain
from lab.runtime.store import Store


@dataclass(frozen=True)
class Row:
    block: int
    acc: float


@dataclass(frozen=True)
class Result:
    name: str
    rows: tuple[Row, ...]
    by_block: dict[int, float]
    best: Optional[Row] = None
    extra: dict[str, Any] = field(default_factory=dict)


R = Result("x", (Row(0, 0.5), Row(1, 1.0)), {0: 0.25, 3: 0.75}, Row(1, 1.0), {"curve": [1, 2]})


def test_round_trip_is_exact():
    plain = to_plain(R)
    assert plain == {"name": "x", "rows": [{"block": 0, "acc": 0.5}, {"block": 1, "acc": 1.0}],
                     "by_block": {"0": 0.25, "3": 0.75}, "best": {"block": 1, "acc": 1.0}, "extra": {"curve": [1, 2]}}
    assert from_plain(Result, plain) == R
    assert from_plain(Result, {**plain, "best": None}).best is None
    assert isinstance(from_plain(Row, {"block": 2, "acc": 1}).acc, float)  # JSON's 1 is the float 1.0


def test_a_stored_result_missing_a_field_is_named():
    with pytest.raises(ValueError, match="no field 'rows'"):
        from_plain(Result, {"name": "x", "by_block": {}})


@dataclass(frozen=True)
class Cfg:
    n: int = 2


def test_an_entry_with_a_result_type_returns_it_built_and_read(tmp_path):
    calls = []

    @entry("test-plain", result=Result)
    def build(cfg: Cfg, progress: Any) -> Result:
        calls.append(cfg)
        return R

    KINDS.pop("test-plain")  # a kind of this test only: packs must not offer it
    store = Store(tmp_path)
    first, second = build(Cfg(), store=store), build(Cfg(), store=store)
    assert first == second == R and len(calls) == 1
    assert isinstance(second.rows[0], Row)
