"""Capacity points: step open load up until p99 exceeds the limit, then bisect the bracket."""
from __future__ import annotations

from typing import Any, Callable

from ..model import Capacity, CapacityStep
from ..processes.loadgen import LoadgenResult
from ..processes.server import Server
from ..catalog.workloads import Point, parse_duration


def step_point(p: Point, rate: float) -> Point:
    return Point(label=f"rate={rate:g}", mode="open", path=p.path, method=p.method, headers=p.headers,
                 body=p.body, rate=rate, poisson=p.poisson, duration=p.step_duration,
                 max_connections=p.max_connections, keepalive=p.keepalive, timeout=p.timeout,
                 threads=p.threads, tls=p.tls)


def find_capacity(srv: Server, p: Point,
                  lg_run: Callable[..., LoadgenResult]) -> tuple[LoadgenResult, Capacity]:
    """Step open load up by `p.step` until p99 > limit, errors, missed sends or shortfall.

    Returns the chosen step's loadgen result and the capacity point's figures."""
    limit_us = parse_duration(p.p99_limit) * 1e6
    step_s = parse_duration(p.step_duration)
    rate = float(p.start_rate or 1.0)
    steps: list[dict[str, Any]] = []
    best: LoadgenResult | None = None
    best_rate: float | None = None
    last: LoadgenResult | None = None

    def attempt(rate: float) -> bool:
        nonlocal last
        last = lg_run(step_point(p, rate), rate)
        s = last.report.summary
        p99 = s.latency_us.p99 or 0
        measured = float(last.report.duration_s or last.wall_s)
        achieved = s.ok / measured if measured > 0 else 0.0  # successful responses only
        held = (p99 <= limit_us and s.errors == 0 and achieved >= 0.9 * rate
                and s.missed_sends <= 0.01 * rate * step_s)
        steps.append({"rate": rate, "achieved": achieved, "p99_us": p99, "errors": s.errors,
                      "missed_sends": s.missed_sends, "held": held,
                      "client_cpu_percent": round(last.client_cpu_percent, 1),
                      "client_saturated": last.client_saturated})
        return held

    failed_rate: float | None = None
    for _ in range(p.max_steps):
        if not attempt(rate):
            failed_rate = rate
            break
        if not srv.alive():
            break
        best, best_rate = last, rate
        rate = round(rate * p.step, 1)
    # Narrow the bracket [held, failed] by geometric bisection.
    lo, hi = best_rate, failed_rate
    for _ in range(p.refine if lo is not None and hi is not None else 0):
        if not srv.alive():
            break
        mid = round((lo * hi) ** 0.5, 1)
        if attempt(mid) and srv.alive():
            best, best_rate, lo = last, mid, mid
        else:
            hi = mid
    chosen = best or last
    assert chosen is not None  # max_steps >= 1
    # A capacity is only a lower bound when no step failed (the schedule ran out) or when
    # the step that failed saturated the load generator rather than the server.
    broke = next((s for s in steps if not s["held"]), None)
    best_step = next((s for s in steps if s["rate"] == best_rate and s["held"]), None)
    return chosen, Capacity(steps=[CapacityStep(**s) for s in steps],
                            capacity_rps=float(best_step["achieved"]) if best_step else 0.0,
                            capacity_target_rate=best_rate, p99_limit_us=limit_us, capacity_ceiling=broke is None,
                            capacity_client_bound=bool(broke and broke["client_saturated"]))
