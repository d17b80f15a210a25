"""The runner on over-time workloads: a server that dies mid-cell is a measured cell with the second
it died and the verdict 'crashes' (not a failed cell); the memory limit stops a leaking server
and says how; the server's per-second series is stored aligned with the loadgen's timeline."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from conftest import write_manifest  # noqa: E402
from serverbench.results import aggregate
from serverbench.catalog import manifests as catalog
from serverbench.processes import memlimit, supervisor  # noqa: E402
from serverbench.catalog import workloads as wl  # noqa: E402
from serverbench.exporters import to_html, to_markdown  # noqa: E402
from serverbench.run.runner import RunOptions, run_matrix  # noqa: E402
from serverbench.store import Store  # noqa: E402

OVER = """name = "over"
description = "a tiny overload ramp"
origin = "serverbench"
kind = "overload"
path = "/"
[quick]
steady_max = "0s"  # tests time the brief warm-up; test_runner checks the steady one
[[quick.points]]
label = "ramp"
mode = "sessions"
users = 0
stages = "2s:4"
think = "10ms"
[full]
steady_max = "0s"
[[full.points]]
label = "ramp"
mode = "sessions"
users = 0
stages = "2s:4"
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_MAX_S", "1.6")  # one whole second of timeline
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "over.toml").write_text(OVER)
    servers = tmp_path / "servers"
    tiny = runfix.HERE / "tiny_server.py"
    write_manifest(servers, "py-leak", run=f"exec '{sys.executable}' '{tiny}'",
                   env={"TINY_MODE": "grow", "TINY_GROW_KB": "2048"})
    cat = catalog.load_catalog(runfix.SERVERS)
    cat.servers.update(catalog.load_catalog(servers).servers)
    return {"store": Store(tmp_path / "r.db"), "servers": cat.servers,
            "workload": wl.load_workloads(tmp_path / "w")["over"]}


def go(env, server: str, **kw) -> list:
    cpus = sorted(os.sched_getaffinity(0))
    opts = RunOptions(servers=[server], workloads=["over"], repeat=1, allow_unverified=True, ready_timeout=10,
                      server_cpus=[cpus[0]], client_cpus=[cpus[-1]], **kw)
    res = run_matrix(env["store"], opts, manifests=[env["servers"][server]], workloads=[env["workload"]],
                     fingerprint={"test": True})
    assert res.status == "finished" and supervisor._LIVE == {}
    return env["store"].cells(res.run_id)


def test_a_crash_mid_cell_is_a_result_with_the_time_it_died(env) -> None:
    (c,) = go(env, "py-crash")  # exits with code 3 after 40 requests
    assert c.status == "ok" and "exited with code 3" in c.error
    assert "simulated crash after 40 requests" in c.log_tail
    m = c.metrics
    assert m.over_time.server_exit_code == 3
    assert m.over_time.server_died_at_s is not None and 0 <= m.over_time.server_died_at_s < 1.6
    assert m.overload.overload_verdict == "crashes" and f"died at t={m.over_time.server_died_at_s:.1f} s" in m.overload.overload_reason
    assert m.over_time.series_offset_s is not None and abs(m.over_time.series_offset_s) < 1.0
    rows = c.usage["series"]["rows"]
    assert rows and rows[-1][c.usage["series"]["columns"].index("processes")] == 0  # the series saw it go
    assert m.memory.memory_limit_method is None  # none asked for
    run, results = aggregate.load(env["store"], 1)
    (g,) = results.groups
    assert g.figures.over_time.verdict == "crashes" and g.figures.over_time.server_died_at_s == m.over_time.server_died_at_s
    assert any(w.kind == "crashed" for w in g.warnings)
    md = to_markdown.render(run, results).decode()
    assert "| crashes |" in md and "No memory limit was set" in md


def test_the_memory_limit_stops_a_leaking_server_and_says_how(env) -> None:
    (c,) = go(env, "py-leak", server_memory_limit="64M")  # 2 MiB kept per request
    m = c.metrics
    assert c.status == "ok"
    assert m.memory.memory_limit_bytes == 64 * 2**20
    mem = memlimit.prepare(64 * 2**20, name=None)
    memlimit.release(mem.cgroup)
    assert m.memory.memory_limit_method == mem.method  # this machine's way: cgroup v2 or the watchdog
    if m.memory.memory_limit_method == memlimit.WATCHDOG:
        assert m.memory.memory_limit_detail.startswith("cgroup v2 not used: ")
        assert m.memory.memory_killed_at_s is not None and m.over_time.server_exit_code == -9
        assert m.usage.rss_peak_bytes >= 64 * 2**20  # the sample that saw it past the limit
    assert m.over_time.server_died_at_s is not None and m.overload.overload_verdict == "crashes"
    assert "memory limit" in m.overload.overload_reason
    run, results = aggregate.load(env["store"], 1)
    md = to_markdown.render(run, results).decode()
    assert "Memory limit per server process tree: 64 MiB, enforced by " + m.memory.memory_limit_method in md
    html = to_html.render(run, results).decode()
    assert "memory limit" in html and "over time, one row per server" in html
