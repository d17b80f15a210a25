"""The certificates a run (or a verify) hands its TLS starts: one CA and one leaf per key type.

Made in-process with `cryptography` (no shell-out), once per call, into a folder the caller owns.
The key type is the harness's choice, never the row's: RSA-2048 (the common default) and ECDSA P-256
(whose signatures are much cheaper), both signed by one ECDSA P-256 CA.
"""
from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEY_TYPES: tuple[str, ...] = ("rsa", "ecdsa")
PKCS12_PASSWORD = "serverbench"
NAMES = ("localhost", "127.0.0.1", "::1")
# Back-dated so a clock a little behind the maker's (a container, a remote worker) still accepts it.
BACKDATE = datetime.timedelta(hours=1)
VALIDITY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Leaf:
    """One server certificate: its files and the SHA-256 of its DER (what verify compares)."""

    cert: Path  # PEM
    key: Path  # PEM, PKCS#8, unencrypted
    p12: Path  # PKCS#12: key + cert (+ CA), password PKCS12_PASSWORD
    sha256: str  # hex SHA-256 of the leaf's DER


@dataclass(frozen=True)
class TlsMaterial:
    ca: Path
    leaves: dict[str, Leaf]

    def leaf(self, kind: str) -> Leaf:
        if kind not in self.leaves:
            raise ValueError(f"unknown TLS key type {kind!r}; known: {', '.join(KEY_TYPES)}")
        return self.leaves[kind]

    def cert(self, kind: str) -> Path:
        return self.leaf(kind).cert

    def key(self, kind: str) -> Path:
        return self.leaf(kind).key

    def p12(self, kind: str) -> Path:
        return self.leaf(kind).p12

    def sha256(self, kind: str) -> str:
        return self.leaf(kind).sha256

    def env(self, kind: str) -> dict[str, str]:
        """The `$TLS_*` variables of a start with this key type's certificate (SPEC.md, "TLS")."""
        leaf = self.leaf(kind)
        return {"TLS_CERT": str(leaf.cert), "TLS_KEY": str(leaf.key), "TLS_PKCS12": str(leaf.p12),
                "TLS_PKCS12_PASSWORD": PKCS12_PASSWORD}


def _write(path: Path, data: bytes, secret: bool) -> None:
    # keys (and key stores) are created 0600 from the start: never world-readable, not even briefly
    mode = 0o600 if secret else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)  # an existing file keeps its old mode through O_CREAT


def _key_usage(ca: bool, encipher: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=encipher,
                         data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                         encipher_only=False, decipher_only=False)


def _make_ca(now: datetime.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "serverbench CA"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "serverbench")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE).not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_key_usage(ca=True, encipher=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def _leaf_key(kind: str) -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == "ecdsa":
        return ec.generate_private_key(ec.SECP256R1())
    raise ValueError(f"unknown TLS key type {kind!r}; known: {', '.join(KEY_TYPES)}")


def _make_leaf(kind: str, ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate,
               now: datetime.datetime) -> tuple[rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _leaf_key(kind)
    san = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                       x509.IPAddress(ipaddress.ip_address("::1"))])
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE).not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            # RSA key exchange is gone in TLS 1.3, but a 1.2 client may still want keyEncipherment on RSA
            .add_extension(_key_usage(ca=False, encipher=kind == "rsa"), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(san, critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def _p12(kind: str, key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, cert: x509.Certificate,
         ca: x509.Certificate) -> bytes:
    # PBES2 with AES-256 and SHA-256 (not the legacy RC2/3DES default), which JDK 17, .NET and OpenSSL 3 all read
    enc = (serialization.PrivateFormat.PKCS12.encryption_builder()
           .kdf_rounds(50000)
           .key_cert_algorithm(pkcs12.PBES.PBESv2SHA256AndAES256CBC)
           .hmac_hash(hashes.SHA256())
           .build(PKCS12_PASSWORD.encode()))
    return pkcs12.serialize_key_and_certificates(f"serverbench-{kind}".encode(), key, cert, [ca], enc)


def make_material(folder: Path) -> TlsMaterial:
    """Make a CA and a leaf per key type in KEY_TYPES into `folder` (created; files replaced):
    ca.pem, <kind>.pem, <kind>.key (PKCS#8 PEM), <kind>.p12. Keys and key stores are mode 0600."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, ca = _make_ca(now)
    ca_path = folder / "ca.pem"
    _write(ca_path, ca.public_bytes(serialization.Encoding.PEM), secret=False)
    leaves: dict[str, Leaf] = {}
    for kind in KEY_TYPES:
        key, cert = _make_leaf(kind, ca_key, ca, now)
        paths = {ext: folder / f"{kind}.{ext}" for ext in ("pem", "key", "p12")}
        _write(paths["pem"], cert.public_bytes(serialization.Encoding.PEM), secret=False)
        _write(paths["key"], key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()), secret=True)
        _write(paths["p12"], _p12(kind, key, cert, ca), secret=True)
        der = cert.public_bytes(serialization.Encoding.DER)
        leaves[kind] = Leaf(paths["pem"], paths["key"], paths["p12"], hashlib.sha256(der).hexdigest())
    return TlsMaterial(ca_path, leaves)


__all__ = ["KEY_TYPES", "Leaf", "NAMES", "PKCS12_PASSWORD", "TlsMaterial", "make_material"]
