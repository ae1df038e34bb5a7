"""The server's lecturer route: a ticket in, the lecturer's pass out as an HttpOnly cookie (issue 60, item 5b).

A page script could only ever set a cookie a page script can read, so the key used to sit for 30 days in a cookie any
script on the page (an injected one, an extension) could read. Now the page that holds the key (typed, or from Start
a class) gets a single-use ticket (workshop_db.lecturer_ticket, 60 s) and posts it here from the page itself (a
same-origin fetch, so its session goes on; the ticket travels in the body, never in an address). The answer sets
`layerlab_lecturer_CODE` to the lecturer's pass (lab/classroom/lecturer_pass.py: an HMAC under the server's
secret, never the key) as HttpOnly, SameSite=Strict, Path=/, Secure when the page is https, for PASS_HOURS; the
pages read it back from the request (st.context.cookies) and check it in constant time. POST .../forget deletes
the cookie of a closed class (a script cannot delete an HttpOnly cookie).

Streamlit serves the route when it runs app/layerlab_asgi.py (an `st.App`: `make app`, app/serve.py). Run as plain
`streamlit run app/main.py` there is no route (`served()` is False): the key then stays in the page session only,
and a reload asks for it again.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Optional
from urllib.parse import parse_qsl, urlsplit

from lab.classroom import class_checks, class_engine, lecturer_pass
from lab.classroom import workshop_db as wdb

PATH = "_layerlab/lecturer"  # relative to the page (pages live one level under the base path)
COOKIE = "layerlab_lecturer_"  # + the class's code
MAX_BODY = 512  # a ticket is 43 characters; a form of a few fields at most
log = logging.getLogger("layerlab.workshop")
_served = False


def served() -> bool:
    """Whether this process serves the route (the page then asks for the pass cookie; otherwise it keeps the key
    in the session only)."""
    return _served


@functools.lru_cache(maxsize=4)
def _database(url: str) -> wdb.Workshop:
    return wdb.Workshop(url)


def _same_origin(headers: Any) -> bool:
    """A post from the lab's own page: a browser says where a fetch came from (Sec-Fetch-Site, Origin), so another
    site cannot plant its class's pass in a lecturer's browser."""
    site = headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return False
    origin = headers.get("origin")
    return origin is None or urlsplit(origin).netloc == headers.get("host", "")


def _secure(headers: Any, scheme: str) -> bool:
    """Secure when the page is https: as the browser's Origin says (behind a proxy that ends TLS the request itself
    is http)."""
    return scheme == "https" or (headers.get("origin") or "").startswith("https:")


def cookie_header(code: str, value: str, age: int, secure: bool) -> str:
    """The Set-Cookie value of the lecturer cookie of class `code` (age 0 deletes it)."""
    flags = f"Max-Age={int(age)}; Path=/; HttpOnly; SameSite=Strict" + ("; Secure" if secure else "")
    return f"{COOKIE}{code}={value}; {flags}"


def _form(body: bytes) -> dict[str, str]:
    try:
        return dict(parse_qsl(body.decode("ascii"), max_num_fields=4))
    except (UnicodeDecodeError, ValueError):
        return {}


def exchange(headers: Any, scheme: str, body: bytes, url: Optional[str] = None) -> tuple[int, Optional[str]]:
    """(status, Set-Cookie or None) for a post of `ticket=...`: 204 with the pass cookie, 403 for a ticket that was
    used, expired, never issued or came from another site, 400 for anything else. Synchronous (a database call)."""
    if not _same_origin(headers):
        return 403, None
    if len(body) > MAX_BODY:
        return 400, None
    ticket = _form(body).get("ticket")
    if not isinstance(ticket, str) or not lecturer_pass.TICKET.fullmatch(ticket):
        return 400, None
    found = _database(url or class_engine.default_url()).redeem_ticket(ticket)
    if found is None:
        log.info("a lecturer ticket was refused (used, expired or never issued)")
        return 403, None
    code, pass_ = found
    return 204, cookie_header(code, pass_, lecturer_pass.PASS_HOURS * 3600, _secure(headers, scheme))


def forget(headers: Any, scheme: str, body: bytes) -> tuple[int, Optional[str]]:
    """(status, Set-Cookie or None) for a post of `code=...`: 204 with the deleted cookie of that class."""
    if not _same_origin(headers) or len(body) > MAX_BODY:
        return 403, None
    try:
        code = class_checks.class_code(_form(body).get("code", ""))
    except wdb.Rejected:
        return 400, None
    return 204, cookie_header(code, "", 0, _secure(headers, scheme))


async def bounded_body(request: Any, limit: int = MAX_BODY) -> bytes:
    """A request's body, read no further than one chunk past `limit` (a larger body is refused by its length)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            break
    return body


def routes(base: str = "") -> list[Any]:
    """The Starlette routes (POST only) under the server's base path; marks this process as serving them."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    global _served

    def answer(status: int, cookie: Optional[str]) -> Response:
        headers = {"Cache-Control": "no-store"}
        if cookie is not None:
            headers["Set-Cookie"] = cookie
        return Response(status_code=status, headers=headers)

    async def _exchange(request: Request) -> Response:
        body = await bounded_body(request)
        try:
            status, cookie = await run_in_threadpool(exchange, request.headers, request.url.scheme, body)
        except Exception:  # noqa: BLE001 - the page keeps the key in its session; details in the log
            log.exception("a lecturer ticket could not be checked")
            return answer(503, None)
        return answer(status, cookie)

    async def _forget(request: Request) -> Response:
        return answer(*forget(request.headers, request.url.scheme, await bounded_body(request)))

    prefix = "/" + "/".join(p for p in (base.strip("/"), PATH) if p)
    _served = True
    return [Route(prefix, _exchange, methods=["POST"]), Route(prefix + "/forget", _forget, methods=["POST"])]
