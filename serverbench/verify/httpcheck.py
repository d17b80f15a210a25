"""A strict, raw-socket HTTP/1.1 client for the conformance checks.

Deliberately not urllib/http.client: the checks need byte-level control (pipelining,
splitting requests anywhere, raw garbage) and a response reader that refuses what lenient
clients paper over (bad framing, bare LF, a body with neither length nor close).
Every blocking operation has a deadline so a misbehaving server can never hang `verify`.
"""
from __future__ import annotations

import re
import socket
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

DEFAULT_TIMEOUT = 5.0
MAX_HEAD = 64 * 1024  # a response header block larger than this is treated as garbage

_STATUS_RE = re.compile(rb"HTTP/(\d)\.(\d) (\d{3})(?: ([^\r\n]*))?")
_TOKEN_RE = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CHUNK_RE = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?")


class HTTPCheckError(Exception):
    """Base class: something about the exchange was wrong; str() is a one-line reason."""


class ProtocolError(HTTPCheckError):
    """The server sent bytes that are not a correctly framed HTTP/1.x response."""


class PeerClosed(HTTPCheckError):
    """The server closed (FIN or RST) before the first byte of a response."""


class ReadTimeout(HTTPCheckError):
    """Nothing (or not enough) arrived before the deadline."""


@dataclass
class Response:
    version: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    framing: str  # "length" | "chunked" | "close" | "none"
    elapsed: float = 0.0  # seconds from the call to read_response() to the last body byte
    interim: list[int] = field(default_factory=list)  # 1xx statuses seen before this one

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def header_all(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    @property
    def media_type(self) -> str:
        """Content-Type without parameters, lower-cased ("" when absent)."""
        ct = self.header("content-type") or ""
        return ct.split(";", 1)[0].strip().lower()

    @property
    def connection_tokens(self) -> set[str]:
        toks: set[str] = set()
        for v in self.header_all("connection"):
            toks.update(t.strip().lower() for t in v.split(",") if t.strip())
        return toks

    @property
    def server_will_close(self) -> bool:
        """Whether the server announced (or framing implies) that it closes after this response."""
        if self.framing == "close" or "close" in self.connection_tokens:
            return True
        return self.version == "1.0" and "keep-alive" not in self.connection_tokens

    def brief(self) -> str:
        """Short description for failure messages: status, type, a snippet of the body."""
        snippet = self.body[:40]
        more = "…" if len(self.body) > 40 else ""
        return f"{self.status} {self.header('content-type') or '(no Content-Type)'} {snippet!r}{more} ({len(self.body)} B)"


def build_request(
    method: str,
    target: str,
    host: str = "localhost",
    headers: Iterable[tuple[str, str]] = (),
    body: bytes | None = None,
    version: str = "HTTP/1.1",
) -> bytes:
    """Serialize one request; adds Host and (for a body) Content-Length unless given."""
    hdrs = list(headers)
    names = {k.lower() for k, _ in hdrs}
    lines = [f"{method} {target} {version}"]
    if "host" not in names:
        lines.append(f"Host: {host}")
    lines += [f"{k}: {v}" for k, v in hdrs]
    if body is not None and "content-length" not in names and "transfer-encoding" not in names:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


class Conn:
    """One client TCP connection with a receive buffer and a strict response reader."""

    def __init__(self, host: str, port: int, timeout: float = DEFAULT_TIMEOUT, nodelay: bool = True,
                 tls: ssl.SSLContext | None = None) -> None:
        """With `tls`, the connection is a TLS client of `host` (its name or IP verified as the context says):
        every check then runs unchanged over TLS, each `send` one or more TLS records of its own."""
        self.host, self.port, self.timeout = host, port, timeout
        try:
            raw = socket.create_connection((host, port), timeout=timeout)
        except TimeoutError as e:
            raise ReadTimeout(f"connect to {host}:{port} timed out after {timeout:g} s") from e
        except OSError as e:
            raise PeerClosed(f"connect to {host}:{port} failed: {e.strerror or e}") from e
        if nodelay:  # so that split sends really leave as separate segments
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock: socket.socket = raw
        if tls is not None:
            try:
                self.sock = tls.wrap_socket(raw, server_hostname=host)  # handshakes within `timeout`
            except TimeoutError as e:
                raw.close()
                raise ReadTimeout(f"TLS handshake with {host}:{port} timed out after {timeout:g} s") from e
            except (ssl.SSLError, OSError) as e:
                raw.close()
                raise PeerClosed(f"TLS handshake with {host}:{port} failed: {e}") from e
        self.buf = bytearray()
        self.eof = False

    # -- sending -------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        self.sock.settimeout(self.timeout)
        try:
            self.sock.sendall(data)
        except TimeoutError as e:
            raise ReadTimeout(f"send of {len(data)} B timed out (server not reading)") from e
        except OSError as e:
            raise PeerClosed(f"send failed: {e.strerror or e}") from e

    def send_pieces(self, pieces: Iterable[bytes], pause: float = 0.002) -> None:
        """Send each piece separately with a pause, so the server sees them as separate reads."""
        for i, p in enumerate(pieces):
            if i:
                time.sleep(pause)
            self.send(p)

    # -- receiving -----------------------------------------------------------------------
    def _fill(self, deadline: float, waiting_for: str) -> None:
        """Receive more bytes into buf; sets eof on FIN/RST; ReadTimeout at the deadline."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise ReadTimeout(f"timed out waiting for {waiting_for} ({len(self.buf)} B buffered)")
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except TimeoutError as e:
            raise ReadTimeout(f"timed out waiting for {waiting_for} ({len(self.buf)} B buffered)") from e
        except (ConnectionResetError, ssl.SSLError):
            # a reset, or over TLS a fatal alert or a broken record: the connection is over either way
            data = b""
        if not data:
            self.eof = True
        self.buf += data

    def _line(self, deadline: float, what: str, limit: int = MAX_HEAD) -> bytes:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                if i == 0 or self.buf[i - 1] != 0x0D:
                    raise ProtocolError(f"bare LF (no CR) in {what}: {bytes(self.buf[:max(i, 1)][:60])!r}")
                line = bytes(self.buf[: i - 1])
                del self.buf[: i + 1]
                return line
            if len(self.buf) > limit:
                raise ProtocolError(f"{what} longer than {limit} B: {bytes(self.buf[:60])!r}")
            if self.eof:
                raise ProtocolError(f"connection closed in the middle of {what}: {bytes(self.buf[:60])!r}")
            self._fill(deadline, what)

    def _exact(self, n: int, deadline: float, what: str) -> bytes:
        while len(self.buf) < n:
            if self.eof:
                raise ProtocolError(f"connection closed after {len(self.buf)} of {n} B of {what}")
            self._fill(deadline, f"{what} ({len(self.buf)} of {n} B)")
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def read_response(self, method: str = "GET", timeout: float | None = None) -> Response:
        """Read exactly one response (skipping 100/103 interim ones), parsing strictly."""
        t0 = time.monotonic()
        deadline = t0 + (self.timeout if timeout is None else timeout)
        interim: list[int] = []
        while True:
            # EOF before any byte is its own error so callers can tell "closed" from "garbage".
            while not self.buf:
                if self.eof:
                    raise PeerClosed("connection closed before a response" + (" (after 1xx)" if interim else ""))
                self._fill(deadline, "the status line")
            # Fail fast on a non-HTTP reply (e.g. an HTTP/0.9-style bare body) without waiting for a line end.
            while len(self.buf) < 5 and not self.eof and b"\n" not in self.buf:
                self._fill(deadline, "the status line")
            if not bytes(self.buf[:5]).startswith(b"HTTP/"[: len(self.buf)]) or (self.eof and len(self.buf) < 5):
                raise ProtocolError(f"not an HTTP status line: {bytes(self.buf[:60])!r}")
            line = self._line(deadline, "the status line", 8192)
            m = _STATUS_RE.fullmatch(line)
            if not m:
                raise ProtocolError(f"not an HTTP status line: {line[:60]!r}")
            version = f"{m.group(1).decode()}.{m.group(2).decode()}"
            if version not in ("1.0", "1.1"):
                raise ProtocolError(f"unexpected HTTP version in {line[:60]!r}")
            status = int(m.group(3))
            reason = (m.group(4) or b"").decode("latin-1")
            headers = self._headers(deadline)
            if status in (100, 103):
                interim.append(status)
                continue
            if 100 <= status < 200:
                raise ProtocolError(f"unexpected interim status {status}")
            break
        resp = Response(version, status, reason, headers, b"", "none", interim=interim)
        resp.body, resp.framing = self._body(resp, method, deadline)
        resp.elapsed = time.monotonic() - t0
        return resp

    def _headers(self, deadline: float) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = []
        total = 0
        while True:
            line = self._line(deadline, "the header block")
            total += len(line) + 2
            if total > MAX_HEAD:
                raise ProtocolError(f"header block larger than {MAX_HEAD} B")
            if not line:
                return headers
            if line[:1] in (b" ", b"\t"):
                raise ProtocolError(f"obsolete line folding in headers: {line[:60]!r}")
            name, sep, value = line.partition(b":")
            if not sep or not _TOKEN_RE.fullmatch(name):
                raise ProtocolError(f"malformed header line: {line[:60]!r}")
            headers.append((name.decode("latin-1"), value.strip(b" \t").decode("latin-1")))

    def _body(self, resp: Response, method: str, deadline: float) -> tuple[bytes, str]:
        if method.upper() == "HEAD" or resp.status in (204, 304):
            return b"", "none"
        te = [t.strip().lower() for v in resp.header_all("transfer-encoding") for t in v.split(",") if t.strip()]
        cls = resp.header_all("content-length")
        if te and cls:
            raise ProtocolError(f"both Transfer-Encoding ({', '.join(te)}) and Content-Length sent")
        if te:
            if te != ["chunked"]:
                raise ProtocolError(f"unsupported Transfer-Encoding {', '.join(te)!r}")
            if resp.version == "1.0":
                raise ProtocolError("chunked encoding in an HTTP/1.0 response")
            return self._chunked(deadline), "chunked"
        if cls:
            vals = {v.strip() for c in cls for v in c.split(",")}
            if len(vals) != 1 or not next(iter(vals)).isdigit():
                raise ProtocolError(f"invalid Content-Length {cls!r}")
            return self._exact(int(vals.pop()), deadline, "the body"), "length"
        # Close-delimited: only valid if the server really closes; a live connection means
        # the client can never know where the body ends.
        try:
            while not self.eof:
                self._fill(deadline, "end of a close-delimited body")
        except ReadTimeout as e:
            raise ProtocolError(
                "response has neither Content-Length nor chunked framing and the connection stayed open"
            ) from e
        data = bytes(self.buf)
        self.buf.clear()
        return data, "close"

    def _chunked(self, deadline: float) -> bytes:
        out = bytearray()
        while True:
            line = self._line(deadline, "a chunk-size line", 1024)
            m = _CHUNK_RE.fullmatch(line)
            if not m:
                raise ProtocolError(f"bad chunk-size line {line[:40]!r}")
            size = int(m.group(1), 16)
            if size == 0:
                break
            out += self._exact(size, deadline, "chunk data")
            if self._exact(2, deadline, "chunk CRLF") != b"\r\n":
                raise ProtocolError("chunk data not followed by CRLF (wrong chunk size)")
        while self._line(deadline, "the chunked trailer"):  # trailers: ignored, ends with empty line
            pass
        return bytes(out)

    def wait_closed(self, timeout: float = 2.0) -> tuple[bool, bytes]:
        """Wait for FIN/RST. Returns (closed, unexpected_bytes_received_meanwhile)."""
        deadline = time.monotonic() + timeout
        try:
            while not self.eof:
                self._fill(deadline, "the server to close")
        except ReadTimeout:
            pass
        extra = bytes(self.buf)
        self.buf.clear()
        return self.eof, extra

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
