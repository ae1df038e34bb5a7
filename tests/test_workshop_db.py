"""Workshop predictions in a real database (lab/classroom/workshop_db.py): SQLite, and a real PostgreSQL server the test
starts. Every bad input is refused with a message and stores nothing; a voter's first vote stands; floods are bounded
per voter and per address; codes and keys are handed out by the server, starting is bounded per address; the
lecturer key guards the tally, the voting window, Reset and closing; a closed class keeps its predictions until
retention."""

import os
import secrets
import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from lab.classroom import class_checks, class_engine, class_keys, class_tables, class_votes
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
        eng = class_engine.engine(url)
        with eng.begin() as conn:  # the server lives for the module: each test starts from empty tables
            for table in reversed(class_tables.meta.sorted_tables):
                conn.execute(sa.delete(table))
    w = wdb.Workshop(url)
    w.key = _started(w, "TEST-1", now=1000.0)  # the lecturer's key of TEST-1 (tests only)
    return w


def _started(w: wdb.Workshop, code: str, now: float, questions=("delete.plain1", "delete.res4")) -> str:
    """A class started as a lecturer starts one, then renamed to `code` so the tests below can name it (codes are
    handed out at random), with voting open on `questions`; its key."""
    opened = w.start_class(now=now)
    with w.engine.begin() as conn:
        conn.execute(sa.update(class_tables.classes).where(class_tables.classes.c.code == opened.code)
                     .values(code=code))
    for q in questions:
        w.set_window(code, q, "open", opened.key, now=now)
    return opened.key


def _vote(w: wdb.Workshop, code, question, options, voter, option, client="unknown", now=None) -> None:
    """A vote from a student who joined the class first, each from a join bucket of their own (the bounds on joining
    are tested at the end of this file; these tests are about votes)."""
    try:
        wdb.Workshop(w.url).join(code, client=f"join-{voter}"[:64], now=now, voter=voter)
    except wdb.Rejected:  # a closed class, a malformed voter: the vote itself says so
        pass
    w.vote(code, question, options, voter, option, client=client, now=now)


def test_votes_count_per_option_and_a_first_vote_stands(db):
    _vote(db, "TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    _vote(db, "test-1", "delete.plain1", OPTS, S2, OPTS[1], now=1002.0)  # codes are case-blind
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1002.0).counts == (1, 1, 0)
    # S1 saw the result right after voting (the page reveals it): changing the vote now is refused
    with pytest.raises(wdb.Counted, match="counted already, and it stands"):
        _vote(db, "TEST-1", "delete.plain1", OPTS, S1, OPTS[2], now=1003.0)
    t = db.tally("TEST-1", "delete.plain1", 3, db.key, now=1003.0)
    assert t.counts == (1, 1, 0) and t.total == 2
    assert db.mine("TEST-1", "delete.plain1", S1) == 0
    assert db.tally("TEST-1", "delete.res4", 3, db.key, now=1003.0).total == 0  # another question: its own tally


@pytest.mark.parametrize("code", ["ab", "x" * 25, "TEST 1", "TE;ST", "'; DROP TABLE x; --", "ТЕСТ-1", "", None,
                                  "TEST-1\n"])
def test_a_malformed_class_code_is_refused(db, code):
    with pytest.raises(wdb.Rejected, match="3 to 24 letters"):
        _vote(db, code, "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)


def test_unknown_class_option_question_voter_or_client_store_nothing(db):
    cases = [("NOPE-9", "delete.plain1", S1, "c1", OPTS[0], "no class NOPE-9 is open"),
             ("TEST-1", "delete.plain1", S1, "c1", "something else", "not one of this question's options"),
             ("TEST-1", "Delete; plain1", S1, "c1", OPTS[0], "malformed question"),
             ("TEST-1", "delete.plain1", "short", "c1", OPTS[0], "malformed voter"),
             ("TEST-1", "delete.plain1", "x' OR '1'='1", "c1", OPTS[0], "malformed voter"),
             ("TEST-1", "delete.plain1", S1, "1.2.3.4", OPTS[0], "malformed client")]
    for code, question, voter, client, option, message in cases:
        with pytest.raises(wdb.Rejected, match=message):
            _vote(db, code, question, OPTS, voter, option, client=client, now=1001.0)
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1001.0).total == 0
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(class_tables.votes)).scalar_one() == 0


def test_the_key_is_random_shown_once_stored_hashed_and_guards_tally_reset_close(db):
    assert db.key and len(db.key) >= 24
    with db.engine.connect() as conn:
        stored = conn.execute(sa.select(class_tables.classes.c.key_hash)
                              .where(class_tables.classes.c.code == "TEST-1")).scalar_one()
    assert stored != db.key and db.key not in stored and stored == class_keys.key_hash(db.key)
    _vote(db, "TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    for wrong in (None, "", "not-the-key", db.key[:-1], db.key + "x"):
        with pytest.raises(wdb.NotLecturer):
            db.tally("TEST-1", "delete.plain1", 3, wrong, now=1002.0)
        with pytest.raises(wdb.NotLecturer):
            db.reset("TEST-1", "delete.plain1", wrong, now=1002.0)
        with pytest.raises(wdb.NotLecturer):
            db.close_class("TEST-1", wrong, now=1002.0)
        with pytest.raises(wdb.NotLecturer):
            db.set_window("TEST-1", "delete.plain1", "closed", wrong, now=1002.0)
        with pytest.raises(wdb.NotLecturer):
            db.set_view("TEST-1", wrong, "delete", "student=1", now=1002.0)
        assert not db.is_lecturer("TEST-1", wrong, now=1002.0)  # nor can anyone present it
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1002.0).total == 1  # nothing was reset
    assert db.window("TEST-1", "delete.plain1") == "open" and db.is_open("TEST-1", now=1002.0)
    assert db.is_lecturer("TEST-1", db.key, now=1002.0)


def _kept(db: wdb.Workshop, code: str) -> int:
    with db.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(class_tables.predictions)
                            .where(class_tables.predictions.c.code == code)).scalar_one()


def test_a_closed_or_expired_class_stays_closed_and_keeps_its_predictions_until_retention(db):
    _vote(db, "TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    db.close_class("TEST-1", db.key, now=1002.0)
    with pytest.raises(wdb.Rejected, match="no class TEST-1 is open"):
        _vote(db, "TEST-1", "delete.plain1", OPTS, S2, OPTS[0], now=1003.0)
    assert not db.is_open("TEST-1", now=1003.0) and not db.is_lecturer("TEST-1", db.key, now=1003.0)
    assert not hasattr(db, "open_class")  # nothing opens a code someone names (it was how a code was squatted)
    for i in range(20):  # new classes never reuse the closed one's code, so nothing wipes its predictions
        assert db.start_class(client=f"lecturer{i}", now=1004.0).code != "TEST-1"
    assert _kept(db, "TEST-1") == 1 and db.view("TEST-1", now=1004.0) is None
    later = 1000.0 + class_keys.CLASS_DAYS * 86400 + 1  # retention: CLASS_DAYS after the class started
    db.purge(now=later - 2)
    assert _kept(db, "TEST-1") == 1
    db.purge(now=later)
    assert _kept(db, "TEST-1") == 0


def test_a_taken_code_is_never_handed_out_again(db, monkeypatch):
    draws = iter("ABCDEF" + "ABCDEF" + "GHJKMN")  # a code, then the same code drawn again, then a free one
    monkeypatch.setattr(secrets, "choice", lambda alphabet: next(draws))
    assert db.start_class(now=1001.0).code == "ABCDEF"
    assert db.start_class(now=1001.0).code == "GHJKMN"


def test_codes_are_short_unambiguous_and_keys_random(db):
    started = [db.start_class(client=f"room{i % 5}", now=1001.0) for i in range(25)]
    codes = {o.code for o in started}
    assert len(codes) == 25 and len({o.key for o in started}) == 25
    for o in started:
        assert len(o.code) == class_keys.CODE_LENGTH and set(o.code) <= set(class_keys.ALPHABET), o.code
        assert not set(o.code) & set("0O1lIL"), o.code
        assert class_checks.class_code(o.code.lower()) == o.code  # typed in lower case on a phone: the same class
        assert db.is_lecturer(o.code, o.key, now=1002.0) and len(o.key) >= 24
        assert db.window(o.code, "delete.plain1") == "waiting"  # nobody votes before the lecturer opens voting


def test_starting_classes_is_bounded_per_address(db, monkeypatch):
    monkeypatch.setenv("LAYERLAB_CLASSES_PER_HOUR", "3")
    for _ in range(3):
        db.start_class(client="mallory", now=2000.0)
    with pytest.raises(wdb.Flood, match="started 3 classes in the last hour"):
        db.start_class(client="mallory", now=2001.0)
    db.start_class(client="lecturer", now=2001.0)  # another address is not affected
    db.start_class(client="mallory", now=2000.0 + class_keys.START_WINDOW + 1)  # an hour later: fine again


def test_old_classes_and_their_predictions_are_deleted_after_the_retention_period(db):
    _vote(db, "TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    assert db.purge(now=1000.0 + class_keys.CLASS_DAYS * 86400 - 10) == 0
    assert db.purge(now=1000.0 + class_keys.CLASS_DAYS * 86400 + 10) == 1
    with db.engine.connect() as conn:
        for table in (class_tables.classes, class_tables.predictions, class_tables.votes, class_tables.windows,
                      class_tables.class_starts):
            assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 0


def test_a_flood_from_one_voter_is_bounded_then_forgiven(db):
    qs = [f"flood.q{i}" for i in range(class_votes.VOTER_PER_MINUTE + 2)]
    for q in qs:
        db.set_window("TEST-1", q, "open", db.key, now=1001.0)
    for i in range(class_votes.VOTER_PER_MINUTE):
        _vote(db, "TEST-1", qs[i], OPTS, S1, OPTS[i % 3], now=1001.0 + i * 0.1)
    with pytest.raises(wdb.Flood, match="too many answers"):
        _vote(db, "TEST-1", qs[-2], OPTS, S1, OPTS[0], now=1003.0)
    assert db.mine("TEST-1", qs[-2], S1) is None  # the refused vote stored nothing
    _vote(db, "TEST-1", qs[-2], OPTS, S2, OPTS[0], now=1003.0)  # others are unaffected
    _vote(db, "TEST-1", qs[-1], OPTS, S1, OPTS[0], now=1001.0 + class_checks.WINDOW + 5)  # a minute later: fine
    assert db.mine("TEST-1", qs[-1], S1) == 0


def test_a_flood_from_one_address_fills_neither_a_question_nor_the_class(db, monkeypatch):
    monkeypatch.setattr(db, "voters_per_address", 5)
    for i in range(5):  # one address, many fresh voter ids (cookies thrown away): bounded per question
        _vote(db, "TEST-1", "delete.plain1", OPTS, f"bot-{i:08d}", OPTS[0], client="mallory", now=1001.0)
    with pytest.raises(wdb.Flood, match="5 predictions from your network"):
        _vote(db, "TEST-1", "delete.plain1", OPTS, "bot-99999999", OPTS[0], client="mallory", now=1001.5)
    with pytest.raises(wdb.Counted):  # nor change a vote (refused votes count towards no bound)
        _vote(db, "TEST-1", "delete.plain1", OPTS, "bot-00000000", OPTS[1], client="mallory", now=1002.0)
    monkeypatch.setattr(db, "votes_per_address", 7)
    for i in range(2):
        _vote(db, "TEST-1", "delete.res4", OPTS, f"bot-{i:08d}", OPTS[0], client="mallory", now=1002.0)
    with pytest.raises(wdb.Flood, match="from your network in a minute"):
        _vote(db, "TEST-1", "delete.res4", OPTS, "bot-77777777", OPTS[0], client="mallory", now=1002.0)
    # the real students of the class, on their own addresses, are not blocked by any of it
    for i in range(7):
        _vote(db, "TEST-1", "delete.plain1", OPTS, f"student-{i:04d}", OPTS[2], client=f"room{i}", now=1002.0)
        _vote(db, "TEST-1", "delete.res4", OPTS, f"student-{i:04d}", OPTS[2], client=f"room{i}", now=1002.0)
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1003.0).counts == (5, 0, 7)
    assert db.tally("TEST-1", "delete.res4", 3, db.key, now=1003.0).counts == (2, 0, 7)


def test_votes_count_only_inside_the_voting_window_which_reveal_closes_for_good(db):
    q = "delete.window"
    with pytest.raises(wdb.NotVoting, match="has not opened yet") as why:
        _vote(db, "TEST-1", q, OPTS, S1, OPTS[0], now=1001.0)
    assert why.value.state == "waiting"
    assert db.set_window("TEST-1", q, "open", db.key, now=1001.0) == "open"
    _vote(db, "TEST-1", q, OPTS, S1, OPTS[0], now=1002.0)
    db.set_window("TEST-1", q, "closed", db.key, now=1003.0)
    with pytest.raises(wdb.NotVoting, match="is closed"):
        _vote(db, "TEST-1", q, OPTS, S2, OPTS[1], now=1004.0)
    db.set_window("TEST-1", q, "open", db.key, now=1005.0)  # the lecturer gives the room another minute
    _vote(db, "TEST-1", q, OPTS, S2, OPTS[1], now=1006.0)
    db.set_window("TEST-1", q, "revealed", db.key, now=1007.0)
    for voter in (S1, "late-comer-0000"):  # neither a change nor a new vote once the room saw the answer
        with pytest.raises(wdb.NotVoting, match="revealed the answer"):
            _vote(db, "TEST-1", q, OPTS, voter, OPTS[2], now=1008.0)
    for state in ("open", "closed"):
        with pytest.raises(wdb.Rejected, match="Reset the question"):
            db.set_window("TEST-1", q, state, db.key, now=1009.0)
    with pytest.raises(wdb.Rejected, match="open, closed or revealed"):
        db.set_window("TEST-1", q, "waiting", db.key, now=1009.0)
    assert db.tally("TEST-1", q, 3, db.key, now=1009.0).counts == (1, 1, 0)
    assert db.window("TEST-1", q) == "revealed"
    with db.engine.connect() as conn:  # refused votes left no trace
        assert conn.execute(sa.select(sa.func.count()).select_from(class_tables.votes)).scalar_one() == 2


def test_the_class_view_is_set_by_its_lecturer_and_read_by_anyone_while_the_class_is_open(db):
    assert db.view("TEST-1", now=1001.0) is None
    db.set_view("TEST-1", db.key, "delete", "k=1&student=1&workshop=1&class=TEST-1", now=1001.0)
    db.set_view("TEST-1", db.key, "shuffle", "student=1&workshop=1&class=TEST-1", now=1002.0)
    assert db.view("test-1", now=1003.0) == ("shuffle", "student=1&workshop=1&class=TEST-1")
    for page, query in (("../etc", "x=1"), ("delete", "x" * (class_tables.VIEW_QUERY_CHARS + 1)), ("delete", "a\nb")):
        with pytest.raises(wdb.Rejected, match="malformed"):
            db.set_view("TEST-1", db.key, page, query, now=1003.0)
    db.close_class("TEST-1", db.key, now=1004.0)
    assert db.view("TEST-1", now=1005.0) is None


def test_reset_forgets_one_question_of_one_class(db):
    other = _started(db, "OTHER-2", now=1000.0)
    _vote(db, "TEST-1", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    _vote(db, "TEST-1", "delete.res4", OPTS, S1, OPTS[0], now=1001.0)
    _vote(db, "OTHER-2", "delete.plain1", OPTS, S1, OPTS[0], now=1001.0)
    db.set_window("TEST-1", "delete.plain1", "revealed", db.key, now=1001.5)
    assert db.reset("TEST-1", "delete.plain1", db.key, now=1002.0) == 1
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1002.0).total == 0
    assert db.window("TEST-1", "delete.plain1") == "waiting"  # asked afresh: the lecturer opens voting again
    assert db.window("TEST-1", "delete.res4") == "open" and db.window("OTHER-2", "delete.plain1") == "open"
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
            _vote(db, "TEST-1", "delete.plain1", OPTS, f"session-{i:08d}", OPTS[i % 2], now=1001.0)
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
    others = [wdb.Workshop.__new__(wdb.Workshop) for _ in range(2)]
    for w in others:
        w.url, w._secret = db.url, None
        w.voters_per_address, w.votes_per_address = 5, db.votes_per_address
        w.engine = sa.create_engine(db.url, poolclass=sa.pool.NullPool) if "postgresql" in db.url else db.engine
    results: list[str] = []

    def voter(i: int) -> None:
        try:
            _vote(others[i % 2], "TEST-1", "delete.plain1", OPTS, f"bot-{i:08d}", OPTS[0], client="mallory",
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


def test_a_hall_behind_one_nat_is_all_counted_while_a_flood_from_another_address_is_bounded(db, monkeypatch):
    """Issue 45: 300 voters from one address were all counted, then 5 real students from it were refused. The
    per-address bounds are server settings sized for a hall (LAYERLAB_VOTERS_PER_ADDRESS,
    LAYERLAB_VOTES_PER_ADDRESS); here a hall of 320 votes within one minute from one address."""
    hall = wdb.Workshop(db.url)  # the defaults, as a server reads them
    assert hall.voters_per_address >= 320 and hall.votes_per_address >= 320
    for i in range(320):
        _vote(hall, "TEST-1", "delete.plain1", OPTS, f"student-{i:04d}", OPTS[i % 3], client="lecture-hall",
                  now=1001.0 + i * 0.1)
    assert hall.tally("TEST-1", "delete.plain1", 3, db.key, now=1040.0).total == 320
    monkeypatch.setenv("LAYERLAB_VOTERS_PER_ADDRESS", "400")  # a course that sized its halls at 400
    bounded = wdb.Workshop(db.url)
    for i in range(400):  # a script inventing voters from another address: bounded, as any one address is
        _vote(bounded, "TEST-1", "delete.res4", OPTS, f"bot-{i:08d}", OPTS[0], client="mallory", now=1001.0 + i * 0.1)
    with pytest.raises(wdb.Flood, match="400 predictions from your network"):
        _vote(bounded, "TEST-1", "delete.res4", OPTS, "bot-99999999", OPTS[0], client="mallory", now=1042.0)
    _vote(bounded, "TEST-1", "delete.res4", OPTS, "student-0000", OPTS[2], client="lecture-hall", now=1042.0)
    assert bounded.tally("TEST-1", "delete.res4", 3, db.key, now=1043.0).counts == (400, 0, 1)


def test_retention_finds_old_classes_by_an_index_on_the_opening_time(db):
    indexes = sa.inspect(db.engine).get_indexes(class_tables.classes.name)
    assert any(ix["column_names"] == ["opened"] for ix in indexes), indexes


SCHEMA_RACE = """
import sys
from lab.classroom import workshop_db as wdb
w = wdb.Workshop(sys.argv[1])
print(w.start_class(client=sys.argv[2]).code)
"""


def test_six_processes_opening_a_fresh_sqlite_database_at_once_all_succeed(tmp_path):
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[1])
    for round_ in range(3):
        url = f"sqlite:///{tmp_path / f'fresh{round_}.sqlite'}"
        procs = [subprocess.Popen([sys.executable, "-c", SCHEMA_RACE, url, f"RACE-{i}"], cwd=root,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(6)]
        outcomes = [(p.wait(timeout=120), p.stderr.read(), p.stdout.read().strip()) for p in procs]
        assert all(rc == 0 for rc, _, _ in outcomes), [err[-400:] for rc, err, _ in outcomes if rc]
        codes = {code for _, _, code in outcomes}
        assert len(codes) == 6 and all(wdb.Workshop(url).is_open(code) for code in codes)


def test_sqlite_is_a_file_in_the_store_folder_in_wal_mode(tmp_path, monkeypatch):
    monkeypatch.delenv("LAYERLAB_DB", raising=False)
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "store"))
    w = wdb.Workshop()
    assert w.url == f"sqlite:///{tmp_path / 'store' / 'workshop.sqlite'}"
    w.start_class()
    with sqlite3.connect(tmp_path / "store" / "workshop.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_layerlab_db_chooses_the_database(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_DB", f"sqlite:///{tmp_path / 'elsewhere.db'}")
    assert wdb.Workshop().url.endswith("elsewhere.db")


# -- a voter costs a join (issue 60, item 2) -------------------------------------------------------------------------
def test_votes_count_only_from_identities_the_server_issued_at_a_join(db):
    """Issue 60: every session without a cookie was a new voter. Now a vote needs an identity `join` issued for
    that class; a made-up id (or one joined to another class) is refused and stores nothing."""
    with pytest.raises(wdb.NotJoined, match="has not joined class TEST-1"):
        db.vote("TEST-1", "delete.plain1", OPTS, "made-up-00000000", OPTS[0], client="nat", now=1001.0)
    other = _started(db, "OTHER-2", now=1000.0)
    elsewhere = db.join("OTHER-2", client="nat", now=1001.0)
    with pytest.raises(wdb.NotJoined):
        db.vote("TEST-1", "delete.plain1", OPTS, elsewhere, OPTS[0], client="nat", now=1001.0)
    mine = db.join("TEST-1", client="nat", now=1001.0)
    assert class_checks.TOKEN.fullmatch(mine) and mine != elsewhere and db.is_joined("TEST-1", mine)
    assert not db.is_joined("TEST-1", elsewhere) and not db.is_joined("TEST-1", "made-up-00000000")
    db.vote("TEST-1", "delete.plain1", OPTS, mine, OPTS[0], client="nat", now=1002.0)
    assert db.tally("TEST-1", "delete.plain1", 3, db.key, now=1003.0).counts == (1, 0, 0)
    assert db.tally("OTHER-2", "delete.plain1", 3, other, now=1003.0).total == 0
    assert db.join("TEST-1", client="nat", now=1004.0, voter=mine) == mine  # a known identity costs no new join
    db.close_class("TEST-1", db.key, now=1005.0)
    with pytest.raises(wdb.Rejected, match="no class TEST-1 is open"):
        db.join("TEST-1", client="nat", now=1006.0)


def test_joining_is_a_token_bucket_per_address_that_a_script_cannot_outrun(db, monkeypatch):
    """Issue 60: with the per-address bound at 5, 5 of 7 scripted sessions counted and then a real student behind the
    same address was refused. Now each voter costs a join from a bucket per address and class (burst 5, 6 a
    minute here): the script gets the burst and then one join every 10 s, never more, and a student behind that
    address waits at most the refill's 10 s, while another address is untouched."""
    monkeypatch.setenv("LAYERLAB_JOIN_BURST", "5")
    monkeypatch.setenv("LAYERLAB_JOINS_PER_MINUTE", "6")
    w = wdb.Workshop(db.url)
    got, refused = [], []
    for _ in range(7):  # seven scripted fresh sessions at once
        try:
            got.append(w.join("TEST-1", client="nat", now=1001.0))
        except wdb.Flood as why:
            refused.append(str(why))
    assert len(got) == 5 and len(set(got)) == 5 and len(refused) == 2
    assert "try again in 10 s" in refused[0]
    w.join("TEST-1", client="elsewhere", now=1001.0)  # another address has a bucket of its own
    with pytest.raises(wdb.Flood):
        w.join("TEST-1", client="nat", now=1009.0)  # 8 s later: not yet a whole join
    student = w.join("TEST-1", client="nat", now=1011.0)  # 10 s: the real student is in
    w.vote("TEST-1", "delete.plain1", OPTS, student, OPTS[1], client="nat", now=1012.0)
    minute = [w.join("TEST-1", client="nat", now=1011.0 + 10 * k) for k in range(1, 7)]  # then 6 a minute, no more
    with pytest.raises(wdb.Flood):
        w.join("TEST-1", client="nat", now=1071.0)
    assert len(minute) == 6


def test_a_hall_of_300_behind_one_address_joins_at_once_and_all_vote(db):
    hall = wdb.Workshop(db.url)  # the server's defaults: a hall of 300 behind one NAT joins at once
    assert hall.join_burst >= 300
    voters = [hall.join("TEST-1", client="lecture-hall", now=1001.0 + i * 0.01) for i in range(300)]
    for i, v in enumerate(voters):
        hall.vote("TEST-1", "delete.plain1", OPTS, v, OPTS[i % 3], client="lecture-hall", now=1010.0 + i * 0.01)
    assert hall.tally("TEST-1", "delete.plain1", 3, db.key, now=1020.0).total == 300


# -- guesses of class codes and keys (issue 60, item 5) ----------------------------------------------------------------
def test_wrong_codes_are_bounded_per_address_right_ones_never_count_and_closed_reads_as_unknown(db, monkeypatch):
    """Issue 60: 327 class codes were tried in 20 s from one socket. Failures count per address: after 5 (here) in
    a minute the address's next look-ups are refused unread, right code or not, until the minute is out; a hall
    finding the right code 300 times never counts; a closed class and an unknown code answer alike."""
    monkeypatch.setenv("LAYERLAB_WRONG_PER_ADDRESS", "5")
    w = wdb.Workshop(db.url)
    for _ in range(300):
        assert w.find("test-1", client="hall", now=1001.0)
    key = _started(w, "GONE-5", now=1000.0)
    w.close_class("GONE-5", key, now=1000.5)
    assert w.find("GONE-5", client="probe", now=1001.0) is w.find("NEVER-9", client="probe", now=1001.0) is False
    for i in range(5):
        assert not w.find(f"GUESS-{i}", client="mallory", now=1000.0 + i / 2)
    with pytest.raises(wdb.Flood, match="too many wrong class codes from your network"):
        w.find("TEST-1", client="mallory", now=1005.0)  # the bound reached: refused unread, even a right code
    assert w.find("TEST-1", client="hall", now=1005.0)  # another address is untouched
    assert w.find("TEST-1", client="mallory", now=1001.0 + class_checks.WINDOW + 1)  # a minute on: failures gone


def test_wrong_lecturer_keys_are_bounded_per_address(db, monkeypatch):
    """Issue 60: 291 lecturer keys were tried in 20 s from one socket. A wrong key counts against the address; at
    the bound every try is refused unread (the right key too) until the minute is out; right keys never count."""
    monkeypatch.setenv("LAYERLAB_WRONG_PER_ADDRESS", "5")
    w = wdb.Workshop(db.url)
    for _ in range(50):
        assert w.check_key("TEST-1", db.key, client="lecturer", now=1001.0)
    for i in range(5):
        assert not w.check_key("TEST-1", f"guess-{i:020d}", client="mallory", now=1001.0 + i)
    with pytest.raises(wdb.Flood, match="too many wrong lecturer keys"):
        w.check_key("TEST-1", db.key, client="mallory", now=1006.0)
    assert w.check_key("TEST-1", db.key, client="lecturer", now=1006.0)
    assert not w.find("NOPE-1", client="mallory", now=1006.0)  # codes and keys are counted apart
    assert w.check_key("TEST-1", db.key, client="mallory", now=1001.0 + class_checks.WINDOW + 5)
