"""Certificates for a test's Dask cluster over TLS, made with the `cryptography` package: a CA of the cluster's own, a
certificate for the scheduler and workers and one for the app servers (both for 127.0.0.1 and localhost), and a
stranger's certificate signed by another CA. Elliptic-curve keys: making them takes milliseconds."""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _ca(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(_name(common))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def _leaf(common: str, ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, folder: Path, stem: str) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            # A Dask node is a server (it listens) and a client (it connects to the others): both uses.
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    (folder / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file = folder / f"{stem}-key.pem"
    key_file.write_bytes(_key_pem(key))
    os.chmod(key_file, 0o600)


def make_certs(folder: Path) -> dict[str, Path]:
    """Write ca.pem, node.pem / node-key.pem (scheduler and workers), client.pem / client-key.pem (app servers) and
    stranger.pem / stranger-key.pem (signed by another CA) into `folder`; returns their paths by stem."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca = _ca("layerlab test cluster CA")
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _leaf("layerlab scheduler and workers", ca_key, ca, folder, "node")
    _leaf("layerlab app server", ca_key, ca, folder, "client")
    other_key, other = _ca("someone else's CA")
    _leaf("a stranger", other_key, other, folder, "stranger")
    return {p.name.removesuffix(".pem"): p for p in folder.glob("*.pem")}


def dask_tls_args(certs: dict[str, Path], stem: str = "node") -> list[str]:
    """The `dask scheduler` / `dask worker` options that make it speak TLS with the certificate `stem`."""
    return ["--tls-ca-file", str(certs["ca"]), "--tls-cert", str(certs[stem]), "--tls-key", str(certs[f"{stem}-key"])]


def client_env(certs: dict[str, Path], stem: str = "client") -> dict[str, str]:
    """The lab's settings for a client of that cluster (an app server, a CLI run)."""
    return {"LAYERLAB_TLS_CA": str(certs["ca"]), "LAYERLAB_TLS_CERT": str(certs[stem]),
            "LAYERLAB_TLS_KEY": str(certs[f"{stem}-key"])}


def handshake(port: int, ctx: ssl.SSLContext) -> bytes:
    """Connect to 127.0.0.1:`port`, do the TLS handshake and read the first bytes (a Dask server speaks first): b""
    or an SSLError when the server refused the connection. A certificate the server asks for is checked only after
    the client's side of a TLS 1.3 handshake is done, so the refusal shows at this read."""
    ctx.check_hostname = False  # as Dask does: a dedicated CA and numeric addresses
    with socket.create_connection(("127.0.0.1", port), timeout=20) as raw, ctx.wrap_socket(raw) as tls:
        return tls.recv(8)
