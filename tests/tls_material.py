"""The run's TLS material for tests: serverbench/tls/certs.py's `make_material` where it exists, else a
small stand-in with the same shape (`.ca`, `.env(kind)`), made with `cryptography`, until it lands."""
from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from serverbench.tls.certs import make_material as _real
except ImportError:  # not committed yet
    _real = None


@dataclass
class StandIn:
    ca: Path
    leaves: dict[str, tuple[Path, Path]]

    def env(self, kind: str) -> dict[str, str]:
        cert, key = self.leaves[kind]
        return {"TLS_CERT": str(cert), "TLS_KEY": str(key)}


def _standin(folder: Path) -> StandIn:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    leaves = {}
    for kind, key in (("rsa", rsa.generate_private_key(65537, 2048)), ("ecdsa", ec.generate_private_key(ec.SECP256R1()))):
        san = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                           x509.IPAddress(ipaddress.ip_address("::1"))])
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])).issuer_name(ca_name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(san, critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        (folder / f"{kind}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (folder / f"{kind}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                               serialization.PrivateFormat.PKCS8,
                                                               serialization.NoEncryption()))
        leaves[kind] = (folder / f"{kind}.pem", folder / f"{kind}.key")
    return StandIn(folder / "ca.pem", leaves)


def material(folder: Path) -> Any:
    """A CA and one leaf per key type ("rsa", "ecdsa") in `folder`."""
    return _real(folder) if _real is not None else _standin(folder)
