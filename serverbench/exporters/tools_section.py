"""The "tools compared" section's table, shared by the Markdown and HTML exporters.

Reads aggregate_tools.ToolsCompared (through aggregate.RunResults.tools); formats, never judges.
"""
from __future__ import annotations

from ..results.aggregate_tools import ToolRow, ToolsCompared
from ..results.formatting import fmt_num, fmt_us

HEADERS = ["tool", "version", "reported req/s", "server-counted req/s (min–max)", "reported ÷ counted", "p50", "p99",
           "client CPU", "client CPU µs/request", "server CPU", "flags"]
INTRO = ("The same workload through each load tool, with its path replaced by `/tenth?ms=0` so that the server "
         "counts every request it answers (the counter read before and after each tool). *Reported* is the tool's "
         "own figure, as it defines it; *server-counted* is what the server answered, divided by the tool's own "
         "run time (else its planned duration). Client CPU is the tool's CPU time over its wall time (100 % = one "
         "core; start-up included, and k6 and Locust start slowly); client-bound means ≥ 90 % of the cores it "
         "could use, 'at its peak' when only its busiest 0.2 s reached that. Server CPU is the server's mean over "
         "the same time. Client CPU µs/request is the tool's CPU time over the requests the server answered: what "
         "one request costs the tool, whatever else ran on its CPU. Figures are medians over the repetitions. A "
         "tool that cannot express the workload says so instead of being approximated.")


def flags(r: ToolRow) -> str:
    out = []
    if r.client_bound:
        out.append("client-bound")
    elif r.client_bound_peak:
        out.append(f"client-bound at its peak ({r.client_cpu_peak_percent:.0f} %)")
    if r.latency_reported and not r.co_corrected:
        out.append("latency not CO-corrected")
    if not r.latency_reported:
        out.append("no latency")
    if r.killed:
        out.append(f"killed at its deadline in {r.killed} of {r.reps_ok} runs")
    if r.errors:
        out.append(f"{r.errors:,} errors" + (f" ({r.timeouts:,} timeouts)" if r.timeouts else ""))
    return ", ".join(out) or "—"


def cells(r: ToolRow) -> list[str]:
    """One table row; a tool that did not run says why in place of its figures."""
    version = (r.version or "—")[:40]
    if r.status != "ok":
        return [r.tool, version, f"{r.status}: {r.reason or ''}"] + [""] * (len(HEADERS) - 3)
    spread = ("" if r.reps_ok < 2 or r.server_counted_rps_min is None else
              f" ({fmt_num(r.server_counted_rps_min)}–{fmt_num(r.server_counted_rps_max)})")
    return [r.tool, version, fmt_num(r.reported_rps), fmt_num(r.server_counted_rps) + spread,
            "—" if r.ratio is None else f"{r.ratio:.3f}", fmt_us(r.p50_us), fmt_us(r.p99_us),
            "—" if r.client_cpu_percent is None else f"{r.client_cpu_percent:.0f} % of {r.cores or 1}",
            fmt_num(r.client_cpu_us_per_request, 1),
            "—" if r.server_cpu_percent is None else f"{r.server_cpu_percent:.0f} %", flags(r)]


def title(tc: ToolsCompared) -> str:
    return f"{tc.workload} · {tc.point} ({tc.mode} load)"


def notes(tc: ToolsCompared) -> list[str]:
    """Per tool, its command line and how the workload was translated (first server's row)."""
    seen: dict[str, ToolRow] = {}
    for r in tc.rows:
        if r.status == "ok" and r.tool not in seen:
            seen[r.tool] = r
    return [f"{t}: `{' '.join(r.command)}`" + ("; " + "; ".join(r.notes) if r.notes else "")
            for t, r in seen.items()]


__all__ = ["HEADERS", "INTRO", "cells", "flags", "title", "notes"]
