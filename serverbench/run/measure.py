"""The measuring core: how every path that loads a server measures it — the runner's matrix, the
cross-check's peer tools, the `--split auto` calibration — so that a fix to one rule reaches them all.

Here, once: the sampling interval; the admission gate (whether a row may be measured, and with
which workload and tool); the order of repetitions; the warm-up (to steady state before a start's
first point, brief before a later one); sampling a `Server` (processes/server.py: a local process,
a `--target`, a server on the cluster) while a load runs, with the harness's own CPU; and the
CellMetrics records built from what was measured. A load is one loadgen process, Dask shards
(cluster/load_cluster.py) or a peer tool (crosscheck/execute.py); each says what its client used
(`Load`), judged by the one client-bound rule (rules/saturation.py).
"""
from __future__ import annotations

import math
import resource
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from ..catalog import build, doctor
from ..catalog.kinds import OVER_TIME
from ..catalog.workloads import CALIBRATION_CONNECTIONS, Point, Size, Workload
from ..overtime import overload, soak, timeline
from ..processes import idle, memlimit, speed
from ..processes.loadgen import LoadgenResult, tls_figures
from ..processes.server import Server
from ..model import Client, MachineSpeed, ServerOverTime, MemoryLimit, ServerUsage
from ..store import Store
from ..rules import admission as kinds
from ..rules import warmup

# 5 Hz: enough for CPU means and RSS peaks over multi-second cells; 20 Hz cost the harness
# 5.6 % of a core on java-threads' 400-thread tree (issue "honest numbers").
SAMPLE_INTERVAL = 0.2

T = TypeVar("T")
R = TypeVar("R")
# One loadgen run of a point against the server under test (one process, or shards on the
# cluster's workers), at an optional calibrated rate.
PointLoad = Callable[..., LoadgenResult]


class Load(Protocol):
    """A load that ran against the server, as the core reads its client: one loadgen process or
    merged Dask shards (processes/loadgen.LoadgenResult) or a peer tool (crosscheck's ToolOutput)."""

    @property
    def client_cpu_percent(self) -> float:
        """The client's CPU over its wall time, 100 = one core."""
        ...

    @property
    def client_saturated(self) -> bool:
        """saturation.saturated() of that CPU against the cores the client could use."""
        ...


# -- what a cell records --------------------------------------------------------------------------
def client_metrics(load: Load) -> Client:
    """What the client that drove a load used (the rest of the cell's Client record is the runner's)."""
    return Client(client_cpu_percent=round(load.client_cpu_percent, 1), client_saturated=load.client_saturated)


def usage_metrics(usage: dict | None) -> ServerUsage:
    """The server's usage the sampler measured (its dict: processes/sampler.py)."""
    if not usage:
        return ServerUsage()
    u = usage.get
    return ServerUsage(cpu_user_s=u("cpu_user_s"), cpu_sys_s=u("cpu_sys_s"), cpu_percent=u("cpu_percent_mean"),
                       cpu_percent_peak=u("cpu_percent_peak"), rss_peak_bytes=u("rss_peak_bytes"),
                       rss_mean_bytes=u("rss_mean_bytes"), threads_peak=u("threads_peak"),
                       processes_peak=u("processes_peak"), ctx_voluntary=u("ctx_voluntary"),
                       ctx_involuntary=u("ctx_involuntary"))


def loadgen_metrics(lg: LoadgenResult, tls_key: str | None = None) -> dict[str, Any]:
    """The CellMetrics figures a loadgen result provides, as stored keys (one result fills several
    groups: counts, latency, the load offered, the client, noise and fairness; a TLS point's `tls`
    with its certificate's key type `tls_key`). LoadgenError when a TLS point's `tls` is malformed."""
    r = lg.report
    s = r.summary
    lat = s.latency_us
    answered = s.answered_latency_us
    cfg = r.config
    measured = float(r.duration_s or lg.wall_s)
    return {
        # throughput means successful responses: a server that fails fast must not rank high
        "rps": s.ok / measured if measured > 0 else 0.0, "responses_rps": s.rps,
        "requests": s.requests, "ok": s.ok, "errors": s.errors,
        "due": s.due, "never_sent": s.never_sent, "dropped": s.dropped,
        "answered_p50_us": answered.p50 if answered else None,
        "answered_p99_us": answered.p99 if answered else None,
        "timeouts": r.error_classes.get("timeout", 0), "error_classes": r.error_classes,
        "p50_us": lat.p50, "p75_us": lat.p75, "p90_us": lat.p90, "p99_us": lat.p99,
        "p999_us": lat.p99_9, "p9999_us": lat.p99_99, "max_us": lat.max, "mean_us": lat.mean,
        "duration_s": r.duration_s, "missed_sends": s.missed_sends,
        "unanswered": s.unanswered, "unanswered_oldest_us": s.unanswered_oldest_us,
        "target_rate": cfg.get("rate"), "connections": cfg.get("connections"), "users": cfg.get("users"),
        "max_connections": cfg.get("max_connections"),
        "client": client_metrics(lg),
        "shards": lg.extra.get("shards"), "shard_start_skew_ms": lg.extra.get("shard_start_skew_ms"),
        "noise": (r.model_extra or {}).get("noise"),
        "fairness": (r.model_extra or {}).get("fairness"),
        "tls": tls_figures(r, tls_key),
    }


def over_time_metrics(kind: str | None, lg: LoadgenResult | None, usage: dict | None, srv: Server) -> dict[str, Any]:
    """The CellMetrics groups of the cell's behaviour over time, by group name: the server's series
    (alignment, death, RSS at both ends), the memory limit, and the overload or soak figures."""
    report = lg.report if lg is not None else None
    off = timeline.offset_s(report, usage)
    series = ServerOverTime(series_offset_s=off)
    died = timeline.on_axis((usage or {}).get("died_at_s"), off)
    if died is not None:
        series.server_died_at_s, series.server_exit_code = max(0.0, died), srv.returncode()
    memory = MemoryLimit()
    if srv.memory is not None:
        mem = srv.memory
        memory = MemoryLimit(memory_limit_bytes=mem.limit_bytes, memory_limit_method=mem.method,
                             memory_limit_detail=mem.detail)
        killed = None
        if mem.method == memlimit.WATCHDOG:
            killed = timeline.on_axis((usage or {}).get("rss_limit_hit_s"), off)
        elif srv.oom_killed():
            killed = died
        memory.memory_killed_at_s = max(0.0, killed) if killed is not None else None
    rows = timeline.server_seconds(usage, off)
    if rows:
        series.rss_start_bytes, series.rss_end_bytes = rows[0].rss_bytes, rows[-1].rss_bytes
        others = [r.others_percent for r in rows if r.others_percent is not None]
        series.others_cpu_percent = round(sum(others) / len(others), 1) if others else None
    out: dict[str, Any] = {"over_time": series, "memory": memory}
    seconds = timeline.load_seconds(report)
    if kind == "overload" and (verdict := overload.judge(seconds, series.server_died_at_s,
                                                         memory.memory_killed_at_s, rows)) is not None:
        out["overload"] = verdict.cell_figures()
    elif kind == "soak" and (steadiness := soak.judge(seconds)) is not None:
        out["soak"] = steadiness.cell_figures()
    return out


# -- sampling a server while a load runs --------------------------------------------------------
class OwnCpu:
    """This process's CPU (all threads, sampler included; not its children) since creation."""

    def __init__(self) -> None:
        self.t0, self.cpu0 = time.monotonic(), self._cpu()

    @staticmethod
    def _cpu() -> float:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime

    def percent(self) -> float:
        wall = time.monotonic() - self.t0
        return round(100.0 * (self._cpu() - self.cpu0) / wall, 2) if wall > 0 else 0.0


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _probe(cpus: list[int] | None) -> float | None:
    """The speed probe's MiB per CPU-second on `cpus` (None when they cannot be used here)."""
    try:
        return speed.probe(cpus).mib_per_cpu_s
    except OSError:
        return None


class Sampling:
    """A server's process tree sampled every SAMPLE_INTERVAL while a load runs, and the harness's own
    CPU meanwhile; with `beside` (the run's database), that tree too, over the same window and kept
    apart from the server's. The usage is kept when the load raises: a failed cell still shows what
    the server did. For a server on this machine, `speed` (model.MachineSpeed): the CPU probe on its
    CPUs just before the load and just after it (outside the measured window, ~0.13 s a cell), and
    the steal of those CPUs over the window (processes/speed.py)."""

    def __init__(self, server: Server, beside: Callable[[float], Any] | None = None) -> None:
        self.server = server
        self.beside = beside
        self.usage: dict[str, Any] | None = None
        self.beside_usage: dict[str, Any] | None = None
        self.harness_cpu_percent: float | None = None
        self.speed = MachineSpeed()
        # a server started elsewhere (--target, --server-on-cluster on another host) has no CPUs here
        self.here = server.pid is not None and server.host in LOOPBACK

    def run(self, load: Callable[[], R], measure_after: float = 0.0) -> R:
        """`load()` sampled; `measure_after`: the load warms up that long first (loadgen --warmup), so
        the samplers start then, and what the server did in its warm-up is not its usage."""
        cpus = self.server.cpus
        if self.here:
            self.speed.speed_before_mib_s = _probe(cpus)
        own = OwnCpu()
        other = self.beside(SAMPLE_INTERVAL) if self.beside is not None else None
        samplers = [s for s in (self.server.sampler(SAMPLE_INTERVAL), other) if s is not None]
        started: list[speed.CpuTimes] = []

        def start() -> None:
            for s in samplers:
                s.start()
            started.append(speed.cpu_times(cpus))
        timer = threading.Timer(measure_after, start) if measure_after > 0 else None
        if timer is None:
            start()
        else:
            timer.start()
        try:
            return load()
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()
                if not started:
                    start()  # the load ended within its warm-up (it failed): an empty window
            self.usage = samplers[0].stop().to_dict()
            if other is not None:
                self.beside_usage = other.stop().to_dict()
            self.harness_cpu_percent = own.percent()
            if self.here:
                self.speed.steal_percent = speed.steal_percent(started[0], speed.cpu_times(cpus))
                self.speed.speed_after_mib_s = _probe(cpus)


def cpu_counter(srv: Server) -> Callable[[], float] | None:
    """The server's process tree's CPU seconds so far, as a callable; None for a server elsewhere."""
    if srv.pid is None or srv.host not in LOOPBACK:
        return None
    pid = srv.pid
    return lambda: idle.tree_cpu_s(pid)


def quiet_before_window(srv: Server, p: Point, db_pid: int | None = None) -> dict[str, Any]:
    """An open-load point's server (and database) given time to work off what a previous load left queued
    before the measured window (processes/idle.py): the cell's `quiet_wait_s`, and `busy_at_window` when
    the wait gave up. Nothing for closed load (it queues at most its connections) or a server elsewhere."""
    if p.mode != "open" or srv.pid is None or srv.host not in LOOPBACK:
        return {}
    waited, quiet = idle.wait_quiet([srv.pid] + ([db_pid] if db_pid else []))
    return {"quiet_wait_s": waited, "busy_at_window": None if quiet else True}


def server_cpu_s(usage: dict[str, Any] | None) -> float:
    """CPU seconds (user + system) the sampled tree used; 0 when nothing was sampled."""
    return float((usage or {}).get("cpu_user_s") or 0.0) + float((usage or {}).get("cpu_sys_s") or 0.0)


# -- the order of a measurement -----------------------------------------------------------------
def rounds(repeat: int, items: Sequence[T]) -> Iterator[tuple[int, T]]:
    """(repetition, item) in measuring order: repetitions are rounds over all items, every other
    round in reverse, so a machine that drifts during a run (this VM does, by up to 2x over an hour)
    weighs on every item alike instead of on whichever ran last."""
    for rep in range(1, repeat + 1):
        for item in (items if rep % 2 else items[::-1]):
            yield rep, item


# -- warm-up ------------------------------------------------------------------------------------
def calibration_point(p: Point) -> Point:
    """The closed-loop load that measures the capacity an "N%" rate is a share of."""
    return Point(label="calibration", mode="closed", path=p.path, method=p.method, headers=p.headers,
                 body=p.body, connections=CALIBRATION_CONNECTIONS, keepalive=p.keepalive,
                 duration=p.calibration, threads=p.threads, tls=p.tls, http2=p.http2, streams=p.streams)


def warmup_point(p: Point, duration: str) -> Point:
    """A brief warm-up: closed points as themselves; other modes with a modest closed load on their path."""
    if p.mode == "closed":
        return p.model_copy(update={"label": "warmup", "duration": duration, "requests": None,
                                    "time_limit": None})
    return Point(label="warmup", mode="closed", path=p.path, method=p.method, headers=p.headers,
                 body=p.body, connections=min(CALIBRATION_CONNECTIONS, p.users or p.max_connections or 64),
                 keepalive=p.keepalive, duration=duration, timeout=p.timeout, tls=p.tls, http2=p.http2,
                 streams=p.streams)


def steady_point(p: Point) -> Point:
    """One second of the load a point's steady warm-up repeats: closed points and open points at a
    fixed rate as themselves; points whose own load is a shape or a search (sessions, capacity, a
    calibrated "N%" rate) as the closed-loop calibration load on their path."""
    if p.mode == "closed" or (p.mode == "open" and p.rate_fraction is None and p.stages is None):
        return p.model_copy(update={"label": "warmup", "duration": f"{warmup.ROUND_S:g}s", "requests": None,
                                    "time_limit": None, "stages": None, "noise": None, "twin": None,
                                    "heavy_path": None, "heavy_share": None})
    return calibration_point(p).model_copy(update={"label": "warmup", "duration": f"{warmup.ROUND_S:g}s"})


def warm_up(load: PointLoad, kind: str | None, size: Size, p: Point, first: bool,
            cpu_s: Callable[[], float] | None = None) -> warmup.Warmup | None:
    """A start's first point: warm to steady state (warmup.py) with the point's own load, judged by its
    successful rate, or for an open load at a fixed rate by its requests per server CPU-second (`cpu_s`:
    the server's CPU seconds so far; a server elsewhere has none, and is judged by its rate); a later
    point, or a workload that keeps its own shape (overload, soak): the size's brief `warmup`
    (None without one). Raises what the load raises."""
    if first and size.steady_max_seconds() > 0 and kind not in OVER_TIME:
        one = steady_point(p)

        def one_second() -> float:
            s = load(one).report
            return s.summary.ok / s.duration_s if s.duration_s else 0.0
        if cpu_s is not None and p.mode == "open" and p.rate_fraction is None and p.stages is None:
            rounds = warmup.per_cpu_second(lambda: int(load(one).report.summary.ok), cpu_s)
            return warmup.warm_to_steady(rounds, size.steady_max_seconds(), basis=warmup.CPU_BASIS)
        return warmup.warm_to_steady(one_second, size.steady_max_seconds())
    if not size.warmup:
        return None
    report = load(warmup_point(p, size.warmup)).report
    return warmup.brief([float(t.get("ok", 0)) for t in report.timeline], size.warmup_seconds())


def keeps_connections(p: Point) -> bool:
    """Whether a point warms up inside its measured run's loadgen process, its connections kept into
    the measured window (rules/warmup.py): a closed keep-alive TLS point, whose every connection costs
    a handshake, so one-second rounds would spend the warm-up opening connections."""
    return p.tls is not None and p.keepalive and p.mode == "closed"


def in_run_warmup_s(kind: str | None, size: Size, p: Point, first: bool) -> float:
    """Seconds of loadgen --warmup before a `keeps_connections` point's measured window: the size's
    steady maximum before a start's first point (judged afterwards), else its brief warm-up."""
    return size.steady_max_seconds() if _to_steady(kind, size, first) else size.warmup_seconds()


def _to_steady(kind: str | None, size: Size, first: bool) -> bool:
    """Whether a point is warmed to steady state (a start's first point) rather than briefly."""
    return first and size.steady_max_seconds() > 0 and kind not in OVER_TIME


def warm_up_point(load: PointLoad, kind: str | None, size: Size, p: Point, first: bool,
                  cpu_s: Callable[[], float] | None = None) -> tuple[warmup.Warmup | None, float]:
    """Point `p`'s warm-up before its measured run: (warm_up's, 0) or, for a point that
    `keeps_connections`, (None, the seconds of loadgen --warmup its measured run starts with)."""
    if keeps_connections(p):
        return None, in_run_warmup_s(kind, size, p, first)
    return warm_up(load, kind, size, p, first, cpu_s), 0.0


def judge_in_run(report: Any, kind: str | None, size: Size, first: bool, seconds: float) -> warmup.Warmup | None:
    """The `seconds` of warm-up a `keeps_connections` run did (its loadgen's `warmup_ok` per second):
    judged to steady state for a start's first point, brief for a later one; None without a warm-up."""
    if seconds <= 0:
        return None
    whole = math.ceil(seconds - 1e-9)  # a last partial second is in loadgen's list too
    rates = [float(n) for n in ((report.model_extra or {}).get("warmup_ok") or [])][:whole]
    rates += [0.0] * (whole - len(rates))  # trailing seconds without a success are not in loadgen's list
    return warmup.judge(rates, seconds) if _to_steady(kind, size, first) else warmup.brief(rates, seconds)


# -- admission ----------------------------------------------------------------------------------
def declared_reason(m: Any, w: Workload) -> str | None:
    """Why row `m`'s own manifest keeps it out of `w`'s database or CPU work (db_out, no db_* choices,
    compress_out, no compression): known before anything is built or verified, so a plan can count it."""
    choices = getattr(m, "choices", None)
    if "db" in w.features and getattr(choices, "db_out", None):
        return f"serves no database here (db_out): {choices.db_out}"
    if "db" in w.features and not getattr(choices, "db", False):
        return "not a db row: it declares no db_* choices (SPEC.md, Database endpoints)"
    if "compress" in w.features and not getattr(choices, "compress", False):
        out = getattr(choices, "compress_out", None)
        return (f"serves no /compress here (compress_out): {out}" if out else
                "not a compress row: it declares no compression in [choices] (SPEC.md, CPU work)")
    return None


class Gate:
    """Why a server cannot be measured (None = it can). `external`: a --target, not built, verified or
    started here; `remote` (--server-on-cluster): (manifest -> its ServerHost actor, server CPUs), so
    toolchain, build and verification are judged on the server's machine."""

    def __init__(self, store: Store, allow_unverified: bool, *, external: bool = False,
                 remote: tuple[Callable[[Any], Any], list[int] | None] | None = None) -> None:
        self.store = store
        self.allow_unverified = allow_unverified
        self.cache: dict[str, str | None] = {}
        self.external = external
        self.remote = remote

    def reason(self, m: Any, w: Workload | None = None, tool: str | None = None) -> str | None:
        """With a workload (and a cross-check's tool): also a feature check the row failed that the
        workload uses (rules/admission.py), with --allow-unverified too."""
        if self.external:
            return None
        if m.id not in self.cache:
            self.cache[m.id] = self._reason(m)
        if self.cache[m.id] is None and w is not None:
            if (declared := declared_reason(m, w)) is not None:
                return declared
            # a feature the row serves must have been checked (a make bench verify checks none of them)
            for f in kinds.workload_features(w, tool) if not self.allow_unverified else ():
                if kinds.serves_feature(m, f) and (unchecked := kinds.feature_unchecked(
                        self.store.verdict(m.id), f, m.id)) is not None:
                    return unchecked
            return kinds.not_run(self.store.verdict(m.id), w, tool)
        return self.cache[m.id]

    def _remote_reason(self, m: Any) -> str | None:
        assert self.remote is not None
        host_of, cpus = self.remote
        actor = host_of(m)
        g = actor.gate().result()  # may build there: no time limit but the build's own
        if g["reason"] is not None:
            return g["reason"]
        if self.allow_unverified:
            return None
        v = self.store.verdict(m.id)
        if v is None or v.folder_hash != g["hash"]:
            r = actor.verify(cpus).result()
            if r.get("problem"):
                return f"cannot be verified on the server machine: {r['problem']}"
            self.store.record_verdict(m.id, r["passed"], r["checks"], r["hash"])
            v = self.store.verdict(m.id)
        failed = kinds.refused(v) if v is not None else ["no verdict stored"]
        if failed:  # measurement checks only: feature and robustness failures do not refuse a row
            return f"failed verification on the server machine ({', '.join(failed)})"
        return None

    def _reason(self, m: Any) -> str | None:
        if self.remote is not None:
            return self._remote_reason(m)
        a = doctor.check(m, "run")
        if not a.available:
            hint = f"; {a.install_hint}" if a.install_hint else ""
            return f"unavailable: {a.reason or 'missing ' + ', '.join(a.missing)}{hint}"
        if not build.is_built(m):
            return f"not built; run `serverbench build {m.id}`"
        if self.allow_unverified:
            return None
        v = self.store.verdict(m.id)
        if v is None:
            return f"never verified; run `serverbench verify {m.id}` (or pass --allow-unverified)"
        failed = kinds.refused(v)
        if failed:  # measurement checks only: feature and robustness failures do not refuse a row
            return (f"failed verification ({', '.join(failed)}); fix it and re-run "
                    f"`serverbench verify {m.id}` (or pass --allow-unverified)")
        if v.folder_hash and v.folder_hash != build.folder_hash(m):
            return f"changed since it was verified; re-run `serverbench verify {m.id}`"
        return None


__all__ = ["SAMPLE_INTERVAL", "LOOPBACK", "Load", "PointLoad", "Sampling", "OwnCpu", "Gate", "declared_reason", "rounds", "warm_up", "warmup_point",
           "keeps_connections", "in_run_warmup_s", "warm_up_point", "judge_in_run",
           "steady_point", "calibration_point", "client_metrics", "usage_metrics", "loadgen_metrics",
           "over_time_metrics", "server_cpu_s"]
