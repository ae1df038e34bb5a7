"""Which network address a page session comes from: the one every per-client bound (open pages, turns, jobs, votes)
counts by.

Behind a reverse proxy (nginx, a university's gateway) every student's connection comes from the proxy, so one
address would hold the whole class. LAYERLAB_TRUSTED_PROXIES names the proxies' addresses (comma-separated); a
connection from one of them is counted by the address the proxy appended to X-Forwarded-For (its last entry, the
one a client cannot forge: whatever a client sends itself stands to the left of it). Without the setting, or from
any other address, the connection's own address counts and the header is ignored, so nobody can pick an address by
sending the header.
"""

from __future__ import annotations

from typing import Mapping, Optional

from lab.runtime import settings
from lab.runtime.engine.admission import UNKNOWN


def trusted_proxies() -> frozenset[str]:
    return frozenset(settings.get("LAYERLAB_TRUSTED_PROXIES"))


def address_of(peer: Optional[str], headers: Mapping[str, str], trusted: frozenset[str]) -> str:
    """The client's address: `peer` (the connection's), or, when `peer` is a trusted proxy, the last address of its
    X-Forwarded-For header; UNKNOWN when there is none."""
    if not isinstance(peer, str) or not peer:
        return UNKNOWN
    if peer not in trusted:
        return peer
    forwarded = next((v for k, v in headers.items() if k.lower() == "x-forwarded-for"), "")
    hops = [h.strip() for h in str(forwarded).split(",") if h.strip()]
    return hops[-1] if hops else peer


def client_address() -> str:
    """This page session's client address (see the module docstring); UNKNOWN outside a page."""
    trusted = trusted_proxies()
    try:
        import streamlit as st

        peer = st.context.ip_address
        headers = dict(st.context.headers) if trusted else {}
    except Exception:  # noqa: BLE001 - bare mode: no session
        return UNKNOWN
    return address_of(peer, headers, trusted)
