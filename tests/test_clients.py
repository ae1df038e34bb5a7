"""app/clients.py: a connection counts by its own address unless it comes from a trusted proxy, whose appended
X-Forwarded-For entry (the last; the only one a client cannot write) then counts."""

from app.clients import UNKNOWN, address_of

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
