"""app/clients.py: a connection counts by its own address unless it comes from a trusted proxy (an address or a
range); then X-Forwarded-For is read from the right, skipping every trusted hop. IPv6 counts by /64."""

import logging
import types

import pytest

from app import clients
from app.clients import UNKNOWN, address_of
from lab.runtime.engine.admission import LOCAL

PROXY = frozenset({"10.0.0.1"})


def test_without_a_trusted_proxy_the_header_is_ignored():
    assert address_of("192.0.2.7", {"X-Forwarded-For": "203.0.113.9"}, frozenset()) == "192.0.2.7"
    assert address_of("192.0.2.7", {"X-Forwarded-For": "203.0.113.9"}, PROXY) == "192.0.2.7"  # not the proxy


def test_behind_the_proxy_each_student_counts_by_the_address_the_proxy_saw():
    assert address_of("10.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, PROXY) == "203.0.113.9"
    assert address_of("10.0.0.1", {"x-forwarded-for": "203.0.113.10"}, PROXY) == "203.0.113.10"
    # a client that sends the header itself only adds entries to the left of the proxy's own
    assert address_of("10.0.0.1", {"X-Forwarded-For": "1.2.3.4, 203.0.113.9"}, PROXY) == "203.0.113.9"
    assert address_of("10.0.0.1", {}, PROXY) == "10.0.0.1"  # the proxy sent no header: the proxy itself


def test_no_address_is_unknown():
    assert address_of(None, {}, PROXY) == UNKNOWN and address_of("", {}, frozenset()) == UNKNOWN


# Issue 45: ranges, X-Forwarded-For read from the right, IPv6 by /64, no address, no connection.
NETS = ("10.0.0.0/8", "127.0.0.1")
CDN = "104.16.0.0/13"


def test_trusted_proxies_are_ranges():
    for proxy in ("10.0.0.1", "10.20.30.40", "10.255.0.9"):
        assert address_of(proxy, {"X-Forwarded-For": "203.0.113.9"}, NETS) == "203.0.113.9"
    assert address_of("11.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, NETS) == "11.0.0.1"  # outside the range
    assert address_of("2001:db8::5", {"X-Forwarded-For": "203.0.113.9"}, ("2001:db8::/32",)) == "203.0.113.9"


def test_a_cdn_then_nginx_chain_is_read_from_the_right_skipping_trusted_hops():
    # the student 198.51.100.7 -> a CDN edge 104.16.0.5 -> nginx 10.0.0.1 -> the lab; the student also sent a header
    chain = {"X-Forwarded-For": "6.6.6.6, 198.51.100.7, 104.16.0.5"}
    assert address_of("10.0.0.1", chain, (*NETS, CDN)) == "198.51.100.7"
    assert address_of("10.0.0.1", chain, NETS) == "104.16.0.5"  # the CDN not listed: it is the client
    # a header sent more than once is one list, in order
    assert address_of("10.0.0.1", [("x-forwarded-for", "6.6.6.6, 198.51.100.7"), ("X-Forwarded-For", "104.16.0.5")],
                      (*NETS, CDN)) == "198.51.100.7"
    assert address_of("10.0.0.1", {"X-Forwarded-For": "10.0.0.7, 10.0.0.2"}, NETS) == "10.0.0.7"  # all trusted
    assert address_of("10.0.0.1", {"X-Forwarded-For": "unknown, 10.0.0.2"}, NETS) == UNKNOWN  # not an address


def test_proxies_write_ports_brackets_and_mapped_addresses():
    assert address_of("10.0.0.1", {"X-Forwarded-For": "192.0.2.1:5678"}, NETS) == "192.0.2.1"
    assert address_of("10.0.0.1", {"X-Forwarded-For": "[2001:db8:1:2::9]:443"}, NETS) == "2001:db8:1:2::/64"
    assert address_of("::ffff:192.0.2.7", {}, ()) == "192.0.2.7"  # a dual-stack socket's view of an IPv4 client


def test_ipv6_counts_per_64():
    one = {address_of(f"2001:db8:1:2:{i:x}::{i:x}", {}, ()) for i in range(1, 1000)}
    assert one == {"2001:db8:1:2::/64"}  # a thousand addresses of one host's /64: one client
    assert address_of("2001:db8:1:3::1", {}, ()) == "2001:db8:1:3::/64"  # the next /64: another
    assert address_of("192.0.2.7", {}, ()) == "192.0.2.7"  # IPv4 per address


def test_addresses_are_truncated_before_they_are_hashed():
    from lab.runtime.addresses import truncated

    assert truncated("192.0.2.77") == truncated("192.0.2.200") == "192.0.2.0/24"
    assert truncated("2001:db8:1:2::/64") == truncated("2001:db8:1:ffff::1") == "2001:db8:1::/48"
    assert truncated(UNKNOWN) == UNKNOWN


def test_the_setting_takes_ranges_and_refuses_what_is_not_one():
    from lab.runtime import settings

    nets = settings.get("LAYERLAB_TRUSTED_PROXIES", {"LAYERLAB_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"})
    assert [str(n) for n in nets] == ["10.0.0.0/8", "127.0.0.1/32"]
    with pytest.raises(settings.SettingError, match="LAYERLAB_TRUSTED_PROXIES.*10.0.0.0/8"):
        settings.get("LAYERLAB_TRUSTED_PROXIES", {"LAYERLAB_TRUSTED_PROXIES": "10.0.0.300"})


class _Context:
    def __init__(self, peer, headers=()):
        self.remote_ip, self.headers, self.cookies = peer, list(headers), {}


def _connected(monkeypatch, context):
    """A page session whose connection has `context` (None: no connection, as in bare mode)."""
    import streamlit.runtime as st_runtime
    import streamlit.runtime.scriptrunner as runner

    client = types.SimpleNamespace(client_context=context) if context is not None else None
    monkeypatch.setattr(runner, "get_script_run_ctx", lambda: types.SimpleNamespace(session_id="s1"))
    monkeypatch.setattr(st_runtime, "get_instance", lambda: types.SimpleNamespace(get_client=lambda sid: client))


def test_a_proxy_on_this_machine_is_seen_and_its_header_read(monkeypatch):
    """Streamlit's st.context.ip_address hides a loopback peer: nginx on the same machine was "unknown"."""
    monkeypatch.setenv("LAYERLAB_TRUSTED_PROXIES", "127.0.0.1")
    _connected(monkeypatch, _Context("127.0.0.1", [("X-Forwarded-For", "198.51.100.7")]))
    assert clients.client_address() == "198.51.100.7"


def test_no_address_is_one_bucket_with_a_warning_and_no_connection_is_local(monkeypatch, caplog):
    monkeypatch.delenv("LAYERLAB_TRUSTED_PROXIES", raising=False)
    monkeypatch.setattr(clients, "_warned", set())
    _connected(monkeypatch, _Context(None))
    with caplog.at_level(logging.WARNING, logger="layerlab.clients"):
        assert clients.client_address() == UNKNOWN
        assert clients.client_address() == UNKNOWN
    assert len([r for r in caplog.records if "no client address" in r.getMessage()]) == 1  # said once
    _connected(monkeypatch, None)
    assert clients.client_address() == LOCAL


def test_an_untrusted_proxy_on_this_machine_is_warned_about(monkeypatch, caplog):
    monkeypatch.delenv("LAYERLAB_TRUSTED_PROXIES", raising=False)
    monkeypatch.setattr(clients, "_warned", set())
    _connected(monkeypatch, _Context("127.0.0.1", [("X-Forwarded-For", "198.51.100.7")]))
    with caplog.at_level(logging.WARNING, logger="layerlab.clients"):
        assert clients.client_address() == "127.0.0.1"
    assert any("LAYERLAB_TRUSTED_PROXIES=127.0.0.1" in r.getMessage() for r in caplog.records)
