"""The HTML report's tables (plain HTML strings), apart from the page that lays them out (to_html.py):
each point's throughput, fixed-load, efficiency, CPU, latency, resources and errors tables, the sweep's,
the capacity's and a timeline's, and the warnings box. Reads stored results only (aggregate's groups)."""
from __future__ import annotations

import html
from typing import Any

from ..results.aggregate import Group, PointData, Caveat, WorkloadData
from . import verdict_section
from .to_markdown import errors_cell, interval_cell, projected_cell, rate_cell, served_cell
from ..results.formatting import fmt_cpu, fmt_num, fmt_us
from ..charts.figures import model_color, representative_timeline, timeline_rates


def esc(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def table(headers: list[str], rows: list[list[Any]], numeric_from: int = 1, cls: str = "") -> str:
    """An HTML table; columns from `numeric_from` on are right-aligned numbers. Cells are pre-escaped HTML."""
    head = "".join(f'<th class="{"num" if i >= numeric_from else ""}">{esc(h)}</th>' for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td class="{"num" if i >= numeric_from else ""}">{c}</td>'
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f'<div class="tablewrap"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def srv_cell(g: Group) -> str:
    dot = f'<span class="dot" style="background:{model_color(g.model)}"></span>'
    flag = ' <span class="flag" title="see warnings">⚠</span>' if g.warnings else ""
    return f"{dot}{esc(g.server)}{flag}{dev_mark(g.server, g.deviations)}"


def dev_mark(server: str, deviations: list[str]) -> str:
    """A mark beside a row with verify deviations, linking to them."""
    if not deviations:
        return ""
    return (f' <a class="flag" href="#{verdict_section.anchor(server)}" '
            f'title="{esc("; ".join(deviations))}">†</a>')


def warnings_html(warns: list[tuple[str, Caveat]]) -> str:
    """One callout listing (prefix, warning) pairs; the prefix names the point in sweeps."""
    if not warns:
        return ""
    items = "".join(f'<li class="w-{esc(w.kind)}"><b>{esc(w.kind)}</b> {esc(prefix)}{esc(w.text)}</li>'
                    for prefix, w in warns)
    return f'<div class="warnings"><ul>{items}</ul></div>'


def throughput_table(pt: PointData, capacity: bool) -> str:
    rows = []
    for g in pt.measured:
        t = g.throughput
        rows.append([g.place_text, srv_cell(g), esc(g.model), esc(rate_cell(g)), esc(interval_cell(g)), fmt_num(t.min),
                     fmt_num(t.max), f"{t.cv:.1%}" if t.n > 1 else "—", esc(errors_cell(g)),
                     esc(served_cell(g)), f"{t.n}" + (f" (+{len(g.bad)} failed)" if g.bad else "")])
    what = "capacity req/s" if capacity else "successful req/s"
    return table(["#", "server", "model", f"{what} median", "interval (coverage)", "min", "max", "CV", "errors",
                  "connections served", "reps"], rows, numeric_from=3)


def efficiency_table(pt: PointData) -> str:
    """The fixed-rate step's point: server CPU per request at one common rate, p99 and the projection."""
    rows = [[g.place_text, srv_cell(g), esc(g.model), fmt_num(g.cpu_us_per_request, 2), esc(interval_cell(g)),
             fmt_us(g.latency["p99"]), esc(rate_cell(g)), esc(errors_cell(g)), esc(projected_cell(g))]
            for g in pt.measured]
    return table(["#", "server", "model", "server CPU µs/request", "interval (coverage)", "p99 (all due)",
                  "successful req/s", "errors", "projected capacity"], rows, numeric_from=3)


def fixed_load_table(pt: PointData) -> str:
    rows = [[g.place_text, srv_cell(g), esc(g.model), fmt_us(g.latency["p99"]), esc(interval_cell(g)),
             fmt_us(g.answered_p99_us),
             fmt_num(g.timeouts), fmt_num(g.cpu_us_per_request, 1), esc(rate_cell(g)), esc(errors_cell(g))]
            for g in pt.measured]
    return table(["#", "server", "model", "p99 (all due)", "interval (coverage)", "p99 (answered only)", "timeouts",
                  "CPU µs/request",
                  "successful req/s", "errors"], rows, numeric_from=3)


def cpu_per_request_table(groups: list[Group]) -> str:
    rows = []
    for g in groups:
        f = g.figures
        rows.append([srv_cell(g), fmt_num(f.usage.cpu_us_per_request, 1), fmt_num(f.usage.cpu_user_us_per_request, 1),
                     fmt_num(f.usage.cpu_sys_us_per_request, 1), fmt_num(f.usage.ctx_switches_per_request, 2),
                     fmt_num(f.usage.rss_per_connection_bytes / 1024 if f.usage.rss_per_connection_bytes else None, 1)])
    return table(["server", "CPU µs/request", "user µs", "sys µs", "context switches/request",
                  "peak RSS per connection KiB"], rows)


def latency_table(groups: list[Group]) -> str:
    rows = [[srv_cell(g)] + [fmt_us(g.latency[k]) for k in ("p50", "p90", "p99", "p999", "p9999", "max")]
            + [fmt_num(g.histogram.get_total_count()) if g.histogram else "—"] for g in groups]
    return table(["server", "p50", "p90", "p99", "p99.9", "p99.99", "max", "samples"], rows)


def resources_table(groups: list[Group]) -> str:
    rows = []
    for g in groups:
        rm = g.median(lambda m: m.usage.rss_mean_bytes)
        client = g.median(lambda m: m.client.client_cpu_percent)
        rows.append([srv_cell(g), fmt_cpu(g), fmt_num(g.median(lambda m: m.usage.cpu_user_s), 2),
                     fmt_num(g.median(lambda m: m.usage.cpu_sys_s), 2),
                     fmt_num(g.rss_peak_mib, 1), fmt_num(rm / 2**20 if rm is not None else None, 1),
                     fmt_num(g.median(lambda m: m.usage.threads_peak)),
                     (fmt_num(client, 0) + " %" if client is not None else "—")
                     + (' <span class="flag">client-bound</span>' if g.client_saturated else "")])
    return table(["server", "CPU (% / s)", "user s", "sys s", "peak RSS MiB", "mean RSS MiB", "threads",
                  "load generator CPU"], rows)


def errors_table(groups: list[Group]) -> str:
    rows = []
    for g in groups:
        classes = {k: v for k, v in g.error_classes.items() if v}
        rows.append([srv_cell(g), fmt_num(g.total(lambda m: m.counts.requests)), fmt_num(g.errors), fmt_num(g.timeouts),
                     esc(", ".join(f"{k} {v:,}" for k, v in sorted(classes.items())) or "—"),
                     fmt_num(g.total(lambda m: m.offered.missed_sends)),
                     fmt_num(g.total(lambda m: m.offered.unanswered))])
    return table(["server", "requests", "errors", "timeouts", "by class", "missed sends",
                  "unanswered at end"], rows)


def sweep_table(wl: WorkloadData) -> str:
    servers = list(dict.fromkeys(g.server for g in wl.groups))
    rows = []
    for s in servers:
        cells = []
        first = None
        for pt in wl.load_points:
            g = next((x for x in pt.groups if x.server == s), None)
            first = first or g
            if g is None or g.throughput is None:
                cells.append("—" if g is None or not g.bad else f'<span class="bad">{esc(g.bad[0].status)}</span>')
                continue
            flag = ' <span class="flag">⚠</span>' if g.warnings else ""
            cells.append(f"{g.throughput.median:,.0f}{flag}<br><small>p99 {fmt_us(g.latency['p99'])}</small>")
        rows.append([srv_cell(first) if first else esc(s)] + cells)
    return table(["server"] + [pt.label for pt in wl.load_points], rows)


def capacity_table(wl: WorkloadData) -> str:
    rows = []
    for pt in wl.points:
        for g in pt.measured:
            rep = g.representative()
            steps = [s.model_dump() for s in ((rep.metrics.capacity.steps if rep else None) or [])]
            held = [s for s in steps if s.get("held", (s.get("p99_us") or 0) <= wl.p99_limit_us and not s.get("errors"))]
            broke = next((s for s in steps if s not in held), None)
            rows.append([srv_cell(g), fmt_num(g.throughput.median), str(len(steps)),
                         fmt_us(held[-1].get("p99_us")) if held else "—",
                         (f"{broke.get('rate', 0):,} req/s → p99 {fmt_us(broke.get('p99_us'))}"
                          + (f", {broke.get('errors'):,} errors" if broke.get("errors") else "")) if broke else "—"])
    return table(["server", "capacity req/s", "steps", "p99 at capacity", "first step over the limit"], rows)


def timeline_table(pt: PointData) -> str:
    rows = []
    for g in pt.measured:
        tl = representative_timeline(g)
        if not tl:
            continue
        rates = timeline_rates(tl)
        p90 = [r.get("p90_us") for r in tl if r.get("p90_us") is not None]
        tos = [(r.get("errors") or {}).get("timeout", 0) for r in tl]
        first_to = next((r.get("t") for r, n in zip(tl, tos) if n), None)
        rows.append([srv_cell(g), fmt_num(max(rates)), fmt_num(sum(rates) / len(rates)),
                     fmt_us(p90[-1] if p90 else None), fmt_us(max(p90) if p90 else None), fmt_num(sum(tos)),
                     f"{first_to} s" if first_to is not None else "—"])
    return table(["server", "peak req/s", "mean req/s", "p90 at end", "worst p90", "timeouts", "first timeout"],
                 rows)
