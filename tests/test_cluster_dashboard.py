"""A newcomer's start prints no "Port 8787 is already in use": the local cluster's scheduler serves no dashboard, and
its HTTP routes (health, metrics), which Dask starts even then, take a free loopback port instead of Dask's default
8787, which another lab or any Dask user on the machine may hold."""

from __future__ import annotations

import socket
import subprocess
from contextlib import contextmanager
from typing import Iterator

import psutil

from lab.runtime.engine import local_cluster

DASK_DEFAULT = 8787


@contextmanager
def _held(port: int) -> Iterator[None]:
    """`port` in use while inside: bound here, unless something else holds it already (the same for the test)."""
    sock = socket.socket()
    try:
        sock.bind(("0.0.0.0", port))
        sock.listen()
    except OSError:
        pass
    try:
        yield
    finally:
        sock.close()


def _stop(proc: subprocess.Popen) -> None:
    local_cluster._ask_to_stop(proc)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        local_cluster._kill_group(proc)


def test_the_local_cluster_asks_for_no_dashboard_port(capfd):
    with _held(DASK_DEFAULT):
        proc, address, _ = local_cluster.spawn_cluster(0)  # a scheduler, no workers: a newcomer's start makes it first
        try:
            listening = [c.laddr for c in psutil.Process(proc.pid).net_connections("inet")
                         if c.status == psutil.CONN_LISTEN]
        finally:
            _stop(proc)
    err = capfd.readouterr().err  # the cluster's process writes to this process's stderr, which capfd holds
    assert "already in use" not in err and str(DASK_DEFAULT) not in err, err
    assert address.startswith("tls://127.0.0.1:")
    assert listening and all(a.ip == "127.0.0.1" and a.port != DASK_DEFAULT for a in listening), listening
