"""A course cluster no stranger can use (issue 45, item 5): which LAYERLAB_SCHEDULER addresses the lab connects to and
how (`cluster_security`), and a real `dask scheduler` started over TLS as the course deployment starts it, which
refuses a client without the cluster's certificate while the lab's own engine connects."""

import logging
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.runtime.engine.cluster import DaskEngine
from lab.runtime.engine.security import PLAINTEXT_WARNING, cluster_security
from lab.runtime.settings import SettingError
from lab.runtime.store import Store

from .browser import free_port
from .tls_certs import client_env, dask_tls_args, handshake, make_certs

ROOT = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).parent / "dask")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def test_a_loopback_tcp_scheduler_needs_no_certificates():
    for address in ("tcp://127.0.0.1:8786", "127.0.0.1:8786", "tcp://localhost:8786", "tcp://[::1]:8786",
                    "tcp://127.0.0.2:8786"):
        assert cluster_security(address, {}) is None, address


@pytest.mark.parametrize("address", ["tcp://10.0.0.5:8786", "tcp://sched.example.edu:8786", "10.0.0.5:8786",
                                     "tcp://0.0.0.0:8786", "tcp://[2001:db8::1]:8786"])
def test_a_plain_scheduler_off_the_loopback_is_refused(address):
    with pytest.raises(SettingError, match="LAYERLAB_ALLOW_PLAINTEXT_CLUSTER=1") as refused:
        cluster_security(address, {})
    text = str(refused.value)
    assert "\n" not in text and address.split("//")[-1].split(":")[0] not in text  # a page may show it: no address
    with pytest.raises(SettingError):
        cluster_security(address, {"LAYERLAB_ALLOW_PLAINTEXT_CLUSTER": "0"})


def test_plaintext_when_allowed_warns_at_every_start(caplog, monkeypatch, tmp_path):
    monkeypatch.setenv("LAYERLAB_ALLOW_PLAINTEXT_CLUSTER", "1")
    # Nothing is connected to (tests reach loopback addresses only): the check is what runs as an engine starts.
    monkeypatch.setattr(DaskEngine, "_connect", lambda self: self._ready.set())
    with caplog.at_level(logging.WARNING, logger="layerlab.engine"):
        for _ in range(2):
            DaskEngine(address="tcp://10.0.0.5:8786", store=Store(tmp_path)).close()
    warned = [r for r in caplog.records if r.getMessage() == PLAINTEXT_WARNING]
    assert len(warned) == 2


def test_a_refused_scheduler_stops_the_engine_before_it_connects(caplog, monkeypatch, tmp_path):
    monkeypatch.delenv("LAYERLAB_ALLOW_PLAINTEXT_CLUSTER", raising=False)
    connects = []
    monkeypatch.setattr(DaskEngine, "_connect", lambda self: connects.append(self))
    with caplog.at_level(logging.ERROR, logger="layerlab.engine"), pytest.raises(ValueError, match="plain tcp"):
        DaskEngine(address="tcp://10.0.0.5:8786", store=Store(tmp_path))
    assert connects == []
    assert any("refused" in r.getMessage() for r in caplog.records)  # the operator reads why in the server's log


def test_tls_needs_all_three_files(certs, tmp_path):
    env = client_env(certs)
    security = cluster_security("tls://127.0.0.1:8786", env)
    assert security.require_encryption
    assert security.tls_ca_file == str(certs["ca"]) and security.tls_client_cert == str(certs["client"])
    for name in env:
        with pytest.raises(SettingError, match=name):
            cluster_security("tls://127.0.0.1:8786", {k: v for k, v in env.items() if k != name})
        with pytest.raises(SettingError, match=f"{name} names no readable file"):
            cluster_security("tls://127.0.0.1:8786", {**env, name: str(tmp_path / "missing.pem")})
    with pytest.raises(SettingError, match="not a tls:// address"):  # certificates meant for TLS, plain address
        cluster_security("tcp://127.0.0.1:8786", env)
    with pytest.raises(SettingError, match="not supported"):
        cluster_security("ws://127.0.0.1:8786", {})


def test_a_readable_key_is_warned_about(certs, caplog, tmp_path):
    key = tmp_path / "open-key.pem"
    key.write_bytes(certs["client-key"].read_bytes())
    key.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="layerlab.engine"):
        cluster_security("tls://127.0.0.1:8786", {**client_env(certs), "LAYERLAB_TLS_KEY": str(key)})
    assert any("0600" in r.getMessage() for r in caplog.records)
    assert not any(key.read_text()[40:80] in r.getMessage() for r in caplog.records)


@pytest.fixture(scope="module")
def tls_scheduler(certs, tmp_path_factory):
    """A `dask scheduler` over TLS, started with the options the course deployment uses (tests/test_deployment.py)."""
    port = free_port()
    log = tmp_path_factory.mktemp("scheduler") / "scheduler.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([DASK, "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", str(port),
                                 "--no-dashboard", *dask_tls_args(certs)], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and "Scheduler at:" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        assert proc.poll() is None, log.read_text()
        yield f"tls://127.0.0.1:{port}", port
    finally:
        proc.kill()
        proc.wait(30)


def test_the_scheduler_refuses_a_client_without_the_clusters_certificate(certs, tls_scheduler):
    address, port = tls_scheduler
    trusting = ssl.create_default_context(cafile=str(certs["ca"]))
    trusting.load_cert_chain(str(certs["client"]), str(certs["client-key"]))
    assert handshake(port, trusting)  # the control: the cluster's own certificate is served
    bare = ssl.create_default_context(cafile=str(certs["ca"]))  # trusts the scheduler, has no certificate itself
    stranger = ssl.create_default_context(cafile=str(certs["ca"]))
    stranger.load_cert_chain(str(certs["stranger"]), str(certs["stranger-key"]))  # signed by another CA
    for ctx in (bare, stranger):
        try:
            assert handshake(port, ctx) == b""
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            pass

    from distributed import Client
    from distributed.security import Security

    with pytest.raises((OSError, TimeoutError)):  # a stranger with a certificate from elsewhere, through Dask
        Client(address, timeout="3s", set_as_default=False,
               security=Security(tls_ca_file=str(certs["ca"]), tls_client_cert=str(certs["stranger"]),
                                 tls_client_key=str(certs["stranger-key"]), require_encryption=True))
    with pytest.raises((OSError, TimeoutError)):  # plain TCP to the TLS port
        Client(f"tcp://127.0.0.1:{port}", timeout="3s", set_as_default=False)


def test_the_engine_connects_with_the_settings(certs, tls_scheduler, monkeypatch, tmp_path):
    address, _ = tls_scheduler
    for name, value in client_env(certs).items():
        monkeypatch.setenv(name, value)
    eng = DaskEngine(address=address, store=Store(tmp_path))
    try:
        assert eng.ready(120), eng.error
        assert eng.client.scheduler_info()["address"] == address
    finally:
        eng.close()
