"""The trusted-proxy rule as the README and the settings table state it (issue 60, item 5): any host inside a range in
LAYERLAB_TRUSTED_PROXIES may name its own address in X-Forwarded-For, and the README's example was `10.0.0.0/8`, a
range that covers many a campus's student Wi-Fi. The examples now name single proxies, and the rule the docs state
(the proxy's own address; the rightmost X-Forwarded-For entry that is not a listed proxy) is the one app/clients.py
applies."""

import ipaddress
import re
from pathlib import Path

from app.clients import address_of
from lab.runtime import settings

ROOT = Path(__file__).resolve().parents[1]


def _examples(text: str) -> list[str]:
    """Every address or range written in backticks right after a mention of LAYERLAB_TRUSTED_PROXIES."""
    found = []
    for m in re.finditer(r"LAYERLAB_TRUSTED_PROXIES`?[^`]{0,60}\(e\.g\. `([^`]*)`"
                         r"|LAYERLAB_TRUSTED_PROXIES`? \| [^|]* \| [^|(]*\(`([^`]*)`", text):
        found += [part.strip() for part in (m.group(1) or m.group(2)).split(",")]
    return found


def test_the_docs_example_trusted_proxies_are_single_addresses_not_ranges():
    readme = ROOT.joinpath("README.md").read_text()
    meaning = settings.SETTINGS["LAYERLAB_TRUSTED_PROXIES"].meaning
    examples = _examples(readme) + re.findall(r"`([0-9a-f.:/]+)`", meaning)
    assert examples, "the README and the setting give an example of LAYERLAB_TRUSTED_PROXIES"
    for ex in examples:
        assert ipaddress.ip_network(ex, strict=False).num_addresses == 1, f"{ex}: a range, not one proxy"
    for words in ("rightmost", "own address"):
        assert words in meaning, words
    assert "rightmost `X-Forwarded-For` entry" in readme and "may name its own address" in readme


def test_the_rule_the_docs_state_only_the_proxy_is_trusted_and_the_rightmost_other_entry_counts():
    proxy = ("127.0.0.1",)  # the README's example: nginx on the lab's own machine
    student = "10.20.30.40"  # a student on the campus Wi-Fi, sending a header of its own choosing
    assert address_of(student, {"X-Forwarded-For": "192.0.2.1"}, proxy) == student  # cannot pick its address
    # through the proxy: the entry the proxy appended (the rightmost) counts, not the ones the student wrote
    assert address_of("127.0.0.1", {"X-Forwarded-For": "192.0.2.1, 198.51.100.7, " + student}, proxy) == student
    # what the docs warn of: listed as a range, a student's host is a "proxy" and picks the address it likes
    assert address_of(student, {"X-Forwarded-For": "192.0.2.1"}, ("10.0.0.0/8",)) == "192.0.2.1"
