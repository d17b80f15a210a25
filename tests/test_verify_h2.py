"""The `h2c` and `h2` checks (serverbench/verify/h2check.py) and the HTTP/2 readiness probe
(processes/supervisor.py): a correct HTTP/2 server (tests/fixtures/h2server.py, on the `h2` package) passes
h2c, each of its flaws fails with a line naming the broken rule, rows without http2_library or with
http2_out are skipped with the reason, the checks start the row with `$HTTP2` (and `$TLS_*` for h2), and a
server that speaks HTTP/2 alone is ready only to a probe over HTTP/2."""
from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from serverbench.catalog.manifests import load_catalog
from serverbench.h2 import get as h2_get
from serverbench.processes import supervisor
from serverbench.rules.admission import admission, gated_workloads
from serverbench.tls.certs import make_material
from serverbench.verify import verify
from serverbench.verify.base import CheckFailed, CheckSkipped, Ctx
from serverbench.verify.h2check import H2Start, _judge, _Judge, check_h2, check_h2c
from serverbench.verify.suite import H2_CHECKS, h2_of

H2SERVER = Path(__file__).parent / "fixtures" / "h2server.py"


def _choices(**kw: object) -> SimpleNamespace:
    base = {"h2": False, "http2_library": None, "http2_out": None, "tls": False, "tls_library": None,
            "tls_out": None, "db": False}
    return SimpleNamespace(**{**base, **kw})


H2_ROW = SimpleNamespace(choices=_choices(h2=True, http2_library="h2 (Python)"))
OUT_ROW = SimpleNamespace(choices=_choices(http2_out="hand-written HTTP/1.1 on std::net"))
PLAIN_ROW = SimpleNamespace(choices=_choices())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _h2server(flaw: str = "none", env: dict[str, str] | None = None) -> Iterator[int]:
    """h2server.py with `flaw` until the block ends (its port); stopped by its PID."""
    port = _free_port()
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([sys.executable, str(H2SERVER), "--flaw", flaw], stdout=log, stderr=subprocess.STDOUT,
                         env={"PORT": str(port), "HOST": "127.0.0.1", "PATH": "/usr/bin:/bin", **(env or {})})
    try:
        deadline = time.monotonic() + 10
        while True:
            if p.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"h2server exited: {log.read().decode(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("h2server did not start listening") from None
                time.sleep(0.05)
        yield port
    finally:
        p.terminate()  # this PID only
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
        log.close()


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory):
    return make_material(tmp_path_factory.mktemp("tls"))


def _ctx(**kw: object) -> Ctx:
    return Ctx("127.0.0.1", 1, 2.0, "shared", None, None, Path("/dev/null"), **kw)


# -- the rules, one by one ------------------------------------------------------------------------------


def test_a_correct_http2_server_passes_h2c() -> None:
    with _h2server() as port:
        t0 = time.monotonic()
        line = _judge(_Judge("h2c", "127.0.0.1", port, None))
        took = time.monotonic() - t0
    assert line.startswith("prior knowledge: /, /json with date; HPACK's dynamic table; 1 MiB under the default "
                           "windows; "), line
    # the fixture advertises 10: ten streams at once, and the eleventh refused
    assert "10 streams at once" in line and "refused" in line, line
    assert "RST_STREAM leaves the others serving; a bad frame gets GOAWAY" in line
    assert "\n" not in line
    assert took < 5, took  # the /delay waits are 300 ms (streams) and 200 ms (reset)


@pytest.mark.parametrize("flaw, words", [
    # RST_STREAM of one stream closes the connection: the other stream dies with it
    ("kill-on-reset", r"^h2c: reset: stream\(s\) \[\d+\] not answered"),
    # the advertised limit is not kept: the stream beyond it is served
    ("ignore-limit", r"^h2c: streams: a stream beyond the advertised limit of 10 was served, not refused"),
], ids=["kill-on-reset", "ignore-limit"])
def test_each_flaw_fails_with_its_rule(flaw: str, words: str) -> None:
    with _h2server(flaw) as port:
        with pytest.raises(CheckFailed, match=words) as ei:
            _judge(_Judge("h2c", "127.0.0.1", port, None))
    assert "\n" not in str(ei.value)


def test_no_server_is_a_failed_connection_not_a_crash() -> None:
    port = _free_port()  # nothing listens there
    with pytest.raises(CheckFailed, match=r"^h2c: cannot open an HTTP/2 connection: "):
        _judge(_Judge("h2c", "127.0.0.1", port, None))


# -- through verify(): the start, its environment, and the skips ----------------------------------------


def _recording_start(flaw: str, seen: list[tuple[dict[str, str], str]], cleartext: bool = False):
    """A start recording what it was given; `cleartext`: the server ignores $HTTP2=h2 (no TLS)."""
    @contextmanager
    def start(env: dict[str, str], mode: str) -> Iterator[str]:
        seen.append((dict(env), mode))
        with _h2server(flaw, {k: v for k, v in env.items() if k != "HTTP2"} if cleartext else env) as port:
            yield f"http://127.0.0.1:{port}"
    return start


def test_verify_starts_the_row_with_http2_h2c_and_judges_it() -> None:
    seen: list = []
    start = H2Start(SimpleNamespace(), _recording_start("none", seen))  # h2c needs no certificate
    [res] = verify("http://127.0.0.1:1", H2_ROW, only=["h2c"], h2=start)
    assert res.name == "h2c" and res.passed and not res.skipped, res.detail
    assert "refused" in res.detail
    assert seen == [({"HTTP2": "h2c"}, "h2c")]
    [res] = verify("http://127.0.0.1:1", H2_ROW, only=["h2c"], h2=H2Start(None, _recording_start("ignore-limit",
                                                                                                 seen)))
    assert not res.passed and res.detail.startswith("h2c: streams: "), res.detail
    assert "limit" in res.detail


def test_h2_starts_with_the_certificate_and_needs_tls(material) -> None:
    """h2 gives the row $HTTP2=h2 and the RSA certificate's $TLS_*, and speaks TLS with ALPN h2: a row that
    answers cleartext HTTP/2 there fails the handshake."""
    seen: list = []
    [res] = verify("http://127.0.0.1:1", H2_ROW, only=["h2"],
                   h2=H2Start(material, _recording_start("none", seen, cleartext=True)))
    assert [mode for _, mode in seen] == ["h2"]
    assert seen[0][0] == {"HTTP2": "h2", **material.env("rsa")}
    assert not res.passed and res.detail.startswith("h2: cannot open an HTTP/2 connection: TLS handshake"), \
        res.detail


@contextmanager
def _start_h2server(flaw: str) -> Iterator[Any]:
    def start(env: dict[str, str], mode: str) -> Iterator[str]:
        with _h2server(flaw, env) as port:
            yield f"https://127.0.0.1:{port}"
    yield contextmanager(start)


def test_h2_offers_what_loadgen_offers_tls_13_only(material) -> None:
    """The h2 check's client offers TLS 1.3 alone, as loadgen's h2 points do: a server serving h2 over TLS 1.3
    passes; one granting h2 only over TLS 1.2 (Undertow's shape: it wants a TLS 1.2 suite offered) fails the
    handshake in one line instead of serving nothing in the run."""
    with _start_h2server("none") as start:
        [res] = verify("http://127.0.0.1:1", H2_ROW, only=["h2"], h2=H2Start(material, start))
    assert res.passed, res.detail
    with _start_h2server("h2-tls12-only") as start:
        [res] = verify("http://127.0.0.1:1", H2_ROW, only=["h2"], h2=H2Start(material, start))
    assert not res.passed and res.detail.startswith("h2: cannot open an HTTP/2 connection: TLS handshake"), \
        res.detail


def test_a_start_that_fails_is_the_line() -> None:
    @contextmanager
    def start(env: dict[str, str], mode: str) -> Iterator[str]:
        raise supervisor.ServerStartError("server 'x' exited with code 2 before becoming ready\n  log lines")
        yield ""  # pragma: no cover

    [res] = verify("http://127.0.0.1:1", H2_ROW, only=["h2c"], h2=H2Start(None, start))
    assert not res.passed
    assert res.detail == "h2c: the row did not start with $HTTP2=h2c: server 'x' exited with code 2 before " \
                         "becoming ready"


def test_a_start_that_fails_names_the_line_of_its_log_that_says_why(material) -> None:
    """The error's message goes on with the log tail; the detail, one line, is its headline and the log's
    last line that is not a stack frame, or says the log was empty."""
    logs = {"h2c": 'starting\nException in thread "main" java.lang.IllegalStateException: no h2c\n'
                   '\tat Main.main(Main.kt:3)\n\n', "h2": ""}

    def start(env: dict[str, str], mode: str) -> Iterator[str]:
        srv = SimpleNamespace(log_tail=lambda: logs[mode])
        head = "server 'x' exited with code 1 before becoming ready on 127.0.0.1:1; log /tmp/x.log"
        raise supervisor.ServerStartError(f"{head}, last log lines:\n    (the tail)", srv, head)
        yield ""  # pragma: no cover

    by = {r.name: r for r in verify("http://127.0.0.1:1", H2_ROW, only=["h2c", "h2"],
                                    h2=H2Start(material, contextmanager(start)))}
    assert by["h2c"].detail == "h2c: the row did not start with $HTTP2=h2c: server 'x' exited with code 1 before " \
        "becoming ready on 127.0.0.1:1; log /tmp/x.log; its log ends: Exception in thread \"main\" " \
        "java.lang.IllegalStateException: no h2c"
    assert by["h2"].detail.endswith("log /tmp/x.log; its log is empty"), by["h2"].detail


def test_rows_without_http2_library_or_with_http2_out_are_skipped() -> None:
    def never(env: dict[str, str], mode: str):
        raise AssertionError("a skipped check must not start the row")

    start = H2Start(None, never)
    for check in (check_h2c, check_h2):
        with pytest.raises(CheckSkipped, match=r"^serves no HTTP/2 here \(http2_out\): no h2 in asynchttpserver$"):
            check(_ctx(h2_out="no h2 in asynchttpserver", h2_start=start))
        with pytest.raises(CheckSkipped, match=r"^not an h2 row: it declares no http2_library"):
            check(_ctx(h2_row=False, h2_start=start))
        with pytest.raises(CheckSkipped, match="could not start the row again with \\$HTTP2"):
            check(_ctx(h2_row=True, h2_start=None))  # a running target
    for manifest, why in ((OUT_ROW, "serves no HTTP/2 here (http2_out): hand-written HTTP/1.1 on std::net"),
                          (PLAIN_ROW, "not an h2 row"), (None, "not an h2 row")):
        results = verify("http://127.0.0.1:1", manifest, only=H2_CHECKS, h2=start)
        assert [r.name for r in results] == ["h2c", "h2"]
        for r in results:
            assert r.passed and r.skipped and r.detail.startswith(why), r.detail


def test_h2_of_reads_the_choices() -> None:
    assert h2_of(H2_ROW) == (True, None)
    assert h2_of(OUT_ROW) == (False, "hand-written HTTP/1.1 on std::net")
    assert h2_of(PLAIN_ROW) == (False, None) and h2_of(None) == (False, None)


def test_a_failed_h2c_check_gates_only_the_h2c_workloads() -> None:
    ws = [SimpleNamespace(name="h2c-json", features=["h2c"]), SimpleNamespace(name="h2-streams", features=["h2c"]),
          SimpleNamespace(name="h2-json", features=["tls", "h2"]), SimpleNamespace(name="json", features=[])]
    assert gated_workloads("h2c", ws) == ["h2c-json", "h2-streams"]
    assert gated_workloads("h2", ws) == ["h2-json"]
    a = admission([{"name": "h2c", "passed": False, "detail": "h2c: reset: stream(s) [3] not answered"},
                   {"name": "h2", "passed": True, "detail": "ALPN h2 over TLS: ..."}])
    assert a.admitted and "h2c" in a.features and "h2" not in a.features
    assert a.not_run_reason(["h2c"]) == "not run — h2c: reset: stream(s) [3] not answered (h2c)"
    assert a.not_run_reason(["tls", "h2"]) is None


# -- readiness over HTTP/2 ------------------------------------------------------------------------------


def test_the_probe_speaks_http2_when_asked() -> None:
    with _h2server() as port:
        assert supervisor._probe("127.0.0.1", port, http2=True) is None
        assert h2_get("127.0.0.1", port, "/json").headers["content-type"] == "application/json"
        # the server speaks HTTP/2 alone: an HTTP/1.1 probe is not answered 200
        problem = supervisor._probe("127.0.0.1", port)
        assert problem is not None and problem
    closed = _free_port()
    problem = supervisor._probe("127.0.0.1", closed, http2=True)
    assert problem is not None and problem.startswith("HTTP/2: ") and "refused" in problem.lower(), problem


def test_run_server_waits_for_http2_readiness(servers_root, make_server, sandbox_paths) -> None:
    make_server("h2row", run=f"exec '{sys.executable}' '{H2SERVER}'")
    m = load_catalog(servers_root).servers["h2row"]
    with supervisor.run_server(m, extra_env={"HTTP2": "h2c"}, http2=True, ready_timeout=10) as srv:
        assert srv.url == f"http://127.0.0.1:{srv.port}"
        assert supervisor._probe(srv.host, srv.port, http2=True) is None
        assert "http2=h2c" in srv.log_tail()  # $HTTP2 reached the row
    assert srv.stopped_cleanly
    # the same row probed over HTTP/1.1 never answers 200: not ready, and the probe's last word is not named
    with pytest.raises(supervisor.ServerStartError, match=r"did not become ready .* within 1 s") as ei:
        with supervisor.run_server(m, extra_env={"HTTP2": "h2c"}, ready_timeout=1.0):
            pytest.fail("must not yield")
    assert " over HTTP/2" not in str(ei.value).splitlines()[0]
