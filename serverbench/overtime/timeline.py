"""One cell's behaviour over time: the loadgen's per-second timeline and the server's own
per-second series (sampler), on one time axis.

The axis is the loadgen's: second `t` covers (t-1, t] seconds after its measurement started.
The sampler starts just before the loadgen (which may warm up first, open load: 0.5 s), so its
rows are shifted by `offset_s` = the loadgen's measurement start − the sampler's start (both wall
clocks, recorded with the cell); a server row is drawn at the end of its window on that axis.
Alignment is to within a sample (0.2 s).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from ..model import LoadgenReport


@dataclass(frozen=True)
class LoadSecond:
    """One second of the loadgen's timeline."""

    t: int
    completed: int  # requests that ended in this second: responses of any status + errors
    ok: int  # 2xx/3xx responses
    timeouts: int
    errors: int  # every error class, timeouts included
    p50_us: float | None  # over the responses and timeouts of this second (None: nothing ended)
    p90_us: float | None
    p99_us: float | None
    max_us: float | None
    demand: float | None  # the schedule's value: target users (sessions) or target rate (open)
    active: int | None  # users (sessions) or connections holding a request

    @property
    def failed_share(self) -> float:
        return (self.completed - self.ok) / self.completed if self.completed else 0.0

    @property
    def answered_us(self) -> float | None:
        """A latency of this second's answered requests: its median over every request that ended,
        which is an answered request's while fewer than half of them failed (timed-out requests
        sit at the top, at the timeout). None when half or more failed, or nothing ended."""
        if self.p50_us is None or self.failed_share >= 0.5:
            return None
        return self.p50_us


@dataclass(frozen=True)
class ServerSecond:
    """One row of the sampler's series, on the loadgen's axis."""

    t: float  # end of the window, seconds after the loadgen's measurement start
    dt: float
    cpu_user_percent: float  # 100 = one core
    cpu_sys_percent: float
    rss_bytes: int  # the window's highest sample
    threads: int
    processes: int
    ctx_per_s: float  # voluntary + involuntary context switches per second
    # of the server's CPUs, the share other processes used (a shared machine's noise; 100 per CPU)
    others_percent: float | None = None

    @property
    def cpu_percent(self) -> float:
        return self.cpu_user_percent + self.cpu_sys_percent


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def load_seconds(report: LoadgenReport | None) -> list[LoadSecond]:
    """The timeline's whole seconds; a last second mostly after the measured time is left out
    (it holds only the tail of the final requests)."""
    if report is None:
        return []
    last = int((report.duration_s or 0) + 0.5) if report.duration_s else None
    out = []
    for row in report.timeline:
        t = int(row.get("t") or 0)
        if t <= 0 or (last is not None and t > last):
            continue
        completed = int(row.get("completed") or 0)
        errs = row.get("errors") or {}
        errors = sum(int(v) for v in errs.values()) if isinstance(errs, dict) else 0
        # 0 = no latency that second (nothing ended, or only errors that carry none, e.g. refused connections)
        pct = {k: (_num(row.get(k)) or None) for k in ("p50_us", "p90_us", "p99_us", "max_us")}
        demand = _num(row.get("target_users"))
        demand = demand if demand is not None else _num(row.get("target_rate"))
        active = row.get("active_users") or row.get("active_connections")
        out.append(LoadSecond(t, completed, int(row.get("ok") or 0), int(errs.get("timeout", 0)) if isinstance(errs, dict) else 0,
                              errors, pct["p50_us"], pct["p90_us"], pct["p99_us"], pct["max_us"], demand,
                              int(active) if isinstance(active, (int, float)) else None))
    return out


def demand_label(report: LoadgenReport | None) -> str:
    mode = (report.config.get("mode") if report else None) or ""
    return {"sessions": "active devices (target)", "open": "target rate, req/s"}.get(mode, "connections")


def _unix(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def offset_s(report: LoadgenReport | None, usage: dict[str, Any] | None) -> float | None:
    """Seconds from the sampler's start to the loadgen's measurement start (None: unknown)."""
    series = (usage or {}).get("series") or {}
    lg = _unix(report.started_at) if report else None
    started = _num(series.get("started_unix"))
    return None if lg is None or started is None else round(lg - started, 3)


def server_seconds(usage: dict[str, Any] | None, offset: float | None) -> list[ServerSecond]:
    """The sampler's rows on the loadgen's axis (rows that end before the measurement are left out)."""
    series = (usage or {}).get("series") or {}
    cols = series.get("columns") or []
    rows = series.get("rows") or []
    if not rows or not cols:
        return []
    shift = offset or 0.0
    out = []
    for r in rows:
        d = dict(zip(cols, r))
        t, dt = float(d["t_s"]) - shift, float(d["dt_s"]) or 1.0
        if t <= 0:
            continue
        out.append(ServerSecond(round(t, 3), dt, 100 * float(d["cpu_user_s"]) / dt, 100 * float(d["cpu_sys_s"]) / dt,
                                int(d["rss_bytes"]), int(d["threads"]), int(d["processes"]),
                                (int(d["ctx_voluntary"]) + int(d["ctx_involuntary"])) / dt,
                                _others_percent(d, dt)))
    return out


def _others_percent(row: dict[str, Any], dt: float) -> float | None:
    """Other processes' CPU on the server's CPUs, % of one CPU. Runs stored before the sampler
    counted them per process have `cpus_busy_s` (/proc/stat's tick-sampled busy time, which
    under- and over-counted on this VM): busy minus the server's own, as it was shown then."""
    if "others_cpu_s" in row:
        return 100 * float(row["others_cpu_s"]) / dt
    if "cpus_busy_s" in row:
        own = float(row["cpu_user_s"]) + float(row["cpu_sys_s"])
        return max(0.0, 100 * (float(row["cpus_busy_s"]) - own) / dt)
    return None


def on_axis(seconds_after_sampler_start: float | None, offset: float | None) -> float | None:
    """A sampler time (e.g. `died_at_s`) on the loadgen's axis."""
    if seconds_after_sampler_start is None:
        return None
    return round(seconds_after_sampler_start - (offset or 0.0), 3)


def smoothed(values: Sequence[float], window: int) -> list[float]:
    """Centred moving mean over `window` values (fewer at the edges)."""
    half = window // 2
    out = []
    for i in range(len(values)):
        part = values[max(0, i - half): i + half + 1]
        out.append(sum(part) / len(part))
    return out


def median(values: Sequence[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return statistics.median(vs) if vs else None


__all__ = ["LoadSecond", "ServerSecond", "load_seconds", "server_seconds", "offset_s", "on_axis",
           "demand_label", "smoothed", "median"]
