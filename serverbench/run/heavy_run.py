"""Heavy requests mixed into a light open load (kind head-of-line, issue 48): two loadgen processes on one
clock, each class with its own histogram.

The light load is the point itself (its path, its fixed rate, its connections); the heavy one is
`heavy_path` at `heavy_share` of that rate, open load on connections of its own. Both processes get the
same `--start-at`, so their measured windows are the same seconds (to within their clocks' reading of one
instant: microseconds on one machine). The light process's report is the cell's (its p99 over every due
request is what the workload ranks by); the heavy one's figures go with it as the cell's disturbance,
`noisy.noise` with shape "heavy", so that the quiet twin's ratios and verdicts (results/noisy.py) read it
as they read noise.

Why two processes rather than request classes inside one loadgen: the harness already runs shards of one
load on one clock this way (cluster/load_cluster.py), and at a heavy rate of a few requests a second the
second process's CPU is a rounding error on the client's; bench/heavy_two_processes.py measures what it
costs the light class's p99 (the light load alone, beside an idle second process, and beside none).
"""
from __future__ import annotations

import threading
import time
from typing import Any

from ..catalog.workloads import Point
from ..processes.loadgen import LoadgenError, LoadgenResult, run_loadgen

LEAD_S = 1.0  # both processes started, their warm-up (--warmup, at most 0.5 s here) done, before the window
HEAVY_CONNECTIONS = 32  # the heavy class's pool: a 1 MiB gzip is tens of ms, a few are in flight at once


def heavy_point(p: Point, rate: float) -> Point:
    """The heavy class of point `p` at its share of `rate`."""
    return Point(label=f"{p.label} (heavy)", mode="open", path=p.heavy_path, rate=max(0.1, rate * (p.heavy_share or 0)),
                 duration=p.duration, timeout=p.timeout, connections=1, max_connections=HEAVY_CONNECTIONS)


def run_both(url: str, p: Point, default_path: str, client_cpus: list[int] | None) -> tuple[LoadgenResult,
                                                                                              LoadgenResult]:
    """(the light run, the heavy run), started on one clock; LoadgenError names the class that failed."""
    rate = float(p.rate or 0)
    start_at = time.time() + LEAD_S
    box: dict[str, Any] = {}

    def one(name: str, point: Point, path: str) -> None:
        try:
            box[name] = run_loadgen(url, point, default_path=path, client_cpus=client_cpus, rate=None,
                                    start_at=start_at)
        except BaseException as e:  # handed to the caller's thread
            box[name] = e
    heavy = threading.Thread(target=one, args=("heavy", heavy_point(p, rate), p.heavy_path or "/"),
                             name="heavy-load", daemon=True)
    heavy.start()
    one("light", p, default_path)
    heavy.join()
    for name in ("light", "heavy"):
        if isinstance(box.get(name), BaseException):
            raise LoadgenError(f"the {name} requests' loadgen: {box[name]}")
    return box["light"], box["heavy"]


def measure(url: str, p: Point, default_path: str, client_cpus: list[int] | None,
            metrics: dict[str, Any]) -> LoadgenResult:
    """The light run of a head-of-line point, with the heavy class beside it; the heavy figures go into
    `metrics` as the cell's `noise` (shape "heavy")."""
    light, heavy = run_both(url, p, default_path, client_cpus)
    metrics["noise"] = heavy_figures(heavy, p)
    return light


def heavy_figures(heavy: LoadgenResult, p: Point) -> dict[str, Any]:
    """What the cell keeps of the heavy class: its path, share and rate, and what it got."""
    s = heavy.report.summary
    return {"shape": "heavy", "path": p.heavy_path, "share": p.heavy_share, "rps": s.rps, "requests": s.requests,
            "ok": s.ok, "errors": s.errors, "p50_us": s.latency_us.p50, "p99_us": s.latency_us.p99,
            "client_cpu_percent": round(heavy.client_cpu_percent, 1)}


__all__ = ["LEAD_S", "HEAVY_CONNECTIONS", "heavy_point", "run_both", "measure", "heavy_figures"]
