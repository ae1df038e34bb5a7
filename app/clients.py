"""Which network address a page session comes from (the one every per-client bound counts by: open pages, turns,
jobs, votes, uploads).

The address:
- the connection's own (Streamlit's client context; its public `st.context.ip_address` hides a loopback peer, which
  is what a reverse proxy on the same machine is);
- from a trusted proxy (LAYERLAB_TRUSTED_PROXIES: addresses or ranges, e.g. `127.0.0.1, 10.0.0.0/8`),
  X-Forwarded-For is read from the right: every hop is the address one proxy saw its peer at, so each hop that is
  itself a trusted proxy is skipped and the first that is not is the client. In a CDN -> nginx chain, nginx sees the
  CDN's address: list the CDN's ranges too and the student's own address counts. A client can only write entries to
  the left of what the proxies appended, so it cannot choose its address; from any other peer the header is ignored;
- IPv6 counts by its /64 (lab/runtime/addresses.py: one host holds a whole /64);
- UNKNOWN when a connection reports no address: one bucket, bounded like any address (the first such page logs a
  warning, since a whole class then shares it); LOCAL when there is no connection at all (bare mode, AppTest),
  bounded per session only.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from typing import Iterable, Mapping, Optional, Union

from lab.runtime import settings
from lab.runtime.addresses import Network, bucket, network, parse, within
from lab.runtime.engine.admission import LOCAL, UNKNOWN

log = logging.getLogger("layerlab.clients")
_warned: set[str] = set()
_warned_lock = threading.Lock()
Headers = Union[Mapping[str, str], Iterable[tuple[str, str]]]


def trusted_proxies() -> tuple[Network, ...]:
    """LAYERLAB_TRUSTED_PROXIES as address ranges."""
    return settings.get("LAYERLAB_TRUSTED_PROXIES")


def _forwarded(headers: Headers) -> list[str]:
    """Every X-Forwarded-For hop, left to right (a request may carry the header more than once: they are one list)."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [hop.strip() for k, v in items if str(k).lower() == "x-forwarded-for" for hop in str(v).split(",")
            if hop.strip()]


def address_of(peer: Optional[str], headers: Headers, trusted: Iterable[Union[str, Network]]) -> str:
    """The client's address as the bounds count it (`bucket`: IPv6 by /64): `peer` (the connection's own), or, when
    `peer` is a trusted proxy, the first X-Forwarded-For hop from the right that is not a trusted proxy (every hop
    trusted: the leftmost); UNKNOWN when the peer, or a hop a trusted proxy wrote, is not an address."""
    nets = tuple(n if isinstance(n, (ipaddress.IPv4Network, ipaddress.IPv6Network)) else network(n) for n in trusted)
    ip = parse(peer)
    if ip is None:
        return UNKNOWN
    if not within(ip, nets):
        return bucket(ip)
    for hop in reversed(_forwarded(headers)):
        ip = parse(hop)
        if ip is None:
            return UNKNOWN
        if not within(ip, nets):
            return bucket(ip)
    return bucket(ip)


def _warn_once(what: str, text: str) -> None:
    with _warned_lock:
        if what in _warned:
            return
        _warned.add(what)
    log.warning(text)


def _connection() -> Optional[tuple[Optional[str], list[tuple[str, str]]]]:
    """(peer address, headers) of this page session's connection, or None without one."""
    try:
        from streamlit import runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        client = runtime.get_instance().get_client(ctx.session_id) if ctx is not None else None
        context = getattr(client, "client_context", None)
        peer = getattr(context, "remote_ip", None)
        if context is None or (peer is not None and not isinstance(peer, str)):  # AppTest's stand-in runtime
            return None
        return peer, [(str(k), str(v)) for k, v in context.headers]
    except Exception:  # noqa: BLE001 - bare mode: no runtime, no session
        return None


def client_address() -> str:
    """This page session's client address (see the module docstring): LOCAL without a connection, UNKNOWN for a
    connection without an address."""
    conn = _connection()
    if conn is None:
        return LOCAL
    peer, headers = conn
    trusted = trusted_proxies()
    address = address_of(peer, headers, trusted)
    if address == UNKNOWN:
        _warn_once("unknown", "a page's connection carries no client address: every such visitor shares one "
                              "address's bounds (pages, turns, jobs, votes). Behind a reverse proxy, name it in "
                              "LAYERLAB_TRUSTED_PROXIES and have it send X-Forwarded-For.")
    else:
        ip = parse(peer)
        if ip is not None and ip.is_loopback and not within(ip, trusted) and _forwarded(headers):
            _warn_once("proxy", f"connections arrive from {ip} with X-Forwarded-For: a proxy on this machine that "
                                f"LAYERLAB_TRUSTED_PROXIES does not name, so every visitor counts as one address. "
                                f"Set LAYERLAB_TRUSTED_PROXIES={ip}.")
    return address

