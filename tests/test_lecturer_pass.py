"""Issue 60, item 5b: the lecturer key was set into a 30-day cookie by a page script, so it could not be HttpOnly and
any script on the page could read it. Now the page posts a single-use ticket to the server's lecturer route
(app/lecturer_route.py), whose answer sets the lecturer's pass (lab/classroom/lecturer_pass.py: an HMAC under the
server's secret, never the key) as an HttpOnly, SameSite=Strict cookie for 12 hours. Here: the route's Set-Cookie,
replayed, expired, foreign and cross-site tickets, forged and stale passes, and that `make app` serves the route
(the page's side, with AppTest: tests/test_app_workshop.py)."""

import hashlib
import secrets
import sys
import time
import types
from pathlib import Path

import pytest
import sqlalchemy as sa

from app import lecturer_route
from lab.classroom import class_keys, class_tables, lecturer_pass
from lab.classroom import workshop_db as wdb

from .lecturer_util import post

ROOT = Path(__file__).resolve().parents[1]
SAME = {"origin": "http://127.0.0.1:8501", "sec-fetch-site": "same-origin"}
ROUTE = "/" + lecturer_route.PATH


@pytest.fixture
def db(monkeypatch) -> wdb.Workshop:
    monkeypatch.setenv("LAYERLAB_CLASSES_PER_HOUR", "100000")
    return wdb.Workshop()


def _class(db: wdb.Workshop) -> tuple[str, str]:
    opened = db.start_class(client=f"tests-{secrets.token_hex(4)}")
    assert opened.key is not None
    return opened.code, opened.key


def _flags(cookie: str) -> tuple[str, str, set[str]]:
    pair, *flags = [part.strip() for part in cookie.split(";")]
    name, _, value = pair.partition("=")
    return name, value, set(flags)


def test_the_route_sets_the_pass_as_an_httponly_strict_cookie_that_holds_no_key(db):
    code, key = _class(db)
    status, cookies = post(ROUTE, f"ticket={db.lecturer_ticket(code, key)}".encode(), SAME)
    assert status == 204 and len(cookies) == 1, (status, cookies)
    name, value, flags = _flags(cookies[0])
    assert name == f"layerlab_lecturer_{code}"
    assert {"HttpOnly", "SameSite=Strict", "Path=/", f"Max-Age={12 * 3600}"} <= flags, flags
    assert "Secure" not in flags  # an http page: a Secure cookie would never be sent back
    assert key not in cookies[0] and class_keys.key_hash(key) not in cookies[0]
    assert lecturer_pass.is_pass(value) and db.is_lecturer(code, value)  # the pass, which presents the class
    db.set_window(code, "q.one", "open", value)  # and does what the key does
    assert db.window(code, "q.one") == "open"
    # Over https (here as the browser's Origin says, behind a proxy that ends TLS; or the request's own scheme)
    for headers, scheme in (({**SAME, "origin": "https://127.0.0.1:8501"}, "http"), (SAME, "https")):
        status, cookies = post(ROUTE, f"ticket={db.lecturer_ticket(code, key)}".encode(), headers, scheme)
        assert status == 204 and "Secure" in _flags(cookies[0])[2], cookies


def test_a_replayed_expired_foreign_or_unknown_ticket_is_refused(db):
    code, key = _class(db)
    ticket = db.lecturer_ticket(code, key)
    assert post(ROUTE, f"ticket={ticket}".encode(), SAME)[0] == 204
    assert post(ROUTE, f"ticket={ticket}".encode(), SAME) == (403, [])  # single use: a replay sets nothing
    old = db.lecturer_ticket(code, key, now=time.time() - lecturer_pass.TICKET_SECONDS - 1)
    assert post(ROUTE, f"ticket={old}".encode(), SAME) == (403, [])  # expired
    assert post(ROUTE, f"ticket={secrets.token_urlsafe(32)}".encode(), SAME) == (403, [])  # never issued
    for body in (b"", b"ticket=", b"ticket=short", f"ticket={key}".encode(), b"ticket=" + b"a" * 600):
        assert post(ROUTE, body, SAME) == (400, []), body[:20]  # not a ticket (the key is not one either)
    closing = db.lecturer_ticket(code, key)
    db.close_class(code, key)
    assert post(ROUTE, f"ticket={closing}".encode(), SAME) == (403, [])  # its class closed meanwhile


def test_another_site_cannot_post_a_ticket(db):
    """Login CSRF: a site that holds a ticket of its own class posts it from the lecturer's browser."""
    code, key = _class(db)
    ticket = db.lecturer_ticket(code, key)
    for headers in ({"origin": "https://evil.example", "sec-fetch-site": "cross-site"},
                    {"origin": "http://evil.example"}, {"sec-fetch-site": "same-site"}):
        assert post(ROUTE, f"ticket={ticket}".encode(), headers) == (403, []), headers
    assert post(ROUTE, f"ticket={ticket}".encode(), SAME)[0] == 204  # refused unread: still good for the page


def test_a_ticket_needs_the_key_and_is_kept_only_as_its_hash(monkeypatch, tmp_path):
    monkeypatch.setenv("LAYERLAB_CLASSES_PER_HOUR", "100000")
    db = wdb.Workshop(f"sqlite:///{tmp_path / 'workshop.sqlite'}")  # its purge must not spend other tests' tickets
    code, key = _class(db)
    with pytest.raises(wdb.NotLecturer):
        db.lecturer_ticket(code, "not-the-key-0000000000")
    other, _ = _class(db)
    with pytest.raises(wdb.NotLecturer):
        db.lecturer_ticket(other, key)  # one class's key is no other's
    ticket = db.lecturer_ticket(code, key)
    with db.engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(sa.select(class_tables.tickets))]
    assert not [r for r in rows if ticket in map(str, r)]
    assert any(hashlib.sha256(ticket.encode()).hexdigest() in r for r in rows)
    db.purge(now=time.time() + lecturer_pass.TICKET_SECONDS + 1)  # retention drops expired tickets
    with db.engine.connect() as conn:
        assert not conn.execute(sa.select(class_tables.tickets).where(class_tables.tickets.c.code == code)).first()


def test_a_forged_or_stale_pass_is_refused(db):
    code, key = _class(db)
    other, other_key = _class(db)
    found = db.redeem_ticket(db.lecturer_ticket(code, key))
    assert found is not None and found[0] == code
    good = found[1]
    expires, mac = good.split(".")
    flipped = mac[:-1] + ("0" if mac[-1] != "0" else "1")
    later = f"{int(expires) + 3600:010d}.{mac}"  # a longer life with the same MAC
    row = types.SimpleNamespace(term=1, key_hash=class_keys.key_hash(key))
    too_long = lecturer_pass.mint(db.class_key("lecturer", code), row.term, row.key_hash, time.time() + 86400)
    wrong_secret = lecturer_pass.mint(b"another server's secret" * 2, row.term, row.key_hash, time.time())
    for forged in (f"{expires}.{flipped}", later, too_long, wrong_secret, f"{expires}.{'0' * 64}", good + "0",
                   "9999999999." + mac, good.upper()):
        assert not db.is_lecturer(code, forged), forged
        with pytest.raises(wdb.NotLecturer):
            db.set_window(code, "q.one", "open", forged)
    assert not db.is_lecturer(other, good)  # a pass of one class is worth nothing in another
    assert db.is_lecturer(other, other_key) and db.is_lecturer(code, good)
    assert not db.is_lecturer(code, good, now=int(expires) + 1)  # 12 hours, then the key is typed again
    db.close_class(code, good)  # the pass closes its class, and is then worth nothing
    assert not db.is_lecturer(code, good)
    assert not db.check_key(code, good, client="tests-stale")  # ...and counts as a wrong key, like a typed one


def test_the_forget_route_deletes_the_cookie_and_the_routes_follow_the_base_path(db):
    code, key = _class(db)
    status, cookies = post(ROUTE + "/forget", f"code={code}".encode(), SAME)
    assert status == 204 and len(cookies) == 1
    name, value, flags = _flags(cookies[0])
    assert (name, value) == (f"layerlab_lecturer_{code}", "") and {"Max-Age=0", "HttpOnly", "Path=/"} <= flags
    assert post(ROUTE + "/forget", b"code=<x>", SAME) == (400, [])
    assert post(ROUTE + "/forget", f"code={code}".encode(), {"sec-fetch-site": "cross-site"}) == (403, [])
    ticket = db.lecturer_ticket(code, key)
    assert post("/lab" + ROUTE, f"ticket={ticket}".encode(), SAME, base="lab")[0] == 204  # server.baseUrlPath


def test_make_app_serves_the_route(monkeypatch):
    """`make app` (app/serve.py) runs app/layerlab_asgi.py, whose st.App Streamlit's `run` finds and serves with the
    route; plain `streamlit run app/main.py` would not (the page then keeps the key in its session only)."""
    from streamlit.runtime.app_session import AppSession
    from streamlit.web import cli
    from streamlit.web.server.app_discovery import discover_asgi_app

    from app import serve

    monkeypatch.setattr(AppSession, "_handle_clear_cache_request", AppSession._handle_clear_cache_request)
    ran = []
    monkeypatch.setattr(cli, "main", lambda **kw: ran.append(list(sys.argv)))
    monkeypatch.setattr(serve, "start_retention", lambda: None)
    monkeypatch.setattr(serve, "start_engine", lambda: None)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    serve.main(["--server.port", "1"])
    script = Path(ran[0][2])
    assert ran[0][:2] == ["streamlit", "run"] and script == ROOT / "app" / "layerlab_asgi.py"
    found = discover_asgi_app(script)
    assert found.is_asgi_app and found.import_string == "layerlab_asgi:app"
    assert "routes(" in script.read_text() and "lecturer_route" in script.read_text()
    assert not discover_asgi_app(ROOT / "app" / "main.py").is_asgi_app
