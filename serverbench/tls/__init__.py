"""TLS material the harness makes itself (SPEC.md, "TLS"): a CA and one server certificate per key type.

certs.py  make_material(folder) -> TlsMaterial: the CA (ECDSA P-256), an RSA-2048 and an ECDSA P-256 leaf for
          localhost, 127.0.0.1 and ::1, as PEM, PKCS#8 and PKCS#12 files, and the `$TLS_*` environment of a start

May import: nothing of serverbench (the `cryptography` package only). Hands out `make_material`, `TlsMaterial`
and `KEY_TYPES` to run (a run's certificates) and verify (the `tls` check).
"""
from .certs import KEY_TYPES, Leaf, TlsMaterial, make_material

__all__ = ["KEY_TYPES", "Leaf", "TlsMaterial", "make_material"]
