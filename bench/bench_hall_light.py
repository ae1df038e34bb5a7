"""A lecture hall on the light student view (issue 61), measured; reported, never asserted. bench/bench_hall.py
measures the full Streamlit page; this one the phones' page (app/hall_route.py) with the same set-up:
1. a server started as `make app` starts it (`python -m app.serve`, a fresh store, quick mode), with
   LAYERLAB_JOIN_BURST raised to N (the README's advice for a hall behind one address);
2. a class started and a shipped lesson set through the workshop database, as the lecturer's Home does;
3. N students from one address (127.0.0.3) each load the page, its script, join, read the room's state and open the
   live connection, as the page's script does: "drawn" is the time from the first request to the state;
4. with every phone connected and idle, the server process's CPU over IDLE seconds (cores);
5. the lecturer's Next (workshop_db.move_step, what the lecturer's page calls): the time until each phone's live
   connection carries step 2; then every student votes at a uniform time in [0, --spread] s, and the tally is read;
   then Reveal (set_window revealed): the time until each phone has it;
6. reports p50 / p95 of each, votes stored, the server's CPU seconds per student and its idle cores.
The phones speak plain HTTP over asyncio sockets (a browser each would measure the browsers on a 2-core machine).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_hall_light.py [--students 300 1000] [--spread 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import load_text  # noqa: E402
from tests.browser import free_port, wait_healthy  # noqa: E402

HALL_ADDRESS = "127.0.0.3"
IDLE = 10.0
PREFIX = "/_layerlab/hall"


async def _request(port: int, method: str, path: str, cookie: str = "", body: str = "") -> tuple[int, dict, bytes]:
    """One HTTP/1.1 request on its own connection: (status, headers, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(HALL_ADDRESS, 0))
    head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    if cookie:
        head.append(f"Cookie: {cookie}")
    if body:
        head += ["Content-Type: application/x-www-form-urlencoded", f"Content-Length: {len(body)}"]
    writer.write(("\r\n".join(head) + "\r\n\r\n" + body).encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    header, _, rest = data.partition(b"\r\n\r\n")
    lines = header.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers.setdefault(k.strip().lower(), v.strip())
    return status, headers, rest


class Phone:
    """One student's phone: what it saw, and when."""

    def __init__(self, port: int, code: str) -> None:
        self.port, self.code = port, code
        self.cookie = ""
        self.drew_s: Optional[float] = None
        self.states: list[tuple[float, dict[str, Any]]] = []  # (monotonic, state) as pushed
        self.voted = False
        self.error = ""
        self.writer: Optional[asyncio.StreamWriter] = None

    async def open(self) -> None:
        t0 = time.monotonic()
        try:
            await _request(self.port, "GET", f"{PREFIX}?class={self.code}")
            await _request(self.port, "GET", f"{PREFIX}/hall.js")
            for _ in range(30):
                status, headers, body = await _request(self.port, "POST", f"{PREFIX}/join", body=f"code={self.code}")
                if status == 200:
                    self.cookie = headers.get("set-cookie", "").split(";")[0]
                    break
                await asyncio.sleep(1.0)
            else:
                self.error = f"join refused: {body[:80]!r}"
                return
            status, _, body = await _request(self.port, "GET", f"{PREFIX}/state?class={self.code}", self.cookie)
            if status != 200:
                self.error = f"state {status}"
                return
            self.drew_s = time.monotonic() - t0
            asyncio.get_running_loop().create_task(self._listen())
        except OSError as e:
            self.error = f"{type(e).__name__}: {e}"

    async def _listen(self) -> None:
        reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, local_addr=(HALL_ADDRESS, 0))
        self.writer.write((f"GET {PREFIX}/events?class={self.code} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                           f"Cookie: {self.cookie}\r\nAccept: text/event-stream\r\n\r\n").encode())
        await self.writer.drain()
        while True:
            line = await reader.readline()
            if not line:
                return
            if line.startswith(b"data: "):
                self.states.append((time.monotonic(), json.loads(line[6:])))

    async def vote(self, delay: float, question: str) -> None:
        await asyncio.sleep(delay)
        status, _, body = await _request(self.port, "POST", f"{PREFIX}/vote", self.cookie,
                                         f"class={self.code}&question={question}&option=0")
        self.voted = status == 200
        if not self.voted:
            self.error = f"vote {status}: {body[:80]!r}"

    def arrived(self, since: float, test: Any) -> Optional[float]:
        for at, state in self.states:
            if at >= since and test(state):
                return at - since
        return None


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def _cpu(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


async def _until(test: Any, limit: float) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end and not test():
        await asyncio.sleep(0.05)


async def hall(n: int, spread: float, port: int, pid: int, db: Any, code: str, key: str, question2: Any) -> dict:
    phones = [Phone(port, code) for _ in range(n)]
    cpu0 = _cpu(pid)
    await asyncio.gather(*(p.open() for p in phones))
    await _until(lambda: all(p.states for p in phones if p.drew_s is not None), 60)
    cpu_join = _cpu(pid) - cpu0
    drawn = [p.drew_s for p in phones if p.drew_s is not None]
    await asyncio.sleep(1.0)
    c0, t0 = _cpu(pid), time.monotonic()
    await asyncio.sleep(IDLE)
    idle_cores = (_cpu(pid) - c0) / (time.monotonic() - t0)

    since = time.monotonic()
    await asyncio.to_thread(db.move_step, code, key, 1)
    step2 = lambda s: s.get("step") == 2  # noqa: E731
    await _until(lambda: all(p.arrived(since, step2) is not None for p in phones if p.drew_s is not None), 60)
    nexts = [p.arrived(since, step2) for p in phones if p.drew_s is not None]
    await asyncio.gather(*(p.vote(random.uniform(0, spread), question2.key) for p in phones if p.drew_s is not None))
    stored = db.tally(code, question2.key, len(question2.options), key).total
    since = time.monotonic()
    await asyncio.to_thread(db.set_window, code, question2.key, "revealed", key)
    shown = lambda s: s.get("revealed") and s.get("question") == question2.key  # noqa: E731
    await _until(lambda: all(p.arrived(since, shown) is not None for p in phones if p.drew_s is not None), 60)
    reveals = [p.arrived(since, shown) for p in phones if p.drew_s is not None]
    for p in phones:
        if p.writer is not None:
            p.writer.close()
    errors = sorted({p.error for p in phones if p.error})
    return {"students": n, "drawn": len(drawn), "draw_p50_s": _pct(drawn, 50), "draw_p95_s": _pct(drawn, 95),
            "next_arrived": sum(x is not None for x in nexts),
            "next_p95_s": _pct([x for x in nexts if x is not None], 95),
            "reveal_arrived": sum(x is not None for x in reveals),
            "reveal_p95_s": _pct([x for x in reveals if x is not None], 95),
            "votes_sent": sum(p.voted for p in phones), "votes_stored": stored,
            "cpu_s_per_student": cpu_join / max(1, len(drawn)), "idle_cores": idle_cores, "errors": errors[:3]}


def run(n: int, spread: float) -> dict:
    store = Path(tempfile.mkdtemp(prefix="layerlab-hall-light-"))
    env = {**os.environ, "LAYERLAB_CACHE": str(store), "LAYERLAB_QUICK": "1", "LAYERLAB_JOIN_BURST": str(max(300, n)),
           "PYTHONPATH": str(ROOT)}
    port = free_port()
    log = open(store / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "app.serve", "--server.headless", "true", "--server.port",
                             str(port)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(port)
        os.environ.update({k: env[k] for k in ("LAYERLAB_CACHE", "LAYERLAB_JOIN_BURST")})
        from lab.classroom import lessons
        from lab.classroom import workshop_db as wdb

        db = wdb.Workshop()
        opened = db.start_class(client="bench")
        lesson = lessons.get("layers-equal") if "layers-equal" in lessons.shipped() else \
            next(iter(lessons.shipped().values()))
        db.set_lesson(opened.code, opened.key, lessons.to_json(lesson))
        question2 = lesson.steps[1].asked
        return asyncio.run(hall(n, spread, port, proc.pid, db, opened.code, opened.key, question2))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(store, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, nargs="+", default=[30, 300, 1000])
    ap.add_argument("--spread", type=float, default=2.0, help="students vote within this many seconds")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))  # 1,000 phones hold 1,000 sockets
    print(load_text())
    print(f"{'students':>8} {'drawn':>6} {'draw p50/p95 s':>15} {'Next p95 s':>10} {'Reveal p95 s':>12} "
          f"{'votes sent/stored':>17} {'CPU s/student':>13} {'idle cores':>10}")
    for n in args.students:
        r = run(n, args.spread)
        print(f"{r['students']:>8} {r['drawn']:>6} {r['draw_p50_s']:>7.2f}/{r['draw_p95_s']:<7.2f} "
              f"{r['next_p95_s']:>10.2f} {r['reveal_p95_s']:>12.2f} {r['votes_sent']:>8}/{r['votes_stored']:<8} "
              f"{r['cpu_s_per_student']:>13.4f} {r['idle_cores']:>10.4f}" + (f"  {r['errors']}" if r["errors"] else ""))


if __name__ == "__main__":
    main()
