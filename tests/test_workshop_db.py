"""Workshop predictions in a real database (lab/classroom/workshop_db.py): SQLite, and a real PostgreSQL server the test
starts. Every bad input is refused with a message and stores nothing; a repeat vote replaces; floods are bounded."""

import os
import sqlite3
import threading

import pytest
import sqlalchemy as sa

from lab.classroom import workshop_db as wdb

from .pg_server import bin_dir, postgres

OPTS = ("about chance", "well above chance", "cannot tell")
S1, S2 = "session-aaaaaaaa", "session-bbbbbbbb"


@pytest.fixture(scope="module")
def pg_url():
    if bin_dir() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must test against PostgreSQL, and its binaries are missing (.ci/run installs them)")
        pytest.skip("PostgreSQL binaries are missing (/usr/lib/postgresql/*/bin): apt-get install postgresql")
    with postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'workshop.sqlite'}"
    else:
        url = request.getfixturevalue("pg_url")
        eng = wdb.engine(url)
        with eng.begin() as conn:  # the server lives for the module: each test starts from empty tables
            for table in reversed(wdb.meta.sorted_tables):
                conn.execute(sa.delete(table))
    w = wdb.Workshop(url)
    w.open_class("TEST-1", now=1000.0)
    return w


def test_votes_count_per_option_and_a_repeat_replaces(db):
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    db.vote("test-1", "delete.plain1", OPTS, S2, OPTS[1], now=1002.0)  # codes are case-blind
    assert db.tally("TEST-1", "delete.plain1", 3).counts == (1, 1, 0)
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[2], now=1003.0)  # S1 changes its mind
    t = db.tally("TEST-1", "delete.plain1", 3)
    assert t.counts == (0, 1, 1) and t.total == 2
    assert db.mine("TEST-1", "delete.plain1", S1) == 2
    assert db.tally("TEST-1", "delete.res4", 3).total == 0  # another question is its own tally


@pytest.mark.parametrize("code", ["ab", "x" * 25, "TEST 1", "TE;ST", "'; DROP TABLE x; --", "ТЕСТ-1", "", None,
                                  "TEST-1\n"])
def test_a_malformed_class_code_is_refused(db, code):
    with pytest.raises(wdb.Rejected, match="3 to 24 letters"):
        db.vote(code, "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)


def test_unknown_class_option_question_or_session_store_nothing(db):
    cases = [("NOPE-9", "delete.plain1", S1, OPTS[0], "no class NOPE-9 is open"),
             ("TEST-1", "delete.plain1", S1, "something else", "not one of this question's options"),
             ("TEST-1", "Delete; plain1", S1, OPTS[0], "malformed question"),
             ("TEST-1", "delete.plain1", "short", OPTS[0], "malformed session"),
             ("TEST-1", "delete.plain1", "x' OR '1'='1", OPTS[0], "malformed session")]
    for code, question, session, option, message in cases:
        with pytest.raises(wdb.Rejected, match=message):
            db.vote(code, question, OPTS, session, option, now=1001.0)
    assert db.tally("TEST-1", "delete.plain1", 3).total == 0
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(wdb.votes)).scalar_one() == 0


def test_a_class_closes_after_its_days(db):
    later = 1000.0 + wdb.CLASS_DAYS * 86400 + 1
    with pytest.raises(wdb.Rejected, match="no class"):
        db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=later)


def test_a_flood_from_one_session_is_bounded_then_forgiven(db):
    for i in range(wdb.SESSION_PER_MINUTE):
        db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[i % 3], now=1001.0 + i * 0.1)
    with pytest.raises(wdb.Flood, match="too many answers"):
        db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1003.0)
    assert db.mine("TEST-1", "delete.plain1", S1) == (wdb.SESSION_PER_MINUTE - 1) % 3  # the refused vote stored nothing
    db.vote("TEST-1", "delete.plain1", OPTS, S2, OPTS[0], now=1003.0)  # others are unaffected
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0 + wdb.WINDOW + 5)  # a minute later: fine
    assert db.mine("TEST-1", "delete.plain1", S1) == 0


def test_a_class_is_bounded_in_votes_per_minute_and_voters_per_question(db, monkeypatch):
    monkeypatch.setattr(wdb, "CLASS_PER_MINUTE", 5)
    for i in range(5):
        db.vote("TEST-1", "delete.plain1", OPTS, f"session-{i:08d}", OPTS[0], now=1001.0)
    with pytest.raises(wdb.Flood, match="faster than the lab accepts"):
        db.vote("TEST-1", "delete.plain1", OPTS, "session-99999999", OPTS[0], now=1001.5)
    monkeypatch.setattr(wdb, "CLASS_PER_MINUTE", 600)
    monkeypatch.setattr(wdb, "CLASS_VOTERS", 5)
    with pytest.raises(wdb.Flood, match="already has 5 predictions"):
        db.vote("TEST-1", "delete.plain1", OPTS, "session-99999999", OPTS[0], now=1002.0)
    db.vote("TEST-1", "delete.plain1", OPTS, "session-00000000", OPTS[1], now=1002.0)  # a voter may still change
    assert db.tally("TEST-1", "delete.plain1", 3).counts == (4, 1, 0)


def test_reset_forgets_one_question_of_one_class(db):
    db.open_class("OTHER-2", now=1000.0)
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    db.vote("TEST-1", "delete.res4", OPTS, S1, OPTS[0], now=1001.0)
    db.vote("OTHER-2", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    assert db.reset("TEST-1", "delete.plain1") == 1
    assert db.tally("TEST-1", "delete.plain1", 3).total == 0
    assert db.tally("TEST-1", "delete.res4", 3).total == 1
    assert db.tally("OTHER-2", "delete.plain1", 3).total == 1


def test_concurrent_voters_are_all_counted(db):
    errors = []

    def voter(i: int) -> None:
        try:
            db.vote("TEST-1", "delete.plain1", OPTS, f"session-{i:08d}", OPTS[i % 2], now=1001.0)
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=voter, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert db.tally("TEST-1", "delete.plain1", 2).counts == (6, 6)


def test_sqlite_is_a_file_in_the_store_folder_in_wal_mode(tmp_path, monkeypatch):
    monkeypatch.delenv("LAYERLAB_DB", raising=False)
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "store"))
    w = wdb.Workshop()
    assert w.url == f"sqlite:///{tmp_path / 'store' / 'workshop.sqlite'}"
    w.open_class("ABC")
    with sqlite3.connect(tmp_path / "store" / "workshop.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_layerlab_db_chooses_the_database(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_DB", f"sqlite:///{tmp_path / 'elsewhere.db'}")
    assert wdb.Workshop().url.endswith("elsewhere.db")
