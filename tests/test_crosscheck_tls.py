"""A cross-check of a TLS workload (issue 38): a server start per key type as a run's (run/tls_run.py), loadgen
with the run's CA, the server's /tenth counter read over TLS, the other tools refused with the reason, and rows
that serve no TLS skipped. Real supervisor and reference server (tests/fixtures/refserver.py), fake loadgen;
real wrk where it is installed."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from conftest import write_manifest  # noqa: E402
from serverbench import paths  # noqa: E402
from serverbench.catalog import manifests as catalog  # noqa: E402
from serverbench.catalog import workloads as wl  # noqa: E402
from serverbench.crosscheck import tools as tool_table  # noqa: E402
from serverbench.crosscheck.session import CrosscheckOptions, run_crosscheck  # noqa: E402
from serverbench.processes import supervisor  # noqa: E402
from serverbench.store import Store  # noqa: E402

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"
CHOICES = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on"}
# tls-json's shape, short: a plaintext point, then its TLS twin with the run's RSA certificate
WORKLOAD = """
name = "tls-mini"
description = "plaintext and TLS"
origin = "serverbench"
kind = "throughput"
path = "/json"
features = ["tls"]
[quick]
steady_max = "0s"
warmup = "200ms"
[[quick.points]]
label = "plain"
connections = 2
duration = "1s"
[[quick.points]]
label = "tls"
tls = "rsa"
connections = 2
duration = "1s"
[full]
[[full.points]]
label = "plain"
connections = 2
duration = "1s"
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    root = tmp_path / "servers"
    root.mkdir()
    run = f"exec '{sys.executable}' '{REFSERVER}'"
    write_manifest(root, "ref-tls", run=run, choices={**CHOICES, "tls_library": "Python ssl (OpenSSL)"})
    write_manifest(root, "ref-out", run=run, choices={**CHOICES, "tls_out": "its stack has no server-side TLS here"})
    cat = catalog.load_catalog(root)
    assert cat.errors == []
    (tmp_path / "tls-mini.toml").write_text(WORKLOAD)
    return {"store": Store(tmp_path / "r.db"), "servers": cat.servers, "calls": tmp_path / "calls.jsonl",
            "logs": tmp_path / "logs", "workload": wl.load_workload(tmp_path / "tls-mini.toml")}


def go(env: dict, servers: list[str], tools: list[str]) -> tuple[int, dict]:
    opts = CrosscheckOptions(servers=servers, workload="tls-mini", tools=tools, allow_unverified=True,
                             server_cpus=[0], client_cpus=[sorted(os.sched_getaffinity(0))[-1]])
    res = run_crosscheck(env["store"], opts, [env["servers"][s] for s in servers], env["workload"])
    assert res.status == "finished"
    assert supervisor._LIVE == {}
    return res.run_id, {(c.server, c.point): c for c in env["store"].cells(res.run_id)}


def test_a_tls_point_is_loaded_over_tls_and_counted_by_the_server(env: dict) -> None:
    run_id, cells = go(env, ["ref-tls"], ["loadgen", "oha"])
    folder = paths.run_logs(run_id, env["store"].path)
    # a start per key type, named as a run's: plaintext, then TLS with the run's certificate
    logs = sorted(p.name for p in folder.glob("ref-tls.*.log"))
    assert logs == ["ref-tls.crosscheck.r1.log", "ref-tls.crosscheck.tls-rsa.r1.log"]
    ca = folder / "tls" / "ca.pem"
    assert ca.is_file()
    calls = [c["argv"] for c in runfix.log_lines(env["calls"])]
    https = [a for a in calls if a[0].startswith("https://")]
    assert len(https) == 2  # the TLS start's warm-up and its measured run, both verifying the run's CA
    assert all(a[a.index("--tls-ca") + 1] == str(ca) for a in https)
    assert all("--tls-ca" not in a for a in calls if a not in https)
    for label in ("plain", "tls"):
        lg = cells[("ref-tls", f"{label} · loadgen")]
        assert lg.status == "ok", lg.error
        t = lg.metrics.tool
        # the server's count over TLS too: every request the fake loadgen completed, and no other
        assert t.server_counted is not None and t.server_counted == lg.metrics.counts.ok > 0, (label, t)
    oha = cells[("ref-tls", "tls · oha")]
    assert (oha.status, oha.error) == ("skipped", "cannot express: oha: TLS points are cross-checked with wrk, "
                                                  "h2load and loadgen only")


def test_a_row_that_serves_no_tls_is_skipped_with_the_reason(env: dict) -> None:
    _, cells = go(env, ["ref-out"], ["loadgen", "wrk"])
    assert {c.status for c in cells.values()} == {"skipped"} and len(cells) == 4
    assert {c.error for c in cells.values()} == {"serves no TLS here (tls_out): its stack has no server-side TLS here"}
    assert runfix.log_lines(env["calls"]) == []  # nothing was loaded


@pytest.mark.skipif(tool_table.find("wrk") is None, reason="wrk is not installed")
def test_wrk_over_tls_agrees_with_the_servers_count(env: dict) -> None:
    _, cells = go(env, ["ref-tls"], ["wrk"])
    wrk = cells[("ref-tls", "tls · wrk")]
    assert wrk.status == "ok", (wrk.error, wrk.log_tail)
    t = wrk.metrics.tool
    assert t.command[-1].startswith("https://127.0.0.1:") and t.command[-1].endswith("/tenth?ms=0")
    # wrk's count and the server's differ at most by the requests in flight when wrk stopped (2 connections)
    assert t.reported_requests and t.server_counted and abs(t.server_counted - t.reported_requests) <= 2, t
