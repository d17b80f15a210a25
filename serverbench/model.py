"""The results model: what a run was asked for and what one cell measured (the loadgen's JSON: loadgen_json.py).

Every stored figure is a field of one of `CellMetrics`' groups (counts, latency, server usage,
warm-up…), documented here once with its unit in its name; `Flat` keeps the stored shape one key per
figure. The store reads and writes cells through these types; the aggregation (aggregate.py) reads
them; nothing else parses `metrics_json` or a loadgen file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError,
                      model_serializer, model_validator)

# the loadgen's JSON lives in loadgen_json.py; its names are part of this vocabulary
from .loadgen_json import (LOADGEN_SCHEMA, REBUILD, LoadgenFormatError, LoadgenHistograms,  # noqa: F401
                           LoadgenReport, LoadgenSummary, Percentiles)


# -- one cell's figures ------------------------------------------------------------------------
class CapacityStep(BaseModel):
    model_config = ConfigDict(extra="allow")
    rate: float
    achieved: float
    p99_us: float | None = None
    errors: int = 0
    missed_sends: int = 0
    held: bool
    client_cpu_percent: float | None = None
    client_saturated: bool = False


class ToolRun(BaseModel):
    """A cross-check cell: one load tool (an established one, or loadgen) driving the workload as
    that tool's own command line expresses it, with what the server counted meanwhile."""

    model_config = ConfigDict(extra="forbid")
    tool: str = Field(description="wrk | ab | oha | hey | k6 | drill | locust | loadgen")
    tool_version: str | None = Field(None, description="the tool's own version line")
    source_workload: str = Field(description="the workload translated (its path replaced by /tenth?ms=0)")
    source_point: str = Field("", description="the label of the workload point translated")
    mode: str = Field("closed", description="the point's load model: closed | open | sessions")
    reason: str | None = Field(None, description="why the tool cannot express the workload (cell skipped)")
    command: list[str] = Field(default_factory=list, description="the tool's argv as run (pinning excluded)")
    script: str | None = Field(None, description="k6 script, drill benchmark or locustfile, when one is used")
    reported_rps: float | None = Field(None, description="the rate the tool printed, as it defines it")
    reported_requests: int | None = Field(None, description="requests the tool says completed (any status)")
    reported_duration_s: float | None = Field(None, description="the run time the tool printed")
    server_counted: int | None = Field(None, description="requests the server answered: /tenth counter after "
                                                         "- before - 1 (the 'after' read itself)")
    server_basis_s: float | None = Field(None, description="seconds the server's count is divided by: the tool's "
                                                           "own duration, else its wall time")
    wall_s: float | None = Field(None, description="the tool process's wall time, start-up included")
    cores: int | None = Field(None, description="cores the tool could use (the saturation denominator)")
    client_cpu_peak_percent: float | None = Field(None, description="the tool's busiest 0.2 s (sampled), 100 = one "
                                                                   "core; the mean (client_cpu_percent) includes its "
                                                                   "start-up")
    co_corrected: bool = Field(False, description="latency counted from intended send times "
                                                  "(coordinated omission corrected)")
    latency_reported: bool = Field(True, description="the tool prints latency percentiles")
    exit_code: int | None = None
    notes: list[str] = Field(default_factory=list, description="how the workload was translated, caps, caveats")


class FigureGroup(BaseModel):
    """The figures of one concern (latency, server usage, warm-up…), a part of a `Flat` record.
    Unknown fields are refused: a typo is a bug, not a new figure."""

    model_config = ConfigDict(extra="forbid")


class Flat(BaseModel):
    """A record made of groups (its fields typed as a FigureGroup or other record, never optional) and
    plain fields, whose stored and exported shape is flat: one key per figure, in field order with each
    group's fields in its place. Stored rows and reports predate the groups and must not change with
    them, so flat keys read are sorted into their groups (`_group`) and a dump flattens them again
    (`_flatten`). A figure's name is unique across the groups (tests/test_cell_metrics.py)."""

    @classmethod
    def groups(cls) -> dict[str, type[BaseModel]]:
        """The fields that are groups: a record type, not optional."""
        return {name: f.annotation for name, f in cls.model_fields.items()
                if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)}

    @classmethod
    def flat_keys(cls) -> list[str]:
        """Every figure's stored name, in the stored order."""
        groups = cls.groups()
        return [k for name in cls.model_fields for k in (groups[name].model_fields if name in groups else [name])]

    @model_validator(mode="before")
    @classmethod
    def _group(cls, data: Any) -> Any:
        """Flat keys into their groups. A group may also be given whole (a record or a dict: what a
        producer built): it replaces that group's keys given before it, and keys after it are added."""
        if not isinstance(data, dict):
            return data
        group_of = {k: name for name, rec in cls.groups().items() for k in rec.model_fields}
        out: dict[str, Any] = {}
        for key, value in data.items():
            group = group_of.get(key)
            if group is None:
                out[key] = value
                continue
            have = out.get(group)
            if isinstance(have, BaseModel):
                have = have.model_dump(exclude_unset=True)
            out[group] = {**(have or {}), key: value}
        return out

    @model_serializer(mode="wrap")
    def _flatten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The groups' fields in place of the groups: the stored, flat shape (and its key order)."""
        groups = type(self).groups()
        out: dict[str, Any] = {}
        for name, value in handler(self).items():
            if name in groups:
                out.update(value)
            else:
                out[name] = value
        return out


class Counts(FigureGroup):
    """loadgen: throughput and how the requests ended."""

    rps: float | None = Field(None, description="successful (2xx/3xx) responses per second of measured time")
    responses_rps: float | None = Field(None, description="responses of any status per second")
    requests: int | None = Field(None, description="requests that ended: responses of any status + transport errors")
    ok: int | None = Field(None, description="responses with status 2xx/3xx")
    errors: int | None = Field(None, description="non-2xx/3xx responses + transport errors (the error classes)")
    due: int | None = Field(None, description="requests that were due: ended, in flight at the end, never sent")
    never_sent: int | None = Field(None, description="open load: due but never sent (pool exhausted), counted at their age")
    dropped: int | None = Field(None, description="open load: beyond the backlog cap, counted at their age")
    timeouts: int | None = Field(None, description="error_classes.timeout")
    error_classes: dict[str, int] = Field(default_factory=dict,
                                          description="connect, read, write, timeout, status, malformed")

    @property
    def error_share(self) -> float | None:
        """Failed share of the requests that ended (non-2xx/3xx + transport errors)."""
        if not self.requests:
            return None
        return (self.requests - (self.ok or 0)) / self.requests


class Latency(FigureGroup):
    """loadgen: latency in µs (open load: corrected for coordinated omission)."""

    p50_us: float | None = None
    p75_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None
    p9999_us: float | None = None
    max_us: float | None = None
    mean_us: float | None = None
    answered_p50_us: float | None = Field(None, description="p50 of answered requests only")
    answered_p99_us: float | None = Field(None, description="p99 of answered requests only")


class Offered(FigureGroup):
    """loadgen: the load offered (its size and measured time) and what of it was left undone."""

    duration_s: float | None = Field(None, description="measured seconds (loadgen)")
    missed_sends: int = Field(0, description="open load: sends not made on schedule (pool exhausted)")
    unanswered: int = Field(0, description="requests waiting >= 1 s for a response when the run ended")
    unanswered_oldest_us: float = Field(0, description="age of the oldest of those")
    target_rate: float | None = Field(None, description="open load: requested rate, req/s")
    connections: int | None = Field(None, description="closed load connections")
    users: int | None = Field(None, description="sessions: virtual users")
    max_connections: int | None = Field(None, description="open load: the client's connection pool cap")


class Client(FigureGroup):
    """The client side: what the load generator and the harness used, and where the load went."""

    client_cpu_percent: float | None = Field(None, description="loadgen CPU, 100 = one core")
    client_saturated: bool = Field(False, description="loadgen used >= 90 % of the cores it could")
    shards: int | None = Field(None, description="--cluster: loadgen processes the point's load was split "
                                                 "over (their reports: loadgen_json's `shards`)")
    server_host: str | None = Field(None, description="--server-on-cluster: the host the server ran on (its "
                                                      "Dask worker's address)")
    target_url: str | None = Field(None, description="--target: a server serverbench did not start; no "
                                                     "build, verify, CPU or memory figures for it")
    shard_start_skew_ms: float | None = Field(None, description="spread of the shards' actual starts; "
                                                                "above 5 ms their windows did not line up")
    harness_cpu_percent: float | None = Field(None, description="serverbench's own CPU during the measured run "
                                                                "(sampler included), 100 = one core")


class ServerUsage(FigureGroup):
    """The server's process tree over the measured run (the sampler)."""

    cpu_user_s: float | None = None
    cpu_sys_s: float | None = None
    cpu_percent: float | None = Field(None, description="mean, 100 = one core")
    cpu_percent_peak: float | None = None
    rss_peak_bytes: int | None = None
    rss_mean_bytes: int | None = None
    threads_peak: int | None = None
    processes_peak: int | None = None
    ctx_voluntary: int | None = None
    ctx_involuntary: int | None = None


class ServerOverTime(FigureGroup):
    """The server over time (its per-second series is in the cell's usage; timeline.py reads it)."""

    series_offset_s: float | None = Field(None, description="loadgen's measurement start − the sampler's start: "
                                                            "shifts the server's series onto the loadgen's axis")
    server_died_at_s: float | None = Field(None, description="the server's process was gone at this second of the "
                                                             "measured run (loadgen's axis; to within 0.2 s)")
    server_exit_code: int | None = Field(None, description="its exit code (negative: killed by that signal)")
    rss_start_bytes: int | None = Field(None, description="tree RSS in the measured run's first second")
    rss_end_bytes: int | None = Field(None, description="tree RSS in its last second")
    others_cpu_percent: float | None = Field(None, description="mean CPU % other processes used on the server's "
                                                               "CPUs during the measured run (100 = one CPU)")


class MemoryLimit(FigureGroup):
    """--server-memory-limit: the limit put on the server's tree, and whether it ended the server."""

    memory_limit_bytes: int | None = Field(None, description="--server-memory-limit for the server's tree")
    memory_limit_method: str | None = Field(None, description="cgroup-v2 | rss-watchdog (memlimit.py)")
    memory_limit_detail: str | None = Field(None, description="the cgroup, or why cgroup v2 was not used")
    memory_killed_at_s: float | None = Field(None, description="the limit ended the server at this second "
                                                               "(watchdog: first sample past it; cgroup: OOM kill)")


class OverloadFigures(FigureGroup):
    """Overload workloads (overtime/overload.py): the peak and what happened past it."""

    overload_verdict: str | None = Field(None, description="crashes | degrades | sheds | slows | holds | kept up")
    overload_reason: str | None = Field(None, description="the figures behind the verdict")
    peak_ok_rps: float | None = Field(None, description="highest 3-second mean of successful responses/s")
    peak_at_s: int | None = Field(None, description="the second of that peak")
    end_ok_rps: float | None = Field(None, description="mean successful responses/s over the last 20 % of the run")
    p90_at_peak_us: float | None = Field(None, description="median per-second p90 around the peak")
    p90_end_us: float | None = Field(None, description="median per-second p90 over the last 20 %")
    failed_share_after_peak: float | None = Field(None, description="failed share of the requests from the peak on")
    growth_from_base: float | None = Field(None, description="answered latency at the end ÷ at light load")
    growth_from_peak: float | None = Field(None, description="answered latency at the end ÷ at the peak")


class SoakFigures(FigureGroup):
    """Soak workloads (overtime/soak.py): the per-second p99s."""

    worst_second_p99_us: float | None = Field(None, description="the highest p99 of any one second")
    worst_second_at_s: int | None = Field(None, description="that second")
    median_second_p99_us: float | None = Field(None, description="the median of the per-second p99s")
    second_p99_spread_us: float | None = Field(None, description="p90 − p10 of the per-second p99s")


class OutageFigures(FigureGroup):
    """The db-outage workload (overtime/outage.py): what the harness did to the database, what the row did."""

    outage_shape: str | None = Field(None, description="restart | freeze")
    outage_start_s: float | None = Field(None, description="the database went away, s after the measurement began")
    outage_end_s: float | None = Field(None, description="it was back: accepting connections again, or SIGCONT")
    outage_verdict: str | None = Field(None, description="recovers | recovers slowly | stays broken | crashes")
    outage_during: str | None = Field(None, description="rides through | fails fast | hangs")
    outage_reason: str | None = Field(None, description="the figures behind both")
    rate_before_ok_rps: float | None = Field(None, description="successful responses/s before the outage")
    recovered_after_s: float | None = Field(None, description="from the database back to the first second at "
                                                              "95 % of that rate (None: never)")
    failed_after_outage: int | None = Field(None, description="requests that failed from the outage on")
    worst_p99_during_us: float | None = Field(None, description="the worst 1-s p99 from the outage to recovery")
    acknowledged_writes: int | None = Field(None, description="/updates rows a 200 acknowledged (the harness's sample)")
    lost_writes: int | None = Field(None, description="of those, rows the table did not hold afterwards")


class Setup(FigureGroup):
    """How the cell was run: the server's workers and CPUs, the calibrated rate, the plan."""

    workers: int | None = Field(None, description="$WORKERS the server ran with")
    bound: int | None = Field(None, description="max_connections for those workers (None = unbounded)")
    server_cores: int | None = Field(None, description="cores sweep: the server CPUs this point's own start was "
                                                       "pinned to, counted (None = the run's server CPUs)")
    server_cpu_list: list[int] | None = Field(None, description="cores sweep: those CPUs (the first k of the "
                                                                "server machine's online CPUs)")
    cpu_overlap: bool | None = Field(None, description="cores sweep: those CPUs include the load generator's "
                                                       "(a machine too small for both): a flagged, mixed figure")
    calibration_rps: float | None = Field(None, description='rate="N%" points: closed-loop rps measured first')
    warmup_s: float | None = None
    planned_s: float | None = None


class WarmupFigures(FigureGroup):
    """Warm-up to steady state (rules/warmup.py): one successful rate per second of warm-up load."""

    warmup_rates: list[float] | None = Field(None, description="the warm-up's per-second successful rates")
    warmup_steady: bool | None = Field(None, description="the start's first point: its warm-up met the steady "
                                                         "rule (False: 'not steady'); None for a brief warm-up")
    warmup_brief: bool | None = Field(None, description="a later point of a start already warmed: warmed briefly")
    warmup_steady_s: float | None = Field(None, description="seconds of load from the first request until steady")
    warmup_first_share: float | None = Field(None, description="the first second's rate ÷ the steady rate")
    warmup_max_s: float | None = Field(None, description="the warm-up's maximum (the size's steady_max)")
    warmup_basis: str | None = Field(None, description="None: warmup_rates are requests/s; \"cpu\": an open load at "
                                                       "a fixed rate, judged by requests per server CPU-second")


class NoiseFigures(FigureGroup):
    """Kind noisy: the bad clients beside the legitimate load (counted apart from it by loadgen)."""

    noise: dict[str, Any] | None = Field(None, description="loadgen's noise counters: shape, connections, opened, "
                                         "held_peak, held_at_end, bytes, responses by class, how each ended")
    noise_twin: str | None = Field(None, description="the label of this noise point's quiet twin")


class MachineSpeed(FigureGroup):
    """Server CPUs around the measured run (processes/speed.py): probe MiB/CPU-s before, after; steal % over it."""

    speed_before_mib_s: float | None = None
    speed_after_mib_s: float | None = None
    steal_percent: float | None = None


class Timing(FigureGroup):
    """The cell's time outside the measured load: the server's start and the harness's overhead."""

    overhead_s: float | None = Field(None, description="cell wall time minus the loadgen's run time")
    server_start_s: float | None = Field(None, description="process start → first 200 on GET /, s, probed every "
                                                           "2 ms (the first point after a start)")
    ready_timeout_s: float | None = None
    quiet_wait_s: float | None = Field(None, description="open load: waited for the server (and database) to go "
                                                         "quiet before the window (processes/idle.py)")
    busy_at_window: bool | None = Field(None, description="still busy when that wait gave up: the window began "
                                                          "with a previous load's queue")


class Capacity(FigureGroup):
    """Capacity points: the stepped search for the highest rate held within the p99 limit."""

    capacity_rps: float | None = Field(None, description="achieved rps of the highest step that held")
    capacity_target_rate: float | None = None
    p99_limit_us: float | None = None
    capacity_ceiling: bool | None = Field(None, description="every step held: capacity is a lower bound")
    capacity_client_bound: bool | None = Field(None, description="the failing step saturated the client")
    steps: list[CapacityStep] | None = None


# -- the cell's records of its own: a closed load's per-connection figures, the database behind it --
UNFAIR_SHARE = 0.05  # slots left waiting beyond the timeout, as a share of all slots (rules/fairness.py)

class Fairness(BaseModel):
    """loadgen's `fairness` object for one process (or shards merged)."""

    model_config = ConfigDict(extra="allow")
    slots: int
    served: int
    completed_sum: int
    completed_sum_sq: float
    jain: float | None = None
    longest_wait_us: float
    waited_over_timeout: int
    served_per_s: list[int] = []

    @property
    def waiting_share(self) -> float:
        """The share of slots that waited longer than the request timeout."""
        return self.waited_over_timeout / self.slots if self.slots else 0.0

    @property
    def unfair(self) -> bool:
        return self.waiting_share > UNFAIR_SHARE

    @property
    def min_served_share(self) -> float | None:
        """The lowest share of slots that completed a request within one second of the window."""
        if not self.served_per_s or not self.slots:
            return None
        return min(self.served_per_s) / self.slots


class DatabaseFigures(BaseModel):
    """The database's share of a cell: None everywhere for a workload without one."""

    model_config = ConfigDict(extra="forbid")
    db_cpu_user_s: float | None = Field(None, description="PostgreSQL's processes (postmaster and backends), "
                                                          "user CPU over the measured run")
    db_cpu_sys_s: float | None = Field(None, description="the same, system CPU")
    db_cpu_percent: float | None = Field(None, description="their mean CPU, 100 = one core")
    db_cpu_us_per_req: float | None = Field(None, description="their CPU per successful request, µs; never "
                                                              "part of the server's CPU per request")
    db_pool: int | None = Field(None, description="$DB_POOL the row was given (connections per process)")
    db_connections_peak: int | None = Field(None, description="the most connections open at once-a-second looks")
    db_active_peak: int | None = Field(None, description="old runs: the most running a query at one look")
    db_active_mean: float | None = Field(None, description="connections running a statement, on average over "
                                                           "the run: PostgreSQL's own active_time ÷ wall time")
    db_cpus: list[int] | None = Field(None, description="the CPUs PostgreSQL was pinned to (None: an "
                                                        "existing database, --db-url)")
    db_shares_client_cpus: bool | None = Field(None, description="PostgreSQL ran on the load generator's CPUs; "
                                                                 "its CPU counts in the client's headroom")
    calibrated_on: str | None = Field(None, description='rate_basis = "run": the row whose closed-loop '
                                                        "capacity set the rate every row was offered")


class CellMetrics(Flat):
    """Every figure stored with a cell, grouped by what it describes (None = not applicable). Stored
    flat (`metrics_json`, `Flat`): old runs hold those keys and exports show them."""

    model_config = ConfigDict(extra="forbid")
    kind: str | None = Field(None, description="the workload's kind (what it ranks by), when measured")
    counts: Counts = Field(default_factory=Counts)
    latency: Latency = Field(default_factory=Latency)
    offered: Offered = Field(default_factory=Offered)
    client: Client = Field(default_factory=Client)
    usage: ServerUsage = Field(default_factory=ServerUsage)
    over_time: ServerOverTime = Field(default_factory=ServerOverTime)
    memory: MemoryLimit = Field(default_factory=MemoryLimit)
    overload: OverloadFigures = Field(default_factory=OverloadFigures)
    soak: SoakFigures = Field(default_factory=SoakFigures)
    outage: OutageFigures = Field(default_factory=OutageFigures)
    setup: Setup = Field(default_factory=Setup)
    warmup: WarmupFigures = Field(default_factory=WarmupFigures)
    noisy: NoiseFigures = Field(default_factory=NoiseFigures)
    speed: MachineSpeed = Field(default_factory=MachineSpeed)
    fixed_rate_of: str | None = Field(None, description="the fixed-rate step (run/fixed_rate.py): the label of the "
                                      "throughput point whose client-bound block or top tie this cell helps order")
    # closed load and sessions: requests completed per connection slot (rules/fairness.py)
    fairness: Fairness | None = Field(None, description="loadgen's per-slot figures: slots, served, Jain's index, "
                                      "longest wait, slots that waited beyond the timeout, slots served per second")
    timing: Timing = Field(default_factory=Timing)
    capacity: Capacity = Field(default_factory=Capacity)
    database: DatabaseFigures = Field(default_factory=DatabaseFigures)
    tls: dict[str, Any] | None = Field(None, description="TLS points: the certificate's key type and loadgen's handshake "
                                       "figures, version, suite, provider (rules/tlsfigures.py's TlsFigures)")
    # cross-check cells (`serverbench crosscheck`): the tool, its command and the server's count
    tool: ToolRun | None = None

    @classmethod
    def load(cls, data: dict[str, Any] | None) -> "CellMetrics":
        """From stored JSON; keys this version does not know are dropped (older/newer rows)."""
        data = dict(data or {})
        known = set(cls.flat_keys())
        return cls.model_validate({k: v for k, v in data.items() if k in known})

    def dump(self) -> dict[str, Any]:
        """The stored shape: flat, None left out."""
        return self.model_dump(mode="json", exclude_none=True)

    def updated(self, figures: dict[str, Any]) -> "CellMetrics":
        """A copy with `figures` (stored keys, or whole groups) set, validated like a stored row."""
        return CellMetrics.model_validate({**self.dump(), **figures})


# -- what a run was asked for --------------------------------------------------------------------
DEFAULT_REPEAT = 3
# The fixed-rate step (run/fixed_rate.py) measures a client-bound block or a top tie again at this share of
# its lowest median: below the client's ceiling and every member's own rate with room for their noise,
# high enough that the servers work near their measured rate.
FIXED_RATE_SHARE = 0.8
# A rate chosen from the first repetitions is kept while it stays at most this share of every member's median
# (a row joining later, or medians moving with more repetitions, within it); above, the rate falls to the
# new plan's and the cells measured at the old one are measured again.
FIXED_RATE_KEPT = 0.9
# Rows this close below the plan's lowest member (as a share of its median) may still join the tie as more
# repetitions come in, so the rate is chosen low enough for them too (FIXED_RATE_SHARE of the lowest median
# among them): in a fresh-clone make bench (aa1ce14) bun joined a block whose floor was 120k req/s after the
# last repetition with a median of 98k (18 % below), the rate fell from 96,354 to 78,534, and every cell
# measured at the higher rate was measured again in a start of its own (about 12 min). A clean, fair, steady
# row only (the ones the tie rule admits).
FIXED_RATE_NEAR = 0.25


@dataclass(frozen=True)
class FixedRatePlan:
    """One client-bound block or top tie to order: its point, its rows, and the common rate (req/s). The
    aggregation decides it (results/aggregate.fixed_rate_plans), the runner measures it."""

    workload: str
    point: str
    servers: tuple[str, ...]
    rate: float
    # the clean rows up to FIXED_RATE_NEAR below the tie, which the rate was chosen for and which may join
    # it in a later repetition: measured at the rate in their own starts too (run/fixed_rate.InStart), a
    # start of their own only once they are in `servers`
    near: tuple[str, ...] = ()
    # the lowest median among `servers`: what the rate must stay under once no repetition is left to come
    floor: float = 0.0


class RunOptions(BaseModel):
    """`serverbench run`'s options; stored with the run so --resume repeats them."""

    model_config = ConfigDict(extra="ignore")
    servers: list[str] | None = None
    workloads: list[str] = Field(default_factory=lambda: ["quick"])
    repeat: int = DEFAULT_REPEAT
    duration: str | None = None
    full: bool = False
    server_cpus: list[int] | None = None
    client_cpus: list[int] | None = None
    allow_unverified: bool = False
    workers: int | None = None
    ready_timeout: float = 30.0
    server_memory_limit: str | None = None  # e.g. "512M": memlimit.parse_size
    cluster: str | None = None  # "local:N" or a Dask scheduler address: load shards (cluster.py)
    target: str | None = None  # a running server's URL, measured as is (target.py)
    cluster_tls: dict[str, str] | None = None  # ca_file, cert, key: Dask TLS for a remote scheduler
    server_on_cluster: bool = False  # the server runs on the cluster's `server` worker (remote_server.py)
    # how the server/client CPUs were chosen: "auto" (calibrated, split.py), "half" (two halves),
    # "manual" (--server-cpus/--client-cpus as given)
    split: Literal["auto", "half", "manual"] = "half"
    db_url: str | None = None  # --db-url, its password masked (stored): an existing PostgreSQL
    db_cpus: list[int] | None = None  # --db-cpus: the harness's own PostgreSQL's CPUs (default: the client's)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunOptions":
        return cls.model_validate(d or {})


CellStatus = Literal["ok", "failed", "skipped"]
CellKey = tuple[str, str, str, int]


@dataclass
class CellRecord:
    """One (server, workload, point, repetition) as stored; dicts are accepted and validated."""

    server: str
    workload: str
    point: str
    repetition: int
    status: str  # CellStatus
    error: str | None = None
    log_tail: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    loadgen: LoadgenReport | None = None
    usage: dict | None = None
    metrics: CellMetrics = field(default_factory=CellMetrics)
    id: int | None = None
    run_id: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.metrics, CellMetrics):
            self.metrics = CellMetrics.model_validate(self.metrics or {})
        if self.loadgen is not None and not isinstance(self.loadgen, LoadgenReport):
            self.loadgen = LoadgenReport.parse(self.loadgen, f"cell {self.key}")

    @property
    def key(self) -> CellKey:
        return (self.server, self.workload, self.point, self.repetition)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


__all__ = ["UNFAIR_SHARE", "MachineSpeed", "Fairness", "DatabaseFigures", "FIXED_RATE_SHARE", "FIXED_RATE_KEPT", "FIXED_RATE_NEAR", "FixedRatePlan", "LoadgenReport", "LoadgenSummary", "LoadgenHistograms", "Percentiles", "LoadgenFormatError",
           "CellMetrics", "Counts", "Latency", "Offered", "Client", "ServerUsage", "ServerOverTime", "MemoryLimit",
           "OverloadFigures", "SoakFigures", "Setup", "WarmupFigures", "NoiseFigures", "Timing", "Capacity", "Flat",
           "FigureGroup", "CapacityStep", "ToolRun", "RunOptions", "CellRecord", "CellKey", "DEFAULT_REPEAT"]
