"""The TLS workloads in the runner (run/tls_run.py): a start per key type, with the run's certificate's
`$TLS_*` for a TLS point and none for its plaintext twin; readiness over TLS; the cell's TLS figures;
rows that serve no TLS skipped with the reason. Real supervisor and tiny server, fake loadgen."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from conftest import write_manifest  # noqa: E402
from serverbench import paths  # noqa: E402
from serverbench.catalog import manifests as catalog  # noqa: E402
from serverbench.catalog import workloads as wl  # noqa: E402
from serverbench.processes import supervisor  # noqa: E402
from serverbench.rules import tlsfigures  # noqa: E402
from serverbench.run import tls_run  # noqa: E402
from serverbench.run.runner import RunOptions, run_matrix  # noqa: E402
from serverbench.store import Store  # noqa: E402
from serverbench.tls.certs import make_material as material  # noqa: E402

TINY = runfix.HERE / "tiny_server.py"
CHOICES = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on"}
# plaintext, two RSA points, ECDSA, plaintext again: four starts, in this order
MIXED = """
name = "mixed"
description = "plaintext and TLS points"
origin = "serverbench"
kind = "throughput"
path = "/json"
features = ["tls", "new-connection-per-request"]
[quick]
steady_max = "0s"
warmup = "200ms"
[[quick.points]]
label = "plain"
connections = 1
duration = "300ms"
[[quick.points]]
label = "rsa"
tls = "rsa"
connections = 1
duration = "300ms"
[[quick.points]]
label = "rsa-again"
tls = "rsa"
connections = 1
duration = "300ms"
[[quick.points]]
label = "ecdsa"
tls = "ecdsa"
keepalive = false
connections = 1
duration = "300ms"
[[quick.points]]
label = "plain-again"
connections = 1
duration = "300ms"
[full]
[[full.points]]
label = "plain"
connections = 1
duration = "1s"
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    made: list = []  # every material the runner had made, to hold it to once per run

    def recording(folder: Path):
        made.append(material(folder))
        return made[-1]
    monkeypatch.setattr(tls_run, "_make_material", recording)
    # a $TLS_CERT in the harness's own environment must never reach a plaintext start
    monkeypatch.setenv("TLS_CERT", "/leaked/from/the/harness.pem")
    root = tmp_path / "servers"
    root.mkdir()
    run = f"exec '{sys.executable}' '{TINY}'"
    write_manifest(root, "py-tls", run=run, env={"TINY_MODE": "ok"},
                   choices={**CHOICES, "tls_library": "Python ssl (OpenSSL)"})
    write_manifest(root, "py-out", run=run, env={"TINY_MODE": "ok"},
                   choices={**CHOICES, "tls_out": "its stack has no server-side TLS here"})
    write_manifest(root, "py-undeclared", run=run, env={"TINY_MODE": "ok"})
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "mixed.toml").write_text(MIXED)
    cat = catalog.load_catalog(root)
    assert cat.errors == []
    return {"store": Store(tmp_path / "r.db"), "servers": cat.servers, "calls": tmp_path / "calls.jsonl",
            "workloads": wl.load_workloads(tmp_path / "workloads"), "logs": tmp_path / "logs", "made": made}


def go(env, servers: list[str], **opts):
    o = RunOptions(servers=servers, workloads=["mixed"], repeat=1, allow_unverified=True, ready_timeout=10,
                   server_cpus=[0], client_cpus=[sorted(__import__("os").sched_getaffinity(0))[-1]], **opts)
    return run_matrix(env["store"], o, manifests=[env["servers"][s] for s in servers],
                      workloads=[env["workloads"]["mixed"]], fingerprint={"test": True})


def test_a_start_per_key_type_with_its_certificate_and_none_for_plaintext(env) -> None:
    res = go(env, ["py-tls"])
    assert (res.status, res.ok, res.failed, res.skipped) == ("finished", 5, 0, 0)
    cells = {c.point: c for c in env["store"].cells(res.run_id)}
    # a fresh start wherever the key type changes: its first point records the start
    started = [p for p, c in cells.items() if c.metrics.timing.server_start_s is not None]
    assert started == ["plain", "rsa", "ecdsa", "plain-again"]
    folder = paths.run_logs(res.run_id, env["store"].path)  # the run of a store of its own: its folder too
    assert folder.parent.parent == env["logs"] and folder.parent.name.startswith("r-")
    [made] = env["made"]  # the certificates are made once per run, into its log folder
    assert Path(made.ca).is_file() and Path(made.ca).resolve().is_relative_to(folder.resolve())
    logs = {p.name: p.read_text().splitlines()[0] for p in folder.glob("py-tls.*.log")}
    assert set(logs) == {"py-tls.mixed.r1.log", "py-tls.mixed.tls-rsa.r1.log", "py-tls.mixed.tls-ecdsa.r1.log"}
    assert logs["py-tls.mixed.r1.log"].endswith(" plaintext")  # the later plaintext start wrote it again
    for kind in ("rsa", "ecdsa"):
        line = logs[f"py-tls.mixed.tls-{kind}.r1.log"]
        cert = re.search(r"tls cert=(\S+) key=(\S+)", line)
        assert cert, line
        assert (cert.group(1), cert.group(2)) == (made.env(kind)["TLS_CERT"], made.env(kind)["TLS_KEY"])
    # loadgen: https:// and the run's CA for a TLS point (warm-up included), plain http:// without a CA
    calls = [c["argv"] for c in runfix.log_lines(env["calls"])]
    # a warm-up and a measured run per point, but a keep-alive TLS point (rsa, rsa-again) warms up inside
    # its measured run (--warmup): separate runs would open its connections, and handshake, twice
    assert len(calls) == 8
    kept = [a for a in calls if a[0].startswith("https://") and "--no-keepalive" not in a]
    assert len(kept) == 2 and all(a[a.index("--warmup") + 1] == "0.2s" for a in kept), kept
    for argv in calls:
        if argv[0].startswith("https://"):
            assert argv[argv.index("--tls-ca") + 1] == str(made.ca)
        else:
            assert argv[0].startswith("http://") and "--tls-ca" not in argv
    assert sum(a[0].startswith("https://") for a in calls) == 4
    # the figures: none for plaintext, the key type and loadgen's handshakes for TLS
    assert cells["plain"].metrics.tls is None and cells["plain-again"].metrics.tls is None
    for label, kind in (("rsa", "rsa"), ("rsa-again", "rsa"), ("ecdsa", "ecdsa")):
        t = tlsfigures.stored(cells[label].metrics)
        assert t is not None and t.key_type == kind, (label, t)
        assert t.version in ("TLSv1.3", "TLSv1.2") and t.suite and t.failed == 0
        assert (t.handshake_p99_us is not None) == (label == "ecdsa")  # only ecdsa handshakes while measured
    # keep-alive off: a handshake per request; on: one connection for the whole point
    ecdsa = cells["ecdsa"].metrics
    assert tlsfigures.stored(ecdsa).handshakes == ecdsa.counts.ok + ecdsa.counts.errors
    # keep-alive: its one connection was opened in the warm-up, so the measured window has no handshake,
    # and the warm-up's seconds are stored like a warm-up's (brief here: the workload has no steady_max)
    for label in ("rsa", "rsa-again"):
        assert tlsfigures.stored(cells[label].metrics).handshakes == 0
        wu = cells[label].metrics.warmup
        assert wu.warmup_brief and wu.warmup_rates and wu.warmup_rates[0] >= 1, (label, wu)
    assert supervisor._LIVE == {}


def test_rows_that_serve_no_tls_are_skipped_with_the_reason(env) -> None:
    res = go(env, ["py-out", "py-undeclared"])
    assert (res.ok, res.failed, res.skipped) == (0, 0, 10)
    errors = {c.server: c.error for c in env["store"].cells(res.run_id)}
    assert errors["py-out"] == "serves no TLS here (tls_out): its stack has no server-side TLS here"
    assert errors["py-undeclared"].startswith("not a tls row: it declares no tls_library")
    assert runfix.log_lines(env["calls"]) == []  # nothing was loaded


def test_a_run_not_started_here_cannot_run_tls(env) -> None:
    m = env["servers"]["py-tls"]
    w = env["workloads"]["mixed"]
    for opts, flag in (({"target": "http://127.0.0.1:1"}, "--target"), ({"cluster": "local:2"}, "--cluster"),
                       ({"cluster": "local:2", "server_on_cluster": True}, "--server-on-cluster")):
        why = tls_run.row_reason(m, w, RunOptions(**opts))
        assert why is not None and f"without {flag}" in why, why
    assert tls_run.row_reason(m, w, RunOptions()) is None
    plain = w.model_copy(update={"features": []})
    assert tls_run.row_reason(env["servers"]["py-out"], plain, RunOptions()) is None  # not a TLS workload


def test_starts_cut_points_by_key_type_in_order() -> None:
    pts = [wl.Point(label=str(i), duration="1s", tls=t) for i, t in enumerate([None, "rsa", "rsa", None, "ecdsa"])]
    assert [[p.label for p in s] for s in tls_run.starts(pts)] == [["0"], ["1", "2"], ["3"], ["4"]]
    assert tls_run.log_name("s", "w", pts[1:3], 2) == "s.w.tls-rsa.r2.log"
    assert tls_run.log_name("s", "w", pts[:1], 2) == "s.w.r2.log"
    heavy = [pts[1].model_copy(update={"label": "heavy 1%"})]
    assert tls_run.log_name("s", "w", heavy, 2, per_point=True) == "s.w.heavy_1_.tls-rsa.r2.log"


def test_readiness_over_tls_verifies_the_certificate(env, tmp_path) -> None:
    m = env["servers"]["py-tls"]
    ours, other = material(tmp_path / "ours"), material(tmp_path / "other")
    with supervisor.run_server(m, extra_env=ours.env("ecdsa"), tls_ca=Path(ours.ca), ready_timeout=10,
                               log_path=tmp_path / "ok.log") as srv:
        assert srv.url.startswith("https://127.0.0.1:") and srv.ready_s is not None
    # a certificate the run's CA did not sign never counts as ready, and the error says why
    with pytest.raises(supervisor.ServerStartError) as e:
        with supervisor.run_server(m, extra_env=other.env("rsa"), tls_ca=Path(ours.ca), ready_timeout=2,
                                   log_path=tmp_path / "bad.log"):
            pass
    assert "over TLS" in str(e.value) and "CERTIFICATE_VERIFY_FAILED" in str(e.value)
    assert supervisor._LIVE == {}
