"""The request-smuggling check (a security deviation, rules/admission.py): request shapes whose body
length two parsers could read differently, built so that a wrong reading leaves a whole second
request behind, which the server then answers.

RFC 9112 §6.3: a request with both Transfer-Encoding: chunked and Content-Length is framed by the
chunked coding (or refused, then the connection closed); differing Content-Length values are an
unrecoverable framing error: 400, then close.
"""
from __future__ import annotations

from .base import CheckFailed, Ctx, show
from .httpcheck import Conn, HTTPCheckError, PeerClosed, ReadTimeout, Response

# The hidden request: its body identifies it if it is ever answered.
_HIDDEN_BYTES = 17
REFUSED = (400, 411, 413, 501)


def _hidden(ctx: Ctx) -> bytes:
    return ctx.req("GET", f"/delay?ms=0&bytes={_HIDDEN_BYTES}")


def _head(ctx: Ctx, headers: list[tuple[str, str]]) -> bytes:
    lines = ["POST /echo HTTP/1.1", f"Host: {ctx.host}:{ctx.port}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _first(conn: Conn, what: str) -> Response | None:
    """The first response, or None when the server closed without one (a refusal too)."""
    try:
        return conn.read_response("POST", timeout=3.0)
    except PeerClosed:
        return None
    except ReadTimeout:
        raise CheckFailed(f"{what}: no answer and no close within 3 s") from None
    except HTTPCheckError as e:
        raise CheckFailed(f"{what}: malformed response: {e}") from e


def _no_second_answer(conn: Conn, what: str, must_close: bool) -> None:
    """After the first response: the hidden request must not be answered; a refusal must close."""
    closed, extra = conn.wait_closed(2.0 if must_close else 0.5)
    if extra:
        raise CheckFailed(f"{what}: the rest of the body was answered as a second request "
                          f"({show(extra)}): request smuggling")
    if must_close and not closed:
        raise CheckFailed(f"{what}: refused, but the connection stayed open for 2 s (RFC 9112 §6.3: close it, "
                          f"or the rest of the body is read as the next request)")


def _te_and_cl(ctx: Ctx) -> str:
    what = "POST /echo with Transfer-Encoding: chunked and Content-Length"
    hidden = _hidden(ctx)
    size_line = f"{len(hidden):x}\r\n".encode()
    chunked = size_line + hidden + b"\r\n0\r\n\r\n"
    # Content-Length covers the chunk-size line only: framed by it, `hidden` is the next request.
    raw = _head(ctx, [("Content-Length", str(len(size_line))), ("Transfer-Encoding", "chunked")]) + chunked
    conn = ctx.conn()
    try:
        conn.send(raw)
        resp = _first(conn, what)
        if resp is None:
            return "TE + CL: closed unanswered"
        if resp.status in REFUSED:
            _no_second_answer(conn, what, must_close=True)
            return f"TE + CL: {resp.status}, closed"
        if resp.status != 200 or resp.body != hidden:
            framed = ""
            if resp.body == size_line:
                _, extra = conn.wait_closed(0.5)
                framed = (" framed by Content-Length, and the rest of the body answered as a second request: "
                          "request smuggling" if extra else " (framed by Content-Length)")
            raise CheckFailed(f"{what}: expected the chunked body echoed or a 400, got {resp.brief()}{framed}")
        if resp.server_will_close:
            _no_second_answer(conn, what, must_close=True)
            return "TE + CL: framed as chunked, closed"
        _no_second_answer(conn, what, must_close=False)
        try:  # the connection must still be in step: the next request gets its own answer
            conn.send(ctx.req("GET", "/"))
            nxt = conn.read_response(timeout=3.0)
        except PeerClosed:
            return "TE + CL: framed as chunked, then closed"
        except HTTPCheckError as e:
            raise CheckFailed(f"{what}: the request after it got no proper answer ({e})") from e
        if nxt.body != b"Hello, World!":
            raise CheckFailed(f"{what}: the request after it got {nxt.brief()}, not GET /'s answer")
        return "TE + CL: framed as chunked"
    finally:
        conn.close()


def _duplicate_cl(ctx: Ctx) -> str:
    what = "POST /echo with two differing Content-Length headers"
    hidden = _hidden(ctx)
    body = b"hello" + hidden
    raw = _head(ctx, [("Content-Length", "5"), ("Content-Length", str(len(body)))]) + body
    conn = ctx.conn()
    try:
        conn.send(raw)
        resp = _first(conn, what)
        if resp is None:
            return "duplicate CL: closed unanswered"
        if resp.status not in REFUSED:
            took = ("the first" if resp.body == b"hello" else "the second" if resp.body == body else "neither")
            _, extra = conn.wait_closed(0.5) if took == "the first" else (True, b"")
            rest = "; the rest of the body was answered as a second request: request smuggling" if extra else ""
            raise CheckFailed(f"{what} (5 and {len(body)}): expected 400 and close, got {resp.brief()} "
                              f"({took} value framed the body{rest})")
        _no_second_answer(conn, what, must_close=True)
        return f"duplicate CL: {resp.status}, closed"
    finally:
        conn.close()


def check_smuggling(ctx: Ctx) -> str:
    """Conflicting Transfer-Encoding/Content-Length and duplicate Content-Length (RFC 9112 §6.3)."""
    notes = []
    for case in (_te_and_cl, _duplicate_cl):
        try:
            notes.append(case(ctx))
        except PeerClosed as e:  # closed while we were still sending: a refusal
            notes.append(f"closed while sending ({e})")
    return "; ".join(notes)
