"""Every claim the lab prints names its error: each page's default view (quick mode, the session's shared store, so
the page tests' models are reused) and each experiment's `--json` answer carry complete claim records whose
`measured` names `se` and `se_kind`, decided by tests, none comparing accuracies with an independent error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from lab import claims as C
from lab.catalog import descriptors
from lab.catalog.presets import always
from lab.runtime import timings
from lab.runtime.store import active_store, config_json

ROOT = Path(__file__).resolve().parents[1]
NAMES = list(descriptors())


def claims_in(x: Any) -> Iterator[dict[str, Any]]:
    """Every claim record anywhere in a JSON answer."""
    if isinstance(x, dict):
        if "claim" in x and "holds" in x and "rule" in x:
            yield x
        for v in x.values():
            yield from claims_in(v)
    elif isinstance(x, list):
        for v in x:
            yield from claims_in(v)


def assert_sound(cs: list[dict[str, Any]], where: str) -> None:
    assert cs, f"{where}: no claims"
    C.check(cs)
    for c in cs:
        kinds = {t["se_kind"] for t in c["tests"]}
        assert "independent" not in kinds, f"{where}: {c['key']} judges a difference as independent samples"
        # a claim about a recipe rests on at least MIN_SEEDS seeds, or says it cannot tell: one trained network
        if c["over"] == "seeds" and len(c.get("seeds") or []) < C.MIN_SEEDS:
            assert c["holds"] is None and c.get("why"), f"{where}: {c['key']} decides a recipe on too few seeds"


def reached(entries: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """`entries` (kind, config JSON) and every entry their builds used, transitively, from the store's timing
    records (lab/runtime/timings.py: each build's `uses`): a claim that reads a stored entry reads what it rests on."""
    root = Path(active_store().root) / timings.FOLDER
    uses: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for path in root.glob("*/*.json"):
        rec = json.loads(path.read_text())
        uses.setdefault((rec["kind"], rec["config"]), []).extend((u["kind"], u["config"]) for u in rec["uses"])
    out, todo = set(), list(entries)
    while todo:
        e = todo.pop()
        if e not in out:
            out.add(e)
            todo += uses.get(e, [])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_the_default_views_claims_are_tests_with_their_error(name, monkeypatch):
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    d = descriptors()[name]
    assert d.claims is not None, f"{name}: the descriptor gives no claims (Descriptor.claims)"
    with timings.measuring() as uses:  # every stored entry the claims read (or build) themselves
        claims = d.claims(d.defaults)
    assert_sound(claims, f"{name} page")
    # The plan says which of its calls the claims read (`Need.for_claims`): the claims at other seeds compute
    # exactly those, so a call declared unread that the claims need would be missing there, and one declared read
    # that they never touch would be computed for nothing.
    read = reached({(u["kind"], u["config"]) for u in uses})
    declared = {n.key: n.for_claims for n in always(d.plan(d.defaults))}
    actual = {n.key: (n.fn.kind, config_json(n.cfg)) in read for n in always(d.plan(d.defaults))}
    assert actual == declared, f"{name}: the plan's for_claims {declared} differ from what its claims read {actual}"


@pytest.mark.parametrize("name", NAMES)
def test_every_json_answer_names_se_and_se_kind(name):
    env = dict(os.environ, LAYERLAB_QUICK="1", PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "lab", name, "--json"], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    cs = list(claims_in(json.loads(p.stdout)["result"]))
    assert_sound(cs, f"python -m lab {name} --json")
