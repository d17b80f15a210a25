#!/usr/bin/env python3
"""Does running the head-of-line workload's heavy class as a second loadgen process cost the light class's
figures anything? (issue 48: "two loadgen processes on one timeline if that costs no accuracy: measure")

Against ROW (default go-nethttp, started once by the harness's supervisor), alternating rounds of:
  A  the light load alone: open GET /json at RATE req/s, one loadgen process;
  B  the same light load, and beside it a second loadgen process on the same --start-at sending the
     heavy class's share of requests to a path that costs the server nothing (GET /, 1 % of RATE):
     whatever B's light figures lose against A's is what the second process itself costs.
Prints per round the light p99 and the light process's client CPU per request; then the medians and
B ÷ A. Usage: .venv/bin/python bench/heavy_two_processes.py   Env: ROW, RATE (2000), ROUNDS (7), SECONDS (5)
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench import paths  # noqa: E402
from serverbench.catalog.manifests import load_catalog  # noqa: E402
from serverbench.catalog.workloads import Point  # noqa: E402
from serverbench.processes import supervisor  # noqa: E402
from serverbench.processes.loadgen import run_loadgen  # noqa: E402
from serverbench.run import heavy_run  # noqa: E402


def light_point(rate: float, seconds: int) -> Point:
    return Point(label="light", mode="open", path="/json", rate=rate, connections=16, max_connections=256,
                 duration=f"{seconds}s", timeout="2s")


def one(url: str, rate: float, seconds: int, beside: bool, client: list[int]) -> tuple[float, float]:
    """(light p99 µs, light client CPU µs per request) of one round."""
    light = light_point(rate, seconds)
    if beside:
        p = light.model_copy(update={"heavy_path": "/", "heavy_share": 0.01, "twin": "quiet"})
        r, _ = heavy_run.run_both(url, p, "/json", client)
    else:
        r = run_loadgen(url, light, default_path="/json", client_cpus=client, start_at=time.time() + heavy_run.LEAD_S)
    s = r.report.summary
    return float(s.latency_us.p99 or 0), 1e6 * r.client_cpu_s / max(1, s.ok)


def main() -> None:
    row = os.environ.get("ROW", "go-nethttp")
    rate, rounds, seconds = float(os.environ.get("RATE", "2000")), int(os.environ.get("ROUNDS", "7")), int(
        os.environ.get("SECONDS", "5"))
    m = load_catalog().servers[row]
    server_cpus, client = supervisor.default_cpu_split()
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}; {row}, {rate:g} req/s, "
          f"{rounds} rounds of {seconds} s each way")
    a: list[tuple[float, float]] = []
    b: list[tuple[float, float]] = []
    with supervisor.run_server(m, cpus=server_cpus, log_path=paths.LOGS / "heavy-two-processes.log") as srv:
        run_loadgen(srv.url, light_point(rate, 3), default_path="/json", client_cpus=client)  # warm
        for i in range(rounds):
            for beside, out in ((False, a), (True, b)) if i % 2 == 0 else ((True, b), (False, a)):
                out.append(one(srv.url, rate, seconds, beside, client))
                print(f"round {i + 1} {'B beside a 2nd process' if beside else 'A alone':22} p99 {out[-1][0]:8.0f} µs, "
                      f"client {out[-1][1]:5.2f} µs/req")
    pa, pb = statistics.median(x[0] for x in a), statistics.median(x[0] for x in b)
    ca, cb = statistics.median(x[1] for x in a), statistics.median(x[1] for x in b)
    print(f"median light p99: alone {pa:.0f} µs, beside {pb:.0f} µs: B ÷ A = {pb / pa:.3f}")
    print(f"median light client CPU per request: alone {ca:.2f} µs, beside {cb:.2f} µs: B ÷ A = {cb / ca:.3f}")
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
