"""Another student's Home page while a hostile CSV is checked, on a live server (issue 60, item 1): reported, never
asserted. bench/bench_upload_check.py times the check in-process; this one drives real sessions.

Each side (the code now, and the code before ab25565: csv.Sniffer on the sample, the check on the page's script
thread) gets its own store and server, started as `make app` starts one (`python -m app.serve` from that side's
source tree, the default Dask engine, quick mode, one recipe seed, no background warming), its Delete page's
default view warmed first (`python -m lab warm --pages delete --defaults-only`), so no page trains while it is
measured. Sessions speak Streamlit's own protocol over raw websockets, as bench/bench_hall.py does:
- student B, another student from address 127.0.0.9, opens Home in a fresh session. **B's load** is the wall time
  from opening the websocket until Home's first script run ends (`script_finished`): every element of Home's first
  full render has reached B (static files apart; a browser has them cached, and they are served by the same thread);
- student A, from an address of its own for each try, opens the Delete page (the "Use your own CSV" upload under its
  task control, app/task_control.py), uploads a file as the browser does (a `file_urls_request`, an HTTP PUT with the
  XSRF cookie, a rerun carrying the uploader's state), then presses "Use this file" (a rerun carrying the button's
  trigger). **A's press** lasts from sending the trigger until the upload's message (its success or error alert) is
  drawn: the check, and for an accepted file the task's facts, which the old code parsed once more.
Conditions, with the server idle (under 0.1 of a core) before each:
(a) at rest: B loads Home `--rest` times, back to back;
(b) accepted: A presses on a 64 kB file the check accepts but whose quotes and commas are csv.Sniffer's worst case
    (150 columns, each data cell ` "a`, one numeric column, a label column ` "p` / ` "q`; a different file each
    try), `--repeats` times; B starts a load at the press and another as each ends, until the press ends;
(c) rejected: the same with 64 kB of `, "a` repeated (one line of 16,385 columns: refused).
Reported per condition and side: B's load p50 / p95 / max (nearest rank) and how many, A's press in wall seconds,
and the server process's CPU seconds per press (its Dask workers' apart; B's loads in that window included, at about
the at-rest CPU of one load each; also reported with those taken off). The load average is printed beside each
side: on a shared machine the wall times stretch with it, the CPU seconds much less.
On 2 shared cores (load 6-9) the new side takes about 3 minutes (a minute of it the warm), the old one about 12 (each
old press 30-40 s, and the server busy for up to two minutes more after an accepted one before it is idle again).
Usage: PYTHONPATH=. .venv/bin/python bench/bench_upload_live.py [--sides new,old] [--repeats 3] [--old-repeats 2]
       [--new-tree DIR] [--old-tree DIR]  (the old tree is made with `git worktree add --detach` if missing; a
       worktree of HEAD as --new-tree keeps others' uncommitted edits out of the measured server)
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import load_text  # noqa: E402
from tests.browser import free_port  # noqa: E402

OLD_COMMIT = "ab25565^"  # the commit before "Uploads checked in linear time, off the page's thread"
PAGE = "delete"
B_ADDRESS = "127.0.0.9"
SIZE = 65536


def accepted_csv(size: int, salt: int) -> bytes:
    """About `size` bytes of a table the check accepts (a 64 kB one: 109 rows) whose data cells are Sniffer's worst
    case; `salt` makes each file's bytes (so its hash and stored facts) its own."""
    cols = 150
    out = ["x," + ",".join(f"c{i}" for i in range(cols - 2)) + ",label\n"]
    n, i = 0, 0
    while n < size:
        row = f"{salt}.{i:04d}" + ', "a' * (cols - 2) + (', "p' if i % 2 else ', "q') + "\n"
        out.append(row)
        n, i = n + len(row), i + 1
    return "".join(out).encode()


def rejected_csv(size: int) -> bytes:
    """`size` bytes of `, "a` repeated: refused (too many columns), after the delimiter is chosen."""
    return (', "a' * (size // 4 + 1))[:size].encode()


class Session:
    """One browser session over Streamlit's protocol."""

    def __init__(self, port: int, address: str, page: str) -> None:
        self.port, self.address, self.page = port, address, page
        self.ws: Any = None
        self.session_id = ""
        self.ids: dict[str, str] = {}  # label -> widget id, of the upload's widgets
        self.alerts: list[str] = []  # error / success alerts drawn, in order

    async def open(self) -> None:
        import websockets

        self.ws = await websockets.connect(f"ws://127.0.0.1:{self.port}/_stcore/stream", max_size=None,
                                           open_timeout=600, ping_timeout=None, local_addr=(self.address, 0))

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def send(self, widgets: list[Any] = ()) -> None:  # type: ignore[assignment]
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        msg.rerun_script.page_name = self.page
        msg.rerun_script.widget_states.widgets.extend(widgets)
        await self.ws.send(msg.SerializeToString())

    def _read(self, raw: bytes) -> Any:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        fwd = ForwardMsg()
        fwd.ParseFromString(raw)
        kind = fwd.WhichOneof("type")
        if kind == "new_session" and fwd.new_session.initialize.session_id:
            self.session_id = fwd.new_session.initialize.session_id
        elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            el = fwd.delta.new_element
            what = el.WhichOneof("type")
            if what == "file_uploader":
                self.ids[el.file_uploader.label] = el.file_uploader.id
            elif what == "button":
                self.ids[el.button.label] = el.button.id
            elif what == "alert" and el.alert.format in (1, 4):  # ERROR, SUCCESS
                self.alerts.append(el.alert.body)
        return fwd

    async def until(self, kind: str, timeout: float = 600.0, alert: bool = False) -> Any:
        """Read until a message of `kind` (or, with `alert`, an error / success alert); that message."""
        deadline = time.monotonic() + timeout
        seen = len(self.alerts)
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), timeout=max(0.1, deadline - time.monotonic()))
            if not isinstance(raw, bytes):
                continue
            fwd = self._read(raw)
            if alert and len(self.alerts) > seen:
                return fwd
            if fwd.WhichOneof("type") == kind:
                if kind != "script_finished" or fwd.script_finished != 2:  # not FINISHED_EARLY_FOR_RERUN
                    return fwd

    async def upload(self, data: bytes, name: str) -> Any:
        """Send `data` as the browser's uploader does; the uploader's widget state."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.Common_pb2 import FileURLs
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        msg = BackMsg()
        msg.file_urls_request.request_id = uuid.uuid4().hex
        msg.file_urls_request.file_names.append(name)
        msg.file_urls_request.session_id = self.session_id
        await self.ws.send(msg.SerializeToString())
        urls = (await self.until("file_urls_response")).file_urls_response.file_urls[0]
        await asyncio.to_thread(_put, self.port, self.address, urls.upload_url, data, name)
        state = WidgetState(id=self.ids["CSV file"])
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.name, info.size, info.file_id = name, len(data), urls.file_id
        info.file_urls.CopyFrom(FileURLs(file_id=urls.file_id, upload_url=urls.upload_url,
                                         delete_url=urls.delete_url))
        return state


def _put(port: int, address: str, url: str, data: bytes, name: str) -> None:
    """The uploader's HTTP PUT, with the XSRF cookie the server set and its token in the header."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600, source_address=(address, 0))
    conn.request("GET", "/_stcore/health")
    resp = conn.getresponse()
    resp.read()
    cookie = next(c.split(";")[0] for c in resp.headers.get_all("Set-Cookie", []) if c.startswith("_streamlit_xsrf="))
    boundary = uuid.uuid4().hex
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            f"Content-Type: text/csv\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    path = url if url.startswith("/") else "/" + url.split("/", 3)[-1]
    conn.request("PUT", path, body=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                                                  "Cookie": cookie, "X-Xsrftoken": cookie.split("=", 1)[1]})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    if resp.status != 204:
        raise RuntimeError(f"the upload was answered {resp.status} {resp.reason}")


async def home_load(port: int) -> float:
    """B's load: seconds from opening a fresh session until Home's first run has ended."""
    t = time.monotonic()
    s = Session(port, B_ADDRESS, "")
    await s.open()
    try:
        await s.send()
        await s.until("script_finished")
    finally:
        await s.close()
    return time.monotonic() - t


def _cpu(pid: int) -> tuple[float, float]:
    """(the server process's, its children's) user + system CPU seconds so far."""
    import psutil

    proc = psutil.Process(pid)
    t = proc.cpu_times()
    kids = 0.0
    for child in proc.children(recursive=True):
        try:
            c = child.cpu_times()
            kids += c.user + c.system
        except psutil.Error:
            pass
    return t.user + t.system, kids


def wait_quiet(pid: int, limit: float = 120.0) -> None:
    """Until the server and its workers used under 0.1 of a core over a second (at most `limit` s)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        before = sum(_cpu(pid))
        time.sleep(1.0)
        if sum(_cpu(pid)) - before < 0.1:
            return


async def press(port: int, pid: int, address: str, data: bytes, name: str) -> dict[str, Any]:
    """A uploads `data` and presses "Use this file" while B loads Home back to back; the figures of that press."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    a = Session(port, address, PAGE)
    await a.open()
    try:
        await a.send()
        await a.until("script_finished")
        state = await a.upload(data, name)
        await a.send([state])
        await a.until("script_finished")
        await asyncio.to_thread(wait_quiet, pid)
        cpu0 = _cpu(pid)[0]
        t0 = time.monotonic()
        await a.send([state, WidgetState(id=a.ids["Use this file"], trigger_value=True)])
        done = asyncio.Event()
        loads: list[float] = []

        async def other() -> None:
            while not done.is_set():
                loads.append(await home_load(port))

        b = asyncio.create_task(other())
        await a.until("", alert=True)
        wall, cpu = time.monotonic() - t0, _cpu(pid)[0] - cpu0
        done.set()
        await b
    finally:
        await a.close()
    return {"press_s": wall, "cpu_s": cpu, "loads": loads, "message": a.alerts[-1][:90]}


def _pct(values: list[float], q: float) -> Optional[float]:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 2)


def _summary(loads: list[float]) -> dict[str, Any]:
    return {"n": len(loads), "p50_s": _pct(loads, 0.5), "p95_s": _pct(loads, 0.95), "max_s": _pct(loads, 1.0)}


def _tree(path: Path, commit: str) -> Path:
    if not (path / "app" / "serve.py").is_file():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), commit], cwd=ROOT, check=True,
                       capture_output=True)
    return path


def side(name: str, tree: Path, repeats: int, rest: int) -> dict[str, Any]:
    """Every condition on one side's server; its figures."""
    cache = Path(tempfile.mkdtemp(prefix=f"layerlab-upload-{name}-"))
    env = dict(os.environ, LAYERLAB_QUICK="1", LAYERLAB_CACHE=str(cache), LAYERLAB_ENGINE="dask",
               LAYERLAB_WARM="0", LAYERLAB_RECIPE_SEEDS="1", PYTHONPATH=str(tree))
    env.pop("LAYERLAB_SCHEDULER", None)
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "lab", "warm", "--pages", PAGE, "--defaults-only", "--workers", "0"],
                   cwd=tree, env=env, check=True, capture_output=True)
    out: dict[str, Any] = {"side": name, "tree": str(tree), "warm_s": round(time.monotonic() - t, 1),
                           "load_before": load_text()}
    port = free_port()
    log = open(cache / "server.log", "ab")  # noqa: SIM115 - the server's, for its life
    proc = subprocess.Popen([sys.executable, "-m", "app.serve", "--server.port", str(port)], cwd=tree, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        started = time.monotonic()
        while True:  # the server and its local cluster come up
            try:
                asyncio.run(home_load(port))
                break
            except OSError:
                if time.monotonic() - started > 300:
                    raise
                time.sleep(1.0)
        asyncio.run(press(port, proc.pid, "127.0.1.250", accepted_csv(20000, 99), "warmup.csv"))  # first-run costs
        wait_quiet(proc.pid)
        at_rest, cpu = [], []
        for _ in range(rest):
            c = _cpu(proc.pid)[0]
            at_rest.append(asyncio.run(home_load(port)))
            cpu.append(_cpu(proc.pid)[0] - c)
        out["rest"] = {**_summary(at_rest), "cpu_s_per_load": round(sum(cpu) / len(cpu), 3)}
        for cond, make in (("accepted", lambda i: accepted_csv(SIZE, i)), ("rejected", lambda i: rejected_csv(SIZE))):
            presses = [asyncio.run(press(port, proc.pid, f"127.0.{2 + (cond == 'rejected')}.{i + 1}", make(i),
                                         f"{cond}{i}.csv")) for i in range(repeats)]
            out[cond] = {**_summary([x for p in presses for x in p["loads"]]),
                         "press_s": [round(p["press_s"], 2) for p in presses],
                         "server_cpu_s_per_press": [round(p["cpu_s"], 3) for p in presses],
                         "less_b_loads_cpu_s": [round(p["cpu_s"] - len(p["loads"]) * out["rest"]["cpu_s_per_load"], 3)
                                                for p in presses],
                         "message": presses[-1]["message"]}
        out["load_after"] = load_text()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    if "load_after" in out:
        shutil.rmtree(cache, ignore_errors=True)  # kept after a failure: its server.log says why
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", default="new,old")
    ap.add_argument("--repeats", type=int, default=3, help="presses per condition, the code now")
    ap.add_argument("--old-repeats", type=int, default=2, help="presses per condition, the old code (slow)")
    ap.add_argument("--rest", type=int, default=10, help="Home loads at rest")
    ap.add_argument("--new-tree", default=str(ROOT), help="the code now (default: this checkout)")
    ap.add_argument("--old-tree", default=str(Path(tempfile.gettempdir()) / "old-upload"))
    args = ap.parse_args()
    trees = {"new": Path(args.new_tree), "old": _tree(Path(args.old_tree), OLD_COMMIT)}
    results = []
    for name in args.sides.split(","):
        r = side(name, trees[name], args.repeats if name == "new" else args.old_repeats, args.rest)
        results.append(r)
        print(json.dumps(r), flush=True)
    for r in results:
        print(f"{r['side']} ({r['load_before']} -> {r['load_after']}): B's Home at rest p50 {r['rest']['p50_s']} s "
              f"p95 {r['rest']['p95_s']} s ({r['rest']['n']}, {r['rest']['cpu_s_per_load']} CPU-s each)")
        for cond in ("accepted", "rejected"):
            c = r[cond]
            print(f"  {cond}: B's Home p50 {c['p50_s']} s p95 {c['p95_s']} s max {c['max_s']} s ({c['n']} loads); "
                  f"A's press {c['press_s']} s; server CPU-s per press {c['server_cpu_s_per_press']} "
                  f"({c['less_b_loads_cpu_s']} less B's loads at their at-rest CPU); "
                  f"A read: {c['message']!r}")


if __name__ == "__main__":
    main()
