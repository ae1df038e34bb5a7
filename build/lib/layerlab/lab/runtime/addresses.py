"""Network addresses as the lab counts and hashes them (no Streamlit; app/clients.py reads them from a connection).

Why not the address text itself:
- one IPv6 host is handed a whole /64 (privacy extensions rotate addresses inside it), so counting IPv6 by address
  let one laptop count as thousands of clients; every per-address bound counts IPv6 by its /64 (`bucket`);
- an address is personal data, and a hash of a single address is reversed by hashing every address of a campus
  range (a /16 is 65,536 guesses); what is hashed for the workshop database and the upload records is the address
  truncated to its /24 (IPv4) or /48 (IPv6) (`truncated`), and with a secret that is not stored beside the hashes
  (lab/runtime/secret.py);
- trusted proxies are ranges (`10.0.0.0/8`, `2001:db8::/32`), not exact strings (`networks`, `within`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Iterable, Optional, Union

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

IP = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
COUNT_V6 = 64  # one IPv6 subscriber's prefix: the unit every per-address bound counts
HASH_V4, HASH_V6 = 24, 48  # what is kept of an address before it is hashed
_PORT_V4 = re.compile(r"(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}")
_BRACKETED = re.compile(r"\[([0-9A-Fa-f:.]+)(?:%[^\]]*)?\](?::\d{1,5})?")


def parse(text: object) -> Optional[IP]:
    """The address in `text` (a connection's peer or one X-Forwarded-For entry), or None when it is not one.

    Accepted as proxies write them: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`, `[2001:db8::1]:443`, a zone
    (`fe80::1%eth0`); an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, a dual-stack socket's view of an IPv4 client)
    is that IPv4 address. Anything else (`unknown`, an obfuscated nginx identifier, garbage) is None."""
    if not isinstance(text, str):
        return None
    t = text.strip().strip('"')
    m = _BRACKETED.fullmatch(t) or _PORT_V4.fullmatch(t)
    if m:
        t = m.group(1)
    t = t.split("%", 1)[0]
    try:
        ip = ipaddress.ip_address(t)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def bucket(ip: IP) -> str:
    """What the per-address bounds count by: an IPv4 address itself, an IPv6 address's /64 (`2001:db8:1:2::/64`)."""
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, COUNT_V6), strict=False))
    return str(ip)


def truncated(text: str) -> str:
    """What is hashed of a client: its /24 (IPv4) or /48 (IPv6) network; `text` is an address or a `bucket`. Text
    that is neither (the lab's markers for a client without an address) is returned as it is."""
    ip: Optional[IP] = parse(text)
    if ip is None and "/" in text:
        try:
            ip = ipaddress.ip_network(text.strip(), strict=False).network_address
        except ValueError:
            ip = None
    if ip is None:
        return text
    bits = HASH_V4 if isinstance(ip, ipaddress.IPv4Address) else HASH_V6
    return str(ipaddress.ip_network((ip, bits), strict=False))


def network(text: str) -> Network:
    """One trusted-proxy entry: an address (`10.0.0.1`, a network of one) or a range (`10.0.0.0/8`); ValueError
    saying what is allowed."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"addresses or ranges such as 10.0.0.1, 10.0.0.0/8 or 2001:db8::/32 ({text.strip()!r} is "
                         f"neither)") from None


def networks(items: Iterable[str]) -> tuple[Network, ...]:
    """Every entry of a list of addresses and ranges (`network` each)."""
    return tuple(network(i) for i in items if i.strip())


def within(ip: IP, nets: Iterable[Network]) -> bool:
    """Whether `ip` lies in one of `nets` (an IPv4 address never lies in an IPv6 range, nor the reverse)."""
    return any(ip.version == n.version and ip in n for n in nets)
