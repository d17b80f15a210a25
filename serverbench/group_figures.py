"""The flat figures of one aggregated group (`GroupFigures`): one CSV row, one JSON object, one
table row. aggregate.Group fills it; every output reads it and none recomputes."""
from __future__ import annotations

from pydantic import BaseModel


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
    warnings: list[str] = []
