"""Checks of HTTP/1.1 behaviour: the Date header, errors, keep-alive, Connection: close, HTTP/1.0,
pipelining, split segments and many idle connections."""
from __future__ import annotations

import calendar
import json
import os
import random
import re
import time
from datetime import datetime
from typing import Any

from ..processes.supervisor import raise_nofile
from .base import HELLO, CheckFailed, Ctx, expect, get, roundtrip, show
from .httpcheck import Conn, HTTPCheckError, PeerClosed, ProtocolError, ReadTimeout, Response

# IMF-fixdate (RFC 9110 §5.6.7), e.g. "Sun, 06 Nov 1994 08:49:37 GMT": exact case, exact spacing,
# two-digit day (java.time's RFC_1123_DATE_TIME writes "6 Nov" and fails here).
_IMF_FIXDATE = re.compile(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d\d) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                          r"(\d{4}) (\d\d):(\d\d):(\d\d) GMT")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# SPEC lets a server cache the formatted value for up to 1 s; the value is also truncated to the
# second. One more second of slack on each side for a loaded machine.
DATE_BEHIND_S = 3
DATE_AHEAD_S = 1


def parse_imf_fixdate(value: str) -> int:
    """Seconds since the epoch of an IMF-fixdate; ValueError (one-line reason) for anything else."""
    m = _IMF_FIXDATE.fullmatch(value)
    if m is None:
        raise ValueError("not IMF-fixdate (expected e.g. 'Sun, 06 Nov 1994 08:49:37 GMT')")
    wday, day, mon, year, hh, mm, ss = m.groups()
    try:
        # A leap second (60) is valid in the grammar; datetime has no room for it.
        dt = datetime(int(year), _MONTHS.index(mon) + 1, int(day), int(hh), int(mm), min(int(ss), 59))
    except ValueError as e:
        raise ValueError(f"not a real date/time ({e})") from None
    if _DAYS[dt.weekday()] != wday:
        raise ValueError(f"{day} {mon} {year} is a {_DAYS[dt.weekday()]}, not a {wday}")
    return calendar.timegm(dt.timetuple()) + (int(ss) - dt.second)


def _date_of(ctx: Ctx, what: str, raw: bytes, method: str, status: int) -> str:
    sent = time.time()
    resp = roundtrip(ctx, what, raw, method, follow_up=False)
    got = time.time()
    expect(resp, what, status)
    values = resp.header_all("date")
    if not values:
        raise CheckFailed(f"{what}: no Date header (SPEC: every response carries one, IMF-fixdate; "
                          f"RFC 9110 §6.6.1)")
    if len(values) > 1:
        raise CheckFailed(f"{what}: {len(values)} Date headers ({'; '.join(values)}), expected one")
    try:
        secs = parse_imf_fixdate(values[0])
    except ValueError as e:
        raise CheckFailed(f"{what}: Date {values[0]!r}: {e}") from None
    if secs < int(sent) - DATE_BEHIND_S or secs > int(got) + DATE_AHEAD_S:
        off = secs - sent
        raise CheckFailed(f"{what}: Date {values[0]!r} is {abs(off):.1f} s {'behind' if off < 0 else 'ahead of'} "
                          f"the clock (SPEC: cached for at most 1 s)")
    return values[0]


def check_date(ctx: Ctx) -> str:
    """2xx responses of several endpoints carry one IMF-fixdate Date near the local clock.

    Run after the endpoint checks, so a value formatted once at start-up is already seconds old.
    Only 2xx are judged: some frameworks' own error responses have no Date."""
    cases = [("GET", "/", None), ("GET", "/json", None), ("GET", "/delay?ms=0&bytes=10", None),
             ("GET", "/file", None), ("POST", "/echo", b"date")]
    last = ""
    for method, target, body in cases:
        last = _date_of(ctx, f"{method} {target}", ctx.req(method, target, body=body), method, 200)
    return f"one IMF-fixdate Date, within seconds of the clock, on {len(cases)} endpoints (last {last!r})"


def check_not_found(ctx: Ctx) -> str:
    for target in ("/nope", "/nope/deeper?x=1", "/jsonx", "/json/extra"):
        expect(get(ctx, target), f"GET {target}", 404)
    return "unknown paths → 404"


def check_method(ctx: Ctx) -> str:
    got = []
    for method, target in (("POST", "/"), ("DELETE", "/json"), ("GET", "/echo")):
        body = b"" if method == "POST" else None
        resp = roundtrip(ctx, f"{method} {target}", ctx.req(method, target, body=body), method)
        expect(resp, f"{method} {target}", (404, 405))
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


def check_bad_request(ctx: Ctx) -> str:
    garbage = [b"GARBAGE\r\n\r\n", b"GET /\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n"]
    # Sent together so the waits overlap; a bounded pool keeps one worker free for the probe.
    batch = len(garbage) if ctx.bound is None else max(1, min(len(garbage), ctx.bound - 1))
    notes: list[str] = []
    for start in range(0, len(garbage), batch):
        notes += _bad_batch(ctx, garbage[start:start + batch], probe=start == 0 and (ctx.bound or 2) >= 2)
    expect(get(ctx, "/"), "GET / on a new connection after malformed requests", 200, None, HELLO)
    pad = _pad_headers(8000)
    raw = ctx.req("GET", "/", pad)
    resp = roundtrip(ctx, f"GET / with a {len(raw)} B header block", raw)
    expect(resp, f"GET / with a {len(raw)} B header block", 200, None, HELLO)
    return f"malformed → {', '.join(notes)}; server still answers; {len(raw)} B header block accepted"


def _bad_batch(ctx: Ctx, garbage: list[bytes], probe: bool) -> list[str]:
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
            expect(get(ctx, "/", follow_up=False), "GET / while malformed requests are pending", 200, None, HELLO)
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


def check_keepalive(ctx: Ctx) -> str:
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
            expect(resp, what, 200, None, HELLO if target == "/" else None)
            if resp.framing not in ("length", "chunked"):
                raise CheckFailed(f"{what}: expected Content-Length or chunked framing, got {resp.framing}-delimited")
            if resp.server_will_close:
                raise CheckFailed(f"{what}: the response announced Connection: close on a keep-alive request")
    finally:
        conn.close()
    return f"{n} sequential requests answered on 1 connection"


def _closes_after(ctx: Ctx, raw: bytes, what: str) -> str:
    """Send `raw` on a fresh connection; a 200 `Hello, World!`, then the server's close within 2 s.
    Returns how long the close took."""
    conn = ctx.conn()
    try:
        try:
            conn.send(raw)
            resp = conn.read_response()
        except HTTPCheckError as e:
            raise CheckFailed(f"{what}: {e}") from e
        expect(resp, what, 200, None, HELLO)
        t0 = time.monotonic()
        closed, extra = conn.wait_closed(2.0)
        if extra:
            raise CheckFailed(f"{what}: {len(extra)} extra bytes after the response: {show(extra)}")
        if not closed:
            raise CheckFailed(f"{what}: expected the server to close after the response, still open after 2 s")
        return f"closed after {(time.monotonic() - t0) * 1000:.0f} ms"
    finally:
        conn.close()


def check_connection_close(ctx: Ctx) -> str:
    return "response, then " + _closes_after(ctx, ctx.req("GET", "/", [("Connection", "close")]),
                                             "GET / with Connection: close")


# Header names and the `close` token are case-insensitive (RFC 9110 §5.1, §7.6.1); every client the
# harness drives writes `Connection: close`, so another spelling is input no workload sends.
CLOSE_SPELLINGS = (("Connection", "CLOSE"), ("connection", "CLOSE"), ("CONNECTION", "Close"))


def check_close_case(ctx: Ctx) -> str:
    for name, token in CLOSE_SPELLINGS:
        _closes_after(ctx, ctx.req("GET", "/", [(name, token)]), f"GET / with {name}: {token}")
    return "response, then closed, for " + ", ".join(f"'{n}: {t}'" for n, t in CLOSE_SPELLINGS)


def check_http10_no_host(ctx: Ctx) -> str:
    # Host is required from HTTP/1.1 on (RFC 9112 §3.2); an HTTP/1.0 request without it is valid.
    what = "HTTP/1.0 GET / without Host"
    conn = ctx.conn()
    try:
        try:
            conn.send(b"GET / HTTP/1.0\r\n\r\n")
            resp = conn.read_response()
        except HTTPCheckError as e:
            raise CheckFailed(f"{what}: {e}") from e
        expect(resp, what, 200, None, HELLO)
    finally:
        conn.close()
    return f"{what} → 200"


def ab_request(ctx: Ctx) -> bytes:
    """ApacheBench 2.3's request with -k, byte for byte (ab speaks HTTP/1.0 only). Its `Keep-Alive`
    is capitalised: MochiWeb, for one, keeps a connection for exactly that spelling and no other."""
    return (f"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: {ctx.host}:{ctx.port}\r\n"
            "User-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n").encode("latin-1")


def _http10_keepalive(ctx: Ctx, raw: bytes, label: str) -> str:
    """Two HTTP/1.0 keep-alive requests `raw` on one connection: kept and announced, or declined
    (no keep-alive announced, or close) and then closed. Returns which, in words."""
    conn = ctx.conn()
    try:
        for i in (1, 2):
            what = f"HTTP/1.0 GET / with {label}, request {i} of 2"
            try:
                conn.send(raw)
                resp = conn.read_response()
            except PeerClosed as e:
                raise CheckFailed(f"{what}: the server closed the connection ({e})") from e
            except HTTPCheckError as e:
                raise CheckFailed(f"{what}: {e}") from e
            expect(resp, what, 200, None, HELLO)
            if resp.framing == "close":
                raise CheckFailed(f"{what}: close-delimited body on a keep-alive request")
            # An HTTP/1.0 client keeps the connection only when the response says `Connection:
            # keep-alive` (RFC 9112 §9.3, RFC 1945 practice); without it the client waits for the
            # close (ab -k hangs). Persistence is optional: declining it (no keep-alive, then close) is fine.
            if "keep-alive" not in resp.connection_tokens or resp.server_will_close:
                closed, extra = conn.wait_closed(2.0)
                if extra or not closed:
                    said = "announced a close" if "close" in resp.connection_tokens else (
                        f"did not announce keep-alive (HTTP/{resp.version} response without "
                        f"Connection: keep-alive, which an HTTP/1.0 client reads as a close)")
                    raise CheckFailed(f"{what}: the response {said}, but the server "
                                      + ("sent more bytes" if extra else "kept the connection open for 2 s"))
                how = "close announced" if "close" in resp.connection_tokens else "no keep-alive announced"
                return f"{how}, then closed (persistence declined)"
    finally:
        conn.close()
    return "announced, 2 requests on 1 connection"


def check_http10(ctx: Ctx) -> str:
    _closes_after(ctx, ctx.req("GET", "/", version="HTTP/1.0"), "HTTP/1.0 GET / without keep-alive")
    lower = _http10_keepalive(ctx, ctx.req("GET", "/", [("Connection", "keep-alive")], version="HTTP/1.0"),
                              "Connection: keep-alive")
    ab = _http10_keepalive(ctx, ab_request(ctx), "ab -k's request (Connection: Keep-Alive)")
    return f"1.0 without keep-alive → closed; 1.0 with Connection: keep-alive → {lower}; ab -k's request → {ab}"


def _json_or_none(b: bytes) -> Any:
    try:
        return json.loads(b)
    except ValueError:
        return None


def check_pipeline(ctx: Ctx) -> str:
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
            expect(resp, what, 200, None, want)  # bodies identify the order; media types are checked elsewhere
            if want is None and _json_or_none(resp.body) != {"message": "Hello, World!"}:
                raise CheckFailed(f"{what}: expected the /json document, got {show(resp.body)}")
            if resp.server_will_close and i < len(plan) - 1:
                raise CheckFailed(f"{what}: the server announced close with {len(plan) - i - 1} requests still pipelined")
        try:
            conn.send(ctx.req("GET", "/"))
            resp = conn.read_response()
        except HTTPCheckError as e:
            raise CheckFailed(f"request after the pipeline: {e}") from e
        expect(resp, "request after the pipeline", 200, None, HELLO)
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


def check_split(ctx: Ctx) -> str:
    rng = random.Random(11)
    raw = ctx.req("GET", "/json?split=bytes")
    conn = ctx.conn()
    try:
        resp = _send_split(conn, [raw[i:i + 1] for i in range(len(raw))], 0.001, "GET /json sent byte by byte")
        expect(resp, "GET /json sent byte by byte", 200, "application/json")
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
        expect(resp, f"GET / in {len(pieces)} random segments", 200, None, HELLO)
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
        expect(resp, f"POST /echo split in {len(pieces)} pieces", 200, None, body)
    finally:
        conn.close()
    return "byte-by-byte GET, random segments and an awkwardly split POST all answered correctly"


def check_idle_connections(ctx: Ctx) -> str:
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
                expect(resp, f"GET {target} with {k} idle connections open", 200)
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
            expect(resp, f"{what}, used after the others", 200, None, HELLO if not rest else b"xxx")
        return f"{k} idle connections ({len(half)} with half a request line){note}; 5 requests answered, slowest {worst * 1000:.0f} ms"
    finally:
        for c in idle + half:
            c.close()


