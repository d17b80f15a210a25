"""A small blocking HTTP/2 client over `h2.connection.H2Connection`: what verify and the readiness probe need
to judge a row's HTTP/2, never a load (loadgen carries the loads)."""
from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings


class H2Error(Exception):
    """The server broke HTTP/2, or did not answer in time: one line."""


@dataclass
class Answer:
    """One stream's end: its status and headers (names lower-case), its body, or the RST_STREAM code."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    reset: int | None = None  # the server's RST_STREAM error code
    ended: bool = False
    at: float = 0.0  # monotonic time it ended


class H2Client:
    """One HTTP/2 connection to `host:port`: h2c with prior knowledge, or TLS with ALPN `h2` when `tls` (a client
    context) is given. The client's SETTINGS are h2's defaults (65,535-byte windows)."""

    def __init__(self, host: str, port: int, *, tls: ssl.SSLContext | None = None, timeout: float = 5.0) -> None:
        self.timeout = timeout
        sock = socket.create_connection((host, port), timeout=timeout)
        if tls is not None:
            tls.set_alpn_protocols(["h2"])
            try:
                sock = tls.wrap_socket(sock, server_hostname=host)
            except (ssl.SSLError, OSError) as e:
                sock.close()
                raise H2Error(f"TLS handshake: {e}") from e
            if sock.selected_alpn_protocol() != "h2":
                picked = sock.selected_alpn_protocol()
                sock.close()
                raise H2Error(f"offered ALPN h2 alone, the server picked {picked or 'nothing'}")
        self.sock = sock
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True,
                                                                               header_encoding="utf-8"))
        self.answers: dict[int, Answer] = {}
        self.goaway: h2.events.ConnectionTerminated | None = None
        self.closed = False
        self.server_settings: dict[int, int] = {}
        self.conn.initiate_connection()
        self._flush()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "H2Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError as e:
                raise H2Error(f"write failed: {e}") from e

    def request(self, path: str, *, method: str = "GET", headers: list[tuple[str, str]] | None = None,
                body: bytes | None = None, authority: str = "127.0.0.1") -> int:
        """Open a stream; returns its id."""
        sid = self.conn.get_next_available_stream_id()
        fields = [(":method", method), (":scheme", "https" if isinstance(self.sock, ssl.SSLSocket) else "http"),
                  (":authority", authority), (":path", path), *(headers or [])]
        if body is not None:
            fields.append(("content-length", str(len(body))))
        self.conn.send_headers(sid, fields, end_stream=body is None)
        if body is not None:
            self.conn.send_data(sid, body, end_stream=True)
        self.answers[sid] = Answer()
        self._flush()
        return sid

    def reset(self, sid: int, code: int = 8) -> None:
        """RST_STREAM of `sid` (8: CANCEL)."""
        self.conn.reset_stream(sid, error_code=code)
        self._flush()

    def raw(self, data: bytes) -> None:
        """Bytes written as they are (a broken frame)."""
        self.sock.sendall(data)

    def read_until(self, done: "callable[[], bool]", timeout: float | None = None) -> bool:
        """Read and handle frames until `done()` or the timeout (False) or the connection's end."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not done():
            left = deadline - time.monotonic()
            if left <= 0 or self.closed:
                return done()
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, TimeoutError):
                return done()
            except OSError as e:
                raise H2Error(f"read failed: {e}") from e
            if not data:
                self.closed = True
                return done()
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError as e:
                raise H2Error(f"the server broke HTTP/2: {type(e).__name__}: {e}") from e
            for ev in events:
                self._event(ev)
            self._flush()
        return True

    def wait(self, sids: list[int], timeout: float | None = None) -> bool:
        """Read until every stream in `sids` ended (answered or reset)."""
        return self.read_until(lambda: all(self.answers[s].ended for s in sids), timeout)

    def _event(self, ev: object) -> None:
        if isinstance(ev, h2.events.ResponseReceived):
            a = self.answers.setdefault(ev.stream_id, Answer())
            a.headers = {str(k).lower(): str(v) for k, v in ev.headers}
            a.status = int(a.headers.get(":status", "0"))
        elif isinstance(ev, h2.events.DataReceived):
            self.answers.setdefault(ev.stream_id, Answer()).body += ev.data
            # the window given back as the data is taken (the client keeps RFC 9113's default windows)
            self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            self._end(ev.stream_id)
        elif isinstance(ev, h2.events.StreamReset):
            self._end(ev.stream_id).reset = ev.error_code
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            self.server_settings.update({int(k): v.new_value for k, v in ev.changed_settings.items()})
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.goaway = ev
            self.closed = True

    def _end(self, sid: int) -> Answer:
        a = self.answers.setdefault(sid, Answer())
        a.ended, a.at = True, time.monotonic()
        return a

    def max_streams(self) -> int | None:
        """The server's SETTINGS_MAX_CONCURRENT_STREAMS (None: it set no limit)."""
        return self.server_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)

    def ignore_stream_limit(self) -> None:
        """Let this client open streams beyond the server's limit (to see the server refuse them)."""
        self.conn.remote_settings.max_concurrent_streams = 2**31 - 1
        self.conn.remote_settings.acknowledge()


def get(host: str, port: int, path: str = "/", *, tls: ssl.SSLContext | None = None,
        timeout: float = 1.0) -> Answer:
    """One GET on a new connection; raises H2Error (or OSError) when none came back."""
    with H2Client(host, port, tls=tls, timeout=timeout) as c:
        sid = c.request(path, authority=f"{host}:{port}")
        if not c.wait([sid]):
            raise H2Error(f"GET {path}: no answer within {timeout:g} s")
        return c.answers[sid]
