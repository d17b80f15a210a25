"""The `tls` check (serverbench/verify/tlscheck.py): the reference server over TLS passes it, each TLS
defect of tests/fixtures/refserver.py fails it with a line naming the rule, rows without tls_library
are skipped, and the old-version clients really offer TLS 1.0/1.1 (so that rule can fail)."""
from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from serverbench.catalog import manifests as catalog
from serverbench.tls.certs import make_material
from serverbench.verify import verify, verify_servers
from serverbench.verify.base import CheckFailed, Ctx
from serverbench.rules.admission import admission, gated_workloads
from serverbench.verify.tlscheck import TlsStart, _client, _refused

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"
TLS_ROW = SimpleNamespace(choices=SimpleNamespace(tls=True, tls_library="Python ssl", tls_out=None, db=False))


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory):
    return make_material(tmp_path_factory.mktemp("tls"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _refserver(brk: str | None, env: dict[str, str]) -> Iterator[str]:
    """refserver.py with `env` ($TLS_* included) until the block ends; stopped by its PID."""
    port = _free_port()
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([sys.executable, str(REFSERVER)] + (["--break", brk] if brk else []),
                         stdout=subprocess.DEVNULL, stderr=log,
                         env={"PORT": str(port), "HOST": "127.0.0.1", "PATH": "/usr/bin:/bin", **env})
    try:
        deadline = time.monotonic() + 10
        while True:
            if p.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"refserver exited: {log.read().decode(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("refserver did not start listening") from None
                time.sleep(0.05)
        yield f"https://127.0.0.1:{port}"
    finally:
        p.terminate()  # this PID only
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
        log.close()


def _tls_result(material, brk: str | None = None, manifest=TLS_ROW):
    start = TlsStart(material, lambda env: _refserver(brk, env))
    [res] = verify("http://127.0.0.1:1", manifest, only=["tls"], tls=start)
    return res


def test_the_reference_server_over_tls_passes(material) -> None:
    t0 = time.monotonic()
    res = _tls_result(material)
    assert res.passed and not res.skipped, res.detail
    assert "TLSv1.3" in res.detail and "keepalive, split, date pass over TLS" in res.detail
    assert time.monotonic() - t0 < 8  # the start included; the check itself well under 2 s


@pytest.mark.parametrize("brk, words", [
    ("tls12-only", "tls: negotiated TLSv1.2 with a TLS 1.3 client"),
    ("tls-other-cert", "tls: the leaf certificate is not the one passed (sha256 "),
    ("tls11-accepted", "tls: accepted a TLS 1.1 handshake (negotiated TLSv1.1)"),
    # plaintext defects seen through TLS: the HTTP rules really run over the TLS connections
    ("no-keepalive", "tls: keepalive over TLS: "),
    ("no-date", "tls: date over TLS: "),
])
def test_each_tls_defect_fails_with_its_rule(material, brk: str, words: str) -> None:
    res = _tls_result(material, brk)
    assert not res.passed and not res.skipped
    assert res.detail.startswith(words), res.detail
    assert "\n" not in res.detail


def test_pipelining_is_not_repeated_over_tls(material) -> None:
    """A server that misframes pipelined requests passes the tls check (no TLS workload pipelines) and still
    fails the plaintext `pipeline` check, which keeps it out of the workloads that do."""
    res = _tls_result(material, "pipeline-misframe")
    assert res.passed and not res.skipped, res.detail
    assert "pipeline" not in res.detail, res.detail
    with _refserver("pipeline-misframe", {}) as url:  # no $TLS_*: plaintext on the port
        [plain] = verify(url.replace("https://", "http://"), TLS_ROW, only=["pipeline"])
    assert not plain.passed and not plain.skipped, plain.detail


def test_no_workload_pipelines_over_tls() -> None:
    """What lets the tls check leave `pipeline` out (verify/tlscheck.HTTP_RULES): a workload point that
    pipelines over TLS would reach a defect no check admitting it looked for. Adding one fails here until
    HTTP_RULES repeats `pipeline` and this test goes."""
    from serverbench.catalog.workloads import load_workloads, point_features
    both = [f"{w.name}:{p.label}" for w in load_workloads().values() if not w.includes
            for p in w.quick.points + w.full.points if {"tls", "pipelining"} <= point_features(p, w.path)]
    assert both == [], both

def test_split_sends_separate_tls_records(material) -> None:
    """Over TLS each piece of a split request is a record of its own: a server that takes its first read
    as the whole request fails the split rule, as it does in plaintext."""
    from serverbench.verify.protocol import check_split
    with _refserver("split-fragile", material.env("rsa")) as url:
        port = int(url.rsplit(":", 1)[1])
        ctx = Ctx("127.0.0.1", port, 2.0, "shared", None, None, Path("/dev/null"),
                  tls_start=TlsStart(material, lambda env: _refserver(None, env)))
        with pytest.raises(CheckFailed):
            check_split(ctx.__class__(**{**ctx.__dict__, "tls": _client(ctx, verify=True)}))
    with _refserver(None, material.env("rsa")) as url:  # the control: a correct server passes it over TLS
        ctx = Ctx("127.0.0.1", int(url.rsplit(":", 1)[1]), 2.0, "shared", None, None, Path("/dev/null"),
                  tls_start=TlsStart(material, lambda env: _refserver(None, env)))
        check_split(ctx.__class__(**{**ctx.__dict__, "tls": _client(ctx, verify=True)}))


def test_a_plaintext_answer_fails(material) -> None:
    """A row that ignores $TLS_CERT and answers plaintext fails the handshake, not silently passes."""
    res = _tls_result(material, None, TLS_ROW)
    assert res.passed  # the control: the same start with TLS passes
    start = TlsStart(material, lambda env: _refserver(None, {}))  # $TLS_* dropped: plaintext on the port
    [res] = verify("http://127.0.0.1:1", TLS_ROW, only=["tls"], tls=start)
    assert not res.passed and res.detail.startswith("tls: a default client: the handshake failed"), res.detail


def test_rows_without_tls_library_are_skipped(material) -> None:
    start = TlsStart(material, lambda env: _refserver(None, env))
    plain = SimpleNamespace(choices=SimpleNamespace(tls=False, tls_library=None, tls_out=None, db=False))
    out = SimpleNamespace(choices=SimpleNamespace(tls=False, tls_library=None, tls_out="no TLS in asynchttpserver",
                                                  db=False))
    for manifest, why in ((plain, "not a tls row"), (None, "not a tls row"),
                          (out, "serves no TLS here (tls_out): no TLS in asynchttpserver")):
        [res] = verify("http://127.0.0.1:1", manifest, only=["tls"], tls=start)
        assert res.passed and res.skipped and res.detail.startswith(why), res.detail
    [res] = verify("http://127.0.0.1:1", TLS_ROW, only=["tls"])  # a target verify cannot restart
    assert res.skipped and "could not start the row again" in res.detail


def test_a_failed_tls_check_gates_only_tls_workloads() -> None:
    a = admission([{"name": "tls", "passed": False, "detail": "tls: accepted a TLS 1.1 handshake"}])
    assert a.admitted and "tls" in a.features
    ws = [SimpleNamespace(name="tls-json", features=["tls"]), SimpleNamespace(name="json", features=[])]
    assert gated_workloads("tls", ws) == ["tls-json"]
    assert a.not_run_reason(["tls"]).startswith("not run — tls: accepted a TLS 1.1 handshake (tls)")


@contextmanager
def _old_tls_server(material) -> Iterator[int]:
    """An in-process server that accepts TLS 1.0 and 1.1 (level 0), for proving the clients offer them."""
    import warnings
    srv = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.load_cert_chain(material.cert("rsa"), material.key("rsa"))
    srv.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        srv.minimum_version = ssl.TLSVersion.TLSv1
    lsock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        lsock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = lsock.accept()
            except TimeoutError:
                continue
            try:
                with srv.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield lsock.getsockname()[1]
    finally:
        stop.set()
        t.join(5)
        lsock.close()


def test_the_old_version_clients_really_offer_tls_1_0_and_1_1(material) -> None:
    with _old_tls_server(material) as port:
        ctx = Ctx("127.0.0.1", port, 5.0, "shared", None, None, Path("/dev/null"),
                  tls_start=TlsStart(material, lambda env: _refserver(None, env)))
        for version, name, words in ((ssl.TLSVersion.TLSv1, "TLSv1", "TLS 1.0"),
                                     (ssl.TLSVersion.TLSv1_1, "TLSv1.1", "TLS 1.1")):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                    _client(ctx, verify=False, version=version).wrap_socket(raw) as s:
                assert s.version() == name
            with pytest.raises(CheckFailed, match=f"accepted a {words} handshake \\(negotiated {name}\\)"):
                _refused(ctx, version, words)


REF_TOML = """name = "ref-tls"
language = "Python"
runtime = "python3"
model = "event-loop"
framework = "asyncio, hand-written HTTP"
origin = "serverbench"
description = "test fixture: refserver.py, TLS with $TLS_CERT/$TLS_KEY"
build = ""
run = "exec {python} {refserver}"
version = "python3 --version"
requires = ["python3"]
[choices]
pipelined_writes = "per-response"
file_read = "blocking"
nodelay = "off"
tls_library = "OpenSSL 3 (Python ssl, asyncio)"
"""


def _ref_tls_row(tmp_path: Path) -> Any:
    """The reference server as a row declaring tls_library, in tmp_path/servers/ref-tls."""
    (tmp_path / "servers" / "ref-tls").mkdir(parents=True)
    (tmp_path / "servers" / "ref-tls" / "server.toml").write_text(
        REF_TOML.format(python=sys.executable, refserver=REFSERVER))
    return catalog.load_catalog(tmp_path / "servers").servers["ref-tls"]


def test_verify_servers_runs_tls_after_the_plaintext_start(tmp_path: Path) -> None:
    from serverbench.store import Store
    (tmp_path / "servers" / "ref-tls").mkdir(parents=True)
    (tmp_path / "servers" / "ref-tls" / "server.toml").write_text(
        REF_TOML.format(python=sys.executable, refserver=REFSERVER))
    cat = catalog.load_catalog(tmp_path / "servers")
    assert cat.errors == []
    store = Store(tmp_path / "r.db")
    [v] = verify_servers([cat.servers["ref-tls"]], store, server_cpus=[0], allow_unavailable=False)
    res = {r.name: r for r in v.checks}
    assert res["tls"].passed and not res["tls"].skipped, res["tls"].detail
    # tls after the plaintext start, then the h2 checks (skipped: the reference row declares no http2_library)
    assert [r.name for r in v.checks][-3:] == ["tls", "h2c", "h2"] and res["sigterm"].passed
    assert res["h2c"].skipped and res["h2"].skipped
    stored = {c["name"]: c for c in store.verdict("ref-tls").checks}
    assert stored["tls"]["passed"] and not stored["tls"]["skipped"]


def test_naming_h2_to_a_client_that_offered_it_passes_and_is_said(material) -> None:
    # ALPN's rule is "never a protocol the client did not offer": h2 offered and chosen is no defect,
    # and the loads offer http/1.1 alone; the pass line says the row would serve h2
    res = _tls_result(material, "alpn-h2")
    assert res.passed, res.detail
    assert "serves h2 to a client that offers it" in res.detail


def test_a_verify_for_plain_loads_leaves_the_feature_checks_and_the_gate_says_so(tmp_path: Path) -> None:
    """`make bench` measures plain HTTP/1.1: its verify (features=()) runs the measurement and robustness
    checks only, starts the row once (no TLS start, no certificates), and stores a verdict without the
    feature checks; a TLS workload then keeps the row out, naming the fix, until a full verify ran tls."""
    from serverbench.catalog.workloads import load_workloads
    from serverbench.rules.admission import KINDS, checks_for
    from serverbench.run.measure import Gate
    from serverbench.store import Store
    m = _ref_tls_row(tmp_path)
    store = Store(tmp_path / "r.db")
    [v] = verify_servers([m], store, server_cpus=[0], allow_unavailable=False, features=())
    names = [r.name for r in v.checks]
    assert v.passed and names == [n for n in checks_for((), names)] and "root" in names and "smuggling" in names
    assert not any(KINDS[n].kind == "feature" for n in names if n in KINDS), names
    assert not {"tls", "h2", "h2c", "pipeline", "db", "compress"} & set(names)
    ws = load_workloads()
    gate = Gate(store, allow_unverified=False)
    assert gate.reason(m, ws["prantl-wrk"]) is None
    assert gate.reason(m, ws["tls-json"]) == ("its tls checks did not run at verify; fix: "
                                              "`serverbench verify ref-tls`")
    assert gate.reason(m, ws["tfb-plaintext"]).startswith("its pipelining checks did not run at verify")
    # a full verify runs them, and the row is admitted to the TLS workloads
    [v] = verify_servers([m], store, server_cpus=[0], allow_unavailable=False)
    assert {"tls", "pipeline"} <= {r.name for r in v.checks}
    assert Gate(store, allow_unverified=False).reason(m, ws["tls-json"]) is None


def test_checks_for_keeps_measurement_and_robustness_and_the_features_asked() -> None:
    from serverbench.rules.admission import checks_for
    names = ["root", "keepalive", "pipeline", "http10", "db", "queries", "tls", "h2c", "h2", "smuggling", "compress"]
    assert checks_for(None, names) == names
    assert checks_for((), names) == ["root", "keepalive", "smuggling"]
    assert checks_for({"tls", "pipelining"}, names) == ["root", "keepalive", "pipeline", "tls", "smuggling"]
    assert checks_for({"db", "h2c"}, names) == ["root", "keepalive", "db", "queries", "h2c", "smuggling"]


def test_a_recheck_runs_only_what_the_stored_verdict_failed(tmp_path: Path) -> None:
    """prepare.py's second pass: the checks the row failed under the builds' load run again, the rest of its
    verdict stands as stored (here marked, to see it was not run again)."""
    from serverbench.store import Store
    m = _ref_tls_row(tmp_path)
    store = Store(tmp_path / "r.db")
    [first] = verify_servers([m], store, server_cpus=[0], allow_unavailable=False, features=())
    assert first.passed
    checks = [{**c, "detail": "as stored"} for c in store.verdict("ref-tls").checks]
    for c in checks:
        if c["name"] == "date":
            c.update(passed=False, detail="no Date within 3 s")
    store.record_verdict("ref-tls", False, checks, None)
    [v] = verify_servers([m], store, server_cpus=[0], allow_unavailable=False, features=(), recheck=True)
    by = {r.name: r for r in v.checks}
    assert v.passed and [r.name for r in v.checks] == [c["name"] for c in checks]
    assert by["date"].passed and by["date"].detail != "as stored"  # run again, and it passes, saying how it failed
    assert by["date"].detail.endswith("(passed when verified again in a fresh start; the first time: no Date within 3 s)")
    assert by["root"].detail == "as stored" and by["sigterm"].detail != "as stored"  # kept; the start's own
    assert [c["name"] for c in store.verdict("ref-tls").checks] == [c["name"] for c in checks]


def test_a_recheck_whose_start_fails_says_so(tmp_path: Path, monkeypatch) -> None:
    """A row that does not start on the recheck gets the "starts" failure appended, not dropped."""
    from serverbench.processes import supervisor
    from serverbench.store import Store
    m = _ref_tls_row(tmp_path)
    store = Store(tmp_path / "r.db")
    store.record_verdict("ref-tls", False, [{"name": "root", "passed": True, "detail": "as stored", "skipped": False},
                                            {"name": "date", "passed": False, "detail": "late", "skipped": False}], None)

    def no_start(*a, **kw):
        raise supervisor.ServerStartError("server 'ref-tls' exited with code 1 before becoming ready")
    monkeypatch.setattr(supervisor, "run_server", no_start)
    [v] = verify_servers([m], store, server_cpus=[0], allow_unavailable=False, features=(), recheck=True)
    by = {r.name: r for r in v.checks}
    assert not v.passed and not by["starts"].passed and by["date"].detail == "late" and by["root"].detail == "as stored"
