"""Conformance checks of SPEC.md: every contestant is judged by this same code.

Each check talks raw HTTP/1.1 over loopback sockets (see httpcheck.py) so that servers which
mishandle keep-alive, pipelining, framing or split segments fail here instead of silently
losing a benchmark through errors. A check returns one CheckResult whose detail says what was
expected and what came back.
"""
from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .supervisor import raise_nofile
from .httpcheck import (
    Conn,
    HTTPCheckError,
    PeerClosed,
    ProtocolError,
    ReadTimeout,
    Response,
    build_request,
)

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
class _Ctx:
    host: str
    port: int
    timeout: float
    counter: str
    bound: int | None
    pid: int | None
    hello_file: Path

    def conn(self, timeout: float | None = None) -> Conn:
        try:
            return Conn(self.host, self.port, self.timeout if timeout is None else timeout)
        except HTTPCheckError as e:
            raise CheckFailed(str(e)) from e

    def req(self, method: str, target: str, headers: Iterable[tuple[str, str]] = (), body: bytes | None = None,
            version: str = "HTTP/1.1") -> bytes:
        return build_request(method, target, f"{self.host}:{self.port}", headers, body, version)


class _Session:
    """Keep-alive client that transparently reconnects when the server closed between
    requests — for checks that test something other than keep-alive itself."""

    def __init__(self, ctx: _Ctx) -> None:
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


# -- expectation helpers ---------------------------------------------------------------------

def _expect(resp: Response, what: str, status: int | Iterable[int] = 200, media: str | None = None,
            body: bytes | None = None) -> None:
    statuses = {status} if isinstance(status, int) else set(status)
    if resp.status not in statuses:
        want = " or ".join(str(s) for s in sorted(statuses))
        raise CheckFailed(f"{what}: expected status {want}, got {resp.brief()}")
    if media is not None and resp.media_type != media:
        raise CheckFailed(f"{what}: expected Content-Type {media}, got {resp.header('content-type') or '(none)'}")
    if body is not None and resp.body != body:
        raise CheckFailed(f"{what}: expected body {_show(body)}, got {_show(resp.body)}")


def _show(b: bytes) -> str:
    return f"{b[:40]!r}{'…' if len(b) > 40 else ''} ({len(b)} B)"


def _roundtrip(ctx: _Ctx, what: str, raw: bytes, method: str = "GET", follow_up: bool = True,
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


def _get(ctx: _Ctx, target: str, **kw: Any) -> Response:
    return _roundtrip(ctx, f"GET {target}", ctx.req("GET", target), **kw)


# -- the checks ------------------------------------------------------------------------------

def check_root(ctx: _Ctx) -> str:
    for target in ("/", "/?ignored=1"):
        resp = _get(ctx, target)
        _expect(resp, f"GET {target}", 200, "text/plain", HELLO)
        if resp.framing not in ("length", "chunked"):
            raise CheckFailed(f"GET {target}: expected Content-Length or chunked framing, got {resp.framing}-delimited")
    return "200 text/plain 'Hello, World!' with correct framing"


def check_json(ctx: _Ctx) -> str:
    for target in ("/json", "/json?ignored=1"):
        resp = _get(ctx, target)
        _expect(resp, f"GET {target}", 200, "application/json")
        try:
            doc = json.loads(resp.body)
        except ValueError:
            raise CheckFailed(f"GET {target}: body is not JSON: {_show(resp.body)}") from None
        if doc != {"message": "Hello, World!"}:
            raise CheckFailed(f'GET {target}: expected {{"message":"Hello, World!"}}, got {_show(resp.body)}')
    return 'application/json {"message":"Hello, World!"}'


def check_file(ctx: _Ctx) -> str:
    try:
        want = ctx.hello_file.read_bytes()
    except OSError as e:
        raise CheckSkipped(f"cannot read the reference file {ctx.hello_file}: {e}") from e
    resp = _get(ctx, "/file")
    _expect(resp, "GET /file", 200, "text/html")
    if resp.body != want:
        raise CheckFailed(f"GET /file: expected the {len(want)} B of {ctx.hello_file.name}, got {_show(resp.body)}")
    return f"text/html, {len(want)} B identical to {ctx.hello_file.name}"


def check_delay(ctx: _Ctx) -> str:
    t0 = time.monotonic()
    resp = _get(ctx, "/delay?ms=200&bytes=1000")
    took = time.monotonic() - t0
    _expect(resp, "GET /delay?ms=200&bytes=1000", 200, "text/plain", b"x" * 1000)
    # 2 ms of slack for timers that round down; anything faster did not wait.
    if took < 0.198:
        raise CheckFailed(f"GET /delay?ms=200: expected ≥ 200 ms, answered after {took * 1000:.0f} ms")
    if took >= 2.0:
        raise CheckFailed(f"GET /delay?ms=200: expected < 2 s, answered after {took:.2f} s")
    _expect(_get(ctx, "/delay"), "GET /delay (no parameters)", 200, None, b"")
    for target in ("/delay?ms=abc", "/delay?ms=-1", "/delay?ms=60001", "/delay?bytes=2000000", "/delay?bytes=1.5"):
        resp = _get(ctx, target, follow_up=False, timeout=min(ctx.timeout, 3.0))
        _expect(resp, f"GET {target}", 400)
    return f"waited {took * 1000:.0f} ms for ms=200; invalid/out-of-range parameters → 400"


def _proc_tree_cpu(pid: int) -> dict[tuple[int, float], float]:
    """CPU seconds (user+system) of a process and its descendants, keyed by (pid, start)."""
    import psutil

    root = psutil.Process(pid)
    out: dict[tuple[int, float], float] = {}
    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
            out[(p.pid, p.create_time())] = t.user + t.system
        except psutil.Error:
            pass  # exited between listing and reading
    return out


def check_delay_cpu(ctx: _Ctx) -> str:
    if ctx.pid is None:
        raise CheckSkipped("no server pid given")
    n = 100 if ctx.bound is None else max(1, min(100, ctx.bound - 1))
    conns: list[Conn] = []
    sent: list[float] = []
    try:
        for _ in range(n):
            c = ctx.conn()
            conns.append(c)
            # Stamp before sending: a checker descheduled after send would otherwise
            # see the server's full 2 s wait as shorter than it was.
            sent.append(time.monotonic())
            c.send(ctx.req("GET", "/delay?ms=2000"))
        time.sleep(0.3)  # let the server accept and park them; that work is not waiting
        try:
            before = _proc_tree_cpu(ctx.pid)
            w0 = time.monotonic()
            time.sleep(1.4)
            after = _proc_tree_cpu(ctx.pid)
            window = time.monotonic() - w0
        except Exception as e:  # psutil.NoSuchProcess, AccessDenied
            raise CheckFailed(f"cannot sample CPU of pid {ctx.pid}: {e}") from e
        cpu = sum(v - before.get(k, 0.0) for k, v in after.items())
        share = cpu / window
        for i, (c, t) in enumerate(zip(conns, sent)):
            try:
                resp = c.read_response(timeout=max(0.1, t + 2.0 + ctx.timeout - time.monotonic()))
            except HTTPCheckError as e:
                raise CheckFailed(f"pending /delay?ms=2000 #{i + 1} of {n}: {e}") from e
            waited = time.monotonic() - t
            _expect(resp, f"GET /delay?ms=2000 #{i + 1} of {n}", 200, None, b"")
            if waited < 1.98:  # 1 % slack for timer granularity
                raise CheckFailed(f"GET /delay?ms=2000: answered after {waited * 1000:.0f} ms, expected ≥ 2000 ms")
        summary = (f"{n} pending /delay?ms=2000: server CPU {cpu * 1000:.0f} ms in {window:.2f} s "
                   f"= {share * 100:.1f}% of one CPU (limit 5%)")
        if share >= 0.05:
            raise CheckFailed(summary + " — busy waiting?")
        return summary
    finally:
        for c in conns:
            c.close()


def check_tenth(ctx: _Ctx) -> str:
    total = 1000
    c = 50 if ctx.bound is None else max(1, min(50, ctx.bound))
    per = [total // c + (1 if i < total % c else 0) for i in range(c)]
    start = threading.Barrier(c)

    def worker(k: int) -> list[int]:
        s = _Session(ctx)
        vals: list[int] = []
        try:
            try:
                start.wait(timeout=ctx.timeout)
            except threading.BrokenBarrierError:
                pass
            for _ in range(k):
                try:
                    resp = s.request(ctx.req("GET", "/tenth?ms=0"))
                except HTTPCheckError as e:
                    raise CheckFailed(f"GET /tenth?ms=0: {e}") from e
                _expect(resp, "GET /tenth?ms=0", 200, "text/plain")
                txt = resp.body.decode("ascii", "replace").strip()
                if not txt.isdigit() or int(txt) <= 0:
                    raise CheckFailed(f"GET /tenth?ms=0: expected a positive decimal integer, got {_show(resp.body)}")
                vals.append(int(txt))
            return vals
        finally:
            s.close()

    with ThreadPoolExecutor(max_workers=c) as ex:
        futs = [ex.submit(worker, k) for k in per]
        values = [v for f in futs for v in f.result()]
    if ctx.counter == "per-process":
        return f"{total} requests over {c} connections: all 200 with positive integers (per-process counter)"
    lo = min(values)
    distinct = len(set(values))
    if sorted(values) != list(range(lo, lo + total)):
        missing = len(set(range(lo, lo + total)) - set(values))
        raise CheckFailed(f"{total} concurrent /tenth over {c} connections: expected {total} distinct consecutive "
                          f"values, got {distinct} distinct in {lo}..{max(values)} ({missing} missing: lost updates?)")
    # The wait itself: on one connection exactly the multiple of 10 must take ≥ ms.
    s = _Session(ctx)
    slow_ok: list[tuple[int, float]] = []
    try:
        for _ in range(10):
            t0 = time.monotonic()
            try:
                resp = s.request(ctx.req("GET", "/tenth?ms=300"))
            except HTTPCheckError as e:
                raise CheckFailed(f"GET /tenth?ms=300: {e}") from e
            took = time.monotonic() - t0
            _expect(resp, "GET /tenth?ms=300", 200)
            txt = resp.body.decode("ascii", "replace").strip()
            if not txt.isdigit():
                raise CheckFailed(f"GET /tenth?ms=300: expected an integer, got {_show(resp.body)}")
            slow_ok.append((int(txt), took))
    finally:
        s.close()
    for v, took in slow_ok:
        if v % 10 == 0 and took < 0.29:
            raise CheckFailed(f"GET /tenth?ms=300: value {v} is a multiple of 10 but was answered after "
                              f"{took * 1000:.0f} ms (expected ≥ 300 ms)")
        if v % 10 and took >= 0.29:
            raise CheckFailed(f"GET /tenth?ms=300: value {v} is not a multiple of 10 but took {took * 1000:.0f} ms")
    if not any(v % 10 == 0 for v, _ in slow_ok):
        raise CheckFailed(f"GET /tenth?ms=300: 10 sequential requests returned no multiple of 10: {[v for v, _ in slow_ok]}")
    return (f"{total} concurrent requests over {c} connections → values {lo}..{lo + total - 1} exactly; "
            "only the multiple of 10 waited ms=300")


def _chunked(parts: list[bytes]) -> bytes:
    out = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts)
    return out + b"0\r\n\r\n"


def _send_in_thread(conn: Conn, pieces: list[bytes], pause: float) -> tuple[threading.Thread, list[Exception]]:
    """Send while the caller reads, so a server that streams its echo cannot deadlock us."""
    errors: list[Exception] = []

    def run() -> None:
        try:
            conn.send_pieces(pieces, pause)
        except Exception as e:  # reported only if the response is missing too
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, errors


def check_echo(ctx: _Ctx) -> str:
    small = b"ping \x00\xff pong"
    resp = _roundtrip(ctx, "POST /echo (15 B)", ctx.req("POST", "/echo", body=small), "POST")
    _expect(resp, "POST /echo (15 B)", 200, "application/octet-stream", small)
    resp = _roundtrip(ctx, "POST /echo (empty)", ctx.req("POST", "/echo", body=b""), "POST")
    _expect(resp, "POST /echo (empty)", 200, None, b"")

    # 1 MiB in 8 segments with pauses: the body arrives over many reads.
    big = random.Random(7).randbytes(1 << 20)
    raw = ctx.req("POST", "/echo", body=big)
    step = len(raw) // 8 + 1
    conn = ctx.conn(timeout=max(ctx.timeout, 10.0))
    try:
        t, errs = _send_in_thread(conn, [raw[i:i + step] for i in range(0, len(raw), step)], 0.01)
        try:
            resp = conn.read_response("POST")
        except HTTPCheckError as e:
            raise CheckFailed(f"POST /echo (1 MiB): {e}" + (f" (send: {errs[0]})" if errs else "")) from e
        t.join(ctx.timeout)
        _expect(resp, "POST /echo (1 MiB)", 200, "application/octet-stream")
        if resp.body != big:
            same = next((i for i, (a, b) in enumerate(zip(resp.body, big)) if a != b), min(len(resp.body), len(big)))
            raise CheckFailed(f"POST /echo (1 MiB): echo differs: got {len(resp.body)} B, first difference at byte {same}")
    finally:
        conn.close()

    # Chunked request body: decoded correctly, or refused with 411/400 and closed.
    parts = [b"Hello, ", b"chunked", b" world! " * 5]
    want = b"".join(parts)
    conn = ctx.conn()
    try:
        try:
            conn.send(ctx.req("POST", "/echo", [("Transfer-Encoding", "chunked")]) + _chunked(parts))
            resp = conn.read_response("POST")
        except HTTPCheckError as e:
            raise CheckFailed(f"POST /echo (chunked): {e}") from e
        if resp.status in (400, 411):
            closed, extra = conn.wait_closed(2.0)
            if not closed:
                raise CheckFailed(f"POST /echo (chunked): refused with {resp.status} but kept the connection open "
                                  f"(the chunks would be read as the next request)" + (f"; then sent {_show(extra)}" if extra else ""))
            chunked_note = f"chunked body refused with {resp.status} + close"
        else:
            _expect(resp, "POST /echo (chunked)", 200, None, want)
            if not resp.server_will_close and not conn.eof:
                try:
                    conn.send(ctx.req("GET", "/"))
                    nxt = conn.read_response()
                except PeerClosed:
                    nxt = None
                except HTTPCheckError as e:
                    raise CheckFailed(f"POST /echo (chunked): the next request on the connection got garbage: {e}") from e
                if nxt is not None and (nxt.status != 200 or nxt.body != HELLO):
                    raise CheckFailed(f"POST /echo (chunked): the next request on the connection got {nxt.brief()}")
            chunked_note = "chunked body decoded"
    finally:
        conn.close()

    # Over 1 MiB: 413 (or a close) — never an echo.
    over = b"y" * ((1 << 20) + 1)
    conn = ctx.conn()
    try:
        t, errs = _send_in_thread(conn, [ctx.req("POST", "/echo", body=over)], 0.0)
        try:
            resp = conn.read_response("POST")
            if resp.status != 413:
                raise CheckFailed(f"POST /echo (1 MiB + 1 B): expected 413, got {resp.brief()}")
            big_note = "413"
        except (PeerClosed, ProtocolError) as e:
            if isinstance(e, ProtocolError) and conn.buf:
                raise CheckFailed(f"POST /echo (1 MiB + 1 B): {e}") from e
            big_note = "connection closed"
        except ReadTimeout as e:
            raise CheckFailed(f"POST /echo (1 MiB + 1 B): expected 413, {e}") from e
    finally:
        conn.close()
    return f"15 B, empty and 1 MiB (8 segments) echoed exactly; {chunked_note}; > 1 MiB → {big_note}"


def check_not_found(ctx: _Ctx) -> str:
    for target in ("/nope", "/nope/deeper?x=1", "/jsonx", "/json/extra"):
        _expect(_get(ctx, target), f"GET {target}", 404)
    return "unknown paths → 404"


def check_method(ctx: _Ctx) -> str:
    got = []
    for method, target in (("POST", "/"), ("DELETE", "/json"), ("GET", "/echo")):
        body = b"" if method == "POST" else None
        resp = _roundtrip(ctx, f"{method} {target}", ctx.req(method, target, body=body), method)
        _expect(resp, f"{method} {target}", (404, 405))
        got.append(f"{method} {target} → {resp.status}")
    return "; ".join(got)


def _pad_headers(total: int) -> list[tuple[str, str]]:
    """X-Pad headers that bring the whole request head to about `total` bytes."""
    hdrs: list[tuple[str, str]] = []
    size = 40  # request line + Host + final CRLF, roughly
    i = 0
    while size + 110 <= total:
        hdrs.append((f"X-Pad-{i:03d}", "p" * 96))
        size += len(f"X-Pad-{i:03d}: ") + 96 + 2
        i += 1
    return hdrs


def check_bad_request(ctx: _Ctx) -> str:
    garbage = [b"GARBAGE\r\n\r\n", b"GET /\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n"]
    # Sent together so the waits overlap; a bounded pool keeps one worker free for the probe.
    batch = len(garbage) if ctx.bound is None else max(1, min(len(garbage), ctx.bound - 1))
    notes: list[str] = []
    for start in range(0, len(garbage), batch):
        notes += _bad_batch(ctx, garbage[start:start + batch], probe=start == 0 and (ctx.bound or 2) >= 2)
    _expect(_get(ctx, "/"), "GET / on a new connection after malformed requests", 200, None, HELLO)
    pad = _pad_headers(8000)
    raw = ctx.req("GET", "/", pad)
    resp = _roundtrip(ctx, f"GET / with a {len(raw)} B header block", raw)
    _expect(resp, f"GET / with a {len(raw)} B header block", 200, None, HELLO)
    return f"malformed → {', '.join(notes)}; server still answers; {len(raw)} B header block accepted"


def _bad_batch(ctx: _Ctx, garbage: list[bytes], probe: bool) -> list[str]:
    conns: list[Conn] = []
    notes: list[str] = []
    try:
        for g in garbage:
            c = ctx.conn()
            conns.append(c)
            try:
                c.send(g)
            except PeerClosed:
                pass
        if probe:  # a bad client must not stall the others: a fresh connection works meanwhile
            t0 = time.monotonic()
            _expect(_get(ctx, "/", follow_up=False), "GET / while malformed requests are pending", 200, None, HELLO)
            if time.monotonic() - t0 > 1.0:
                raise CheckFailed(f"GET / while malformed requests are pending took {time.monotonic() - t0:.2f} s")
        for g, c in zip(garbage, conns):
            try:
                resp = c.read_response(timeout=3.0)
            except PeerClosed:
                notes.append("close")
                continue
            except ReadTimeout:
                raise CheckFailed(f"{g[:12]!r}…: expected 400 or close, got neither within 3 s") from None
            except ProtocolError as e:
                raise CheckFailed(f"{g[:12]!r}…: expected 400 or close, got a malformed response: {e}") from e
            if not (400 <= resp.status < 500 or resp.status in (501, 505)) or resp.status == 404:
                raise CheckFailed(f"{g[:12]!r}…: expected 400 or close, got {resp.brief()}")
            notes.append(str(resp.status))
    finally:
        for c in conns:
            c.close()
    return notes


def check_keepalive(ctx: _Ctx) -> str:
    conn = ctx.conn()
    n = 100
    try:
        for i in range(n):
            target = "/" if i % 2 == 0 else "/json"
            what = f"request {i + 1} of {n} (GET {target}) on one connection"
            try:
                conn.send(ctx.req("GET", target))
                resp = conn.read_response()
            except PeerClosed as e:
                raise CheckFailed(f"expected {n} responses on one connection, the server closed it after {i} ({e})") from e
            except HTTPCheckError as e:
                raise CheckFailed(f"{what}: {e}") from e
            # Status and body only: content types are the root/json checks' business.
            _expect(resp, what, 200, None, HELLO if target == "/" else None)
            if resp.framing not in ("length", "chunked"):
                raise CheckFailed(f"{what}: expected Content-Length or chunked framing, got {resp.framing}-delimited")
            if resp.server_will_close:
                raise CheckFailed(f"{what}: the response announced Connection: close on a keep-alive request")
    finally:
        conn.close()
    return f"{n} sequential requests answered on 1 connection"


def check_connection_close(ctx: _Ctx) -> str:
    conn = ctx.conn()
    try:
        try:
            conn.send(ctx.req("GET", "/", [("Connection", "close")]))
            resp = conn.read_response()
        except HTTPCheckError as e:
            raise CheckFailed(f"GET / with Connection: close: {e}") from e
        _expect(resp, "GET / with Connection: close", 200, None, HELLO)
        t0 = time.monotonic()
        closed, extra = conn.wait_closed(2.0)
        if extra:
            raise CheckFailed(f"GET / with Connection: close: {len(extra)} extra bytes after the response: {_show(extra)}")
        if not closed:
            raise CheckFailed("GET / with Connection: close: expected the server to close after the response, "
                              "still open after 2 s")
        return f"response, then closed after {(time.monotonic() - t0) * 1000:.0f} ms"
    finally:
        conn.close()


def check_http10(ctx: _Ctx) -> str:
    conn = ctx.conn()
    try:
        try:
            conn.send(ctx.req("GET", "/", version="HTTP/1.0"))
            resp = conn.read_response()
        except HTTPCheckError as e:
            raise CheckFailed(f"HTTP/1.0 GET /: {e}") from e
        _expect(resp, "HTTP/1.0 GET /", 200, None, HELLO)
        closed, extra = conn.wait_closed(2.0)
        if extra:
            raise CheckFailed(f"HTTP/1.0 GET /: {len(extra)} extra bytes after the response: {_show(extra)}")
        if not closed:
            raise CheckFailed("HTTP/1.0 GET / without keep-alive: expected the server to close, still open after 2 s")
    finally:
        conn.close()
    conn = ctx.conn()
    try:
        for i in (1, 2):
            what = f"HTTP/1.0 GET / with Connection: keep-alive, request {i} of 2"
            try:
                conn.send(ctx.req("GET", "/", [("Connection", "keep-alive")], version="HTTP/1.0"))
                resp = conn.read_response()
            except PeerClosed as e:
                raise CheckFailed(f"{what}: the server closed the connection ({e})") from e
            except HTTPCheckError as e:
                raise CheckFailed(f"{what}: {e}") from e
            _expect(resp, what, 200, None, HELLO)
            if resp.framing == "close":
                raise CheckFailed(f"{what}: close-delimited body on a keep-alive request")
    finally:
        conn.close()
    return "1.0 without keep-alive → closed; 1.0 with Connection: keep-alive → 2 requests on 1 connection"


def _json_or_none(b: bytes) -> Any:
    try:
        return json.loads(b)
    except ValueError:
        return None


def check_pipeline(ctx: _Ctx) -> str:
    # Distinct sizes make every response identifiable; a slow first request exposes servers
    # that answer pipelined requests concurrently instead of in order.
    plan: list[tuple[str, str, bytes | None, bytes | None]] = []  # method, target, body, expected body
    sizes = iter(range(1, 100, 7))
    for i in range(16):
        kind = i % 4
        if i == 0:
            n = next(sizes)
            plan.append(("GET", f"/delay?ms=100&bytes={n}", None, b"x" * n))
        elif kind == 1:
            plan.append(("GET", "/", None, HELLO))
        elif kind == 2:
            plan.append(("GET", "/json", None, None))
        elif i in (7, 11):
            body = f"pipelined body #{i}".encode() * 3
            plan.append(("POST", "/echo", body, body))
        else:
            n = next(sizes)
            plan.append(("GET", f"/delay?ms={10 if i == 4 else 0}&bytes={n}", None, b"x" * n))
    raw = b"".join(ctx.req(m, t, body=b) for m, t, b, _ in plan)
    conn = ctx.conn()
    try:
        conn.send(raw)  # one write: all 16 requests arrive together
        for i, (m, t, _, want) in enumerate(plan):
            what = f"pipelined response {i + 1} of {len(plan)} ({m} {t})"
            try:
                resp = conn.read_response(m)
            except HTTPCheckError as e:
                raise CheckFailed(f"{what}: {e}") from e
            _expect(resp, what, 200, None, want)  # bodies identify the order; media types are checked elsewhere
            if want is None and _json_or_none(resp.body) != {"message": "Hello, World!"}:
                raise CheckFailed(f"{what}: expected the /json document, got {_show(resp.body)}")
            if resp.server_will_close and i < len(plan) - 1:
                raise CheckFailed(f"{what}: the server announced close with {len(plan) - i - 1} requests still pipelined")
        try:
            conn.send(ctx.req("GET", "/"))
            resp = conn.read_response()
        except HTTPCheckError as e:
            raise CheckFailed(f"request after the pipeline: {e}") from e
        _expect(resp, "request after the pipeline", 200, None, HELLO)
    finally:
        conn.close()
    return f"{len(plan)} requests in one write → {len(plan)} responses in order, correctly framed"


def _send_split(conn: Conn, pieces: list[bytes], pause: float, what: str, method: str = "GET") -> Response:
    """Send the pieces separately, then read; if the server hangs up early, say what it answered."""
    for i, p in enumerate(pieces):
        try:
            if i:
                time.sleep(pause)
            conn.send(p)
        except PeerClosed as e:
            try:
                early = conn.read_response(method, timeout=0.5).brief()
            except HTTPCheckError:
                early = "nothing"
            raise CheckFailed(f"{what}: the server answered {early} and closed after {i} of {len(pieces)} "
                              "pieces instead of waiting for the rest") from e
    try:
        return conn.read_response(method)
    except HTTPCheckError as e:
        raise CheckFailed(f"{what}: {e}") from e


def check_split(ctx: _Ctx) -> str:
    rng = random.Random(11)
    raw = ctx.req("GET", "/json?split=bytes")
    conn = ctx.conn()
    try:
        resp = _send_split(conn, [raw[i:i + 1] for i in range(len(raw))], 0.001, "GET /json sent byte by byte")
        _expect(resp, "GET /json sent byte by byte", 200, "application/json")
    finally:
        conn.close()

    raw = ctx.req("GET", "/", [("User-Agent", "serverbench-verify"), ("Accept", "*/*")])
    pieces: list[bytes] = []
    i = 0
    while i < len(raw):
        k = rng.randint(1, 7)
        pieces.append(raw[i:i + k])
        i += k
    conn = ctx.conn()
    try:
        resp = _send_split(conn, pieces, 0.003, f"GET / in {len(pieces)} random segments")
        _expect(resp, f"GET / in {len(pieces)} random segments", 200, None, HELLO)
    finally:
        conn.close()

    body = b"abcdefghijklmnopqrstuvwxyz"
    raw = ctx.req("POST", "/echo", [("Content-Type", "application/octet-stream")], body)
    head_end = raw.index(b"\r\n\r\n")
    cl = raw.index(b"Content-Length: ")
    # Awkward places: inside the method, between CR and LF, inside a header name and its
    # value, inside the blank line, and inside the body.
    cuts = sorted({2, raw.index(b"\r\n") + 1, cl + 7, cl + len("Content-Length: ") + 1,
                   head_end + 3, head_end + 4, head_end + 4 + 10, head_end + 4 + 11})
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)])]
    conn = ctx.conn()
    try:
        resp = _send_split(conn, pieces, 0.01, f"POST /echo split in {len(pieces)} pieces", "POST")
        _expect(resp, f"POST /echo split in {len(pieces)} pieces", 200, None, body)
    finally:
        conn.close()
    return "byte-by-byte GET, random segments and an awkwardly split POST all answered correctly"


def check_idle_connections(ctx: _Ctx) -> str:
    want = 1000 if ctx.bound is None else max(0, min(1000, ctx.bound - 1))
    soft = raise_nofile()
    in_use = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 64
    k = min(want, soft - in_use - 64)  # keep headroom for the probe and the rest of the process
    note = "" if k == want else f" (limited from {want} by RLIMIT_NOFILE {soft})"
    idle: list[Conn] = []
    half: list[Conn] = []
    try:
        for i in range(k):
            try:
                c = Conn(ctx.host, ctx.port, timeout=3.0)
            except HTTPCheckError as e:
                raise CheckFailed(f"opening idle connection {i + 1} of {k}: {e}") from e
            if i % 10 == 1:  # every tenth, from the second on (so small pools get one too)
                c.send(b"GET /del")  # half a request line: the server must wait for the rest
                half.append(c)
            else:
                idle.append(c)
        worst = 0.0
        probe = ctx.conn()
        try:
            for i, target in enumerate(("/", "/json", "/", "/json", "/")):
                t0 = time.monotonic()
                try:
                    probe.send(ctx.req("GET", target))
                    resp = probe.read_response(timeout=1.0)
                except PeerClosed:
                    probe.close()
                    probe = ctx.conn()
                    probe.send(ctx.req("GET", target))
                    resp = probe.read_response(timeout=1.0)
                except ReadTimeout:
                    raise CheckFailed(f"with {k} idle connections open, GET {target} #{i + 1} got no answer within 1 s") from None
                worst = max(worst, time.monotonic() - t0)
                _expect(resp, f"GET {target} with {k} idle connections open", 200)
        except HTTPCheckError as e:
            raise CheckFailed(f"with {k} idle connections open: {e}") from e
        finally:
            probe.close()
        # The held connections must still be alive and usable, the half-sent one included
        # (in a bounded pool each of them already holds its worker, so this cannot starve).
        for held, rest in ((idle[:1], b""), (half[:1], b"ay?ms=0&bytes=3")):
            if not held:
                continue
            what = "an idle connection" if not rest else "a connection idle after half a request line"
            try:
                held[0].send(rest + b" HTTP/1.1\r\nHost: x\r\n\r\n" if rest else ctx.req("GET", "/"))
                resp = held[0].read_response(timeout=1.0)
            except HTTPCheckError as e:
                raise CheckFailed(f"{what}, used after the others: {e}") from e
            _expect(resp, f"{what}, used after the others", 200, None, HELLO if not rest else b"xxx")
        return f"{k} idle connections ({len(half)} with half a request line){note}; 5 requests answered, slowest {worst * 1000:.0f} ms"
    finally:
        for c in idle + half:
            c.close()


_CHECK_FUNCS: dict[str, Callable[[_Ctx], str]] = {
    "root": check_root,
    "json": check_json,
    "file": check_file,
    "delay": check_delay,
    "delay-cpu": check_delay_cpu,
    "tenth": check_tenth,
    "echo": check_echo,
    "not-found": check_not_found,
    "method": check_method,
    "bad-request": check_bad_request,
    "keepalive": check_keepalive,
    "connection-close": check_connection_close,
    "http10": check_http10,
    "pipeline": check_pipeline,
    "split": check_split,
    "idle-connections": check_idle_connections,
}
CHECKS: list[str] = list(_CHECK_FUNCS)


def _default_hello_file() -> Path:
    env = os.environ.get("HELLO_FILE")
    if env:
        return Path(env)
    try:
        from .paths import HELLO_FILE

        return Path(HELLO_FILE)
    except ImportError:
        return Path(__file__).resolve().parent.parent / "assets" / "hello.html"


def _bound(manifest: Any, workers: int) -> int | None:
    b = getattr(manifest, "bound", None)
    if b is None:
        return None
    val = b(workers) if callable(b) else b
    return None if val is None else int(val)


def verify(
    base_url: str,
    manifest: Any | None = None,
    *,
    workers: int = 1,
    pid: int | None = None,
    only: list[str] | None = None,
    hello_file: str | Path | None = None,
    timeout: float = 5.0,
) -> list[CheckResult]:
    """Run the SPEC.md conformance checks against the server at base_url (http://host:port).

    manifest (serverbench.catalog.Manifest or None) supplies `counter` and `bound(workers)`;
    pid enables the CPU check; only restricts to the named checks (kept in CHECKS order).
    """
    u = urlsplit(base_url if "//" in base_url else f"http://{base_url}")
    if u.scheme != "http" or not u.hostname:
        raise ValueError(f"expected http://host:port, got {base_url!r}")
    if only is not None:
        unknown = [n for n in only if n not in _CHECK_FUNCS]
        if unknown:
            raise ValueError(f"unknown check(s) {unknown}; known: {CHECKS}")
    ctx = _Ctx(
        host=u.hostname,
        port=u.port or 80,
        timeout=timeout,
        counter=str(getattr(manifest, "counter", None) or "shared"),
        bound=_bound(manifest, workers),
        pid=pid,
        hello_file=Path(hello_file) if hello_file else _default_hello_file(),
    )
    results: list[CheckResult] = []
    for name in CHECKS:
        if only is not None and name not in only:
            continue
        t0 = time.monotonic()
        try:
            detail = _CHECK_FUNCS[name](ctx)
            res = CheckResult(name, True, detail)
        except CheckSkipped as e:
            res = CheckResult(name, True, str(e), skipped=True)
        except CheckFailed as e:
            res = CheckResult(name, False, str(e))
        except HTTPCheckError as e:
            res = CheckResult(name, False, f"{type(e).__name__}: {e}")
        except Exception as e:  # a bug or an OS error must not abort the other checks
            res = CheckResult(name, False, f"unexpected {type(e).__name__}: {e}")
        res.seconds = round(time.monotonic() - t0, 3)
        results.append(res)
    return results
