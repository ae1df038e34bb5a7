"""What the class database accepts from whoever asks, checked before anything is read or written: the formats of a
class code, a voter, a client, a question and a page, and the refusals (Rejected and its kinds), whose messages are
for the student. lab/classroom/workshop_db.py offers the refusals with its Workshop.
"""

from __future__ import annotations

import re
from typing import Any

CODE = re.compile(r"[A-Za-z0-9-]{3,24}")
TOKEN = re.compile(r"[A-Za-z0-9_-]{8,64}")
CLIENT = re.compile(r"[A-Za-z0-9_-]{1,64}")
QUESTION = re.compile(r"[a-z0-9_.-]{1,64}")
PAGE = re.compile(r"[a-z0-9_]{1,64}")  # a page's name (its file in pages/)
WINDOW = 60.0  # seconds of the flood bounds


class Rejected(ValueError):
    """A vote, class code or question the database refuses; the message is for the student."""


class Flood(Rejected):
    """Too many votes too fast (from one voter, or from one address)."""


class NotLecturer(Rejected):
    """An action that needs the class's lecturer key, asked without it (or with a wrong one)."""


class NotJoined(Rejected):
    """A vote from a voter id the server never issued for the class (its browser did not join it)."""


class Counted(Rejected):
    """A second vote from a voter whose vote on the question is counted already: the first one stands."""


class NotVoting(Rejected):
    """A vote outside the question's voting window (not open yet, closed, or the answer revealed)."""

    def __init__(self, message: str, state: str) -> None:
        super().__init__(message)
        self.state = state


def class_code(text: Any) -> str:
    """The canonical (upper-case) class code, or Rejected saying the format."""
    if not isinstance(text, str) or not CODE.fullmatch(text):
        raise Rejected("a class code is 3 to 24 letters, digits and dashes, like TEST-1")
    return text.upper()


def check(pattern: re.Pattern[str], text: Any, what: str) -> str:
    """`text` when it is a string `pattern` matches whole, or Rejected naming `what`."""
    if not isinstance(text, str) or not pattern.fullmatch(text):
        raise Rejected(f"malformed {what}")
    return text
