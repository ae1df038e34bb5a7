"""Every `LAYERLAB_*` environment setting, declared once: its default, how it is read and what it means.

Why one table: settings were read with bare `int(os.environ[...])` in many files, so a typo in a course's setting was a
traceback (at import, for some). Here each value is parsed by its declared kind, and a bad one is a `SettingError`
whose message is one line naming the variable, the value and what is allowed. `check_all()` reads every setting
once (the CLI and the server call it at start, so a typo stops them with that line), and `markdown_table()` is the
README's settings table (tests/test_settings.py keeps the two equal).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

# Plumbing: reading a setting cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True


class SettingError(ValueError):
    """A setting whose value cannot be read; its message is one line naming the variable."""


@dataclass(frozen=True)
class Kind:
    """How a setting's text becomes a value: `parse` raises ValueError with what is allowed."""

    words: str  # what is allowed, for the error line and the README
    parse: Callable[[str], Any]


def whole(lo: int, hi: Optional[int] = None) -> Kind:
    """A whole number in [lo, hi]."""
    span = f"a whole number >= {lo}" if hi is None else f"a whole number from {lo} to {hi}"

    def parse(text: str) -> int:
        try:
            n = int(text.strip())
        except ValueError:
            raise ValueError(span) from None
        if n < lo or (hi is not None and n > hi):
            raise ValueError(span)
        return n

    return Kind(span, parse)


def or_unset(kind: Kind) -> Kind:
    """`kind`, or None when the text is empty: for a setting whose default is computed where it is used."""
    return Kind(kind.words, lambda text: kind.parse(text) if text.strip() else None)


def _flag(text: str) -> bool:
    # Only 1 and 0: lab/runtime/quick.py reads LAYERLAB_QUICK itself (any value but 0 is on; editing it would re-key
    # every stored result), so a `false` accepted here would be read as on there.
    t = text.strip()
    if t in ("", "0"):
        return False
    if t == "1":
        return True
    raise ValueError("1 or 0")


FLAG = Kind("1 or 0", _flag)
TEXT = Kind("any text", lambda text: text.strip())


def choice(*names: str) -> Kind:
    allowed = " or ".join(repr(n) for n in names)

    def parse(text: str) -> str:
        t = text.strip().lower()
        if t not in names:
            raise ValueError(allowed)
        return t

    return Kind(allowed, parse)


def _memory(text: str) -> str:
    from dask.utils import parse_bytes  # dask is a dependency; its parser is the one its nanny applies

    t = text.strip()
    try:
        if parse_bytes(t) <= 0:
            raise ValueError
    except (ValueError, TypeError):
        raise ValueError("a size such as 3GiB or 2000MB") from None
    return t


MEMORY = Kind("a size such as 3GiB or 2000MB", _memory)


def _items(text: str) -> tuple[str, ...]:
    return tuple(a.strip() for a in text.split(",") if a.strip())


LIST = Kind("comma-separated values", _items)


def _networks(text: str) -> tuple[Any, ...]:
    from lab.runtime.addresses import networks  # ipaddress only: the one reader of proxy ranges

    return networks(_items(text))


NETWORKS = Kind("comma-separated addresses or ranges such as 10.0.0.1, 10.0.0.0/8 or 2001:db8::/32", _networks)


@dataclass(frozen=True)
class Setting:
    name: str
    default: str  # the text read when the variable is unset or empty ("" = none)
    kind: Kind
    meaning: str
    shown_default: str = ""  # how the README names the default where the text is empty or computed

    def read(self, env: Optional[Mapping[str, str]] = None) -> Any:
        raw = (os.environ if env is None else env).get(self.name, "")
        text = raw if raw.strip() else self.default
        try:
            return self.kind.parse(text)
        except ValueError as exc:
            raise SettingError(f"{self.name}={raw!r} is not allowed: use {exc or self.kind.words}") from None


_TABLE: tuple[Setting, ...] = (
    Setting("LAYERLAB_CACHE", "", TEXT, "where the store lives", "`cache/` in the checkout (installed: the user's "
            "cache folder)"),
    Setting("LAYERLAB_THREADS", "1", whole(1, 64), "torch threads per process (1 avoids oversubscribing a small "
            "shared machine)"),
    Setting("LAYERLAB_LANES", "1", FLAG, "a job whose work splits (the all-orders walk, IOT's orders trained alone) "
            "borrows a core nobody computes on and runs pieces on it, same numbers; `0` switches it off"),
    Setting("LAYERLAB_RECIPE_SEEDS", "3", whole(1, 12), "how many training seeds a view of quick-to-train models "
            "pools its recipe claims over without a click (at least 3 to pool; `1`: the claims at one seed, with the "
            "seeds offered)"),
    Setting("LAYERLAB_CORES", "", or_unset(whole(1)), "how many cores this machine's jobs share (a whole number; "
            "e.g. under a CPU quota)", "the cores this process may use"),
    Setting("LAYERLAB_CORES_DIR", "", TEXT, "where the per-machine core leases live (`lab/runtime/cores.py`); "
            "processes that share it share the count", "a folder of this user's in the temp folder"),
    Setting("LAYERLAB_ENGINE", "dask", choice("dask", "threads"), "where jobs run: `dask` (a local cluster of worker "
            "processes, one per core; see docs/ARCHITECTURE.md) or `threads` (2 threads in the server)"),
    Setting("LAYERLAB_SCHEDULER", "", TEXT, "with `dask`: the address of an existing cluster (`tls://host:8786`); "
            "unset = a local cluster, one worker per core", "unset"),
    Setting("LAYERLAB_TLS_CA", "", TEXT, "with a `tls://` scheduler: the cluster's own CA certificate (a PEM file); "
            "the scheduler and workers must present certificates it signed", "unset"),
    Setting("LAYERLAB_TLS_CERT", "", TEXT, "with a `tls://` scheduler: this server's certificate (PEM), signed by "
            "that CA", "unset"),
    Setting("LAYERLAB_TLS_KEY", "", TEXT, "with a `tls://` scheduler: that certificate's private key (PEM, readable "
            "by the server's user only)", "unset"),
    Setting("LAYERLAB_ALLOW_PLAINTEXT_CLUSTER", "0", FLAG, "`1` lets `LAYERLAB_SCHEDULER` be a plain `tcp://` "
            "address off this machine (logged as a warning at every start), only for a network no one else reaches; "
            "otherwise it is refused"),
    Setting("LAYERLAB_WORKER_MEMORY", "3GiB", MEMORY, "with a local Dask cluster: memory bound of each worker (its "
            "nanny restarts a worker that reaches 95 % of it; the job reruns)"),
    Setting("LAYERLAB_WORKER_NICE", "10", whole(0, 19), "with `dask`: niceness of worker processes (page views stay "
            "responsive); `0` on a machine shared with other heavy work"),
    Setting("LAYERLAB_QUICK", "0", FLAG, "`1` trains every model for one epoch: for UI smoke tests only, never for "
            "reported numbers", "unset"),
    Setting("LAYERLAB_DB", "", TEXT, "workshop predictions: any SQLAlchemy URL, e.g. "
            "`postgresql+psycopg://user@host/layerlab` for several app servers (its driver: `pip install "
            "\"layer-lab[postgres]\"`)", "SQLite in the store"),
    Setting("LAYERLAB_CLASSES_PER_HOUR", "10", whole(1), "classes one network address may start in an hour (Start "
            "a class hands out the code and its key; raise it when many lecturers share one address)"),
    Setting("LAYERLAB_PAGES_PER_CLIENT", "50", whole(1), "pages (browser tabs) one network address may have open at "
            "once; more are told to close some (raise it when a whole lecture hall reaches the lab through one "
            "address)"),
    Setting("LAYERLAB_WORKING_PER_CLIENT", "6", whole(1), "pages of one address that compute at once (run, or wait "
            "for their jobs); the others wait their turn, using no CPU, and say so (raise it when a hall shares one "
            "address)"),
    Setting("LAYERLAB_TRUSTED_PROXIES", "", NETWORKS, "your reverse proxies' own addresses, comma-separated "
            "(`127.0.0.1` for nginx on this machine): a connection from one of them counts by the rightmost "
            "`X-Forwarded-For` entry that is not one of them, so a class behind the proxy is not one address; "
            "without it the header is ignored. Name only the proxies (a CDN's published ranges at most): any host "
            "inside a range listed here can name its own address", "(none)"),
    Setting("LAYERLAB_VOTERS_PER_ADDRESS", "1000", whole(1), "workshop: new voters one network address (a /24, an "
            "IPv6 /48) may add to one question of a class: a lecture hall behind one NAT is one address, so this is "
            "the largest hall that can vote from one; a flood of made-up voters stops here"),
    Setting("LAYERLAB_JOIN_BURST", "300", whole(1), "workshop: students one network address may join one class with "
            "at once (each join issues a voter identity, and only joined identities vote): a lecture hall behind one "
            "NAT joins in this burst"),
    Setting("LAYERLAB_JOINS_PER_MINUTE", "20", whole(0), "workshop: how fast that burst refills (joins a minute), "
            "so scripted sessions from one address add at most this many voters a minute once the burst is spent "
            "(`0`: never, the burst is all one address may join)"),
    Setting("LAYERLAB_WRONG_PER_ADDRESS", "30", whole(1), "workshop: wrong class codes, and apart from them wrong "
            "lecturer keys, one network address may try in a minute; then its tries wait the minute out (right "
            "ones never count, so a hall joining with the right code is never held)"),
    Setting("LAYERLAB_VOTES_PER_ADDRESS", "3000", whole(1), "workshop: votes one network address may cast in one "
            "class in a minute (a hall of 1,000 changing their minds)"),
    Setting("LAYERLAB_HALL_STREAMS", "3000", whole(1), "workshop: phones the light student view keeps a live "
            "connection open to at once (each costs a socket and nothing else while the room waits; a few per "
            "joined student, so a script holding one student's cookie cannot take them all)"),
    Setting("LAYERLAB_SECRET_FILE", "", TEXT, "the file of the server's secret that signs voter cookies and keys the "
            "hashes of addresses (made, readable by the server's user only, when missing); several app servers of "
            "one course must share it", "`workshop.secret` in the store's folder"),
    Setting("LAYERLAB_UPLOAD_DAYS", "7", whole(1), "an uploaded CSV that no page has shown for this many days is "
            "deleted (a link naming it then asks for the file again)"),
    Setting("LAYERLAB_UPLOAD_MB_PER_ADDRESS", "25", whole(1), "megabytes of uploaded CSVs one network address may "
            "keep stored, and never more than half of the space the others leave free (the server keeps 200 MB)"),
    Setting("LAYERLAB_WARM", "1", FLAG, "`0` stops a starting server from warming the default views in the "
            "background"),
    Setting("LAYERLAB_LOG_LEVEL", "INFO", choice("debug", "info", "warning", "error"), "how much the server and the "
            "CLI log (to standard error, with timestamps): `debug`, `info`, `warning` or `error`"),
    Setting("LAYERLAB_SOURCE_URL", "", TEXT, "a git URL this lab's code can be cloned from; a Reproduce notebook "
            "opened without a checkout installs the lab from it at the page's exact commit", "the checkout's "
            "`origin`, or the URL pip installed the lab from"),
    Setting("LAYERLAB_REPO", "", TEXT, "a Reproduce notebook: the Layer Lab checkout to run in (else the notebook "
            "finds one above its folder, or installs the lab at the page's commit)", "unset"),
)

SETTINGS: dict[str, Setting] = {s.name: s for s in _TABLE}


def add(setting: Setting) -> Setting:
    """Declare a setting from the module that owns it (it still appears in `check_all` and the README table)."""
    SETTINGS[setting.name] = setting
    return setting


def get(name: str, env: Optional[Mapping[str, str]] = None) -> Any:
    """The value of setting `name` (declared above), parsed; SettingError (one line) when it cannot be read."""
    return SETTINGS[name].read(env)


def check_all(env: Optional[Mapping[str, str]] = None) -> list[str]:
    """One line per setting that cannot be read (empty when all can)."""
    source = os.environ if env is None else env
    problems = []
    for s in SETTINGS.values():
        try:
            s.read(source)
        except SettingError as exc:
            problems.append(str(exc))
    return problems


def errors(env: Optional[Mapping[str, str]] = None) -> list[str]:
    """`check_all` as a command's start-up says it: `layerlab: error: <line>` each (the CLI and the server print them
    on stderr and exit with status 2, a page shows them)."""
    return [f"layerlab: error: {p}" for p in check_all(env)]


def unknown(env: Optional[Mapping[str, str]] = None) -> list[str]:
    """LAYERLAB_ variables that name no setting (likely a typo; the start-up logs a warning for each)."""
    source = os.environ if env is None else env
    return [n for n in sorted(source) if n.startswith("LAYERLAB_") and n not in SETTINGS
            and not n.startswith("LAYERLAB_TEST_")]


def markdown_table() -> str:
    """The README's settings table, made from the declarations."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for s in SETTINGS.values():
        default = s.shown_default or f"`{s.default}`"
        rows.append(f"| `{s.name}` | {default} | {s.meaning} |")
    return "\n".join(rows)
