"""The `tls` check (SPEC.md, "TLS"): the row started a second time with the harness's RSA certificate,
judged as a TLS client with Python's `ssl`, one sub-rule after another; the first broken one is the line.

  version   a default client and a TLS-1.3-only client both get TLS 1.3, with an AEAD suite
  leaf      the certificate presented is the one passed (SHA-256 of its DER), fetched without
            verification so a wrong one is named as such rather than as a verification error
  refused   a client offering only TLS 1.0 (then only 1.1) fails its handshake
  alpn      offered ["http/1.1"] (what loadgen offers) → None or "http/1.1"; offered ["h2", "http/1.1"],
            a server may name h2 (a protocol offered; the pass line says so: it does not reach the loads)
  http      root, keepalive, split and date over TLS: the plaintext checks' own code with every
            connection wrapped (Ctx.tls), each `send` its own TLS record(s)

`pipeline` is not repeated over TLS: this check admits a row to the TLS workloads, and none of them
pipelines (tls-json and tls-handshake send one request at a time on a connection); the plaintext `pipeline`
check keeps a row that breaks pipelining out of the workloads that pipeline. Repeating it here kept bun and
java-rapidoid out of both TLS workloads for a defect those workloads never meet. A workload that pipelines
over TLS would add it back (HTTP_RULES).
"""
from __future__ import annotations

import dataclasses
import hashlib
import socket
import ssl
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .base import CheckFailed, CheckSkipped, Ctx, start_failure
from .endpoints import check_root
from .httpcheck import HTTPCheckError
from .protocol import check_date, check_keepalive, check_split

KEY = "rsa"  # the common default, and the costlier handshake; the workloads also use ecdsa
AEAD = ("GCM", "CHACHA20_POLY1305", "CCM")  # every TLS 1.3 suite is one; said so a 1.2 fallback cannot pass
HTTP_RULES: dict[str, Callable[[Ctx], str]] = {
    "root": check_root, "keepalive": check_keepalive, "split": check_split, "date": check_date}


@dataclass(frozen=True)
class TlsStart:
    """What the tls check needs to start the row with TLS: the certificates (tls.certs.TlsMaterial) and
    `start(env)`, a context manager that runs the row with `env` ($TLS_* added) and yields its URL."""

    material: Any
    start: Callable[[dict[str, str]], AbstractContextManager[str]]


def _client(ctx: Ctx, *, verify: bool, version: ssl.TLSVersion | None = None,
            alpn: list[str] | None = None) -> ssl.SSLContext:
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if verify:
        c.load_verify_locations(cafile=str(ctx.tls_start.material.ca))
    else:
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
    if version is not None:
        if version in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            # OpenSSL 3's default security level forbids these on the client side: without level 0
            # this client would never offer them and the rule could not fail
            c.set_ciphers("DEFAULT:@SECLEVEL=0")
        with warnings.catch_warnings():  # TLSv1/TLSv1_1 are deprecated names: offering them is the point
            warnings.simplefilter("ignore", DeprecationWarning)
            c.minimum_version = c.maximum_version = version
    if alpn is not None:
        c.set_alpn_protocols(alpn)
    return c


def _handshake(ctx: Ctx, client: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection((ctx.host, ctx.port), timeout=ctx.timeout)
    try:
        return client.wrap_socket(raw, server_hostname=ctx.host)
    except BaseException:
        raw.close()
        raise


def _probe(ctx: Ctx, client: ssl.SSLContext, what: str) -> tuple[str | None, tuple[str, str, int] | None,
                                                                  str | None, bytes | None]:
    """A handshake with `client`: (version, cipher, ALPN, leaf DER); CheckFailed naming `what` if it fails."""
    try:
        s = _handshake(ctx, client)
    except (ssl.SSLError, OSError) as e:
        raise CheckFailed(f"tls: {what}: the handshake failed ({e})") from e
    with s:
        return s.version(), s.cipher(), s.selected_alpn_protocol(), s.getpeercert(binary_form=True)


def _refused(ctx: Ctx, version: ssl.TLSVersion, name: str) -> None:
    client = _client(ctx, verify=False, version=version)
    try:
        s = _handshake(ctx, client)
    except (ssl.SSLError, OSError):  # an alert, a reset, a close or silence: no TLS 1.x session
        return
    with s:
        got = s.version()
    raise CheckFailed(f"tls: accepted a {name} handshake (negotiated {got}); SPEC: TLS 1.0 and 1.1 refused, "
                      "set a minimum of TLS 1.2")


def _sub_rules(ctx: Ctx) -> str:
    want = ctx.tls_start.material.sha256(KEY)
    version, cipher, alpn, der = _probe(ctx, _client(ctx, verify=False, alpn=["http/1.1"]), "a default client")
    got = hashlib.sha256(der or b"").hexdigest()
    if got != want:
        raise CheckFailed(f"tls: the leaf certificate is not the one passed (sha256 {got[:12]}… ≠ {want[:12]}…); "
                          "SPEC: serve $TLS_CERT")
    if version != "TLSv1.3":
        raise CheckFailed(f"tls: negotiated {version} with a TLS 1.3 client; SPEC: TLS 1.3 must be offered")
    if alpn not in (None, "http/1.1"):
        raise CheckFailed(f"tls: ALPN selected {alpn!r} when the client offered only 'http/1.1'")
    strict = _client(ctx, verify=True, version=ssl.TLSVersion.TLSv1_3, alpn=["h2", "http/1.1"])
    version, cipher, alpn, _ = _probe(ctx, strict, "a TLS-1.3-only client verifying against the harness's CA")
    suite = cipher[0] if cipher else "?"
    if version != "TLSv1.3" or not any(a in suite for a in AEAD):
        raise CheckFailed(f"tls: negotiated {version} {suite} with a TLS-1.3-only client; SPEC: TLS 1.3, AEAD")
    # naming h2 to a client that offered it breaks no rule (issue 38: ALPN never names a protocol the client
    # did not offer); loadgen and the peer tools offer http/1.1 alone, so the loads see HTTP/1.1 (Deno.serve)
    h2 = "; serves h2 to a client that offers it" if alpn == "h2" else ""
    _refused(ctx, ssl.TLSVersion.TLSv1, "TLS 1.0")
    _refused(ctx, ssl.TLSVersion.TLSv1_1, "TLS 1.1")
    over = dataclasses.replace(ctx, tls=_client(ctx, verify=True, alpn=["http/1.1"]))
    for name, check in HTTP_RULES.items():
        try:
            check(over)
        except CheckFailed as e:
            raise CheckFailed(f"tls: {name} over TLS: {e}") from e
        except HTTPCheckError as e:
            raise CheckFailed(f"tls: {name} over TLS: {type(e).__name__}: {e}") from e
    return (f"{version} {suite}, the leaf passed ({KEY}, sha256 {want[:12]}…), TLS 1.0/1.1 refused, "
            f"ALPN {alpn or 'none'}{h2}; {', '.join(HTTP_RULES)} pass over TLS")


def check_tls(ctx: Ctx) -> str:
    if ctx.tls_out:
        raise CheckSkipped(f"serves no TLS here (tls_out): {ctx.tls_out}")
    if not ctx.tls_row:
        raise CheckSkipped("not a tls row: it declares no tls_library in [choices] (SPEC.md, TLS)")
    if ctx.tls_start is None:
        raise CheckSkipped("verify could not start the row again with $TLS_CERT/$TLS_KEY here (a running "
                           "target); fix: verify it by id")
    env = ctx.tls_start.material.env(KEY)
    with ExitStack() as stack:
        try:
            url = stack.enter_context(ctx.tls_start.start(env))
        except Exception as e:  # the start's own error (supervisor.ServerStartError), in one line
            raise CheckFailed(f"tls: the row did not start with $TLS_CERT/$TLS_KEY: {start_failure(e)}") from e
        u = urlsplit(url)
        return _sub_rules(dataclasses.replace(ctx, host=u.hostname or ctx.host, port=u.port or ctx.port))
