"""Issue 60, item 1: an upload is checked in linear time, off the page's script thread and within a time bound, and a
refused file counts against the session's and the address's upload bounds. (The CPU-seconds per check, old against
new, are bench/bench_upload_check.py's.)"""

import csv
import threading
import types

import numpy as np
import pytest

from app import task_control
from lab.classroom import uploads
from lab.core import data_csv
from lab.runtime import bounded


def hostile(size: int, pattern: str = ', "a') -> bytes:
    """Quote and delimiter soup: csv.Sniffer's regular expression takes time quadratic in it."""
    return (pattern * (size // len(pattern) + 1))[:size].encode()


class NoSniffer:
    """csv.Sniffer in a test: its regular expression backtracks, so it must never see what a user sent."""

    def __init__(self) -> None:
        raise AssertionError("csv.Sniffer ran on user text")


@pytest.mark.parametrize("pattern", [', "a', ',"', ';"a', "\t'a"])
def test_hostile_text_is_refused_with_one_line_and_never_reaches_the_sniffer(monkeypatch, pattern):
    monkeypatch.setattr(csv, "Sniffer", NoSniffer)
    with pytest.raises(ValueError) as e:
        data_csv.read_csv(hostile(64 * 1024, pattern))
    assert "\n" not in str(e.value) and str(e.value).startswith("This ")  # one line, the check's own message
    good = b"a;b;label\n" + b"".join(f"{i},5;{i % 7};{i % 2}\n".encode() for i in range(40))
    assert data_csv.read_csv(good).features == ("a", "b")  # the semicolon file with decimal commas still reads


def _ordinary() -> dict[str, str]:
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(30, 3))
    return {
        "comma": "a,b,c,label\n" + "".join(f"{x:.3f},{y:.3f},{z:.3f},k{i % 3}\n" for i, (x, y, z) in enumerate(rows)),
        "semicolon, decimal comma": "a;b;label\n" + "".join(f"{x:.2f};{y:.2f};{i % 2}\n".replace(".", ",")
                                                            for i, (x, y, _) in enumerate(rows)),
        "tab": "a\tb\tlabel\n" + "".join(f"{x:.3f}\t{y:.3f}\tc{i % 2}\n" for i, (x, y, _) in enumerate(rows)),
        "quoted commas": 'name,v,label\n' + "".join(f'"Smith, J{i}",{x:.2f},{i % 2}\n' for i, (x, _, _) in
                                                    enumerate(rows)),
        "no header, CRLF": "".join(f"{x:.3f},{y:.3f},{i % 2}\r\n" for i, (x, y, _) in enumerate(rows)),
        "semicolons in a quoted text": 'a,b,label\n' + "".join(f'{x:.2f},"x; y; z",{i % 2}\n'
                                                               for i, (x, _, _) in enumerate(rows)),
    }


@pytest.mark.parametrize("kind", list(_ordinary()))
def test_the_delimiter_is_the_one_csv_sniffer_finds_in_ordinary_tables(kind):
    text = _ordinary()[kind]
    assert data_csv._delimiter(text) == csv.Sniffer().sniff(text, delimiters=",;\t").delimiter


def test_a_bounded_call_that_runs_over_is_refused_and_stops_at_its_next_check():
    stopped = threading.Event()

    def loop() -> None:
        try:
            while True:
                bounded.check()
        except bounded.Overdue:
            stopped.set()
            raise

    with pytest.raises(bounded.Overdue, match="too slow"):
        bounded.run(loop, seconds=0.05, what="too slow")
    assert stopped.wait(60)  # the abandoned call ended itself (it would spin on otherwise)
    assert bounded.run(lambda a, b: a + b, 2, 3, seconds=60, what="-") == 5
    bounded.check()  # outside a bounded call: nothing
    with pytest.raises(ZeroDivisionError):  # the call's own exception comes back as it is
        bounded.run(lambda: 1 / 0, seconds=60, what="-")


# -- the page's callback --------------------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "store"))
    monkeypatch.delenv("LAYERLAB_SECRET_FILE", raising=False)
    monkeypatch.setattr(uploads, "_refused", {}, raising=False)
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


def _counted(monkeypatch) -> list[int]:
    """The threads data_csv.read_csv runs on, one per parse."""
    threads: list[int] = []
    real = data_csv.read_csv

    def read(*a, **kw):
        threads.append(threading.get_ident())
        return real(*a, **kw)

    monkeypatch.setattr(data_csv, "read_csv", read)
    return threads


def _good(rows: int = 40) -> bytes:
    return ("a,b,label\n" + "".join(f"{i % 17},{i % 5},{i % 2}\n" for i in range(rows))).encode()


def test_the_check_runs_off_the_script_thread_and_one_that_runs_over_is_refused(store, monkeypatch):
    threads = _counted(monkeypatch)
    assert _upload(monkeypatch, "198.51.100.7", _good(), {})[1] == "success"
    assert threads and threading.get_ident() not in threads  # parsed on a worker, not on the page's thread
    release = threading.Event()
    monkeypatch.setattr(data_csv, "save_csv", lambda *a: release.wait(60) and "csv:never")
    monkeypatch.setattr(task_control, "CHECK_SECONDS", 0.05)
    try:
        kind, text = _upload(monkeypatch, "198.51.100.7", _good(41), {})[1:]
    finally:
        release.set()
    assert kind == "error" and text == task_control.OVERDUE and "took longer than" in text


def test_a_refused_file_counts_against_the_session_and_is_not_checked_again_and_again(store, monkeypatch):
    threads = _counted(monkeypatch)
    bad, state = hostile(64 * 1024), {}
    notes = [_upload(monkeypatch, "198.51.100.7", bad, state)[1:] for _ in range(task_control.UPLOADS_PER_SESSION + 3)]
    checked = task_control.UPLOADS_PER_SESSION
    assert len(threads) == checked  # the presses after the bound are answered without a parse
    with pytest.raises(ValueError) as own:
        data_csv.read_csv(bad)
    assert notes[:checked] == [("error", str(own.value))] * checked  # the file's own message, each time
    assert all(kind == "error" and "files already" in text for kind, text in notes[checked:])


def test_refused_files_count_against_the_address_in_every_session_of_it(store, monkeypatch):
    monkeypatch.setenv("LAYERLAB_UPLOAD_MB_PER_ADDRESS", "1")
    threads = _counted(monkeypatch)
    one_class = ("a,b,label\n" + "1,2,x\n" * 45_000).encode()  # 270 kB, refused: a single class
    assert 250_000 < len(one_class) < 333_000  # three fit in 1 MB, four do not
    notes = [_upload(monkeypatch, "198.51.100.7", one_class, {})[1:] for _ in range(6)]  # six fresh sessions
    assert [k for k, _ in notes] == ["error"] * 6 and len(threads) == 3
    assert all("only one class" in t for _, t in notes[:3])
    assert all("refused in the last 60 minutes" in t for _, t in notes[3:])
    assert _upload(monkeypatch, "198.51.100.99", one_class, {})[1:][1].startswith("Your network sent")  # same /24
    assert _upload(monkeypatch, "203.0.113.5", _good(), {})[1] == "success"  # another network is not affected
    assert len(threads) == 4


def test_a_refusal_counts_for_an_hour_and_at_least_its_floor():
    uploads._refused.clear()
    uploads.refused("who", 10, now=1000.0)
    uploads.refused("who", 300_000, now=2000.0)
    assert uploads.refused_bytes("who", now=2001.0) == uploads.REFUSED_FLOOR + 300_000
    assert uploads.refused_bytes("who", now=1000.0 + uploads.REFUSED_WINDOW_S + 1) == 300_000
    assert uploads.refused_bytes("who", now=2000.0 + uploads.REFUSED_WINDOW_S + 1) == 0
    assert uploads.refused_bytes("nobody") == 0 and "who" not in uploads._refused
