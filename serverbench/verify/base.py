"""What every conformance check shares: the result type, the context, a reconnecting session,
and the expectation helpers that turn a wrong response into a one-line failure.

Checks talk raw HTTP/1.1 over loopback sockets (httpcheck.py) so that servers which mishandle
keep-alive, pipelining, framing or split segments fail here instead of silently losing a
benchmark through errors.
"""
from __future__ import annotations

import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .httpcheck import Conn, HTTPCheckError, PeerClosed, Response, build_request

HELLO = b"Hello, World!"


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str = ""
    skipped: bool = False
    seconds: float = 0.0


class CheckFailed(Exception):
    """Raised inside a check with the one-line reason."""


class CheckSkipped(Exception):
    """Raised inside a check that cannot run here (e.g. no pid for CPU sampling)."""


@dataclass
class Ctx:
    host: str
    port: int
    timeout: float
    counter: str
    bound: int | None
    pid: int | None
    hello_file: Path
    db_row: bool = False  # the manifest declares the db_* choices (SPEC.md, "Database endpoints")
    db: Any = None  # dbcount.DbTarget: the database the row was started with, for the db checks
    db_out: str | None = None  # the manifest's db_out: why the row serves no database here
    db_problem: str | None = None  # why a db row's database checks cannot run here (one line, the fix)
    compress_row: bool = False  # the manifest declares compression (SPEC.md, "CPU work")
    compress_out: str | None = None  # the manifest's compress_out: why the row serves no /compress here
    tls_row: bool = False  # the manifest declares tls_library (SPEC.md, "TLS")
    tls_out: str | None = None  # the manifest's tls_out: why the row serves no TLS here
    tls_start: Any = None  # tlscheck.TlsStart: how to start the row again with $TLS_* (None: cannot here)
    tls: ssl.SSLContext | None = None  # set: every connection is a TLS client (the tls check's HTTP rules)
    h2_row: bool = False  # the manifest declares http2_library (SPEC.md, "HTTP/2")
    h2_out: str | None = None  # the manifest's http2_out: why the row serves no HTTP/2 here
    h2_start: Any = None  # h2check.H2Start: how to start the row again with $HTTP2 (None: cannot here)

    def conn(self, timeout: float | None = None) -> Conn:
        try:
            return Conn(self.host, self.port, self.timeout if timeout is None else timeout, tls=self.tls)
        except HTTPCheckError as e:
            raise CheckFailed(str(e)) from e

    def req(self, method: str, target: str, headers: Iterable[tuple[str, str]] = (), body: bytes | None = None,
            version: str = "HTTP/1.1") -> bytes:
        return build_request(method, target, f"{self.host}:{self.port}", headers, body, version)


class Session:
    """Keep-alive client that transparently reconnects when the server closed between
    requests — for checks that test something other than keep-alive itself."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.conn: Conn | None = None
        self.connects = 0

    def request(self, raw: bytes, method: str = "GET", timeout: float | None = None) -> Response:
        for attempt in (0, 1):
            fresh = self.conn is None
            if self.conn is None:
                self.conn = self.ctx.conn()
                self.connects += 1
            try:
                self.conn.send(raw)
                resp = self.conn.read_response(method, timeout)
            except PeerClosed:
                self.close()
                if fresh or attempt:
                    raise
                continue  # a reused connection had been closed: retry once on a new one
            if resp.server_will_close or self.conn.eof:
                self.close()
            return resp
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def start_failure(e: BaseException) -> str:
    """A start that failed, in one line for a check's detail: the error's first line and, when the row
    wrote a log, its last unindented line, which is where why it exited usually stands (csharp-mono:
    "cannot load TLS_PKCS12 …"); the indented lines under it are stack frames. The whole tail stays in
    the log file the first line names."""
    # supervisor.ServerStartError keeps the stopped process and its message's first line without the tail
    first = getattr(e, "headline", None) or (str(e).splitlines() or [type(e).__name__])[0]
    srv = getattr(e, "server", None)
    if srv is None:
        return first
    lines = [ln.rstrip() for ln in srv.log_tail().splitlines() if ln.strip()]
    said = [ln for ln in lines if not ln[0].isspace()] or lines
    return first + (f"; its log ends: {said[-1]}" if said else "; its log is empty")


# -- expectation helpers ---------------------------------------------------------------------

def expect(resp: Response, what: str, status: int | Iterable[int] = 200, media: str | None = None,
            body: bytes | None = None) -> None:
    statuses = {status} if isinstance(status, int) else set(status)
    if resp.status not in statuses:
        want = " or ".join(str(s) for s in sorted(statuses))
        raise CheckFailed(f"{what}: expected status {want}, got {resp.brief()}")
    if media is not None and resp.media_type != media:
        raise CheckFailed(f"{what}: expected Content-Type {media}, got {resp.header('content-type') or '(none)'}")
    if body is not None and resp.body != body:
        raise CheckFailed(f"{what}: expected body {show(body)}, got {show(resp.body)}")


def show(b: bytes) -> str:
    return f"{b[:40]!r}{'…' if len(b) > 40 else ''} ({len(b)} B)"


def roundtrip(ctx: Ctx, what: str, raw: bytes, method: str = "GET", follow_up: bool = True,
               timeout: float | None = None) -> Response:
    """One request on a fresh connection. With follow_up, the same request is repeated on
    that connection: bytes left over from a wrong Content-Length would garble the answer.
    (Repeating it, not GET /, keeps one endpoint's bug out of other endpoints' checks.)"""
    conn = ctx.conn()
    try:
        try:
            conn.send(raw)
            resp = conn.read_response(method, timeout)
        except HTTPCheckError as e:
            raise CheckFailed(f"{what}: {e}") from e
        if follow_up and not resp.server_will_close and not conn.eof:
            if conn.buf:
                raise CheckFailed(f"{what}: {len(conn.buf)} unexpected bytes after the body "
                                  f"({bytes(conn.buf[:30])!r}); Content-Length wrong?")
            try:
                conn.send(raw)
                nxt = conn.read_response(method, timeout)
            except PeerClosed:
                return resp  # closed silently: the keepalive check reports that, not this one
            except HTTPCheckError as e:
                raise CheckFailed(f"{what}: the repeated request on the same connection got a garbled "
                                  f"response ({e}); Content-Length of the first one wrong?") from e
            if nxt.status != resp.status or nxt.body != resp.body:
                raise CheckFailed(f"{what}: repeated on the same connection it got {nxt.brief()} instead of "
                                  f"{resp.brief()}; Content-Length of the first one wrong?")
        return resp
    finally:
        conn.close()


def get(ctx: Ctx, target: str, **kw: Any) -> Response:
    return roundtrip(ctx, f"GET {target}", ctx.req("GET", target), **kw)


