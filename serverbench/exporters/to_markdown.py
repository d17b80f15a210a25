"""Markdown exporter: per workload and point, the ranked table and the warnings."""
from __future__ import annotations

from typing import Any

from ..aggregate import RunResults
from ..fingerprint import normalize
from ..formatting import cpus, fmt_cpu, fmt_num, fmt_us

COLUMNS = ["place", "server", "language", "model", "requests/s (median)", "p50", "p99", "errors",
           "CPU (% / user+sys s)", "memory (peak RSS MiB)"]


def render(run: Any, results: RunResults) -> bytes:
    fp = normalize(run.fingerprint)
    lines = [f"# serverbench run {run.id}", "",
             f"{fp.get('cpu_model', '?')}, {fp.get('cores', '?')} cores, kernel {fp.get('kernel', '?')}; "
             f"server on CPU {cpus(fp.get('server_cpus'))}, load generator on CPU {cpus(fp.get('client_cpus'))}; "
             f"commit {str(fp.get('git_commit') or '?')[:12]}{' (dirty)' if fp.get('git_dirty') else ''}.", "",
             "Throughput is the median of the repetitions; percentiles come from their merged histograms; "
             "errors are summed over repetitions. Capacity points rank by the highest rate that held the p99 limit.",
             ""]
    for wl in results.workloads:
        lines += [f"## {wl.name}", ""]
        if wl.description:
            lines += [wl.description, ""]
        for pt in wl.points:
            if wl.is_sweep:
                lines += [f"### {wl.name} · {pt.label}", ""]
            cols = list(COLUMNS)
            if wl.is_capacity:
                cols[4] = "capacity req/s (median)"
            lines += ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
            for g in pt.groups:
                t = g.throughput
                if t is None:
                    status = g.bad[0].status if g.bad else "no data"
                    row = ["—", g.server, g.language, g.model, status, "—", "—", "—", "—", "—"]
                else:
                    mark = " ⚠" if g.warnings else ""
                    row = [str(g.place), g.server + mark, g.language, g.model, fmt_num(t.median),
                           fmt_us(g.latency["p50"]), fmt_us(g.latency["p99"]),
                           f"{g.errors:,}" + (f" ({g.timeouts:,} timeouts)" if g.timeouts else ""),
                           fmt_cpu(g), fmt_num(g.rss_peak_mib, 1)]
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
            warns = [w.text for g in pt.groups for w in g.warnings]
            if warns:
                lines += [""] + [f"- ⚠ {w}" for w in warns]
            lines.append("")
    return "\n".join(lines).encode("utf-8")


__all__ = ["render", "COLUMNS"]
