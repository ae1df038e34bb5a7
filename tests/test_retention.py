"""Issue 45, item 7: retention runs on a timer (lab/classroom/retention.py): a 40-day-old class and its predictions are
deleted, and uploads no page used for LAYERLAB_UPLOAD_DAYS expire, without anyone opening a class."""

import os
import time

import pytest
import sqlalchemy as sa

from lab.classroom import class_tables, retention, uploads
from lab.classroom import workshop_db as wdb

OPTS = ("about chance", "well above chance", "cannot tell")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "store"))
    monkeypatch.delenv("LAYERLAB_DB", raising=False)
    monkeypatch.delenv("LAYERLAB_SECRET_FILE", raising=False)
    return tmp_path / "store"


def _count(w, table):
    with w.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


def _until(check, seconds=20.0):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the retention timer did not get there"
        time.sleep(0.05)


def test_the_timer_purges_a_40_day_old_class_without_any_class_being_opened(store):
    w = wdb.Workshop()
    recent = w.start_class(now=time.time() - 86400)  # yesterday's class stays
    long_ago = time.time() - 40 * 86400
    old = w.start_class(now=long_ago)  # (starting a class purges as of its own time: nothing, then)
    w.set_window(old.code, "delete.plain1", "open", old.key, now=long_ago)
    student = w.join(old.code, client="room", now=long_ago + 1)  # only a joined voter votes
    w.vote(old.code, "delete.plain1", OPTS, student, OPTS[0], client="room", now=long_ago + 1)
    assert _count(w, class_tables.classes) == 2 and _count(w, class_tables.predictions) == 1
    timer = retention.Retention(retention.tasks(), every=0.05).start()
    try:
        _until(lambda: timer.passes >= 2)
    finally:
        timer.stop()
    with w.engine.connect() as conn:
        codes = list(conn.execute(sa.select(class_tables.classes.c.code)).scalars())
    assert codes == [recent.code] and _count(w, class_tables.predictions) == 0


def test_the_timer_expires_unused_uploads_and_keeps_used_ones(store, monkeypatch):
    monkeypatch.setenv("LAYERLAB_UPLOAD_DAYS", "7")
    folder = store / uploads.DATA_DIR
    folder.mkdir(parents=True)
    stale, fresh = folder / ("a" * 64 + ".csv"), folder / ("b" * 64 + ".csv")
    for f in (stale, fresh):
        f.write_text("x,label\n")
    uploads.record(stale, "uploader-1", now=time.time() - 8 * 86400)
    uploads.record(fresh, "uploader-1", now=time.time() - 8 * 86400)
    uploads.used(fresh)  # a page showed it today
    timer = retention.Retention(retention.tasks(), every=0.05).start()
    try:
        _until(lambda: timer.passes >= 1)
    finally:
        timer.stop()
    assert not stale.exists() and fresh.exists()
    assert [m.name for m in (folder / uploads.OWNERS / "uploader-1").iterdir()] == ["b" * 64]


def test_a_server_that_never_held_a_class_gets_no_database_from_retention(store):
    timer = retention.Retention(retention.tasks(), every=60).start()
    try:
        _until(lambda: timer.passes >= 1)
    finally:
        timer.stop()
    assert not (store / "workshop.sqlite").exists()


def test_a_failing_pass_is_logged_and_the_next_one_still_runs(caplog):
    calls = []

    def broken():
        calls.append(1)
        raise OSError("the database is down")

    timer = retention.Retention([("classes", broken)], every=0.05).start()
    try:
        _until(lambda: len(calls) >= 2)
    finally:
        timer.stop()
    assert "classes could not be purged" in caplog.text


def test_the_server_starts_one_timer_per_process(store, monkeypatch):
    monkeypatch.setattr(retention, "_server", None)
    first = retention.start(every=3600)
    try:
        assert retention.start() is first and first._thread.daemon and first._thread.is_alive()
    finally:
        first.stop()
    assert os.path.basename(retention.__file__) == "retention.py"
