"""The aggregation of cross-check cells (part of aggregate.py's one aggregation, kept apart for size).

aggregate.collect hands the cells that carry `CellMetrics.tool` here and keeps the result in
`RunResults.tools`; every output reads that and recomputes nothing. The judgements: a tool's
reported rate against the rate the server counted (their ratio), client-bound (loadgen.py's rule,
stored per cell), latency not corrected for coordinated omission, and the finding that names the
largest disagreement between tools with its cause, written from the figures.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Iterable

from pydantic import BaseModel

from ..rules.tools import DEFAULT_ORDER, TOOLS, rate
from ..rules.saturation import saturated  # the client-bound rule: CPU >= 90 % of the cores a client could use
from ..model import CellRecord

SELF_REPORT_TOLERANCE = 0.05  # a tool's rate within 5 % of the server's count agrees with it
SERVER_IDLE_SHARE = 0.85
COSTLIER = 3.0  # a tool spending this many times the CPU per request of the fastest one is its own limit
BUSY_SERVER = 80.0  # server CPU % below which, even under the fastest tool, the rates are lower bounds  # server CPU below this share of the best tool's: the server was waiting


class ToolRow(BaseModel):
    """One tool on one server for one point, over its repetitions: a row of "tools compared"."""

    workload: str
    point: str
    mode: str = "closed"
    server: str
    tool: str
    version: str | None = None
    status: str = "ok"  # ok | cannot express | not installed | failed | skipped
    reason: str | None = None
    reps_ok: int = 0
    killed: int = 0  # repetitions the tool did not finish by its deadline (killed; the server's count kept)
    reported_rps: float | None = None
    server_counted_rps: float | None = None
    server_counted_rps_min: float | None = None  # spread over the repetitions
    server_counted_rps_max: float | None = None
    ratio: float | None = None  # reported / server-counted
    requests: int | None = None
    server_counted: int | None = None
    p50_us: float | None = None
    p99_us: float | None = None
    latency_reported: bool = True
    co_corrected: bool = False
    client_cpu_percent: float | None = None
    client_cpu_peak_percent: float | None = None  # busiest 0.2 s; the mean includes the tool's start-up
    client_cpu_us_per_request: float | None = None  # the tool's CPU (start-up included) per request answered
    cores: int | None = None
    client_bound: bool = False  # loadgen.py's rule on the mean over the tool's wall time
    client_bound_peak: bool = False  # the same rule on its busiest 0.2 s only (start-up excluded)
    server_cpu_percent: float | None = None
    errors: int = 0
    timeouts: int = 0
    notes: list[str] = []
    command: list[str] = []  # the tool's command line as run (first repetition)

    def json_object(self) -> dict:
        """The `crosscheck --json` object: the asked-for keys first, then context."""
        keys = ("tool", "version", "reported_rps", "server_counted_rps", "p50_us", "p99_us", "client_cpu_percent",
                "notes", "client_cpu_peak_percent", "server", "workload", "point", "status", "reason", "ratio", "client_bound", "client_bound_peak", "client_cpu_us_per_request", "co_corrected",
                "server_cpu_percent", "errors", "timeouts", "killed")
        d = self.model_dump(mode="json")
        return {k: d[k] for k in keys}


@dataclass
class ToolsCompared:
    """One workload point's tools, side by side on each server, and what the figures say."""

    workload: str
    point: str
    mode: str
    rows: list[ToolRow] = field(default_factory=list)

    @property
    def servers(self) -> list[str]:
        return list(dict.fromkeys(r.server for r in self.rows))

    def on(self, server: str) -> list[ToolRow]:
        return [r for r in self.rows if r.server == server]

    @property
    def finding(self) -> str:
        return finding(self)


def _median(vals: Iterable[float | None]) -> float | None:
    vs = [float(v) for v in vals if v is not None]
    return statistics.median(vs) if vs else None


def _row(cells: list[CellRecord]) -> ToolRow:
    c0 = cells[0]
    t0 = c0.metrics.tool
    assert t0 is not None
    ok = [c for c in cells if c.ok and c.metrics.tool is not None]
    row = ToolRow(workload=t0.source_workload, point=t0.source_point, mode=t0.mode, server=c0.server,
                  tool=t0.tool, version=t0.tool_version, reps_ok=len(ok), co_corrected=t0.co_corrected,
                  cores=t0.cores)
    if not ok:
        if t0.reason:
            row.status, row.reason = "cannot express", t0.reason
        elif c0.error and "not installed" in c0.error:
            row.status, row.reason = "not installed", c0.error
        else:
            row.status, row.reason = c0.status, c0.error
        return row
    tools = [c.metrics.tool for c in ok]
    row.killed = sum(1 for t in tools if t and t.exit_code is None and t.wall_s is not None)
    row.reported_rps = _median(t.reported_rps for t in tools if t)
    counted = [r for t in tools if t and (r := rate(t.server_counted, t.server_basis_s)) is not None]
    row.server_counted_rps = _median(counted)
    row.server_counted_rps_min, row.server_counted_rps_max = (min(counted), max(counted)) if counted else (None, None)
    row.client_cpu_us_per_request = _median(
        c.metrics.client.client_cpu_percent / 100 * c.metrics.tool.wall_s * 1e6 / c.metrics.tool.server_counted
        for c in ok if c.metrics.tool and c.metrics.tool.server_counted and c.metrics.tool.wall_s
        and c.metrics.client.client_cpu_percent is not None)
    if row.reported_rps is not None and row.server_counted_rps:
        row.ratio = row.reported_rps / row.server_counted_rps
    requests = [c.metrics.counts.requests for c in ok if c.metrics.counts.requests is not None]
    row.requests = sum(requests) if requests else None
    row.server_counted = sum(t.server_counted or 0 for t in tools if t)
    row.p50_us = _median(c.metrics.latency.p50_us for c in ok)
    row.p99_us = _median(c.metrics.latency.p99_us for c in ok)
    row.latency_reported = any(t.latency_reported for t in tools if t)
    row.client_cpu_percent = _median(c.metrics.client.client_cpu_percent for c in ok)
    row.client_cpu_peak_percent = _median(t.client_cpu_peak_percent for t in tools if t)
    row.client_bound = any(c.metrics.client.client_saturated for c in ok)
    peak = row.client_cpu_peak_percent
    row.client_bound_peak = peak is not None and saturated(peak, row.cores or 1)
    row.server_cpu_percent = _median(c.metrics.usage.cpu_percent for c in ok)
    row.errors = sum(c.metrics.counts.errors or 0 for c in ok)
    row.timeouts = sum(c.metrics.counts.timeouts or 0 for c in ok)
    row.notes = list(tools[0].notes) if tools[0] else []  # the first repetition's (counts differ per run)
    row.command = tools[0].command if tools[0] else []
    return row


def _tool_order(tool: str) -> int:
    return DEFAULT_ORDER.index(tool) if tool in DEFAULT_ORDER else len(DEFAULT_ORDER)


def compare_tools(cells: list[CellRecord]) -> list[ToolsCompared]:
    """Cross-check cells → one ToolsCompared per (workload, point), rows per server in tool order."""
    groups: dict[tuple[str, str, str, str], list[CellRecord]] = {}
    for c in cells:
        t = c.metrics.tool
        if t is not None:
            groups.setdefault((t.source_workload, t.source_point, c.server, t.tool), []).append(c)
    out: dict[tuple[str, str], ToolsCompared] = {}
    for (wl, pt, server, tool), cs in groups.items():
        row = _row(cs)
        tc = out.setdefault((wl, pt), ToolsCompared(wl, pt, row.mode))
        tc.rows.append(row)
    servers = list(dict.fromkeys(c.server for c in cells))
    for tc in out.values():
        tc.rows.sort(key=lambda r: (servers.index(r.server), _tool_order(r.tool)))
    return list(out.values())


# -- the finding ----------------------------------------------------------------------------------
def _n(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def _cause(low: ToolRow, high: ToolRow) -> str:
    """Why `low` drove the server slower than `high`, from what was measured."""
    srv_low, srv_high = low.server_cpu_percent, high.server_cpu_percent
    waited = srv_low is not None and srv_high and srv_low < SERVER_IDLE_SHARE * srv_high
    server_part = (f" while the server's CPU stayed at {srv_low:.0f} % (against {srv_high:.0f} % under {high.tool}): "
                   "the server was waiting for requests" if waited and srv_low is not None and srv_high else "")
    single = "" if TOOLS.get(low.tool) is None or TOOLS[low.tool].multi_core else " (single-threaded)"
    if low.client_bound:
        return (f"client CPU saturation — {low.tool}{single} used {low.client_cpu_percent:.0f} % of the "
                f"{low.cores or 1} core(s) it could use{server_part}, so it measured its own speed, not the server's")
    peak = low.client_cpu_peak_percent
    if low.client_bound_peak and peak is not None:
        return (f"client CPU saturation while loading — {low.tool}{single} peaked at {peak:.0f} % of the "
                f"{low.cores or 1} core(s) it could use (its mean, {low.client_cpu_percent or 0:.0f} %, includes its "
                f"start-up){server_part}, so it measured its own speed, not the server's")
    cost_l, cost_h = low.client_cpu_us_per_request, high.client_cpu_us_per_request
    if cost_l and cost_h and cost_l >= COSTLIER * cost_h:
        cap = 1e6 * (low.cores or 1) / cost_l
        return (f"client CPU per request — {low.tool}{single} spent {cost_l:,.0f} µs of CPU per request the server "
                f"answered against {cost_h:,.0f} µs for {high.tool} ({cost_l / cost_h:.0f}× more), so even with "
                f"{'its core' if (low.cores or 1) == 1 else f'its {low.cores} cores'} to itself it could not send more "
                f"than about {cap:,.0f} requests/s{server_part}; it measured its own cost, not the server "
                f"(by the 90 % rule it was {'' if low.client_bound else 'not '}client-bound at "
                f"{low.client_cpu_percent or 0:.0f} % CPU on a CPU shared with other work)")
    if low.requests and low.timeouts > 0.01 * low.requests:
        return (f"timeouts — {low.tool} counted {low.timeouts:,} timed-out requests; connections that waited for "
                "them sent nothing else")
    reuse = next((n for n in low.notes if "reused a connection" in n or "Connection: close" in n), None)
    if reuse:
        return f"connection reuse — {reuse}"
    if waited:
        return (f"{low.tool} did not keep the server busy{server_part}, although by the 90 % rule it was not "
                f"client-bound ({low.client_cpu_percent or 0:.0f} % CPU): it spends its time between requests "
                "(scheduling, per-request overhead) rather than on the wire")
    return (f"neither client saturation, timeouts nor connection reuse shows in the figures ({low.tool}: "
            f"{low.client_cpu_percent or 0:.0f} % client CPU, {low.errors:,} errors); the tools differ in how they "
            "schedule requests")


def finding(tc: ToolsCompared) -> str:
    """One paragraph: the largest disagreement, its cause, self-report accuracy, and latency caveats."""
    best: tuple[float, ToolRow, ToolRow] | None = None
    for server in tc.servers:
        measured = [r for r in tc.on(server) if r.server_counted_rps]
        if len(measured) < 2:
            continue
        high = max(measured, key=lambda r: r.server_counted_rps or 0)
        low = min(measured, key=lambda r: r.server_counted_rps or 0)
        factor = (high.server_counted_rps or 0) / (low.server_counted_rps or 1)
        if best is None or factor > best[0]:
            best = (factor, low, high)
    if best is None:
        return "Fewer than two tools were measured on any server: nothing to compare."
    factor, low, high = best
    parts = [f"The largest disagreement: on {low.server}, {low.tool} drove the server to {_n(low.server_counted_rps)} "
             f"requests/s (counted by the server) where {high.tool} drove it to {_n(high.server_counted_rps)}, "
             f"{factor:.1f}× apart. Cause: {_cause(low, high)}."]
    if high.server_cpu_percent is not None and high.server_cpu_percent < BUSY_SERVER:
        parts.append(f"Even under {high.tool} the server used {high.server_cpu_percent:.0f} % of its CPU: the tools "
                     "were limited or the CPUs shared with other work, so every rate here is a lower bound and "
                     "rows closer than their spread over the repetitions do not differ.")
    off = [r for r in tc.rows if r.ratio is not None and abs(r.ratio - 1) > SELF_REPORT_TOLERANCE]
    if off:
        worst = max(off, key=lambda r: abs((r.ratio or 1) - 1))
        why = ("it divides by a shorter time than it loaded the server (start-up and ramp-up excluded)"
               if (worst.ratio or 0) > 1 else
               "requests it did not count (cut off at its deadline, in flight at the end, or failed) were answered")
        parts.append(f"Self-reports: {worst.tool} on {worst.server} printed {_n(worst.reported_rps)} requests/s, "
                     f"{worst.ratio:.2f}× what the server counted — {why}; the other tools are within "
                     f"{SELF_REPORT_TOLERANCE:.0%} of the server's count" if len(off) == 1 else
                     f"Self-reports: {len(off)} tool rows differ from the server's count by more than "
                     f"{SELF_REPORT_TOLERANCE:.0%}, most {worst.tool} on {worst.server} ({worst.ratio:.2f}×) — {why}.")
        if len(off) == 1:
            parts[-1] += "."
    else:
        parts.append(f"Every tool's own rate is within {SELF_REPORT_TOLERANCE:.0%} of what the server counted.")
    uncorrected = [r.tool for r in tc.rows if r.status == "ok" and r.latency_reported and not r.co_corrected]
    if uncorrected and tc.mode == "closed":
        parts.append("Latency: all of it is closed-loop, timed from each request's actual send, so none is corrected "
                     "for coordinated omission — a stall delays the next requests instead of counting against them.")
    elif uncorrected:
        parts.append(f"Latency not corrected for coordinated omission: {', '.join(dict.fromkeys(uncorrected))}.")
    return " ".join(parts)


__all__ = ["ToolRow", "ToolsCompared", "compare_tools", "finding"]
