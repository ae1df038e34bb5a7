"""The light student view (app/hall_route.py, app/hall_hub.py, lab/classroom/hall.py), driven through its ASGI routes
against a real SQLite database: a phone joins, follows the lecturer's step as it is pushed, votes once, and sees
the answer, the tally and the lecturer's figure only once the room's answer is revealed; forged and foreign cookies,
replayed votes, votes after the window and floods of live connections are refused; its colours meet WCAG AA."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path

import pytest

from app import hall_route
from app.hall_hub import PER_VOTER, TICK, Full, Hub
from lab.classroom import hall, lessons
from lab.classroom import workshop_db as wdb

ROOT = Path(__file__).resolve().parents[1]
LESSON = lessons.get("layers-equal")


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'hall.sqlite'}"
    monkeypatch.setenv("LAYERLAB_DB", url)
    return wdb.Workshop(url)


@pytest.fixture
def room(db):
    opened = db.start_class(client="lecturer")
    db.set_lesson(opened.code, opened.key, lessons.to_json(LESSON))
    return opened


def _run(make) -> None:  # noqa: ANN001 - an async function of no arguments
    """Run `make()` on an event loop of its own, in a thread: a browser test in the same process (Playwright's sync
    API) may leave this thread's loop running."""
    failed: list[BaseException] = []

    def go() -> None:
        try:
            asyncio.run(make())
        except BaseException as e:  # noqa: BLE001 - raised again in the test's thread
            failed.append(e)

    t = threading.Thread(target=go)
    t.start()
    t.join()
    if failed:
        raise failed[0]


def _app():
    from starlette.applications import Starlette

    return Starlette(routes=hall_route.routes())


class Phone:
    """An ASGI client with a cookie jar, from one address."""

    def __init__(self, app, address="10.1.2.3") -> None:  # noqa: ANN001 - a Starlette app
        self.app, self.address, self.cookies = app, address, {}

    def _scope(self, method, path, origin=None):  # noqa: ANN001, ANN202
        target, _, query = path.partition("?")
        headers = [(b"host", b"lab.test")]
        if self.cookies:
            headers.append((b"cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items()).encode()))
        if origin:
            headers.append((b"origin", origin.encode()))
        if method == "POST":
            headers.append((b"content-type", b"application/x-www-form-urlencoded"))
        return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                "scheme": "http", "path": target, "raw_path": target.encode(), "query_string": query.encode(),
                "root_path": "", "headers": headers, "client": (self.address, 5000), "server": ("lab.test", 80)}

    def _keep(self, message) -> None:  # noqa: ANN001
        for k, v in message.get("headers", []):
            if k == b"set-cookie":
                name, _, rest = v.decode().partition("=")
                self.cookies[name] = rest.split(";")[0]

    async def call(self, method, path, body="", origin=None):  # noqa: ANN001, ANN202
        out, sent = {"status": 0, "body": b"", "headers": {}}, False

        async def receive():  # noqa: ANN202
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body.encode(), "more_body": False}
            await asyncio.sleep(3600)

        async def send(message):  # noqa: ANN001, ANN202
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
                out["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
                self._keep(message)
            elif message["type"] == "http.response.body":
                out["body"] += message.get("body", b"")

        await self.app(self._scope(method, path, origin), receive, send)
        return out["status"], out["headers"], out["body"]

    async def events(self, path, until):  # noqa: ANN001, ANN202
        """The live connection's pushed states until `until(states)` holds (then it hangs up)."""
        states, done = [], asyncio.Event()
        gone = asyncio.Event()

        async def receive():  # noqa: ANN202
            if not states and not done.is_set() and not gone.is_set():
                gone.set()
                return {"type": "http.request", "body": b"", "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message):  # noqa: ANN001, ANN202
            if message["type"] == "http.response.start":
                states.append(("status", message["status"]))
            for line in message.get("body", b"").decode().splitlines():
                if line.startswith("data: "):
                    states.append(json.loads(line[6:]))
            if until(states):
                done.set()

        task = asyncio.ensure_future(self.app(self._scope("GET", path), receive, send))
        try:
            await asyncio.wait_for(done.wait(), timeout=30)
        finally:
            task.cancel()
        return states


def test_a_phone_joins_votes_once_and_sees_the_answer_only_after_the_reveal(db, room):
    code, key = room.code, room.key
    q1, q2 = LESSON.steps[0].asked, LESSON.steps[1].asked

    async def run():  # noqa: ANN202
        phone = Phone(_app())
        status, headers, body = await phone.call("GET", f"/_layerlab/hall?class={code}")
        assert status == 200 and "script-src 'self'" in headers["content-security-policy"] and code not in body.decode()
        assert (await phone.call("GET", f"/_layerlab/hall/events?class={code}"))[0] == 403  # not joined yet
        assert (await phone.call("POST", "/_layerlab/hall/join", f"code={code}", origin="https://evil.test"))[0] == 403
        status, headers, _ = await phone.call("POST", "/_layerlab/hall/join", f"code={code}")
        assert status == 200 and "HttpOnly" in headers["set-cookie"] and "layerlab_voter_" + code in phone.cookies
        state = json.loads((await phone.call("GET", f"/_layerlab/hall/state?class={code}"))[2])
        assert state["joined"] and state["room"]["question"] == q1.key and state["room"]["options"] == list(q1.texts)

        other = Phone(_app(), address="10.9.9.9")  # a classmate who votes too
        await other.call("POST", "/_layerlab/hall/join", f"code={code}")
        db.set_outcome(code, key, q1.key, json.dumps(lessons.outcome(q1, [{"key": q1.claim, "holds": True,
                                                                           "detail": "secret detail"}])))
        assert (await phone.call("POST", "/_layerlab/hall/vote", f"class={code}&question={q1.key}&option=0"))[0] == 200
        assert (await other.call("POST", "/_layerlab/hall/vote", f"class={code}&question={q1.key}&option=1"))[0] == 200
        again = await phone.call("POST", "/_layerlab/hall/vote", f"class={code}&question={q1.key}&option=1")
        assert again[0] == 409 and "counted already" in json.loads(again[2])["message"]  # a replay changes nothing
        assert (await phone.call("POST", "/_layerlab/hall/vote", f"class={code}&question={q2.key}&option=0"))[0] == 409
        assert (await phone.call("POST", "/_layerlab/hall/vote", f"class={code}&question={q1.key}&option=9"))[0] == 400
        hidden = json.loads((await phone.call("GET", f"/_layerlab/hall/state?class={code}"))[2])
        assert hidden["mine"] == 0 and hidden["room"]["answer"] is None and hidden["room"]["tally"] is None
        assert "secret detail" not in json.dumps(hidden)  # nothing of the answer before the reveal
        hall.set_figure(db, code, key, q1.key, '{"data": [], "layout": {}}')
        assert (await phone.call("GET", f"/_layerlab/hall/figure?class={code}&question={q1.key}"))[0] == 404

        db.set_window(code, q1.key, "revealed", key)
        await asyncio.sleep(TICK * 1.5)  # the room's state is read once a tick, however many phones ask
        shown = json.loads((await phone.call("GET", f"/_layerlab/hall/state?class={code}"))[2])["room"]
        assert shown["revealed"] and shown["tally"] == [1, 1, 0] and shown["answer"]["detail"] == "secret detail"
        assert shown["answer"]["verdict"] == "holds" and shown["answer"]["correct"] == 0 and shown["figure"] is not None
        status, _, fig = await phone.call("GET", f"/_layerlab/hall/figure?class={code}&question={q1.key}")
        assert status == 200 and json.loads(fig) == {"data": [], "layout": {}}
        late = Phone(_app(), address="10.7.7.7")
        await late.call("POST", "/_layerlab/hall/join", f"code={code}")
        assert (await late.call("POST", "/_layerlab/hall/vote", f"class={code}&question={q1.key}&option=0"))[0] == 409
        assert db.tally(code, q1.key, len(q1.options), key).counts == (1, 1, 0)

    _run(run)


def test_forged_and_foreign_cookies_are_no_voter(db, room):
    other = db.start_class(client="lecturer-2")
    db.set_lesson(other.code, other.key, lessons.to_json(LESSON))
    q1 = LESSON.steps[0].asked

    async def run():  # noqa: ANN202
        phone = Phone(_app())
        await phone.call("POST", "/_layerlab/hall/join", f"code={other.code}")
        signed = phone.cookies["layerlab_voter_" + other.code]
        phone.cookies["layerlab_voter_" + room.code] = signed  # another class's cookie
        assert (await phone.call("POST", "/_layerlab/hall/vote",
                                 f"class={room.code}&question={q1.key}&option=0"))[0] == 403
        voter = signed.split(".")[0]
        phone.cookies["layerlab_voter_" + room.code] = voter + "." + "0" * 32  # a made-up signature
        assert (await phone.call("POST", "/_layerlab/hall/vote",
                                 f"class={room.code}&question={q1.key}&option=0"))[0] == 403
        assert (await phone.call("GET", f"/_layerlab/hall/events?class={room.code}"))[0] == 403
        for bad in ("", "x", "<script>", "A" * 40):
            assert (await phone.call("GET", f"/_layerlab/hall/state?class={bad}"))[0] == 400

    _run(run)
    assert db.tally(room.code, q1.key, len(q1.options), room.key).total == 0


def test_a_figure_is_kept_by_the_lecturer_only(db, room):
    with pytest.raises(wdb.NotLecturer):
        hall.set_figure(db, room.code, "not-the-key", LESSON.steps[0].question, "{}")
    with pytest.raises(wdb.Rejected):
        hall.set_figure(db, room.code, room.key, LESSON.steps[0].question, "not json")


def test_the_live_connection_carries_next_and_reveal_as_they_happen(db, room):
    code, key = room.code, room.key

    async def run():  # noqa: ANN202
        phone = Phone(_app())
        await phone.call("POST", "/_layerlab/hall/join", f"code={code}")
        moved = asyncio.Event()

        def until(states) -> bool:  # noqa: ANN001
            data = [s for s in states if isinstance(s, dict)]
            if data and not moved.is_set():
                moved.set()
                db.move_step(code, key, 1)  # the lecturer's Next, once the phone holds step 1
            return any(s.get("step") == 2 for s in data)

        states = await phone.events(f"/_layerlab/hall/events?class={code}", until)
        data = [s for s in states if isinstance(s, dict)]
        assert states[0] == ("status", 200) and data[0]["step"] == 1 and data[-1]["step"] == 2
        assert data[-1]["question"] == LESSON.steps[1].question and data[-1]["window"] == "open"

    _run(run)


def test_a_room_pushes_only_changes_and_a_slow_phone_keeps_the_newest():
    state = {"step": 1}
    reads = []

    def read(code: str) -> dict:
        reads.append(code)
        return dict(state)

    async def until(test, what: str) -> None:  # noqa: ANN001 - waits for an event, never for a time
        for _ in range(3000):
            if test():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"never happened: {what}")

    async def run():  # noqa: ANN202
        hub = Hub(read, tick=0.01, max_streams=100)
        q = hub.admit("ROOM1", "voter-aaaaaaaa")
        stream = hub.events("ROOM1", q)
        assert json.loads((await stream.__anext__())[6:]) == {"step": 1}
        await until(lambda: len(reads) >= 6, "five reads after the first")
        # five ticks read the room and nothing changed: nothing pushed, but for the first state again when the
        # watcher's first read came before the stream's first answer (a repeat, never a change missed)
        while not q.empty():
            assert json.loads(q.get_nowait()) == {"step": 1}
        state["step"] = 2
        await until(lambda: q.qsize() == 1, "the change pushed")
        for n in (3, 4):  # two more changes while the phone reads nothing
            state["step"] = n
            seen = len(reads)
            await until(lambda: len(reads) >= seen + 2, "the change read")  # noqa: B023
        assert q.qsize() == 1 and json.loads(q.get_nowait()) == {"step": 4}  # only the newest is kept
        hub.leave("ROOM1", "voter-aaaaaaaa", q)
        await until(lambda: "ROOM1" not in hub._rooms, "the watcher gone with its last listener")
        count = len(reads)
        await asyncio.sleep(0.1)  # ten ticks
        assert len(reads) == count  # nobody listens: no reads

    _run(run)


def test_live_connections_are_bounded_per_student_and_in_all():
    async def run():  # noqa: ANN202
        hub = Hub(lambda code: {}, tick=0.01, max_streams=3 * PER_VOTER)
        held = [hub.admit("ROOM1", "replayed-cookie") for _ in range(PER_VOTER)]
        with pytest.raises(Full):  # one cookie opening thousands of views holds PER_VOTER
            hub.admit("ROOM1", "replayed-cookie")
        others = [hub.admit("ROOM1", f"student-{i:04d}") for i in range(2 * PER_VOTER)]  # the hall is not held up
        with pytest.raises(Full):
            hub.admit("ROOM1", "one-more-student")
        hub.leave("ROOM1", "replayed-cookie", held.pop())
        hub.admit("ROOM1", "one-more-student")
        assert hub.streams == 3 * PER_VOTER and len(others) == 2 * PER_VOTER

    _run(run)


def test_the_page_never_writes_text_as_markup():
    script = (ROOT / "app" / "hall" / "hall.js").read_text()
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", script)
    assert "textContent" in script
    page = (ROOT / "app" / "hall" / "page.html").read_text()
    assert "{" not in page  # static: nothing of a class or a user is ever put into it


def _luminance(hex_colour: str) -> float:
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _ratio(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_its_colours_meet_wcag_aa_in_light_and_dark_mode():
    css = (ROOT / "app" / "hall" / "hall.css").read_text()
    blocks = re.findall(r":root\s*\{([^}]*)\}", css)
    assert len(blocks) == 2  # light, and dark under prefers-color-scheme
    for block in blocks:
        v = dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-fA-F]{6})", block))
        for fg, bg in (("fg", "bg"), ("muted", "bg"), ("muted", "card"), ("accent", "bg"), ("on-accent", "accent"),
                       ("good", "bg"), ("warn", "bg")):
            assert _ratio(v[fg], v[bg]) >= 4.5, (fg, bg, v[fg], v[bg])  # text: AA
        for fg, bg in (("bar", "card"), ("line", "bg")):
            assert _ratio(v[fg], v[bg]) >= 3.0, (fg, bg)  # marks and borders: AA for graphics


def test_the_join_link_names_the_light_view_where_the_server_serves_it(monkeypatch):
    from app import class_links, lecturer_route

    monkeypatch.setattr(lecturer_route, "_served", True)
    assert class_links.join_link("K7M4QX") == "_layerlab/hall?class=K7M4QX"
    monkeypatch.setattr(lecturer_route, "_served", False)
    assert class_links.join_link("K7M4QX") == "?join=K7M4QX"


def test_a_script_opening_views_with_fresh_cookies_is_bounded_by_the_join_bucket(db, room, monkeypatch):
    monkeypatch.setenv("LAYERLAB_JOIN_BURST", "5")
    monkeypatch.setenv("LAYERLAB_JOINS_PER_MINUTE", "0")

    async def run():  # noqa: ANN202
        app, said = _app(), []
        for _ in range(12):  # each a fresh browser from one address: a new cookie jar
            phone = Phone(app, address="10.4.4.4")
            status, _, body = await phone.call("POST", "/_layerlab/hall/join", f"code={room.code}")
            said.append(status)
            if status == 200:
                assert (await phone.call("GET", f"/_layerlab/hall/state?class={room.code}"))[0] == 200
        assert said == [200] * 5 + [429] * 7, said
        neighbour = Phone(app, address="10.5.5.5")  # another network is not held up by it
        assert (await neighbour.call("POST", "/_layerlab/hall/join", f"code={room.code}"))[0] == 200

    _run(run)


def test_closing_a_hub_ends_every_stream_and_admits_no_more():
    async def run():  # noqa: ANN202
        hub = Hub(lambda code: {"step": 1}, tick=0.01, max_streams=10)
        q = hub.admit("ROOM1", "voter-aaaaaaaa")
        stream = hub.events("ROOM1", q)
        await stream.__anext__()
        hub.close()  # what the server's SIGTERM does (app/layerlab_asgi.py)
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(stream.__anext__(), timeout=30)
        with pytest.raises(Full):
            hub.admit("ROOM1", "voter-bbbbbbbb")

    _run(run)
