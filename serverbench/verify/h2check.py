"""The `h2c` and `h2` checks (SPEC.md, "HTTP/2"): the row started again with `$HTTP2=h2c` (cleartext, prior
knowledge), then with `$HTTP2=h2` and the harness's RSA certificate (TLS, ALPN h2), judged as an HTTP/2 client
(serverbench/h2), one rule after another; the first broken one is the line.

  serves   GET / and /json: 200, the body, its content-type and a date field
  hpack    three requests on one connection carrying the same extra field (the client's encoder puts it in
           the dynamic table, so the second and third refer to it): each answered 200
  window   a 1 MiB body (/delay?bytes=1048576) arrives whole under RFC 9113's default windows, the client
           giving them back as it reads
  streams  as many streams at once as the server allows (at most 100), each /delay?ms=300: every one answered;
           with a limit of 100 or less, one stream beyond it must be refused (RST_STREAM, RFC 9113 §5.1.2),
           never served
  reset    RST_STREAM of one stream (/delay?ms=1000) while a second (/delay?ms=200) is open: the second is
           answered, then a third on the same connection
  goaway   a DATA frame on stream 0 (a connection error, RFC 9113 §6.1) is answered with GOAWAY and an error
           code; a new connection is served after it (the server did not crash)
"""
from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..h2 import H2Client, H2Error
from .base import HELLO, CheckFailed, CheckSkipped, Ctx, start_failure

KEY = "rsa"  # the tls check's key type
MAX_STREAMS_TRIED = 100  # the workloads' most streams per connection
REFUSED = (1, 7)  # PROTOCOL_ERROR, REFUSED_STREAM
DATA_ON_STREAM_0 = b"\x00\x00\x01\x00\x00\x00\x00\x00\x00x"


@dataclass(frozen=True)
class H2Start:
    """What the h2 checks need: the certificates (tls.certs.TlsMaterial) and `start(env, mode)`, a context manager
    that runs the row with `env` (`$HTTP2`, and `$TLS_*` for h2) and yields its URL."""

    material: Any
    start: Callable[[dict[str, str], str], AbstractContextManager[str]]


class _Judge:
    """One started row in one mode: a client per rule, each rule's failure one line."""

    def __init__(self, mode: str, host: str, port: int, tls: ssl.SSLContext | None) -> None:
        self.mode, self.host, self.port, self.tls = mode, host, port, tls

    def client(self, timeout: float = 5.0) -> H2Client:
        try:
            return H2Client(self.host, self.port, tls=self.tls, timeout=timeout)
        except (OSError, H2Error) as e:
            raise CheckFailed(f"{self.mode}: cannot open an HTTP/2 connection: {e}") from e

    def fail(self, rule: str, why: str) -> CheckFailed:
        return CheckFailed(f"{self.mode}: {rule}: {why}")

    def answered(self, c: H2Client, sids: list[int], rule: str, timeout: float = 5.0) -> None:
        try:
            done = c.wait(sids, timeout)
        except H2Error as e:
            raise self.fail(rule, str(e)) from e
        if not done:
            waiting = [s for s in sids if not c.answers[s].ended]
            raise self.fail(rule, f"stream(s) {waiting[:5]} not answered within {timeout:g} s"
                            + (" (the connection closed)" if c.closed else ""))

    def serves(self) -> None:
        with self.client() as c:
            root, js = c.request("/"), c.request("/json")
            self.answered(c, [root, js], "serves")
            for sid, path, ctype, ok in ((root, "/", "text/plain", lambda b: b == HELLO),
                                         (js, "/json", "application/json",
                                          lambda b: json.loads(b) == {"message": "Hello, World!"})):
                a = c.answers[sid]
                if a.status != 200 or not a.headers.get("content-type", "").startswith(ctype):
                    raise self.fail("serves", f"GET {path} answered {a.status} {a.headers.get('content-type')!r}")
                try:
                    good = ok(bytes(a.body))
                except ValueError:
                    good = False
                if not good:
                    raise self.fail("serves", f"GET {path}: wrong body {bytes(a.body)[:60]!r}")
                if "date" not in a.headers:
                    raise self.fail("serves", f"GET {path}: no date field (SPEC: every response carries Date)")

    def hpack(self) -> None:
        with self.client() as c:
            extra = [("x-serverbench", "hpack-dynamic-table"), ("user-agent", "serverbench-verify")]
            sids = []
            for _ in range(3):
                sids.append(c.request("/json", headers=extra))
                self.answered(c, sids[-1:], "hpack")
            bad = [(s, c.answers[s].status) for s in sids if c.answers[s].status != 200]
            if bad:
                raise self.fail("hpack", f"requests referring to the dynamic table answered {bad}")

    def window(self) -> None:
        with self.client(timeout=10.0) as c:
            sid = c.request("/delay?ms=0&bytes=1048576")
            self.answered(c, [sid], "window", timeout=10.0)
            n = len(c.answers[sid].body)
            if c.answers[sid].status != 200 or n != 1048576:
                raise self.fail("window", f"1 MiB under the default windows: {c.answers[sid].status}, {n} bytes")

    def streams(self) -> str:
        with self.client(timeout=10.0) as c:
            c.read_until(lambda: bool(c.server_settings), 2.0)  # the server's SETTINGS first
            limit = c.max_streams()
            n = min(limit if limit is not None else MAX_STREAMS_TRIED, MAX_STREAMS_TRIED)
            sids = [c.request("/delay?ms=300") for _ in range(n)]
            over = None
            if limit is not None and limit <= MAX_STREAMS_TRIED:
                c.ignore_stream_limit()
                over = c.request("/delay?ms=300")
            self.answered(c, sids + ([over] if over else []), "streams", timeout=10.0)
            bad = [c.answers[s].status for s in sids if c.answers[s].status != 200]
            if bad:
                raise self.fail("streams", f"{len(bad)} of {n} concurrent streams answered {bad[0]} (or were reset)")
            if over is not None:
                a = c.answers[over]
                if a.reset not in REFUSED:
                    raise self.fail("streams", f"a stream beyond the advertised limit of {limit} was "
                                    f"{'served' if a.status else f'reset with code {a.reset}'}, not refused "
                                    "(RFC 9113 §5.1.2: PROTOCOL_ERROR or REFUSED_STREAM)")
                return f"{n} streams at once, one more refused"
            return f"{n} streams at once ({'no limit advertised' if limit is None else f'limit {limit}'})"

    def reset(self) -> None:
        with self.client() as c:
            slow, other = c.request("/delay?ms=1000"), c.request("/delay?ms=200")
            c.reset(slow)
            self.answered(c, [other], "reset", timeout=3.0)
            third = c.request("/json")
            self.answered(c, [third], "reset", timeout=3.0)
            if c.answers[other].status != 200 or c.answers[third].status != 200:
                raise self.fail("reset", f"after RST_STREAM of one stream: {c.answers[other].status}, "
                                f"{c.answers[third].status} (SPEC: a reset leaves the others serving)")

    def goaway(self) -> None:
        with self.client() as c:
            c.read_until(lambda: bool(c.server_settings), 2.0)
            c.raw(DATA_ON_STREAM_0)
            try:
                c.read_until(lambda: c.goaway is not None or c.closed, 3.0)
            except H2Error:
                pass  # the library's own view of what came back; the GOAWAY is what counts
            if c.goaway is None:
                raise self.fail("goaway", "a DATA frame on stream 0 got " + (
                    "a close without GOAWAY" if c.closed else "no GOAWAY within 3 s"))
            if c.goaway.error_code == 0:
                raise self.fail("goaway", "a DATA frame on stream 0 got GOAWAY NO_ERROR, not a connection error")
        self.serves()  # still serving on a new connection: it did not crash


def _judge(j: _Judge) -> str:
    j.serves()
    j.hpack()
    j.window()
    streams = j.streams()
    j.reset()
    j.goaway()
    over = "ALPN h2 over TLS" if j.tls is not None else "prior knowledge"
    return (f"{over}: /, /json with date; HPACK's dynamic table; 1 MiB under the default windows; {streams}; "
            "RST_STREAM leaves the others serving; a bad frame gets GOAWAY")


def _check(ctx: Ctx, mode: str) -> str:
    if ctx.h2_out:
        raise CheckSkipped(f"serves no HTTP/2 here (http2_out): {ctx.h2_out}")
    if not ctx.h2_row:
        raise CheckSkipped("not an h2 row: it declares no http2_library in [choices] (SPEC.md, HTTP/2)")
    if ctx.h2_start is None:
        raise CheckSkipped("verify could not start the row again with $HTTP2 here (a running target); "
                           "fix: verify it by id")
    env = {"HTTP2": mode, **(ctx.h2_start.material.env(KEY) if mode == "h2" else {})}
    with ExitStack() as stack:
        try:
            url = stack.enter_context(ctx.h2_start.start(env, mode))
        except Exception as e:  # the start's own error (supervisor.ServerStartError), in one line
            raise CheckFailed(f"{mode}: the row did not start with $HTTP2={mode}: {start_failure(e)}") from e
        u = urlsplit(url)
        tls = client_context(ctx.h2_start.material.ca) if mode == "h2" else None
        return _judge(_Judge(mode, u.hostname or ctx.host, u.port or ctx.port, tls))


def client_context(ca: Any) -> ssl.SSLContext:
    """The check's TLS client, offering what loadgen's h2 points offer: TLS 1.3 only (loadgen's rustls offers
    TLS_AES_128_GCM_SHA256 alone; Python's ssl cannot narrow TLS 1.3's three suites, but with TLS 1.3 as the
    minimum it offers no TLS 1.2 suite either). A row that serves h2 to curl's TLS 1.2 offer and refuses a
    TLS 1.3-only client (java-undertow: Undertow's ALPNLimitingSSLEngine grants h2 only to a client offering
    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) fails here in one line, not as 0 req/s in the run."""
    tls = ssl.create_default_context(cafile=str(ca))
    tls.minimum_version = ssl.TLSVersion.TLSv1_3
    return tls


def check_h2c(ctx: Ctx) -> str:
    return _check(ctx, "h2c")


def check_h2(ctx: Ctx) -> str:
    return _check(ctx, "h2")
