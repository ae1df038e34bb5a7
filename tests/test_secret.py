"""Issue 45, item 6: the secret that signs voter cookies and keys address hashes lives outside the database, in a
0600 file; SQLite's files are 0600; keys are per class; addresses are truncated before they are hashed; the voter
cookie is Secure over https."""

import os
import sqlite3
import stat
import types

import pytest
import sqlalchemy as sa

from lab.classroom import class_checks, class_engine, class_tables
from lab.classroom import workshop_db as wdb
from lab.runtime import secret

S1 = "session-aaaaaaaa"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "store"))
    monkeypatch.delenv("LAYERLAB_DB", raising=False)
    monkeypatch.delenv("LAYERLAB_SECRET_FILE", raising=False)
    return tmp_path / "store"


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_the_secret_is_a_private_file_in_the_store_folder_and_not_in_the_database(store):
    w = wdb.Workshop()
    w.start_class()
    signed = w.sign_voter(S1, "ABC")
    master = w.secret()
    path = store / secret.NAME
    assert path.read_text().strip().encode() == master and len(master) >= 64
    assert _mode(path) == 0o600
    db = store / "workshop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        cells = [str(v) for t in tables for row in conn.execute(f'SELECT * FROM "{t}"') for v in row]
    assert class_tables.OLD_SECRETS not in tables
    assert not any(master.decode() in c for c in cells)
    for f in store.glob("workshop.sqlite*"):
        assert master not in f.read_bytes(), f
    assert wdb.Workshop(w.url).voter_of(signed, "ABC") == S1  # another server of the same store agrees


def test_sqlite_files_are_readable_by_the_server_user_only(store):
    old = os.umask(0o022)  # the usual umask: files are 0644 unless the lab says otherwise
    try:
        w = wdb.Workshop()
        w.start_class()
    finally:
        os.umask(old)
    files = sorted(store.glob("workshop.sqlite*"))
    assert {f.name for f in files} >= {"workshop.sqlite", "workshop.sqlite-wal", "workshop.sqlite-shm"}
    assert all(_mode(f) == 0o600 for f in files), [(f.name, oct(_mode(f))) for f in files]


def test_a_database_made_before_loses_its_secret_table_and_its_loose_mode(tmp_path):
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE lab_secrets (name VARCHAR(32) PRIMARY KEY, value VARCHAR(128) NOT NULL)")
        conn.execute("INSERT INTO lab_secrets VALUES ('voter', 'an-old-secret-beside-its-hashes')")
    os.chmod(db, 0o644)
    wdb.Workshop(f"sqlite:///{db}")
    assert _mode(db) == 0o600
    assert not sa.inspect(class_engine.engine(f"sqlite:///{db}")).has_table(class_tables.OLD_SECRETS)


def test_the_secret_file_setting_and_a_loose_file_tightened(tmp_path, monkeypatch, caplog):
    path = tmp_path / "course" / "lab.secret"
    monkeypatch.setenv("LAYERLAB_SECRET_FILE", str(path))
    first = secret.master()
    assert path.is_file() and _mode(path) == 0o600 and secret.master() == first
    os.chmod(path, 0o644)
    assert secret.master() == first and _mode(path) == 0o600
    assert "readable by other users" in caplog.text
    path.write_text("short\n")
    with pytest.raises(ValueError, match="fewer than 32 characters"):
        secret.master()


def test_each_class_signs_and_hashes_with_a_key_of_its_own(store):
    w = wdb.Workshop()
    signed = w.sign_voter(S1, "CLASS-A")
    assert w.voter_of(signed, "CLASS-A") == S1
    assert w.voter_of(signed, "CLASS-B") is None  # a cookie of one class is worth nothing in the next
    assert w.sign_voter(S1, "CLASS-B") != signed
    assert w.client_id("192.0.2.1", "CLASS-A") != w.client_id("192.0.2.1", "CLASS-B")


def test_addresses_are_hashed_by_their_24_or_48(store):
    w = wdb.Workshop()
    same = {w.client_id(f"192.0.2.{i}", "CLASS-A") for i in range(256)}
    assert len(same) == 1  # a /24 is one id: a hash names a network, never one person's address
    assert w.client_id("192.0.3.1", "CLASS-A") not in same
    v6 = {w.client_id(f"2001:db8:1:{i:x}::1", "CLASS-A") for i in range(50)}
    assert len(v6) == 1 and w.client_id("2001:db8:2::1", "CLASS-A") not in v6
    assert class_checks.CLIENT.fullmatch(w.client_id("192.0.2.1"))  # what a vote stores passes the database's own check


def test_the_voter_cookie_is_secure_over_https_only(store, monkeypatch):
    from app import cookies, voters

    written = []
    for url, secure in (("https://lab.example.edu/delete", True), ("http://127.0.0.1:8501/delete", False)):
        fake = types.SimpleNamespace(
            session_state={voters.VOTER_KEY: {"CLASS-A": "voter-aaaaaaaa"}},  # a browser that joined CLASS-A
            context=types.SimpleNamespace(cookies={}, url=url),
            html=lambda body, **kw: written.append(body))
        monkeypatch.setattr(voters, "st", fake)
        monkeypatch.setattr(cookies, "st", fake)  # the cookie's script reads the page's address (https or not)
        monkeypatch.setattr(voters, "database", lambda: wdb.Workshop())
        voters.keep_voter("CLASS-A")
        script = written[-1]
        assert f"{voters.COOKIE}CLASS-A=" in script and "SameSite=Strict" in script
        assert ("; Secure" in script) is secure, script
