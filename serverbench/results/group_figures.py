"""The figures of one aggregated group (`GroupFigures`): one CSV row, one JSON object, one table row.
aggregate.Group fills it (`flat_figures`); every output reads it and none recomputes.

Its figures are grouped by what they describe (the rate and its noise, latency, server usage…); the
rules that judge a concern build its group (rules/fairness.py, overtime/, rules/cores.py, rules/warmup.py,
noisy.py). The CSV and JSON show it flat, one column or key per figure (model.Flat), as they always did.
"""
from __future__ import annotations

from typing import Any

from pydantic import Field

from ..rules import fairness
from ..rules.fairness import GroupFairness
from ..model import FigureGroup, Flat
from ..overtime import figures as overtime
from ..overtime.figures import GroupOverTime
from ..rules import cores, warmup
from ..rules.cores import GroupCores
from ..rules.warmup import GroupWarmup
from . import noisy, ranking
from .noisy import GroupNoise
from .stats import noisy as is_noisy

# Percentiles reported in tables/CSV, keyed by the name used in metrics (…_us).
PCTS = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99}


class Standing(FigureGroup):
    """Where the row placed and whether its figures count as they are: errors, a rate not held."""

    place: int | None = None
    place_to: int | None = None  # the last place of the range it shares with rows its figure cannot order
    degraded: bool = False
    error_share: float | None = None
    held: bool | None = None
    target_rate: float | None = None
    reps_ok: int = 0
    reps_failed: int = 0


class Rate(FigureGroup):
    """Successful requests/s over the repetitions, and how far their noise lets it be ordered."""

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
    tied_with_leader: bool = False  # in the leader's place range: its figure is not ordered against the leader's
    client_bound_group: bool = False  # one of ≥ 2 client-bound rows shown together as "at least X"
    noisy: bool = False
    capacity_rps: float | None = None
    responses_rps_median: float | None = None


class GroupLatency(FigureGroup):
    """Latency in µs: exact from the merged histograms where every repetition has one."""

    p50_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None
    p9999_us: float | None = None
    max_us: float | None = None
    answered_p99_us: float | None = None


class GroupCounts(FigureGroup):
    """Requests and errors summed over the repetitions, errors by class."""

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


class GroupUsage(FigureGroup):
    """The server's CPU and memory (medians over the repetitions) and what each request cost it."""

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


class GroupClient(FigureGroup):
    """The load generator's and the harness's own CPU: whether the client, not the server, was the limit."""

    client_cpu_percent: float | None = None
    client_saturated: bool = False
    harness_cpu_percent: float | None = None


class GroupOffered(FigureGroup):
    """The load offered (connections against the server's bound) and what of it was left undone."""

    connections: float | None = None
    bound: int | None = None
    missed_sends: int = 0
    unanswered: int = 0


class GroupDatabase(FigureGroup):
    """The database behind a db workload (medians): its CPU per request, beside the server's and never in
    it, the pool each process was given, and whether it shared the load generator's CPUs."""

    db_cpu_us_per_request: float | None = None
    db_cpu_percent: float | None = None
    db_pool: float | None = None
    db_connections_peak: float | None = None
    db_active_peak: float | None = None  # old runs
    db_active_mean: float | None = None
    db_shares_client_cpus: bool | None = None
    calibrated_on: str | None = None


def _database(g: Any) -> GroupDatabase:
    d = [c.metrics.database for c in g.ok]
    return GroupDatabase(
        db_cpu_us_per_request=g.per_request(lambda m: m.database.db_cpu_user_s, lambda m: m.database.db_cpu_sys_s,
                                            scale=1e6),
        db_cpu_percent=g.median(lambda m: m.database.db_cpu_percent), db_pool=g.median(lambda m: m.database.db_pool),
        db_connections_peak=g.median(lambda m: m.database.db_connections_peak),
        db_active_peak=g.median(lambda m: m.database.db_active_peak),
        db_active_mean=g.median(lambda m: m.database.db_active_mean),
        db_shares_client_cpus=any(x.db_shares_client_cpus for x in d) if d else None,
        calibrated_on=next((x.calibrated_on for x in d if x.calibrated_on), None))


class GroupFigures(Flat):
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
    standing: Standing = Field(default_factory=Standing)
    rate: Rate = Field(default_factory=Rate)
    latency: GroupLatency = Field(default_factory=GroupLatency)
    counts: GroupCounts = Field(default_factory=GroupCounts)
    usage: GroupUsage = Field(default_factory=GroupUsage)
    client: GroupClient = Field(default_factory=GroupClient)
    offered: GroupOffered = Field(default_factory=GroupOffered)
    fairness: GroupFairness = Field(default_factory=GroupFairness)
    # efficiency points (the fixed-rate step): 1 ÷ server CPU per request, a projection, not a measurement
    projected_rps: float | None = None
    over_time: GroupOverTime = Field(default_factory=GroupOverTime)
    cores: GroupCores = Field(default_factory=GroupCores)
    warmup: GroupWarmup = Field(default_factory=GroupWarmup)
    noise: GroupNoise = Field(default_factory=GroupNoise)
    database: GroupDatabase = Field(default_factory=GroupDatabase)
    warnings: list[str] = []


def _usage(g: Any) -> GroupUsage:
    rss_mean = g.median(lambda m: m.usage.rss_mean_bytes)
    return GroupUsage(
        cpu_user_s=g.median(lambda m: m.usage.cpu_user_s), cpu_sys_s=g.median(lambda m: m.usage.cpu_sys_s),
        cpu_percent=g.median(lambda m: m.usage.cpu_percent), cpu_us_per_request=g.cpu_us_per_request,
        cpu_user_us_per_request=g.per_request(lambda m: m.usage.cpu_user_s, scale=1e6),
        cpu_sys_us_per_request=g.per_request(lambda m: m.usage.cpu_sys_s, scale=1e6),
        ctx_switches_per_request=g.per_request(lambda m: m.usage.ctx_voluntary, lambda m: m.usage.ctx_involuntary),
        rss_per_connection_bytes=g.rss_per_connection_bytes, rss_peak_mib=g.rss_peak_mib,
        rss_mean_mib=rss_mean / 2**20 if rss_mean is not None else None,
        threads_peak=g.median(lambda m: m.usage.threads_peak))


def _counts(g: Any) -> GroupCounts:
    ec = g.error_classes
    due, never_sent = g.values(lambda m: m.counts.due), g.values(lambda m: m.counts.never_sent)
    return GroupCounts(requests=g.total(lambda m: m.counts.requests), due=int(sum(due)) if due else None,
                       never_sent=int(sum(never_sent)) if never_sent else None, errors=g.errors,
                       timeouts=g.timeouts, errors_connect=ec["connect"], errors_read=ec["read"],
                       errors_write=ec["write"], errors_status=ec["status"], errors_malformed=ec["malformed"])


def _rate(g: Any) -> Rate:
    r, t = g.rps, g.throughput
    return Rate(rps_median=r and r.median, rps_mean=r and r.mean, rps_stdev=r and r.stdev, rps_min=r and r.min,
                rps_max=r and r.max, rps_cv=r and r.cv, **g.interval, noisy=bool(t and is_noisy(t)),
                capacity_rps=t.median if g.is_capacity and t else None,
                responses_rps_median=g.median(lambda m: m.counts.responses_rps))


def flat_figures(g: Any) -> GroupFigures:
    """`g`'s figures (an aggregate.Group, typed loosely: aggregate imports this module)."""
    return GroupFigures(
        run_id=g.run_id, workload=g.workload, point=g.point, server=g.server,
        language=g.language, model=g.model, framework=g.info.get("framework") or "",
        runtime=g.info.get("runtime") or "", kind=g.kind, ranked_by=ranking.rank_metric(g.kind)[0],
        standing=Standing(place=g.place, place_to=g.place_to, degraded=g.degraded, error_share=g.error_share, held=g.held,
                          target_rate=g.target_rate, reps_ok=len(g.ok), reps_failed=len(g.bad)),
        rate=_rate(g),
        latency=GroupLatency(**{f"{k}_us": g.latency[k] for k in PCTS}, max_us=g.latency["max"],
                             answered_p99_us=g.answered_p99_us),
        counts=_counts(g), usage=_usage(g),
        client=GroupClient(client_cpu_percent=g.median(lambda m: m.client.client_cpu_percent),
                           client_saturated=g.client_saturated,
                           harness_cpu_percent=g.median(lambda m: m.client.harness_cpu_percent)),
        offered=GroupOffered(connections=g.connections, bound=g.bound,
                             missed_sends=g.total(lambda m: m.offered.missed_sends),
                             unanswered=g.total(lambda m: m.offered.unanswered)),
        fairness=fairness.figures(g.ok),
        projected_rps=(1e6 / g.cpu_us_per_request if g.kind == ranking.EFFICIENCY and g.cpu_us_per_request
                       else None),
        over_time=overtime.figures(g.ok), cores=cores.figures(g.ok), warmup=warmup.figures(g.ok),
        noise=noisy.figures(g), database=_database(g), warnings=[x.text for x in g.warnings])


__all__ = ["GroupFigures", "flat_figures", "PCTS", "Standing", "Rate", "GroupLatency", "GroupCounts", "GroupUsage",
           "GroupClient", "GroupOffered", "GroupDatabase"]
