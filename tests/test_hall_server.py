"""The light student view on the real server (`python -m app.serve`, as `make app` starts it): its routes are served
beside the app, a phone's live connection carries the room's state, and stopping the server (SIGTERM, as a service
manager stops it) ends the phones' never-ending responses instead of waiting on them forever."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from lab.classroom import lessons
from lab.classroom import workshop_db as wdb

from .browser import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]


def _http(port: int, raw: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(raw.encode())
    return s


def test_stopping_the_server_ends_the_phones_live_connections(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_DB", f"sqlite:///{tmp_path / 'hall.sqlite'}")
    port = free_port()
    env = {**os.environ, "LAYERLAB_CACHE": str(tmp_path / "store"), "LAYERLAB_ENGINE": "threads",
           "LAYERLAB_QUICK": "1"}
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "app.serve", "--server.headless", "true", "--server.port",
                             str(port), "--server.fileWatcherType", "none"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        wait_healthy(port)
        db = wdb.Workshop()
        opened = db.start_class(client="lecturer")
        db.set_lesson(opened.code, opened.key, lessons.to_json(lessons.get("layers-equal")))
        body = f"code={opened.code}"
        joined = _http(port, f"POST /_layerlab/hall/join HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
                             f"application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n{body}")
        answer = b""
        while chunk := joined.recv(4096):
            answer += chunk
        cookie = next(line.split(":", 1)[1].split(";")[0].strip() for line in answer.decode().split("\r\n")
                      if line.lower().startswith("set-cookie:"))
        phone = _http(port, f"GET /_layerlab/hall/events?class={opened.code} HTTP/1.1\r\nHost: x\r\n"
                            f"Cookie: {cookie}\r\n\r\n")
        seen = b""
        while b"data: " not in seen:
            seen += phone.recv(4096)
        assert b'"question": "' + LESSON_Q1.encode() in seen
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)  # a hang detector: before the fix it never exited while a phone was connected
        rest = b""
        while chunk := phone.recv(4096):  # the phone's response ended (the connection closed)
            rest += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


LESSON_Q1 = lessons.get("layers-equal").steps[0].question
