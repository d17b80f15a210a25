"""The conformance suite must pass a correct server and reject each known defect with the
right check (tests/fixtures/refserver.py supplies both)."""
from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from serverbench.verify.httpcheck import Conn, ProtocolError
from serverbench.verify import CHECKS, CheckResult, verify
from serverbench.verify.protocol import parse_imf_fixdate
from serverbench.verify.suite import DB_CHECKS

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Running:
    url: str
    pid: int


@pytest.fixture
def server() -> Iterator[Callable[..., Running]]:
    """Factory: server(brk=None, **env) starts refserver; every one is stopped by PID."""
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[IO[bytes]] = []

    def start(brk: str | None = None, **env: str) -> Running:
        port = _free_port()
        cmd = [sys.executable, str(REFSERVER)] + (["--break", brk] if brk else [])
        # stderr to a file, not a pipe nobody drains (a full pipe would stall the server).
        err = tempfile.TemporaryFile()
        logs.append(err)
        p = subprocess.Popen(cmd, env={"PORT": str(port), "HOST": "127.0.0.1", "PATH": "/usr/bin:/bin", **env},
                             stdout=subprocess.DEVNULL, stderr=err)
        procs.append(p)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if p.poll() is not None:
                err.seek(0)
                raise RuntimeError(f"refserver exited: {err.read().decode(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return Running(f"http://127.0.0.1:{port}", p.pid)
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("refserver did not start listening")

    try:
        yield start
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()  # signals this PID only
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        for f in logs:
            f.close()


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


def test_correct_server_passes_everything(server: Callable[..., Running]) -> None:
    srv = server()
    t0 = time.monotonic()
    results = verify(srv.url, pid=srv.pid)
    took = time.monotonic() - t0
    assert [r.name for r in results] == CHECKS
    # a bare URL is no db, compress, tls or h2 row: those checks are skipped (test_verify_db.py, test_verify_tls.py run them)
    failed = [f"{r.name}: {r.detail}" for r in results if not r.passed or r.skipped]
    assert failed == [f"{n}: not a db row" for n in DB_CHECKS] + ["compress: not a compress row",
        "tls: not a tls row: it declares no tls_library in [choices] (SPEC.md, TLS)"] + [
        f"{n}: not an h2 row: it declares no http2_library in [choices] (SPEC.md, HTTP/2)" for n in ("h2c", "h2")], failed
    assert took < 20, f"verify took {took:.1f} s"
    assert "1000 idle connections" in by_name(results)["idle-connections"].detail


# defect → the check that must catch it (each run with `root`, or `json` when root is the target)
DEFECTS = [
    ("no-keepalive", "keepalive"),
    ("lost-updates", "tenth"),
    ("busy-wait", "delay-cpu"),
    ("pipeline-misframe", "pipeline"),
    ("wrong-json", "json"),
    ("no-404", "not-found"),
    ("bad-length", "root"),
    ("lax-params", "delay"),
    ("any-method", "method"),
    ("chunked-misread", "echo"),
    ("split-fragile", "split"),
    ("garbage-stall", "bad-request"),
    ("no-close", "connection-close"),
    ("no-close", "http10"),
    ("tenth-nowait", "tenth"),
    ("no-date", "date"),
    ("stale-date", "date"),
    ("http10-silent-close", "http10"),
    ("http10-unannounced", "http10"),
    ("smuggle", "smuggling"),
    ("host-required", "http10-no-host"),
    ("close-case-sensitive", "connection-close-case"),
    ("http10-exact-keepalive", "http10"),
]


@pytest.mark.parametrize("brk,check", DEFECTS, ids=[f"{b}->{c}" for b, c in DEFECTS])
def test_defect_is_caught_by_the_right_check(server: Callable[..., Running], brk: str, check: str) -> None:
    srv = server(brk)
    control = "json" if check == "root" else "root"
    res = by_name(verify(srv.url, pid=srv.pid, only=[control, check]))
    assert not res[check].passed and not res[check].skipped, res[check]
    assert res[check].detail, "a failure must say why"
    assert res[control].passed, res[control]


def test_smuggling_shapes_may_be_framed_as_chunked_or_refused(server: Callable[..., Running]) -> None:
    refuses = by_name(verify(server().url, only=["smuggling"]))["smuggling"]
    assert refuses.passed and refuses.detail == "TE + CL: 400, closed; duplicate CL: 400, closed", refuses
    chunked = by_name(verify(server(TE_WINS="1").url, only=["smuggling"]))["smuggling"]
    assert chunked.passed and chunked.detail.startswith("TE + CL: framed as chunked;"), chunked


def test_http10_keepalive_may_be_declined_when_announced(server: Callable[..., Running]) -> None:
    srv = server(HTTP10_DECLINE="1")
    res = by_name(verify(srv.url, only=["http10"]))
    assert res["http10"].passed and "close announced" in res["http10"].detail, res["http10"]


def test_http10_check_sends_abs_exact_request(server: Callable[..., Running]) -> None:
    # MochiWeb's shape: a lower-case `keep-alive` is declined and announced, so only ab's own
    # `Connection: Keep-Alive` shows the connection kept open without saying so (ab -k hangs on it).
    res = by_name(verify(server("http10-exact-keepalive").url, only=["http10"]))["http10"]
    assert not res.passed and "ab -k's request" in res.detail and "kept the connection open" in res.detail, res
    ok = by_name(verify(server().url, only=["http10"]))["http10"]
    assert ok.passed and ok.detail.endswith("ab -k's request → announced, 2 requests on 1 connection"), ok


def test_close_spellings_each_named_and_other_checks_unaffected(server: Callable[..., Running]) -> None:
    srv = server("close-case-sensitive")
    res = by_name(verify(srv.url, only=["connection-close", "connection-close-case", "http10", "http10-no-host"]))
    assert [n for n, r in res.items() if not r.passed] == ["connection-close-case"], res
    assert "GET / with Connection: CLOSE" in res["connection-close-case"].detail
    assert "still open after 2 s" in res["connection-close-case"].detail
    ok = by_name(verify(server().url, only=["connection-close-case", "http10-no-host"]))
    assert all(r.passed for r in ok.values()), ok
    assert "'connection: CLOSE'" in ok["connection-close-case"].detail


def test_new_checks_are_deviations_not_gates() -> None:
    from serverbench.rules.admission import admission
    a = admission([{"name": "connection-close-case", "passed": False, "detail": "x"},
                   {"name": "http10-no-host", "passed": False, "detail": "y"}])
    assert a.admitted and not a.features and [f.check for f in a.deviations] == ["connection-close-case",
                                                                                 "http10-no-host"]


def test_unrelated_checks_pass_without_keepalive(server: Callable[..., Running]) -> None:
    # A server that drops keep-alive fails `keepalive` only, not every check that reuses a connection.
    srv = server("no-keepalive")
    res = by_name(verify(srv.url, only=["root", "json", "tenth", "delay", "echo", "keepalive", "pipeline"]))
    assert [n for n, r in res.items() if not r.passed] == ["keepalive", "pipeline"]


def test_content_type_bug_stays_in_its_check(server: Callable[..., Running]) -> None:
    srv = server("wrong-json")
    res = by_name(verify(srv.url, only=["json", "keepalive", "pipeline"]))
    assert [n for n, r in res.items() if not r.passed] == ["json"]


def test_date_check_passes_the_reference_and_fails_without_date(server: Callable[..., Running]) -> None:
    res = by_name(verify(server().url, only=["date"]))
    assert res["date"].passed and "GMT" in res["date"].detail, res["date"]
    res = by_name(verify(server("no-date").url, only=["date"]))
    assert not res["date"].passed and "no Date header" in res["date"].detail, res["date"]
    assert CHECKS.index("echo") < CHECKS.index("date") < CHECKS.index("not-found")


@pytest.mark.parametrize("value", [
    "Sun, 6 Nov 1994 08:49:37 GMT",      # one-digit day (java.time's RFC_1123_DATE_TIME)
    "Sunday, 06-Nov-94 08:49:37 GMT",    # obsolete RFC 850 form
    "Sun Nov  6 08:49:37 1994",          # asctime
    "Sun, 06 Nov 1994 08:49:37 +0000",   # numeric zone
    "sun, 06 nov 1994 08:49:37 GMT",     # case
    "Mon, 06 Nov 1994 08:49:37 GMT",     # wrong weekday
    "Sun, 31 Nov 1994 08:49:37 GMT",     # no such day
    "Sun, 06 Nov 1994 24:00:00 GMT",
    "Sun, 06 Nov 1994 08:49:37 GMT ",
])
def test_imf_fixdate_is_parsed_strictly(value: str) -> None:
    assert parse_imf_fixdate("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777
    with pytest.raises(ValueError):
        parse_imf_fixdate(value)


def test_wrong_file_content_fails(server: Callable[..., Running], tmp_path: Path) -> None:
    other = tmp_path / "other.html"
    other.write_bytes(b"<p>not the hello file</p>\n")
    srv = server(HELLO_FILE=str(other))
    res = by_name(verify(srv.url, only=["file"]))
    assert not res["file"].passed and "hello.html" in res["file"].detail


def test_chunked_refusal_with_close_is_accepted(server: Callable[..., Running]) -> None:
    srv = server(REFUSE_CHUNKED="1")
    res = by_name(verify(srv.url, only=["echo"]))
    assert res["echo"].passed and "411" in res["echo"].detail, res["echo"]


class FakeManifest:
    id = "fake-pool"

    def __init__(self, bound: int | None, counter: str = "shared") -> None:
        self._bound, self.counter = bound, counter

    def bound(self, workers: int) -> int | None:
        return self._bound


def test_bounded_server_limits_are_honoured(server: Callable[..., Running]) -> None:
    # A pool of 8 connections: verify must hold only 7 idle ones (and passes) ...
    srv = server(MAX_CONNECTIONS="8")
    res = by_name(verify(srv.url, FakeManifest(8), workers=8, pid=srv.pid,
                         only=["root", "delay-cpu", "tenth", "idle-connections"]))
    assert all(r.passed for r in res.values()), res
    assert res["idle-connections"].detail.startswith("7 idle connections (1 with half"), res["idle-connections"]
    assert res["delay-cpu"].detail.startswith("7 pending"), res["delay-cpu"]
    # ... whereas treating it as unbounded exhausts the pool and the probe starves.
    res = by_name(verify(srv.url, only=["idle-connections"]))
    assert not res["idle-connections"].passed


def test_tiny_pool_passes_the_whole_suite(server: Callable[..., Running]) -> None:
    # With bound 2 every check must keep at most 2 connections busy at once (else it would stall).
    srv = server(MAX_CONNECTIONS="2")
    results = verify(srv.url, FakeManifest(2), workers=2, pid=srv.pid)
    failed = [f"{r.name}: {r.detail}" for r in results if not r.passed]
    assert not failed, failed
    assert by_name(results)["idle-connections"].detail.startswith("1 idle connections")


def test_per_process_counter_is_relaxed(server: Callable[..., Running]) -> None:
    srv = server("lost-updates")
    res = by_name(verify(srv.url, FakeManifest(None, counter="per-process"), only=["tenth"]))
    assert res["tenth"].passed, res["tenth"]


def test_cpu_check_skipped_without_pid(server: Callable[..., Running]) -> None:
    srv = server()
    [r] = verify(srv.url, only=["delay-cpu"])
    assert r.skipped and r.passed


def test_unknown_check_name_is_rejected() -> None:
    with pytest.raises(ValueError):
        verify("http://127.0.0.1:1", only=["no-such-check"])


def test_unreachable_server_fails_quickly() -> None:
    t0 = time.monotonic()
    res = verify(f"http://127.0.0.1:{_free_port()}", only=["root", "keepalive"])
    assert not any(r.passed for r in res) and "refused" in res[0].detail
    assert time.monotonic() - t0 < 5


# -- the response reader itself must reject bad framing ------------------------------------

def _serve_bytes(payload: bytes, then_close: bool) -> tuple[int, threading.Event]:
    """A one-shot server that answers any request with `payload` and keeps or closes."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    done = threading.Event()

    def run() -> None:
        c, _ = ls.accept()
        c.recv(65536)
        c.sendall(payload)
        if not then_close:
            done.wait(5)
        c.close()
        ls.close()

    threading.Thread(target=run, daemon=True).start()
    return ls.getsockname()[1], done


@pytest.mark.parametrize("payload,then_close,error", [
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nHello", False, "neither Content-Length"),
    (b"HTTP/1.1 200 OK\nContent-Length: 5\n\nHello", False, "bare LF"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nHello", True, "closed after 5 of 9"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nHello!", False, "invalid Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nHello\r\n0\r\n\r\n", False, "wrong chunk size"),
    (b"Hello, World!", False, "not an HTTP status line"),  # HTTP/0.9-style: no status line at all
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", True, "closed in the middle of the header block"),
])
def test_reader_rejects_bad_framing(payload: bytes, then_close: bool, error: str) -> None:
    port, done = _serve_bytes(payload, then_close)
    with Conn("127.0.0.1", port, timeout=1.0) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        with pytest.raises(ProtocolError, match=error):
            c.read_response()
    done.set()


def test_reader_accepts_chunked_and_close_delimited() -> None:
    port, done = _serve_bytes(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nHello\r\n"
                              b"8\r\n, World!\r\n0\r\nX-Trailer: 1\r\n\r\n", False)
    with Conn("127.0.0.1", port, timeout=1.0) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        r = c.read_response()
        assert (r.body, r.framing) == (b"Hello, World!", "chunked")
    done.set()
    port, done = _serve_bytes(b"HTTP/1.0 200 OK\r\n\r\nHello, World!", True)
    with Conn("127.0.0.1", port, timeout=1.0) as c:
        c.send(b"GET / HTTP/1.0\r\n\r\n")
        r = c.read_response()
        assert (r.body, r.framing, r.server_will_close) == (b"Hello, World!", "close", True)
