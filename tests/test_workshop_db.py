"""Workshop predictions in a real database (lab/classroom/workshop_db.py): SQLite, and a real PostgreSQL server the test
starts. Every bad input is refused with a message and stores nothing; a repeat vote replaces; floods are bounded per
voter and per address; the lecturer key guards the tally, Reset and closing; terms and retention."""

import os
import sqlite3
import threading
from pathlib import Path

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
    w.key = w.open_class("TEST-1", now=1000.0).key  # the lecturer's key of TEST-1 (tests only)
    return w


def test_votes_count_per_option_and_a_repeat_replaces(db):
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    db.vote("test-1", "delete.plain1", OPTS, S2, OPTS[1], now=1002.0)  # codes are case-blind
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1002.0).counts == (1, 1, 0)
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[2], now=1003.0)  # S1 changes its mind
    t = db.tally("TEST-1", "delete.plain1", 3, db.key, now=1003.0)
    assert t.counts == (0, 1, 1) and t.total == 2
    assert db.mine("TEST-1", "delete.plain1", S1) == 2
    assert db.tally("TEST-1", "delete.res4", 3, db.key, now=1003.0).total == 0  # another question: its own tally


@pytest.mark.parametrize("code", ["ab", "x" * 25, "TEST 1", "TE;ST", "'; DROP TABLE x; --", "ТЕСТ-1", "", None,
                                  "TEST-1\n"])
def test_a_malformed_class_code_is_refused(db, code):
    with pytest.raises(wdb.Rejected, match="3 to 24 letters"):
        db.vote(code, "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)


def test_unknown_class_option_question_voter_or_client_store_nothing(db):
    cases = [("NOPE-9", "delete.plain1", S1, "c1", OPTS[0], "no class NOPE-9 is open"),
             ("TEST-1", "delete.plain1", S1, "c1", "something else", "not one of this question's options"),
             ("TEST-1", "Delete; plain1", S1, "c1", OPTS[0], "malformed question"),
             ("TEST-1", "delete.plain1", "short", "c1", OPTS[0], "malformed voter"),
             ("TEST-1", "delete.plain1", "x' OR '1'='1", "c1", OPTS[0], "malformed voter"),
             ("TEST-1", "delete.plain1", S1, "1.2.3.4", OPTS[0], "malformed client")]
    for code, question, voter, client, option, message in cases:
        with pytest.raises(wdb.Rejected, match=message):
            db.vote(code, question, OPTS, voter, option, client=client, now=1001.0)
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1001.0).total == 0
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(wdb.votes)).scalar_one() == 0


def test_the_key_is_random_shown_once_stored_hashed_and_guards_tally_reset_close(db):
    assert db.key and len(db.key) >= 24
    with db.engine.connect() as conn:
        stored = conn.execute(sa.select(wdb.classes.c.key_hash).where(wdb.classes.c.code == "TEST-1")).scalar_one()
    assert stored != db.key and db.key not in stored and stored == wdb.key_hash(db.key)
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    for wrong in (None, "", "not-the-key", db.key[:-1], db.key + "x"):
        with pytest.raises(wdb.NotLecturer):
            db.tally("TEST-1", "delete.plain1", 3, wrong, now=1002.0)
        with pytest.raises(wdb.NotLecturer):
            db.reset("TEST-1", "delete.plain1", wrong, now=1002.0)
        with pytest.raises(wdb.NotLecturer):
            db.close_class("TEST-1", wrong, now=1002.0)
        with pytest.raises(wdb.NotLecturer, match="already open"):  # nor can anyone present (or keep) it
            db.open_class("TEST-1", wrong, now=1002.0)
        assert not db.is_lecturer("TEST-1", wrong, now=1002.0)
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1002.0).total == 1  # nothing was reset
    again = db.open_class("TEST-1", db.key, now=1002.0)  # the lecturer's own link: the same term, no new key
    assert again.key is None and again.term == 1 and db.is_lecturer("TEST-1", db.key, now=1002.0)


def test_a_closed_or_expired_code_starts_a_new_term_with_an_empty_tally_and_a_new_key(db):
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    db.close_class("TEST-1", db.key, now=1002.0)
    with pytest.raises(wdb.Rejected, match="no class TEST-1 is open"):
        db.vote("TEST-1", "delete.plain1", OPTS, S2, OPTS[0], now=1003.0)
    term2 = db.open_class("TEST-1", now=1004.0)  # next term: anyone may open a code that is not open
    assert term2.term == 2 and term2.key and term2.key != db.key
    assert not db.is_lecturer("TEST-1", db.key, now=1005.0)  # last term's key is worth nothing now
    assert db.tally("TEST-1", "delete.plain1", 3, term2.key, now=1005.0).total == 0
    later = 1004.0 + wdb.CLASS_DAYS * 86400 + 1  # the term ran out
    with pytest.raises(wdb.Rejected, match="no class"):
        db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=later)
    assert db.open_class("TEST-1", now=later).key is not None


def test_old_classes_and_their_predictions_are_deleted_after_the_retention_period(db):
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    assert db.purge(now=1000.0 + wdb.CLASS_DAYS * 86400 - 10) == 0
    assert db.purge(now=1000.0 + wdb.CLASS_DAYS * 86400 + 10) == 1
    with db.engine.connect() as conn:
        for table in (wdb.classes, wdb.predictions, wdb.votes):
            assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 0


def test_a_flood_from_one_voter_is_bounded_then_forgiven(db):
    for i in range(wdb.VOTER_PER_MINUTE):
        db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[i % 3], now=1001.0 + i * 0.1)
    with pytest.raises(wdb.Flood, match="too many answers"):
        db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1003.0)
    assert db.mine("TEST-1", "delete.plain1", S1) == (wdb.VOTER_PER_MINUTE - 1) % 3  # the refused vote stored nothing
    db.vote("TEST-1", "delete.plain1", OPTS, S2, OPTS[0], now=1003.0)  # others are unaffected
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0 + wdb.WINDOW + 5)  # a minute later: fine
    assert db.mine("TEST-1", "delete.plain1", S1) == 0


def test_a_flood_from_one_address_fills_neither_a_question_nor_the_class(db, monkeypatch):
    monkeypatch.setattr(wdb, "CLIENT_VOTERS", 5)
    for i in range(5):  # one address, many fresh voter ids (cookies thrown away): bounded per question
        db.vote("TEST-1", "delete.plain1", OPTS, f"bot-{i:08d}", OPTS[0], client="mallory", now=1001.0)
    with pytest.raises(wdb.Flood, match="5 predictions from your network"):
        db.vote("TEST-1", "delete.plain1", OPTS, "bot-99999999", OPTS[0], client="mallory", now=1001.5)
    db.vote("TEST-1", "delete.plain1", OPTS, "bot-00000000", OPTS[1], client="mallory", now=1002.0)  # may change
    monkeypatch.setattr(wdb, "CLIENT_PER_MINUTE", 8)
    for i in range(2):
        db.vote("TEST-1", "delete.res4", OPTS, f"bot-{i:08d}", OPTS[0], client="mallory", now=1002.0)
    with pytest.raises(wdb.Flood, match="from your network in a minute"):
        db.vote("TEST-1", "delete.res4", OPTS, "bot-77777777", OPTS[0], client="mallory", now=1002.0)
    # the real students of the class, on their own addresses, are not blocked by any of it
    for i in range(7):
        db.vote("TEST-1", "delete.plain1", OPTS, f"student-{i:04d}", OPTS[2], client=f"room{i}", now=1002.0)
        db.vote("TEST-1", "delete.res4", OPTS, f"student-{i:04d}", OPTS[2], client=f"room{i}", now=1002.0)
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1003.0).counts == (4, 1, 7)
    assert db.tally("TEST-1", "delete.res4", 3, db.key, now=1003.0).counts == (2, 0, 7)


def test_reset_forgets_one_question_of_one_class(db):
    other = db.open_class("OTHER-2", now=1000.0).key
    db.vote("TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    db.vote("TEST-1", "delete.res4", OPTS, S1, OPTS[0], now=1001.0)
    db.vote("OTHER-2", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    assert db.reset("TEST-1", "delete.plain1", db.key, now=1002.0) == 1
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1002.0).total == 0
    assert db.tally("TEST-1", "delete.res4", 3, db.key, now=1002.0).total == 1
    assert db.tally("OTHER-2", "delete.plain1", 3, other, now=1002.0).total == 1
    with pytest.raises(wdb.NotLecturer):  # one class's key is not another's
        db.reset("OTHER-2", "delete.plain1", db.key, now=1002.0)


def test_signed_voter_ids_survive_and_forgeries_do_not(db):
    signed = db.sign_voter(S1)
    assert db.voter_of(signed) == S1
    assert wdb.Workshop(db.url).voter_of(signed) == S1  # another server of the same database agrees
    for bad in (None, "", S1, S1 + ".", signed + "x", S2 + signed[len(S1):], "a.b.c", "<script>.x"):
        assert db.voter_of(bad) is None, bad


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
    assert db.tally("TEST-1", "delete.plain1", 2, db.key, now=1002.0).counts == (6, 6)


def test_the_per_address_bound_holds_under_concurrent_writers(db, monkeypatch):
    """Writers on separate connections (as separate servers are): the count-then-insert must not let two of them
    both pass the last free place."""
    monkeypatch.setattr(wdb, "CLIENT_VOTERS", 5)
    others = [wdb.Workshop.__new__(wdb.Workshop) for _ in range(2)]
    for w in others:
        w.url, w._secret = db.url, None
        w.engine = sa.create_engine(db.url, poolclass=sa.pool.NullPool) if "postgresql" in db.url else db.engine
    results: list[str] = []

    def voter(i: int) -> None:
        try:
            others[i % 2].vote("TEST-1", "delete.plain1", OPTS, f"bot-{i:08d}", OPTS[0], client="mallory",
                               now=1001.0)
            results.append("ok")
        except wdb.Flood:
            results.append("flood")

    threads = [threading.Thread(target=voter, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("ok") == 5 and results.count("flood") == 11
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1002.0).total == 5


SCHEMA_RACE = """
import sys
from lab.classroom import workshop_db as wdb
w = wdb.Workshop(sys.argv[1])
w.open_class(sys.argv[2])
"""


def test_six_processes_opening_a_fresh_sqlite_database_at_once_all_succeed(tmp_path):
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[1])
    for round_ in range(3):
        url = f"sqlite:///{tmp_path / f'fresh{round_}.sqlite'}"
        procs = [subprocess.Popen([sys.executable, "-c", SCHEMA_RACE, url, f"RACE-{i}"], cwd=root,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(6)]
        outcomes = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        assert all(rc == 0 for rc, _ in outcomes), [err[-400:] for rc, err in outcomes if rc]
        assert all(wdb.Workshop(url).is_open(f"RACE-{i}") for i in range(6))


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
