"""A lecture hall, measured (issue 45, item 8): N students behind one address open a class's Student link at once,
draw the question, predict and press Reveal; reported, never asserted. The figure the course's capacity is quoted
from (README).

Driving the hall in Chromium measured mostly the browsers' own cost on a small machine (20 tabs took a median of
116 s each), so the students here speak Streamlit's own protocol over raw websockets, as bench/bench_flood.py does:
1. a server started as `make app` starts it (`python -m app.serve`: the default Dask engine, a fresh store, quick
   mode, workshop predictions in SQLite in the store, or `--db URL`); `LAYERLAB_PAGES_PER_CLIENT` is raised to N (the
   README's advice for a hall behind one address), every other bound is the server's default;
2. a class started and its question's voting opened through the workshop database (lab/classroom/workshop_db.py:
   `start_class`, `set_window`): the Delete page's default-view question;
3. the page's default view warmed first, as a course does before class (`python -m lab warm --pages delete
   --defaults-only`: the question's view and every piece its result draws), and drawn once by a session from another
   address (the server's first run of the page);
4. N sessions from 127.0.0.3 each send one `rerun_script` with `workshop=1&class=CODE` and wait until the page draws
   the question (the "Your prediction" radio); after a think time (uniform in [0, --think] s) each picks an option
   (a rerun carrying the radio's value) and presses Reveal (a rerun carrying the radio and the button's trigger, as
   the browser sends them), then waits for the result;
5. reports pages that drew the question and the p50 / p95 seconds until they did, pages told to wait their turn or
   refused, predictions the class's tally holds, pages that drew the result, and the server process's CPU seconds
   per student over the hall (its workers' apart: a stored view needs none).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_hall.py [--students 300] [--think 5] [--db URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
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
from tests.browser import free_port  # noqa: E402

PAGE = "delete"
HALL_ADDRESS = "127.0.0.3"  # every student: one address, a hall behind one NAT
WARM_ADDRESS = "127.0.0.2"  # the session that draws the view first


def _question() -> Any:
    from lab.classroom import questions

    return next(q for q in questions.of(PAGE) if q.preset == "")


class Student:
    """One student's session over Streamlit's protocol: what it saw, and when."""

    def __init__(self, url: str, query: str, address: str) -> None:
        self.url, self.query, self.address = url, query, address
        self.radio_id: Optional[str] = None
        self.reveal_id: Optional[str] = None
        self.drew_s: Optional[float] = None  # seconds from connecting until the question was drawn
        self.result_s: Optional[float] = None  # seconds from pressing Reveal until the result was drawn
        self.outcome = ""  # counted / not counted / held / ...
        self.waited_turn = False
        self.refused = False  # "too many pages"
        self.error = ""

    def _rerun(self, states: list[tuple[str, str, Any]]) -> bytes:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = PAGE
        for wid, field, value in states:
            w = msg.rerun_script.widget_states.widgets.add()
            w.id = wid
            setattr(w, field, value)
        return msg.SerializeToString()

    def _read(self, raw: bytes) -> bool:
        """Note what one message drew; True when it ends a script run."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        fwd = ForwardMsg()
        fwd.ParseFromString(raw)
        kind = fwd.WhichOneof("type")
        if kind == "script_finished":
            return True
        if kind != "delta" or fwd.delta.WhichOneof("type") != "new_element":
            return False
        el = fwd.delta.new_element
        what = el.WhichOneof("type")
        if what == "radio" and el.radio.label == "Your prediction":
            self.radio_id = el.radio.id
        elif what == "button" and el.button.label == "Reveal":
            self.reveal_id = el.button.id
        elif what in ("markdown", "alert"):
            body = el.markdown.body if what == "markdown" else el.alert.body
            if "from your network are computing" in body or "from your network is computing" in body:
                self.waited_turn = True
            elif "Too many pages" in body:
                self.refused = True
            elif self.reveal_pressed and not self.outcome:
                if body.startswith("Counted in class"):
                    self.outcome = "counted"
                elif "not counted" in body:
                    self.outcome = "not counted"
                elif body.startswith("Not yet"):
                    self.outcome = "held"
        elif what == "metric" and self.reveal_pressed and el.metric.label.startswith("Original"):
            self.result_drawn = True
        return False

    reveal_pressed = False
    result_drawn = False

    async def _until_finished(self, ws: Any, deadline: float) -> None:
        while time.monotonic() < deadline:
            raw = await asyncio.wait_for(ws.recv(), timeout=max(0.1, deadline - time.monotonic()))
            if isinstance(raw, bytes) and self._read(raw):
                return
        raise TimeoutError("the page did not finish in time")

    async def run(self, deadline: float, think: float, option: str) -> None:
        import websockets

        t0 = time.monotonic()
        try:
            async with websockets.connect(self.url, max_size=None, open_timeout=120, ping_timeout=None,
                                          local_addr=(self.address, 0)) as ws:
                await ws.send(self._rerun([]))
                while self.radio_id is None or self.reveal_id is None:  # until the question is drawn
                    await self._until_finished(ws, deadline)
                    if self.refused:
                        return
                    if self.radio_id is None:
                        raise RuntimeError("a run ended without the question")
                self.drew_s = time.monotonic() - t0
                if think <= 0:  # the warm-up session only draws the view
                    return
                await asyncio.sleep(random.uniform(0, think))
                await ws.send(self._rerun([(self.radio_id, "string_value", option)]))  # the pick: a rerun
                await self._until_finished(ws, deadline)
                pressed = time.monotonic()
                self.reveal_pressed = True
                await ws.send(self._rerun([(self.radio_id, "string_value", option),
                                           (self.reveal_id, "trigger_value", True)]))
                await self._until_finished(ws, deadline)
                if self.result_drawn:
                    self.result_s = time.monotonic() - pressed
        except Exception as exc:  # noqa: BLE001 - counted: a student whose page failed
            self.error = f"{type(exc).__name__}: {exc}"[:200]


def _server(cache: Path, port: int, env: dict[str, str]) -> subprocess.Popen:
    log = open(cache / "server.log", "ab")  # noqa: SIM115 - the server's, for its life
    return subprocess.Popen([sys.executable, "-m", "app.serve", "--server.headless", "true", "--server.port",
                             str(port), "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def _cpu(proc: Any) -> tuple[float, float]:
    """(the server process's, its worker processes') user + system CPU seconds so far."""
    import psutil

    mine = proc.cpu_times()
    kids = 0.0
    for child in proc.children(recursive=True):
        try:
            t = child.cpu_times()
            kids += t.user + t.system
        except psutil.Error:
            pass
    return mine.user + mine.system, kids


def _pct(values: list[float], q: float) -> Optional[float]:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 2)


async def _hall(url: str, query: str, n: int, think: float, limit: float, texts: tuple[str, ...]) -> list[Student]:
    students = [Student(url, query, HALL_ADDRESS) for _ in range(n)]
    deadline = time.monotonic() + limit
    await asyncio.gather(*(s.run(deadline, think, texts[i % len(texts)]) for i, s in enumerate(students)))
    return students


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--think", type=float, default=5.0, help="most seconds a student takes to pick (uniform)")
    ap.add_argument("--limit", type=float, default=420.0, help="seconds the whole hall may take")
    ap.add_argument("--db", default="", help="the workshop database's SQLAlchemy URL (default: SQLite in the store)")
    args = ap.parse_args()

    import psutil

    from lab.runtime import settings

    cache = Path(tempfile.mkdtemp(prefix="layerlab-hall-"))
    pages = max(settings.get("LAYERLAB_PAGES_PER_CLIENT"), args.students + 1)
    env = dict(os.environ, LAYERLAB_QUICK="1", LAYERLAB_CACHE=str(cache), LAYERLAB_ENGINE="dask",
               LAYERLAB_WARM="0", LAYERLAB_PAGES_PER_CLIENT=str(pages), PYTHONPATH=str(ROOT))
    env.pop("LAYERLAB_SCHEDULER", None)
    if args.db:
        env["LAYERLAB_DB"] = args.db
    os.environ.update({k: v for k, v in env.items() if k.startswith("LAYERLAB_")})  # the same database as the server
    from lab.classroom import workshop_db

    q = _question()
    db = workshop_db.Workshop(args.db or None)
    opened = db.start_class(client="bench")
    db.set_window(opened.code, q.key, "open", opened.key)
    query = f"workshop=1&class={opened.code}"

    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "lab", "warm", "--pages", PAGE, "--defaults-only", "--workers", "0"],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    warmed_s = time.monotonic() - t
    port = free_port()
    proc = _server(cache, port, env)
    url = f"ws://127.0.0.1:{port}/_stcore/stream"
    out: dict[str, Any] = {"students": args.students, "think_s": args.think, "pages_per_client": pages,
                           "working_per_client": settings.get("LAYERLAB_WORKING_PER_CLIENT"),
                           "database": "postgresql" if args.db.startswith("postgres") else "sqlite"}
    try:
        started = time.monotonic()
        while True:  # the server and its local cluster come up; the warm-up draws (and trains) the view
            warm = Student(url, query, WARM_ADDRESS)
            asyncio.run(warm.run(time.monotonic() + 600, 0.0, ""))
            if warm.drew_s is not None or time.monotonic() - started > 600:
                break
            time.sleep(1.0)
        out["warm_s"], out["first_draw_s"] = round(warmed_s, 1), round(time.monotonic() - started, 1)
        if warm.drew_s is None:
            raise RuntimeError(f"the question's view was never drawn: {warm.error}")
        server = psutil.Process(proc.pid)
        time.sleep(3.0)  # the warm-up session's end settles
        cpu0, kids0, mine0, wall0 = *_cpu(server), time.process_time(), time.monotonic()
        students = asyncio.run(_hall(url, query, args.students, args.think, args.limit, q.texts))
        wall = time.monotonic() - wall0
        cpu1, kids1 = _cpu(server)
        drew = [s.drew_s for s in students if s.drew_s is not None]
        tally = db.tally(opened.code, q.key, len(q.options), opened.key)
        out.update({
            "drew_question": len(drew), "drew_p50_s": _pct(drew, 0.5), "drew_p95_s": _pct(drew, 0.95),
            "drew_max_s": _pct(drew, 1.0),
            "waited_their_turn": sum(s.waited_turn for s in students),
            "refused_too_many_pages": sum(s.refused for s in students),
            "pressed_reveal": sum(s.reveal_pressed for s in students),
            "votes_stored": tally.total,
            "outcomes": {k: sum(s.outcome == k for s in students) for k in {s.outcome for s in students}},
            "drew_result": sum(s.result_s is not None for s in students),
            "result_p50_s": _pct([s.result_s for s in students if s.result_s is not None], 0.5),
            "result_p95_s": _pct([s.result_s for s in students if s.result_s is not None], 0.95),
            "failed": sum(bool(s.error) for s in students),
            "first_failure": next((s.error for s in students if s.error), ""),
            "hall_wall_s": round(wall, 1),
            "server_cpu_s": round(cpu1 - cpu0, 2),
            "server_cpu_s_per_student": round((cpu1 - cpu0) / max(1, args.students), 3),
            "workers_cpu_s": round(kids1 - kids0, 2),
            "bench_client_cpu_s": round(time.process_time() - mine0, 2),
        })
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(json.dumps(out, indent=1))
    if "drew_question" in out:
        shutil.rmtree(cache, ignore_errors=True)  # kept after a failure: its server.log says why
        print(f"a hall of {args.students} from one address: {out['drew_question']} drew the question "
              f"(p50 {out['drew_p50_s']} s, p95 {out['drew_p95_s']} s), {out['votes_stored']} votes stored, "
              f"{out['server_cpu_s_per_student']} server CPU-s per student; {load_text()}")


if __name__ == "__main__":
    main()
