"""The light student view (issue 61): a small page a student reaches from the class's QR code or code, served beside
the app (app/layerlab_asgi.py's st.App) under `_layerlab/hall`. It shows the lesson's current step, its question and
vote buttons, and after the lecturer's Reveal the answer, the room's tally and the lecturer's figure; updates are
pushed (server-sent events, app/hall_hub.py), so an idle phone costs a socket and no reruns. No experiment code runs
for it: it reads the class database (lab/classroom/hall.py).

Routes (under the server's base path):
- GET  _layerlab/hall?class=CODE      the page (static: the code is read by its script, never written into markup)
- GET  _layerlab/hall/hall.js|.css    its script and style; plotly.js (the figure), cached
- POST _layerlab/hall/join            code=CODE: the voter identity (workshop_db.join, bounded per address), kept
                                      in the class's signed voter cookie (HttpOnly), the full pages' cookie too
- GET  _layerlab/hall/state?class=    the room's state and this student's own vote
- GET  _layerlab/hall/events?class=   the room's state, pushed on every change (joined students only)
- POST _layerlab/hall/vote            class, question, option (an index): one vote per voter per question, only
                                      while voting is open and only on the room's current question
- GET  _layerlab/hall/figure?class=   the lecturer's figure of the current question, once revealed

These cheap routes are not queued behind the page and job bounds (app/clients.py): a phone costs no page session.
What a flood meets: joins (the per-address token bucket), live connections (app/hall_hub.py's bounds), votes (the
database's per-voter and per-address bounds), bodies (MAX_BODY); a forged or foreign cookie is no voter.
"""

from __future__ import annotations

import functools
import gzip
import logging
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qsl

from app import clients, lecturer_route
from app.hall_hub import Full, Hub
from app.lecturer_route import _same_origin, _secure, bounded_body
from lab.classroom import class_checks, class_engine, class_keys, hall
from lab.classroom import workshop_db as wdb

PATH = "_layerlab/hall"
VOTER_COOKIE = "layerlab_voter_"  # + the class's code (app/voters.py's COOKIE: the full pages read it too)
MAX_BODY = 512
HERE = Path(__file__).resolve().parent / "hall"
log = logging.getLogger("layerlab.workshop")
SECURITY = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                                       "script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def database() -> wdb.Workshop:
    """The server's class database: the lecturer route's (one engine and pool per URL in the process)."""
    return lecturer_route._database(class_engine.default_url())


@functools.lru_cache(maxsize=8)
def _asset(name: str) -> tuple[bytes, bytes]:
    """(bytes, gzip of them) of a static file of the page, read once."""
    if name == "plotly.js":
        import plotly

        path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    else:
        path = HERE / name
    data = path.read_bytes()
    return data, gzip.compress(data, 6)


def _code(text: Any) -> Optional[str]:
    try:
        return class_checks.class_code(text or "")
    except wdb.Rejected:
        return None


def _form(body: bytes) -> dict[str, str]:
    try:
        return dict(parse_qsl(body.decode("ascii"), max_num_fields=6))
    except (UnicodeDecodeError, ValueError):
        return {}


def voter_of(db: wdb.Workshop, code: str, cookies: Any) -> Optional[str]:
    """The joined voter a request's cookie names in class `code` (its signature checked), or None."""
    found = db.voter_of(cookies.get(VOTER_COOKIE + code), code)
    return found if found is not None and db.is_joined(code, found) else None


def client_of(db: wdb.Workshop, code: str, peer: Optional[str], headers: Any) -> str:
    """The opaque id the bounds count a request by (its network, keyed with the class's key)."""
    address = clients.address_of(peer, list(headers.items()), clients.trusted_proxies())
    return db.client_id(address, code)


def join(db: wdb.Workshop, code: str, cookies: Any, client: str) -> tuple[str, bool]:
    """(voter, whether it is new): the cookie's voter when it holds one, else a fresh identity (wdb.Rejected, Flood
    when the address's join bucket is empty)."""
    known = voter_of(db, code, cookies)
    if known is not None:
        return known, False
    return db.join(code, client=client), True


def vote(db: wdb.Workshop, code: str, voter: Optional[str], form: dict[str, str], client: str) -> tuple[int, str]:
    """(status, message) of a vote: 204 counted; 403 no voter; 409 not the room's question, voting not open, or
    counted already; 429 a flood bound; 400 a malformed form."""
    if voter is None:
        return 403, "this browser has not joined the class: open the class's link again"
    state = hall.room(db, code)
    if not state.get("open") or not state.get("lesson"):
        return 409, f"class {code} is not open or follows no lesson"
    if form.get("question") != state["question"]:
        return 409, "the room has moved on to another question: here it is"
    try:
        index = int(form.get("option", ""))
    except ValueError:
        return 400, "that is not one of this question's options"
    if not 0 <= index < len(state["options"]):
        return 400, "that is not one of this question's options"
    try:
        db.vote(code, state["question"], state["options"], voter, state["options"][index], client=client)
    except wdb.Flood as why:
        return 429, str(why)
    except wdb.NotJoined as why:
        return 403, str(why)
    except wdb.Rejected as why:
        return 409, str(why)
    return 204, "counted"


def routes(base: str = "") -> list[Any]:
    """The Starlette routes of the light view under the server's base path."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    prefix = "/" + "/".join(p for p in (base.strip("/"), PATH) if p)
    hub = Hub(lambda code: hall.room(database(), code))

    def said(status: int, message: str, **more: Any) -> Response:
        return JSONResponse({"message": message, **more}, status_code=status, headers={"Cache-Control": "no-store"})

    async def page(request: Request) -> Response:
        data, _ = _asset("page.html")
        return Response(data, media_type="text/html; charset=utf-8", headers={**SECURITY, "Cache-Control": "no-cache"})

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ("hall.js", "hall.css", "plotly.js"):
            return Response(status_code=404)
        data, packed = _asset(name)
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        headers = {**SECURITY, "Cache-Control": "public, max-age=86400", "Vary": "Accept-Encoding"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            return Response(packed, media_type=kind, headers={**headers, "Content-Encoding": "gzip"})
        return Response(data, media_type=kind, headers=headers)

    async def _join(request: Request) -> Response:
        if not _same_origin(request.headers):
            return said(403, "a join comes from the lab's own page")
        data = await bounded_body(request, MAX_BODY)
        code = _code(_form(data).get("code")) if len(data) <= MAX_BODY else None
        if code is None:
            return said(400, "that is not a class code: it is the 6 letters and digits on your lecturer's screen")
        db = database()
        try:
            cid = await run_in_threadpool(client_of, db, code, request.client.host if request.client else None,
                                          request.headers)
            vid, new = await run_in_threadpool(join, db, code, request.cookies, cid)
        except wdb.Flood as why:
            return said(429, str(why))
        except wdb.Rejected as why:
            return said(404, str(why))
        except Exception:  # noqa: BLE001 - said on the phone, details in the log
            log.exception("a phone could not join class %s", code)
            return said(503, "the class database is unavailable: try again in a moment")
        response = said(200, "joined", code=code)
        if new:
            signed = db.sign_voter(vid, code)
            response.set_cookie(VOTER_COOKIE + code, signed, max_age=class_keys.CLASS_DAYS * 86400, path="/",
                                httponly=True, samesite="lax", secure=_secure(request.headers, request.url.scheme))
        return response

    async def state(request: Request) -> Response:
        code = _code(request.query_params.get("class"))
        if code is None:
            return said(400, "that is not a class code")
        try:
            room = await hub.state(code)
            vid = await run_in_threadpool(voter_of, database(), code, request.cookies)
            chosen = await run_in_threadpool(hall.mine, database(), code, room["question"], vid) \
                if room.get("lesson") else None
        except Exception:  # noqa: BLE001 - said on the phone, details in the log
            log.exception("could not read class %s for a phone", code)
            return said(503, "the class database is unavailable: try again in a moment")
        return said(200, "ok", room=room, joined=vid is not None, mine=chosen)

    async def events(request: Request) -> Response:
        code = _code(request.query_params.get("class"))
        if code is None:
            return said(400, "that is not a class code")
        try:
            vid = await run_in_threadpool(voter_of, database(), code, request.cookies)
        except Exception:  # noqa: BLE001
            log.exception("could not check a phone's voter cookie")
            return said(503, "the class database is unavailable: try again in a moment")
        if vid is None:
            return said(403, "join the class first")
        try:
            q = hub.admit(code, vid)
        except Full as why:
            return said(429, str(why))

        async def stream() -> Any:
            try:
                async for item in hub.events(code, q):
                    yield item
            finally:
                hub.leave(code, vid, q)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def _vote(request: Request) -> Response:
        if not _same_origin(request.headers):
            return said(403, "a vote comes from the lab's own page")
        data = await bounded_body(request, MAX_BODY)
        form = _form(data) if len(data) <= MAX_BODY else {}
        code = _code(form.get("class"))
        if code is None:
            return said(400, "that is not a class code")
        db = database()
        try:
            vid = await run_in_threadpool(voter_of, db, code, request.cookies)
            cid = await run_in_threadpool(client_of, db, code, request.client.host if request.client else None,
                                          request.headers)
            status, message = await run_in_threadpool(vote, db, code, vid, form, cid)
        except Exception:  # noqa: BLE001 - said on the phone, details in the log
            log.exception("could not store a phone's vote in class %s", code)
            return said(503, "your prediction could not be counted: the class database is unavailable")
        return said(status if status != 204 else 200, message, counted=status == 204)

    async def figure(request: Request) -> Response:
        code = _code(request.query_params.get("class"))
        question = request.query_params.get("question", "")
        if code is None or not class_checks.QUESTION.fullmatch(question):
            return said(400, "that is not a class code or a question")
        try:
            text = await run_in_threadpool(hall.figure, database(), code, question)
        except Exception:  # noqa: BLE001
            log.exception("could not read a figure of class %s", code)
            return said(503, "the class database is unavailable")
        if text is None:
            return said(404, "no figure of this question is shown to the room")
        return Response(text, media_type="application/json", headers={"Cache-Control": "no-store"})

    return [Route(prefix, page, methods=["GET"]), Route(prefix + "/join", _join, methods=["POST"]),
            Route(prefix + "/state", state, methods=["GET"]), Route(prefix + "/events", events, methods=["GET"]),
            Route(prefix + "/vote", _vote, methods=["POST"]), Route(prefix + "/figure", figure, methods=["GET"]),
            Route(prefix + "/{name}", asset, methods=["GET"])]
