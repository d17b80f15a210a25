"""The flat figures of one aggregated group (`GroupFigures`): one CSV row, one JSON object, one
table row. aggregate.Group fills it (`flat_figures`); every output reads it and none recomputes."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .. import fairness
from ..overtime import figures as overtime
from ..rules import cores, warmup
from . import noisy, ranking
from .stats import noisy as is_noisy

# Percentiles reported in tables/CSV, keyed by the name used in metrics (…_us).
PCTS = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99}


class GroupFigures(BaseModel):
    """The aggregated figures of one group: one CSV row, one JSON object, one table row."""

    run_id: int
    workload: str
    point: str
    server: str
    language: str = ""
    model: str = ""
    framework: str = ""
    runtime: str = ""
    kind: str = "throughput"
    ranked_by: str = ""
    place: int | None = None
    degraded: bool = False
    error_share: float | None = None
    held: bool | None = None
    target_rate: float | None = None
    reps_ok: int = 0
    reps_failed: int = 0
    rps_median: float | None = None
    rps_mean: float | None = None
    rps_stdev: float | None = None
    rps_min: float | None = None
    rps_max: float | None = None
    rps_cv: float | None = None
    # the interval of the ranked figure's median across repetitions (stats.median_ci) and its coverage
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    tied_with_leader: bool = False  # its interval overlaps the leader's: not ordered against it
    client_bound_group: bool = False  # one of ≥ 2 client-bound rows shown together as "at least X"
    noisy: bool = False
    capacity_rps: float | None = None
    responses_rps_median: float | None = None
    p50_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None
    p9999_us: float | None = None
    max_us: float | None = None
    answered_p99_us: float | None = None
    requests: int = 0
    due: int | None = None
    never_sent: int | None = None
    errors: int = 0
    timeouts: int = 0
    errors_connect: int = 0
    errors_read: int = 0
    errors_write: int = 0
    errors_status: int = 0
    errors_malformed: int = 0
    cpu_user_s: float | None = None
    cpu_sys_s: float | None = None
    cpu_percent: float | None = None
    cpu_us_per_request: float | None = None
    cpu_user_us_per_request: float | None = None
    cpu_sys_us_per_request: float | None = None
    ctx_switches_per_request: float | None = None
    rss_per_connection_bytes: float | None = None
    rss_peak_mib: float | None = None
    rss_mean_mib: float | None = None
    threads_peak: float | None = None
    client_cpu_percent: float | None = None
    client_saturated: bool = False
    harness_cpu_percent: float | None = None
    connections: float | None = None
    bound: int | None = None
    missed_sends: int = 0
    unanswered: int = 0
    # fairness (fairness.py): medians over the repetitions of closed loads' per-connection figures
    slots: int | None = None  # connections (sessions: users) the load held
    slots_served: int | None = None  # … that completed at least one request
    jain: float | None = None  # Jain's index over the slots' completed requests (1 = even)
    longest_wait_ms: float | None = None  # the longest any slot went without a completion
    min_served_share: float | None = None  # the lowest share of slots served within one second
    unfair: bool = False  # > 5 % of the slots waited beyond the timeout: ranked after the fair rows
    # efficiency points (the fixed-rate step): 1 ÷ server CPU per request, a projection, not a measurement
    projected_rps: float | None = None
    # over time (overtime.py): the overload verdict across repetitions; medians of the cells' figures
    verdict: str | None = None
    verdict_reason: str | None = None
    peak_ok_rps: float | None = None
    p90_at_peak_us: float | None = None
    p90_end_us: float | None = None
    failed_share_after_peak: float | None = None
    worst_second_p99_us: float | None = None
    median_second_p99_us: float | None = None
    second_p99_spread_us: float | None = None
    server_died_at_s: float | None = None
    memory_limit_method: str | None = None
    others_cpu_percent: float | None = None
    server_cores: int | None = None  # cores sweep (cores.py): the point's server CPU count, and
    cpu_overlap: bool = False  # whether the load generator shared those CPUs (a flagged figure)
    # warm-up to steady state (warmup.py): medians over the repetitions warmed to steady
    steady_s: float | None = None
    first_second_share: float | None = None
    not_steady: int = 0
    warmup_max_s: float | None = None
    # kind noisy (noisy.py): the noise shape, its quiet twin, the ratios to it and the verdict; what the
    # noise did (medians over the repetitions of loadgen's noise counters)
    noise_shape: str | None = None
    noise_twin: str | None = None
    noise_p99_ratio: float | None = None
    noise_rate_ratio: float | None = None
    noise_verdict: str | None = None
    noise_twin_held: bool | None = None  # False: the quiet twin itself did not hold the rate
    noise_held_peak: float | None = None
    noise_opened: float | None = None
    noise_4xx: float | None = None
    noise_closed: float | None = None
    noise_reset: float | None = None
    noise_timeout: float | None = None
    noise_open_at_end: float | None = None
    warnings: list[str] = []


def flat_figures(g: Any) -> GroupFigures:
    """`g`'s figures (an aggregate.Group, typed loosely: aggregate imports this module)."""
    r, t = g.rps, g.throughput
    rss_mean = g.median(lambda m: m.usage.rss_mean_bytes)
    ec = g.error_classes
    return GroupFigures(
        run_id=g.run_id, workload=g.workload, point=g.point, server=g.server,
        language=g.language, model=g.model, framework=g.info.get("framework") or "",
        runtime=g.info.get("runtime") or "", kind=g.kind, ranked_by=ranking.rank_metric(g.kind)[0],
        place=g.place, degraded=g.degraded, error_share=g.error_share, held=g.held,
        target_rate=g.target_rate, responses_rps_median=g.median(lambda m: m.counts.responses_rps),
        answered_p99_us=g.answered_p99_us,
        due=g.total(lambda m: m.counts.due) if g.values(lambda m: m.counts.due) else None,
        never_sent=g.total(lambda m: m.counts.never_sent) if g.values(lambda m: m.counts.never_sent) else None,
        cpu_us_per_request=g.cpu_us_per_request,
        cpu_user_us_per_request=g.per_request(lambda m: m.usage.cpu_user_s, scale=1e6),
        cpu_sys_us_per_request=g.per_request(lambda m: m.usage.cpu_sys_s, scale=1e6),
        ctx_switches_per_request=g.per_request(lambda m: m.usage.ctx_voluntary, lambda m: m.usage.ctx_involuntary),
        rss_per_connection_bytes=g.rss_per_connection_bytes,
        harness_cpu_percent=g.median(lambda m: m.client.harness_cpu_percent),
        reps_ok=len(g.ok), reps_failed=len(g.bad),
        rps_median=r and r.median, rps_mean=r and r.mean, rps_stdev=r and r.stdev,
        rps_min=r and r.min, rps_max=r and r.max, rps_cv=r and r.cv,
        noisy=bool(t and is_noisy(t)), capacity_rps=t.median if g.is_capacity and t else None,
        **{f"{k}_us": g.latency[k] for k in PCTS}, max_us=g.latency["max"],
        requests=g.total(lambda m: m.counts.requests), errors=g.errors, timeouts=g.timeouts,
        errors_connect=ec["connect"], errors_read=ec["read"], errors_write=ec["write"],
        errors_status=ec["status"], errors_malformed=ec["malformed"],
        cpu_user_s=g.median(lambda m: m.usage.cpu_user_s), cpu_sys_s=g.median(lambda m: m.usage.cpu_sys_s),
        cpu_percent=g.median(lambda m: m.usage.cpu_percent), rss_peak_mib=g.rss_peak_mib,
        rss_mean_mib=rss_mean / 2**20 if rss_mean is not None else None,
        threads_peak=g.median(lambda m: m.usage.threads_peak), client_cpu_percent=g.median(lambda m: m.client.client_cpu_percent),
        client_saturated=g.client_saturated, connections=g.connections, bound=g.bound,
        missed_sends=g.total(lambda m: m.offered.missed_sends), unanswered=g.total(lambda m: m.offered.unanswered), **fairness.figures(g.ok),
        projected_rps=(1e6 / g.cpu_us_per_request if g.kind == ranking.EFFICIENCY and g.cpu_us_per_request
                       else None),
        **overtime.figures(g.ok), **cores.figures(g.ok), **warmup.figures(g.ok), **g.interval, **noisy.figures(g),
        warnings=[x.text for x in g.warnings])
