"""The lecturer route (app/lecturer_route.py) called as the browser calls it, in this process: a POST through the
Starlette routes, without a server (httpx, which Starlette's TestClient needs, is not installed)."""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Optional

from starlette.applications import Starlette

from app import lecturer_route

TICKET = re.compile(r"ticket=([A-Za-z0-9_-]{43})")


def post(path: str, body: bytes, headers: Optional[dict[str, str]] = None, scheme: str = "http",
         base: str = "") -> tuple[int, list[str]]:
    """(status, Set-Cookie values) of a POST of `body` to `path` (relative to the server's root)."""
    served = lecturer_route._served
    app = Starlette(routes=lecturer_route.routes(base))
    lecturer_route._served = served  # building the routes marks the process as serving them: not in a test
    sent = {"host": "127.0.0.1:8501", "content-type": "application/x-www-form-urlencoded", **(headers or {})}
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": scheme, "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(k.lower().encode(), v.encode()) for k, v in sent.items()],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8501)}
    out: list[dict] = []
    chunks = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        out.append(message)

    # In a thread of its own: a process that drives Chromium (Playwright's sync API) has an event loop running on
    # this thread, where asyncio.run refuses to start another.
    worker = threading.Thread(target=lambda: asyncio.run(app(scope, receive, send)))
    worker.start()
    worker.join(60)
    start = next(m for m in out if m["type"] == "http.response.start")
    cookies = [v.decode() for k, v in start["headers"] if k.decode().lower() == "set-cookie"]
    return start["status"], cookies


def ticket_in(bodies: list[str]) -> Optional[str]:
    for body in bodies:
        found = TICKET.search(body)
        if found:
            return found.group(1)
    return None


def pass_from_page(at, code: str) -> Optional[str]:  # noqa: ANN001 - an AppTest
    """The pass the browser keeps after the page's script posted its ticket (None when the page posts none),
    checked to be set as the server's HttpOnly, SameSite=Strict cookie of class `code`."""
    ticket = ticket_in([h.proto.body for h in at.html])
    if ticket is None:
        return None
    assert any(f'new URL("{lecturer_route.PATH}"' in h.proto.body for h in at.html)
    status, cookies = post("/" + lecturer_route.PATH, f"ticket={ticket}".encode(),
                           {"origin": "http://127.0.0.1:8501", "sec-fetch-site": "same-origin"})
    assert status == 204 and len(cookies) == 1, (status, cookies)
    name, _, rest = cookies[0].partition("=")
    value, _, flags = rest.partition(";")
    assert name == f"{lecturer_route.COOKIE}{code}"
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {f.strip() for f in flags.split(";")}, flags
    return value
