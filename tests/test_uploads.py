"""Issue 45, item 7: uploads are bounded per network address (at most LAYERLAB_UPLOAD_MB_PER_ADDRESS, never more than
half of what the others leave free), expire when unused (lab/classroom/uploads.py), and the server refuses what the
page refuses (server.maxUploadSize equals the page's limit, in .streamlit/config.toml and on `layerlab app`'s
command line)."""

import inspect
import math
import time
import tomllib
import types
from pathlib import Path

import pytest

from app import task_control
from lab.classroom import uploads
from lab.core import data_csv

ROOT = Path(__file__).resolve().parents[1]


def test_the_server_refuses_uploads_larger_than_the_page_does():
    assert uploads.MAX_MB == math.ceil(data_csv.MAX_BYTES / 2**20)  # Streamlit's megabytes are MiB
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == uploads.MAX_MB
    from app import serve

    flags = serve.config_flags()  # what `layerlab app` / `make app` pass, wherever they are started
    assert flags[flags.index("--server.maxUploadSize") + 1] == str(uploads.MAX_MB)
    assert "max_upload_size=uploads.MAX_MB" in inspect.getsource(task_control._upload)  # the browser's limit


def test_the_bookkeeping_agrees_with_the_csv_store():
    assert uploads.DATA_DIR == data_csv.DATA_DIR and uploads.STORE_BYTES == task_control.STORE_DATA_BYTES


def _csv(seed: int, rows: int) -> bytes:
    lines = ["a,b,c,label"] + [f"{(i * seed) % 997},{i % 13},{(i * 7 + seed) % 31},{i % 2}" for i in range(rows)]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "store"))
    monkeypatch.delenv("LAYERLAB_SECRET_FILE", raising=False)
    return tmp_path / "store"


def _upload(monkeypatch, address: str, data: bytes, state: dict) -> tuple:
    """The "Use this file" callback, as a session from `address` runs it."""
    fake = types.SimpleNamespace(session_state=state)
    state[task_control.FILE_KEY] = types.SimpleNamespace(getvalue=lambda: data, file_id=str(hash(data)), name="x.csv")
    state[task_control.LABEL_KEY] = ""
    monkeypatch.setattr(task_control, "st", fake)
    monkeypatch.setattr(task_control, "client_address", lambda: address)
    task_control._use_file(None)
    return state[task_control.UPLOAD_NOTE]


def test_one_address_keeps_its_share_and_another_still_uploads(store, monkeypatch):
    """Issue 45: 8 sessions of 5 uploads filled the server's space for everyone. Now one address (here 1 MB each,
    LAYERLAB_UPLOAD_MB_PER_ADDRESS) stops at its own bound, in every session of it."""
    monkeypatch.setenv("LAYERLAB_UPLOAD_MB_PER_ADDRESS", "1")
    files = [_csv(seed, 40_000) for seed in range(1, 9)]
    assert all(400_000 < len(f) < 500_000 for f in files)  # two fit in 1 MB, three do not
    notes = [_upload(monkeypatch, "198.51.100.7", f, {})[1] for f in files[:4]]  # four sessions, one address
    assert notes[:2] == ["success", "success"] and notes[2:] == ["error", "error"]
    kind, text = _upload(monkeypatch, "198.51.100.99", files[5], {})[1:]  # the same /24: the same network
    assert kind == "error" and "one network may keep 1 MB" in text
    assert _upload(monkeypatch, "203.0.113.5", files[6], {})[1] == "success"  # another network is not affected
    assert len(list((store / "data").glob("*.csv"))) == 3


def test_the_fair_share_leaves_room_for_a_newcomer():
    big = task_control.STORE_DATA_BYTES
    # one address may hold half of the space, a second half of what is left, ...
    assert task_control.refusal(0, 1_000, big // 2, held=big // 2) is not None
    assert task_control.refusal(0, 1_000, big // 2) is None  # a newcomer still gets in
    assert "its share of the space" in task_control.refusal(0, 2_000_000, int(big * 0.74), held=big // 4)
    assert "space for uploaded files is full" in task_control.refusal(0, 1_000, big)


def test_room_is_half_of_what_the_others_leave_free(store):
    folder = store / "data"
    folder.mkdir(parents=True)
    theirs = folder / ("c" * 64 + ".csv")
    theirs.write_bytes(b"x" * 600)
    uploads.record(theirs, "them")
    assert uploads.held(store, "them") == 600 and uploads.held(store, "me") == 0
    assert uploads.room(store, "me", per_address=10_000, store_bytes=1_000) == 200  # half of the 400 left
    assert uploads.room(store, "me", per_address=100, store_bytes=1_000) == 100  # the address's own bound
    assert uploads.room(store, "them", per_address=10_000, store_bytes=1_000) == 0  # holds more than half already


def test_a_csv_expires_when_no_page_used_it_and_a_use_restarts_its_clock(store):
    root = store
    name = data_csv.save_csv(root, _csv(3, 100))
    path = data_csv.find_csv(root, name)
    uploads.record(path, "someone", now=time.time() - 10 * 86400)
    assert uploads.expire(root, days=7, now=time.time() - 4 * 86400) == []  # six days unused: kept
    uploads._touched.clear()
    uploads.used(path)
    assert uploads.expire(root, days=7, now=time.time() + 6 * 86400) == []  # used today: kept six days on
    assert uploads.expire(root, days=7, now=time.time() + 8 * 86400) == [path.name]
    with pytest.raises(ValueError, match="upload the file again"):
        data_csv.find_csv(root, name)
    assert not (root / "data" / uploads.OWNERS / "someone").exists()
