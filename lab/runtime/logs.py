"""The lab's logging, set up once per process: the `layerlab` logger writes to standard error with a timestamp.

Why: the lab's modules log under `layerlab.*` (a prediction the database refused, a job resubmitted, a cluster
restarted), but nothing gave those loggers a handler, so Python's last resort dropped everything below WARNING and
printed the rest without a time. `configure()` is called where a process starts: the CLI (lab/cli), the server
(app/serve.py), the page shell for `streamlit run` (app/shell.py) and each Dask worker (lab/runtime/engine/worker.py
`prepare_worker`). LAYERLAB_LOG_LEVEL (lab/runtime/settings.py) sets how much.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from typing import TextIO

from lab.runtime import settings

# Plumbing: logging cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
# A password in a URL (`postgresql+psycopg://user:secret@host/db`, LAYERLAB_DB) is masked wherever it reaches a line,
# an exception's text included: a database driver's error may quote the URL it was given.
_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s]+@", re.IGNORECASE)
_lock = threading.Lock()


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return _PASSWORD.sub(r"\1***@", super().format(record))


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record comes: Streamlit and pytest replace it after start-up."""

    @property
    def stream(self) -> TextIO:  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _: object) -> None:
        pass


def _level() -> int:
    try:
        return getattr(logging, settings.get("LAYERLAB_LOG_LEVEL").upper())
    except settings.SettingError:  # said by the start-up check (settings.errors); logging must not stop a worker
        return logging.INFO


def configure(warn_unknown: bool = True) -> logging.Logger:
    """Give the `layerlab` logger its stderr handler and LAYERLAB_LOG_LEVEL's level, once per process (later calls
    return it unchanged). `warn_unknown`: log a warning for each LAYERLAB_ variable that names no setting (a typo);
    False in worker processes, which share the server's environment and would repeat each warning."""
    logger = logging.getLogger("layerlab")
    with _lock:
        if any(isinstance(h, _Stderr) for h in logger.handlers):
            return logger
        handler = _Stderr()
        handler.setFormatter(_Formatter(FORMAT, DATE_FORMAT))
        logger.addHandler(handler)
        logger.setLevel(_level())
    if warn_unknown:
        for name in settings.unknown():  # the name only: a value may be a secret
            logger.getChild("settings").warning("%s is not a Layer Lab setting (see README.md, Settings); ignored",
                                                name)
    return logger
