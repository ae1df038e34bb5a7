"""The one parser for values a page link carries (`?seed=3&arch=plain`), with no Streamlit in it.

Why a parser of our own: Streamlit's URL binding parses a link's text with Python's int()/float(), which accept
fullwidth and Arabic-Indic digits ("３"), exponents and 400-digit numbers (some of which crash number_input with
an OverflowError), and it silently takes the last of repeated keys. Here a value is accepted only in the exact
form the lab itself writes into links; anything else is rejected with a reason the student can act on.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any, Sequence

# `[0-9]`, not `\d`: `\d` matches every Unicode decimal digit. fullmatch, not `$`: `$` also matches before a
# trailing newline.
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?")
MAX_NUMBER_CHARS = 24  # far more than any control's range needs; bounds the work int() does on hostile input
SHOWN_CHARS = 40  # how much of a rejected value a notice quotes


class Rejected(ValueError):
    """A link value that must not reach a widget; the message says why, in words for the student."""


def url_string(option: Any) -> str:
    """How a URL-bound select box or select slider writes `option` into the link (str of the displayed label)."""
    return str(option)


def single(values: Sequence[str]) -> str:
    """The one value of a key; a key given twice is ambiguous (which did the sender mean?), so it is rejected."""
    if len(values) != 1:
        raise Rejected(f"the link gives it {len(values)} times; give it once")
    if values[0] == "":
        raise Rejected("the value is empty")
    return values[0]


def parse_int(values: Sequence[str], lo: int, hi: int) -> int:
    """A whole number in [lo, hi], written with ASCII digits only."""
    raw = single(values)
    expected = f"expected a whole number from {lo} to {hi}"
    if len(raw) > MAX_NUMBER_CHARS or not _INT.fullmatch(raw):
        raise Rejected(expected)
    value = int(raw)
    if not lo <= value <= hi:
        raise Rejected(expected)
    return value


def parse_float(values: Sequence[str], lo: float, hi: float) -> float:
    """A finite decimal number in [lo, hi] (no exponent, no inf/nan), written with ASCII digits only."""
    raw = single(values)
    expected = f"expected a number from {lo:g} to {hi:g}"
    if len(raw) > MAX_NUMBER_CHARS or not _FLOAT.fullmatch(raw):
        raise Rejected(expected)
    value = float(raw)
    if not (math.isfinite(value) and lo <= value <= hi):
        raise Rejected(expected)
    return value


def parse_choice(values: Sequence[str], options: Sequence[Any]) -> Any:
    """The option whose link string (see url_string) is exactly the value."""
    raw = single(values)
    for option in options:
        if url_string(option) == raw:
            return option
    raise Rejected("expected one of " + ", ".join(url_string(o) for o in options))


def shown(raw: str) -> str:
    """A rejected value as a notice quotes it: short, and with look-alike characters made visible.

    ascii() shows a fullwidth "３" as \\uff13, which is the whole explanation of why it was rejected; backticks are
    escaped so that a hostile value cannot close the notice's code span and inject markdown.
    """
    cut = raw[:SHOWN_CHARS]
    text = ascii(cut)[1:-1].replace("`", "\\x60")
    return text + ("..." if len(raw) > SHOWN_CHARS else "")


def plain(text: object) -> str:
    """Any text for a markdown element, drawn as the same text: HTML escaped and markdown's active characters
    (links, images, emphasis, code) neutralised. For everything a link, a student or an exception brings."""
    escaped = html.escape(str(text), quote=False)
    return re.sub(r"([\\`*_$\[\]()<>#|~!:])", r"\\\1", escaped)


# -- a pinned setting in one link value: pin=arch.plain_k.1 ---------------------------------------------------
# The characters are the ones a browser leaves alone in a query string (letters, digits, "-", ".", "_"), so a
# compared view's link stays readable. A pair is key.value (a value may itself contain dots: layer=blocks.3);
# pairs are joined by "_", which no control's value contains. Only values that differ from the default appear;
# a pin of nothing but defaults is written "default".
PIN_DEFAULTS = "default"
MAX_PIN_CHARS = 400


def pin_text(values: dict[str, str]) -> str:
    """The link value of a pinned setting, from each differing control's link string."""
    for key, text in values.items():
        if "_" in text or "_" in key or "." in key or not text:
            raise ValueError(f"{key}={text!r} cannot be written into a pin")
    return "_".join(f"{k}.{v}" for k, v in values.items()) or PIN_DEFAULTS


def parse_pin(values: Sequence[str], parsers: dict[str, Any]) -> dict[str, Any]:
    """The pinned setting of a link: {key: value} for the controls it names (the rest are their defaults).

    `parsers[key]` is the control's own link parser (parse_int, parse_choice, ...), so a pinned value obeys
    exactly the rules of the control's own link value.
    """
    raw = single(values)
    if len(raw) > MAX_PIN_CHARS:
        raise Rejected(f"a pin is at most {MAX_PIN_CHARS} characters")
    if raw == PIN_DEFAULTS:
        return {}
    out: dict[str, Any] = {}
    for pair in raw.split("_"):
        key, dot, text = pair.partition(".")
        if not dot or not key:
            raise Rejected(f"expected control.value pairs joined by _, like k.1_arch.plain; got {shown(pair)!r}")
        if key not in parsers:
            raise Rejected(f"this page has no control {shown(key)!r}")
        if key in out:
            raise Rejected(f"it pins {shown(key)!r} twice")
        try:
            out[key] = parsers[key]([text])
        except Rejected as why:
            raise Rejected(f"its {key}: {why}") from None
    return out
