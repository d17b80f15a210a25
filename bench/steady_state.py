#!/usr/bin/env python3
"""Does the steady-state warm-up measure a JIT row at its speed? (issue 25)

For each row (default: java-netty, java-undertow, c-epoll), ROUNDS alternating rounds, each on a
fresh start (server on CPU 0, loadgen on CPU 1, as `make bench`): the harness's own warm-up
(warmup.warm_to_steady with prantl-wrk's quick point in one-second rounds, at most STEADY_MAX s),
then the quick run's measured 4 s ("quick"); then the same start is kept under the same load until
30 s of load have passed since its first request and measured again for 4 s ("after 30 s").
Prints each round, then per row the medians, the ratio quick / after-30-s (goal: within 10 %), the
median time to steady and how often the warm-up ended not steady. Rows must be built
(`serverbench build ROW`). Run it on a quiet machine: the load average is printed beside the figures.
Env: ROWS (comma list), ROUNDS (3), STEADY_MAX (20), LATE_S (30).
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench.catalog import manifests as catalog
from serverbench.processes import supervisor
from serverbench.rules import warmup  # noqa: E402
from serverbench.catalog import workloads as wl  # noqa: E402
from serverbench.processes.loadgen import run_loadgen  # noqa: E402

ROWS = os.environ.get("ROWS", "java-netty,java-undertow,c-epoll").split(",")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
STEADY_MAX = float(os.environ.get("STEADY_MAX", "20"))
LATE_S = float(os.environ.get("LATE_S", "30"))


def _rate(url: str, point: wl.Point) -> float:
    r = run_loadgen(url, point, default_path="/", client_cpus=[1]).report
    return r.summary.ok / r.duration_s if r.duration_s else 0.0


def one_round(m: catalog.Manifest, point: wl.Point) -> dict:
    one = point.model_copy(update={"duration": "1s"})
    measured = point  # the quick size's own measured duration (4 s)
    with supervisor.run_server(m, cpus=[0], log_path=Path(f"/tmp/steady-{m.id}.log")) as srv:
        t0 = time.monotonic()
        w = warmup.warm_to_steady(lambda: _rate(srv.url, one), STEADY_MAX)
        quick = _rate(srv.url, measured)
        while time.monotonic() - t0 < LATE_S:  # the same load until 30 s since the first request
            _rate(srv.url, point.model_copy(update={"duration": "2s"}))
        late = _rate(srv.url, measured)
    return {"quick": quick, "late": late, "steady": w.steady, "steady_s": w.steady_after_s, "rounds": len(w.rates),
            "rates": w.rates}


def main() -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    cat = catalog.load_catalog()
    point = wl.load_workloads()["prantl-wrk"].size(False).points[0]
    results: dict[str, list[dict]] = {r: [] for r in ROWS}
    for i in range(ROUNDS):
        for row in (ROWS if i % 2 == 0 else ROWS[::-1]):
            res = one_round(cat.servers[row], point)
            results[row].append(res)
            print(f"round {i + 1} {row}: quick {res['quick']:,.0f} req/s, after {LATE_S:g} s {res['late']:,.0f}, "
                  f"warm-up {res['rounds']} s, {'steady' if res['steady'] else 'NOT steady'} "
                  f"({', '.join(f'{r / 1000:.0f}k' for r in res['rates'])})", flush=True)
    for row, rs in results.items():
        q = statistics.median(r["quick"] for r in rs)
        late = statistics.median(r["late"] for r in rs)
        steady = [r["steady_s"] for r in rs if r["steady_s"] is not None]
        print(f"{row}: quick run {q:,.0f} req/s, after {LATE_S:g} s {late:,.0f} req/s, quick/after {q / late:.3f}; "
              f"time to steady median {statistics.median(steady) if steady else float('nan'):g} s; "
              f"not steady {sum(1 for r in rs if not r['steady'])} of {len(rs)}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
