"""Who may use a cluster: the mutual TLS a client of a course scheduler at LAYERLAB_SCHEDULER connects with
(`cluster_security`: a plain tcp:// one only on the loopback, or where an operator allowed it), and the local
cluster's certificate and key, made for each start (`new_credentials`, `local_security`).
"""

from __future__ import annotations

import ipaddress
import logging
import os
from typing import Any, Mapping, Optional

from lab.runtime import settings

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True
log = logging.getLogger("layerlab.engine")


# -- who may use the cluster at LAYERLAB_SCHEDULER ---------------------------------------------------------------
# Whoever reaches a scheduler runs code on its workers, which write the store every app server reads, and can attach
# a worker of their own whose pickled results the servers load. So a cluster off this machine is used only over TLS
# with both sides presenting certificates of the cluster's own CA (Dask's TLS requires and checks the peer's
# certificate on every connection); a plain tcp:// one only on the loopback, or where an operator said so.
TLS_SETTINGS = ("LAYERLAB_TLS_CA", "LAYERLAB_TLS_CERT", "LAYERLAB_TLS_KEY")
ALLOW_PLAINTEXT = "LAYERLAB_ALLOW_PLAINTEXT_CLUSTER"
PLAINTEXT_WARNING = ("LAYERLAB_SCHEDULER is a plain tcp:// cluster off this machine, allowed by "
                     f"{ALLOW_PLAINTEXT}=1: anyone who reaches its port can run code on the workers and hand this "
                     "server results; use tls:// (README: Deploying a course cluster safely)")


def _loopback(host: str) -> bool:
    """Whether `host` is this machine's loopback (by its literal text: a name is not resolved, so a DNS answer cannot
    make a remote host count as local)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cluster_security(address: str, env: Optional[Mapping[str, str]] = None) -> Any:
    """The Dask `Security` a client of the cluster at `address` (LAYERLAB_SCHEDULER) connects with: mutual TLS from
    LAYERLAB_TLS_CA / _CERT / _KEY for a tls:// address; None for a plain tcp:// one on the loopback, or off it where
    LAYERLAB_ALLOW_PLAINTEXT_CLUSTER=1 (a warning each time). Anything else is a `SettingError`, one line naming the
    settings (never the address, which a page may show, nor anything read from the files)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)  # no scheme: Dask's default, tcp
    paths = {name: settings.get(name, env) for name in TLS_SETTINGS}
    if scheme == "tls":
        missing = [name for name, path in paths.items() if not path]
        if missing:
            raise settings.SettingError(f"LAYERLAB_SCHEDULER is a tls:// address, so {', '.join(missing)} must be set "
                                        "too (the cluster's CA certificate, this server's certificate and its key)")
        for name, path in paths.items():
            if not os.path.isfile(path) or not os.access(path, os.R_OK):
                raise settings.SettingError(f"{name} names no readable file")
        if os.stat(paths["LAYERLAB_TLS_KEY"]).st_mode & 0o077:
            log.warning("LAYERLAB_TLS_KEY is readable by other users of this machine: make it 0600")
        from distributed.security import Security

        return Security(tls_ca_file=paths["LAYERLAB_TLS_CA"], tls_client_cert=paths["LAYERLAB_TLS_CERT"],
                        tls_client_key=paths["LAYERLAB_TLS_KEY"], require_encryption=True)
    if scheme != "tcp":
        raise settings.SettingError(f"LAYERLAB_SCHEDULER's {scheme}:// is not supported: use tls://host:port")
    given = [name for name, path in paths.items() if path]
    if given:
        raise settings.SettingError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} set but "
                                    "LAYERLAB_SCHEDULER is not a tls:// address: use tls://host:port")
    try:
        host = parse_host_port(location, 8786)[0]
    except ValueError:
        raise settings.SettingError("LAYERLAB_SCHEDULER is not an address such as tls://host:8786") from None
    if _loopback(host):
        return None
    if not settings.get(ALLOW_PLAINTEXT, env):
        raise settings.SettingError(
            "LAYERLAB_SCHEDULER is a plain tcp:// address off this machine, where anyone who reaches its port could "
            "run code on the workers: use tls:// with LAYERLAB_TLS_CA, LAYERLAB_TLS_CERT and LAYERLAB_TLS_KEY "
            f"(README: Deploying a course cluster safely), or set {ALLOW_PLAINTEXT}=1 on a network no one else "
            "reaches")
    log.warning(PLAINTEXT_WARNING)
    return None


# -- the local cluster's credentials -----------------------------------------------------------------------------
# The loopback is not a boundary: any process on this machine, of any account, reaches 127.0.0.1, and a client of the
# scheduler runs code on the workers as the lab's user (it read the server's secret in a test). So the local cluster
# too speaks mutual TLS, with a key and a self-signed certificate made for each start (Dask's `Security.temporary`):
# the server hands them to the cluster's process in files of a 0700 folder that is gone as soon as the cluster has
# read them, and holds them only in memory after. A client without them cannot connect.
CREDENTIAL_FILES = ("cert.pem", "key.pem")


def local_security(cert: str, key: str) -> Any:
    """Mutual TLS for every role of the local cluster (scheduler, workers, the server's client) from one self-signed
    certificate and its key (PEM text)."""
    from distributed.security import Security

    return Security(require_encryption=True, tls_ca_file=cert, tls_client_cert=cert, tls_client_key=key,
                    tls_scheduler_cert=cert, tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key)


def new_credentials() -> tuple[str, str]:
    """A fresh (certificate, key) pair in PEM, valid for this start of the local cluster only."""
    from distributed.security import Security

    sec = Security.temporary()
    return sec.tls_ca_file, sec.tls_client_key
