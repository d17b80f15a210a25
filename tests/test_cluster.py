"""Load shards on a LocalCluster of 2 Dask workers (loopback), the real loadgen, the reference server."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from serverbench import paths, shards
from serverbench.loadgen import LoadgenError, run_loadgen
from serverbench.workloads import Point

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"
pytestmark = pytest.mark.skipif(not paths.loadgen_binary().is_file(), reason="loadgen not built (make loadgen)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    err = tempfile.TemporaryFile()
    p = subprocess.Popen([sys.executable, str(REFSERVER)], env={"PORT": str(port), "HOST": "127.0.0.1",
                                                                "PATH": "/usr/bin:/bin"},
                         stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise RuntimeError("refserver did not start listening")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        p.terminate()  # this PID only
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
        err.close()


@pytest.fixture(scope="module")
def cluster():
    from serverbench.cluster import LoadCluster
    c = LoadCluster("local:2")
    try:
        c.start()
        yield c
    finally:
        c.close()


def _counter(url: str) -> int:
    with urllib.request.urlopen(url + "/tenth?ms=0", timeout=5) as r:
        return int(r.read())


def test_shards_start_together_and_add_up_to_what_the_server_counted(cluster, server: str) -> None:
    p = Point(label="c=4", connections=4, duration="1s")
    before = _counter(server)
    lg = cluster.run(server, p, default_path="/tenth?ms=0", client_cpus=None)
    after = _counter(server)
    rep = lg.report.dump()
    assert len(rep["shards"]) == 2 and lg.extra["shards"] == 2
    assert {s["pid"] for s in rep["shards"]} == set(cluster.client.run(os.getpid).values())
    assert rep["start_skew_ms"] is not None and rep["start_skew_ms"] < 5.0, rep["start_skew_ms"]
    parts = [s["loadgen"]["summary"]["requests"] for s in rep["shards"]]
    assert rep["summary"]["requests"] == sum(parts) and min(parts) > 0
    assert [s["loadgen"]["config"]["shard"]["index"] for s in rep["shards"]] == [0, 1]
    served = after - before - 1  # the second read counts itself
    in_flight = rep["summary"]["in_flight"]
    # the server also answered requests in flight at the window's edges (at most one per connection)
    assert 0 <= served - rep["summary"]["requests"] <= max(in_flight, 4), (served, rep["summary"])
    assert rep["summary"]["latency_us"]["p99"] >= rep["summary"]["latency_us"]["p50"] > 0
    assert rep["timeline"] and rep["timeline"][0]["hist"]


def test_two_shards_agree_with_one_process_at_the_same_total_load(cluster, server: str) -> None:
    p = Point(label="rate=400", mode="open", rate=400, duration="2s", threads=1)
    one = run_loadgen(server, p, default_path="/", client_cpus=None).report.summary
    two = cluster.run(server, p, default_path="/", client_cpus=None).report.summary
    assert abs(two.responses - one.responses) <= 8, (one.responses, two.responses)  # same schedule, split
    for q in ("p50", "p99"):
        a, b = getattr(one.latency_us, q), getattr(two.latency_us, q)
        # loopback latencies of a Python server on a busy 2-core VM: agree within noise
        assert abs(a - b) <= max(2000.0, 0.75 * max(a, b)), (q, a, b)


def test_a_worker_killed_mid_point_fails_it_clearly_and_the_next_point_runs(cluster, server: str) -> None:
    pids = cluster.client.run(os.getpid)
    victim = sorted(pids.values())[-1]
    killer = threading.Timer(cluster_lead() + 0.5, lambda: os.kill(victim, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(LoadgenError, match=r"shard \d/2 on tcp://127\.0\.0\.1:\d+: KilledWorker"):
            cluster.run(server, Point(label="c=2", connections=2, duration="2s"), default_path="/",
                        client_cpus=None)
    finally:
        killer.cancel()
    lg = cluster.run(server, Point(label="c=2", connections=2, duration="500ms"), default_path="/",
                     client_cpus=None)
    assert lg.report.summary.ok > 0 and lg.extra["shards"] == 2


def cluster_lead() -> float:
    from serverbench.cluster import LEAD_S
    return LEAD_S


def _report(t: list[dict], requests: int, start: float, late_us: int) -> dict:
    from hdrh.histogram import HdrHistogram
    h = HdrHistogram(1, 3_600_000_000, 3)
    for _ in range(requests):
        h.record_value(100)
    enc = h.encode().decode()
    return {"schema": "loadgen/1", "config": {"connections": 4}, "duration_s": 2.0, "started_at_unix_s": start,
            "start_late_us": late_us,
            "summary": {"requests": requests, "responses": requests, "ok": requests, "errors": 0, "rps": 0,
                        "latency_us": {}},
            "error_classes": {"timeout": 0}, "status_codes": {"200": requests},
            "histograms": {"latency": enc, "answered": enc, "service": None}, "timeline": t}


def test_timelines_merge_second_by_second_and_skew_is_the_spread_of_actual_starts() -> None:
    from hdrh.histogram import HdrHistogram

    def sec(t: int, n: int, us: int) -> dict:
        h = HdrHistogram(1, 3_600_000_000, 2)
        h.record_value(us, n)
        return {"t": t, "completed": n, "ok": n, "errors": {"timeout": 0}, "active_connections": 2,
                "hist": h.encode().decode()}

    a = _report([sec(1, 10, 100), sec(2, 10, 100)], 20, 1000.0, 100)
    b = _report([sec(1, 30, 5000)], 30, 1000.0, 2100)
    m = shards.merge([a, b])
    assert [s["completed"] for s in m["timeline"]] == [40, 10]
    assert m["timeline"][0]["active_connections"] == 4
    assert m["timeline"][0]["p50_us"] >= 4900 and m["timeline"][1]["p99_us"] < 200
    assert m["summary"]["requests"] == 50 and m["status_codes"] == {"200": 50} and m["summary"]["rps"] == 25.0
    assert shards.start_skew_ms([a, b]) == 2.0
