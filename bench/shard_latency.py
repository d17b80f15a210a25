#!/usr/bin/env python3
"""Do two Dask load shards measure the same latency as one loadgen process at the same total load?

Moved here from tests/test_cluster.py (issue 25): a p50/p99 agreement is a timing comparison, and on
a 2-core machine it failed once in pytest while another program used the second core. Here it is a
measurement: ROUNDS alternating rounds (the order flips each round) of open load at RATE req/s for
DURATION s against the reference server (tests/fixtures/refserver.py, one Python process on
loopback), one process vs a LocalCluster of two workers (127.0.0.1). Prints each round, the medians
of p50 and p99 of both, and the ratios two/one; run it on a quiet machine (the load average is
printed beside the figures).
Env: RATE (400), DURATION (2s), ROUNDS (5).
"""
from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench.cluster.load_cluster import LoadCluster  # noqa: E402
from serverbench.processes.loadgen import run_loadgen  # noqa: E402
from serverbench.catalog.workloads import Point  # noqa: E402

RATE = float(os.environ.get("RATE", "400"))
DURATION = os.environ.get("DURATION", "2s")
ROUNDS = int(os.environ.get("ROUNDS", "5"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server() -> tuple[subprocess.Popen, str]:
    port = _free_port()
    p = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fixtures" / "refserver.py")],
                         env={"PORT": str(port), "HOST": "127.0.0.1", "PATH": "/usr/bin:/bin"},
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline or p.poll() is not None:
                p.kill()
                raise SystemExit("shard_latency: the reference server did not start listening")
            time.sleep(0.05)


def main() -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    server, url = _start_server()
    cluster = LoadCluster("local:2")
    point = Point(label="open", mode="open", rate=RATE, duration=DURATION, threads=1)
    figures: dict[str, list[tuple[float, float]]] = {"one": [], "two": []}
    try:
        cluster.start()
        for r in range(ROUNDS):
            order = ("one", "two") if r % 2 == 0 else ("two", "one")
            for mode in order:
                lg = (run_loadgen(url, point, default_path="/", client_cpus=None) if mode == "one"
                      else cluster.run(url, point, default_path="/", client_cpus=None))
                lat = lg.report.summary.latency_us
                figures[mode].append((lat.p50, lat.p99))
                print(f"round {r + 1} {mode}: p50 {lat.p50:,.0f} µs  p99 {lat.p99:,.0f} µs  "
                      f"responses {lg.report.summary.responses:,}")
    finally:
        cluster.close()
        server.terminate()  # this PID only
        server.wait(5)
    for i, q in enumerate(("p50", "p99")):
        one = statistics.median(v[i] for v in figures["one"])
        two = statistics.median(v[i] for v in figures["two"])
        print(f"{q}: one process {one:,.0f} µs, two shards {two:,.0f} µs, two/one {two / one:.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
