"""serverbench/tls/certs.py: the run's CA and leaves verify as a chain, carry the right key types and
names, the recorded SHA-256 is the leaf's, and the files a server reads load as they should."""
from __future__ import annotations

import hashlib
import ipaddress
import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID

from serverbench.tls.certs import KEY_TYPES, PKCS12_PASSWORD, make_material


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory):
    return make_material(tmp_path_factory.mktemp("tls"))


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_files_and_modes(material) -> None:
    folder = material.ca.parent
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["ca.pem"] + [f"{k}.{e}" for k in KEY_TYPES for e in ("pem", "key", "p12")])
    for k in KEY_TYPES:
        assert stat.S_IMODE(material.key(k).stat().st_mode) == 0o600
        assert stat.S_IMODE(material.p12(k).stat().st_mode) == 0o600
        assert stat.S_IMODE(material.cert(k).stat().st_mode) == 0o644
        assert material.key(k).read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8


def test_key_types_names_and_usage(material) -> None:
    ca = _cert(material.ca)
    assert isinstance(ca.public_key(), ec.EllipticCurvePublicKey) and ca.public_key().curve.name == "secp256r1"
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    rsa_pub = _cert(material.cert("rsa")).public_key()
    assert isinstance(rsa_pub, rsa.RSAPublicKey) and rsa_pub.key_size == 2048
    ec_pub = _cert(material.cert("ecdsa")).public_key()
    assert isinstance(ec_pub, ec.EllipticCurvePublicKey) and ec_pub.curve.name == "secp256r1"
    for k in KEY_TYPES:
        leaf = _cert(material.cert(k))
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == ["localhost"]
        assert set(san.get_values_for_type(x509.IPAddress)) == {ipaddress.ip_address("127.0.0.1"),
                                                                  ipaddress.ip_address("::1")}
        eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
        life = leaf.not_valid_after_utc - leaf.not_valid_before_utc
        assert life.total_seconds() == 25 * 3600  # a day, back-dated an hour
        key = serialization.load_pem_private_key(material.key(k).read_bytes(), None)
        assert key.public_key().public_numbers() == leaf.public_key().public_numbers()


def test_chain_verifies_and_sha256_matches(material) -> None:
    ca = _cert(material.ca)
    for k in KEY_TYPES:
        leaf = _cert(material.cert(k))
        leaf.verify_directly_issued_by(ca)  # raises on a wrong issuer or signature
        assert hashlib.sha256(leaf.public_bytes(serialization.Encoding.DER)).hexdigest() == material.sha256(k)
    assert material.sha256("rsa") != material.sha256("ecdsa")


def test_pkcs12_holds_the_same_key_and_cert(material) -> None:
    for k in KEY_TYPES:
        key, cert, extra = pkcs12.load_key_and_certificates(material.p12(k).read_bytes(), PKCS12_PASSWORD.encode())
        assert cert == _cert(material.cert(k))
        assert key.public_key().public_numbers() == cert.public_key().public_numbers()
        assert extra == [_cert(material.ca)]


def test_env_names_the_files(material) -> None:
    env = material.env("ecdsa")
    assert env == {"TLS_CERT": str(material.cert("ecdsa")), "TLS_KEY": str(material.key("ecdsa")),
                   "TLS_PKCS12": str(material.p12("ecdsa")), "TLS_PKCS12_PASSWORD": "serverbench"}
    with pytest.raises(ValueError, match="unknown TLS key type 'dsa'"):
        material.env("dsa")


@pytest.mark.parametrize("kind", KEY_TYPES)
def test_a_python_server_and_client_handshake_with_it(material, kind: str) -> None:
    """The files as a server loads them, verified by a client trusting only the CA, by name and by IP."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(material.cert(kind), material.key(kind))
    lsock = socket.create_server(("127.0.0.1", 0))
    port = lsock.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            conn, _ = lsock.accept()
            try:
                with server_ctx.wrap_socket(conn, server_side=True) as s:
                    s.recv(1)
            except (ssl.SSLError, OSError):
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        client = ssl.create_default_context(cafile=str(material.ca))
        for name in ("localhost", "127.0.0.1"):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                    client.wrap_socket(raw, server_hostname=name) as s:
                der = s.getpeercert(binary_form=True)
                assert hashlib.sha256(der).hexdigest() == material.sha256(kind)
                s.sendall(b"x")
    finally:
        t.join(5)
        lsock.close()
