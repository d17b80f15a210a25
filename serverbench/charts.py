"""Plotly figures and the self-contained HTML page of a run report.

Every chart is followed by a table with the exact figures. The page inlines plotly.js once
and the figure JSON once; nothing is fetched from the network.
"""
from __future__ import annotations

import html
import json
import math
import re
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Callable

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from .fingerprint import normalize
from .report import Group, PointData, Warning_, WorkloadData, fmt_cpu, fmt_num, fmt_us

# One colour per concurrency model (SPEC.md's list), so a model looks the same in every chart.
MODEL_COLORS = {
    "thread-per-connection": "#d62728", "thread-pool": "#ff7f0e", "process-pool": "#bcbd22",
    "event-loop": "#1f77b4", "event-loop-per-core": "#17becf", "async-work-stealing": "#2ca02c",
    "green-threads": "#9467bd", "virtual-threads": "#8c564b", "actor": "#e377c2",
}
EXTRA_COLORS = ["#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39"]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash"]
CPU_COLORS = {"user": "#4c78a8", "sys": "#f58518"}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


def model_color(model: str) -> str:
    if model in MODEL_COLORS:
        return MODEL_COLORS[model]
    return EXTRA_COLORS[sum(map(ord, model)) % len(EXTRA_COLORS)]


class Styles:
    """Per-server line style: the model's colour, a dash that tells same-model servers apart."""

    def __init__(self, groups: list[Group]) -> None:
        self._style: dict[str, tuple[str, str]] = {}
        per_model: Counter[str] = Counter()
        for g in sorted({g.server: g for g in groups}.values(), key=lambda g: (g.model, g.server)):
            self._style[g.server] = (model_color(g.model), DASHES[per_model[g.model] % len(DASHES)])
            per_model[g.model] += 1

    def line(self, server: str) -> dict[str, Any]:
        color, dash = self._style.get(server, ("#7f7f7f", "solid"))
        return {"color": color, "dash": dash, "width": 2}


def _layout(fig: go.Figure, title: str, height: int = 380, **kw: Any) -> go.Figure:
    margin = {"l": 70, "r": 20, "t": 50, "b": 60, **kw.pop("margin", {})}
    fig.update_layout(template="plotly_white", title={"text": title, "x": 0, "xanchor": "left",
                                                      "font": {"size": 15}},
                      height=height, margin=margin,
                      font={"family": FONT, "size": 12}, hoverlabel={"font": {"family": FONT}},
                      legend={"groupclick": "toggleitem"}, **kw)
    return fig


def fmt_ms(ms: float) -> str:
    if ms < 1:
        return f"{ms * 1000:g} µs"
    return f"{ms:g} ms" if ms < 1000 else f"{ms / 1000:g} s"


def log_ticks(values: list[float | None], fmt: Callable[[float], str] = fmt_ms) -> dict[str, Any]:
    """1-2-5 ticks spanning the data on a log axis (plotly's own show cluttered 2…9 minors)."""
    vs = [v for v in values if v is not None and v > 0]
    if not vs:
        return {}
    lo, hi = min(vs), max(vs)
    k = math.floor(math.log10(lo))
    ticks: list[float] = []
    while True:
        for m in (1, 2, 5):
            t = m * 10.0 ** k
            if t >= lo / 2.5 and (not ticks or ticks[-1] < hi):
                ticks.append(t)
        if ticks and ticks[-1] >= hi:
            break
        k += 1
    if len(ticks) > 10:  # wide ranges: decades only
        ticks = [t for t in ticks if f"{t:e}".startswith("1")]
    return {"tickvals": ticks, "ticktext": [fmt(t) for t in ticks]}


def _si(x: float) -> str:
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:g}{suffix}"
    return f"{x:g}"


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000


# -- per-point charts ----------------------------------------------------------------------------
def throughput_chart(pt: PointData, title: str) -> go.Figure:
    """Median bar per server, whiskers min–max over repetitions; one trace (legend entry) per model."""
    ranked = pt.measured
    fig = go.Figure()
    for model in dict.fromkeys(g.model for g in ranked):
        gs = [g for g in ranked if g.model == model]
        ts = [g.throughput for g in gs]
        fig.add_bar(name=model, x=[g.server for g in gs], y=[t.median for t in ts],
                    marker_color=model_color(model), legendgroup=model,
                    error_y={"type": "data", "symmetric": False, "array": [t.max - t.median for t in ts],
                             "arrayminus": [t.median - t.min for t in ts], "thickness": 1.5, "width": 6,
                             "color": "#333"},
                    text=[f"{t.median:,.0f}" for t in ts], textposition="inside", insidetextanchor="end",
                    customdata=[[t.min, t.max, t.n] for t in ts],
                    hovertemplate="%{x}: %{y:,.0f} req/s<br>min %{customdata[0]:,.0f} – max "
                                  "%{customdata[1]:,.0f} (%{customdata[2]} reps)<extra></extra>")
    return _layout(fig, title, yaxis_title="requests/s", legend_title_text="model",
                   xaxis={"categoryorder": "array", "categoryarray": [g.server for g in ranked]})


PCT_TICKS = {2: "p50", 10: "p90", 100: "p99", 1000: "p99.9", 10000: "p99.99"}


def latency_chart(groups: list[Group], styles: Styles, title: str) -> go.Figure:
    """Percentile curves on the HdrHistogram log scale x = 1/(1-p)."""
    fig = go.Figure()
    all_y: list[float] = []
    for g in groups:
        xs, ys = g.curve()
        if not xs:
            continue
        all_y += [y / 1000 for y in ys]
        pct = [f"p{100 * (1 - 1 / x):.4g}" for x in xs]
        fig.add_scatter(x=xs, y=[y / 1000 for y in ys], mode="lines", name=g.server, line=styles.line(g.server),
                        legendgroup=g.model, legendgrouptitle_text=g.model, customdata=pct,
                        hovertemplate=f"{g.server} %{{customdata}}: %{{y:.3g}} ms<extra></extra>")
    return _layout(fig, title, height=420,
                   xaxis={"type": "log", "title": "percentile", "tickvals": list(PCT_TICKS),
                          "ticktext": list(PCT_TICKS.values()), "range": [0.25, 4.05]},
                   yaxis={"type": "log", "title": "latency", **log_ticks(all_y)})


def resources_chart(groups: list[Group], title: str) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("CPU time (user + sys)", "memory: peak RSS"),
                        horizontal_spacing=0.12)
    xs = [g.server for g in groups]
    for part in ("user", "sys"):
        fig.add_bar(x=xs, y=[g.median(f"cpu_{part}_s") for g in groups], name=f"CPU {part}",
                    marker_color=CPU_COLORS[part], row=1, col=1,
                    hovertemplate=f"%{{x}}: %{{y:.2f}} s {part}<extra></extra>")
    fig.add_bar(x=xs, y=[g.rss_peak_mib for g in groups], name="peak RSS", showlegend=False,
                marker_color=[model_color(g.model) for g in groups], row=1, col=2,
                text=[fmt_num(g.rss_peak_mib, 0) for g in groups], textposition="outside",
                hovertemplate="%{x}: %{y:.1f} MiB<extra></extra>")
    fig.update_yaxes(title_text="seconds", row=1, col=1)
    fig.update_yaxes(title_text="MiB", row=1, col=2)
    return _layout(fig, title, barmode="stack", margin={"t": 80})


def errors_chart(groups: list[Group], title: str) -> go.Figure:
    fig = go.Figure()
    xs = [g.server for g in groups]
    fig.add_bar(x=xs, y=[g.errors - g.timeouts for g in groups], name="errors (not timeouts)",
                marker={"color": "#e45756", "pattern": {"shape": "/"}})
    fig.add_bar(x=xs, y=[g.timeouts for g in groups], name="timeouts", marker_color="#6b7280")
    return _layout(fig, title, height=320, barmode="group", yaxis_title="count (summed over repetitions)")


# -- per-workload charts ---------------------------------------------------------------------------
def _x_of(pt: PointData, g: Group) -> float | None:
    if g.connections:
        return g.connections
    m = re.search(r"(\d+(?:\.\d+)?)", pt.label)
    return float(m.group(1)) if m else None


def sweep_chart(wl: WorkloadData, styles: Styles) -> go.Figure:
    """rps, p99, CPU and memory against the swept level (connections), log x."""
    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.14, horizontal_spacing=0.1,
                        subplot_titles=("requests/s", "p99 latency (ms)", "server CPU (%, 100 = one core)",
                                        "peak RSS (MiB)"))
    servers = list(dict.fromkeys(g.server for g in wl.groups if g.ok))
    for s in servers:
        series = [(pt, g) for pt in wl.points for g in pt.groups if g.server == s and g.throughput is not None]
        xs = [_x_of(pt, g) for pt, g in series]
        model = series[0][1].model if series else ""
        common = {"mode": "lines+markers", "line": styles.line(s), "legendgroup": s, "name": s,
                  "x": xs, "customdata": [pt.label for pt, _ in series]}
        ts = [g.throughput for _, g in series]
        fig.add_scatter(**common, y=[t.median for t in ts], row=1, col=1, legendgrouptitle_text=None,
                        error_y={"type": "data", "symmetric": False, "array": [t.max - t.median for t in ts],
                                 "arrayminus": [t.median - t.min for t in ts], "thickness": 1},
                        hovertemplate=f"{s} %{{customdata}}: %{{y:,.0f}} req/s<extra>{model}</extra>")
        fig.add_scatter(**common, y=[_ms(g.latency["p99"]) for _, g in series], row=1, col=2, showlegend=False,
                        hovertemplate=f"{s} %{{customdata}}: p99 %{{y:.3g}} ms<extra></extra>")
        fig.add_scatter(**common, y=[g.median("cpu_percent") for _, g in series], row=2, col=1,
                        showlegend=False, hovertemplate=f"{s} %{{customdata}}: %{{y:.0f}} %<extra></extra>")
        fig.add_scatter(**common, y=[g.rss_peak_mib for _, g in series], row=2, col=2, showlegend=False,
                        hovertemplate=f"{s} %{{customdata}}: %{{y:.1f}} MiB<extra></extra>")
    xs_all = [_x_of(pt, g) for pt in wl.points for g in pt.measured]
    if xs_all and all(x is not None for x in xs_all):
        levels = sorted(set(xs_all))
        fig.update_xaxes(type="log", title_text="connections", tickvals=levels, ticktext=[f"{x:g}" for x in levels])
    else:
        fig.update_xaxes(type="category", title_text="point")
    p99s = [_ms(g.latency["p99"]) for pt in wl.points for g in pt.measured]
    fig.update_yaxes(type="log", row=1, col=2, **log_ticks(p99s))
    return _layout(fig, f"{wl.name}: concurrency sweep", height=740, margin={"t": 80})


def capacity_chart(wl: WorkloadData, styles: Styles) -> go.Figure:
    """Achieved rate against p99 for every step, with the p99 limit; the last held step is the capacity."""
    fig = go.Figure()
    limit_ms = wl.p99_limit_us / 1000
    xs_all: list[float] = []
    ys_all: list[float | None] = [limit_ms]
    for pt in wl.points:
        for g in pt.measured:
            rep = g.representative()
            steps = (rep.metrics.get("steps") if rep else None) or []
            if not steps:
                continue
            xs_all += [s["achieved"] for s in steps if s.get("achieved")]
            ys_all += [_ms(s.get("p99_us")) for s in steps]
            fig.add_scatter(x=[s.get("achieved") for s in steps], y=[_ms(s.get("p99_us")) for s in steps],
                            mode="lines+markers", name=g.server, line=styles.line(g.server),
                            legendgroup=g.model, legendgrouptitle_text=g.model,
                            customdata=[[s.get("rate"), s.get("errors", 0)] for s in steps],
                            hovertemplate=f"{g.server}: offered %{{customdata[0]:,}} req/s, achieved %{{x:,}}"
                                          "<br>p99 %{y:.3g} ms, %{customdata[1]} errors<extra></extra>")
    if xs_all:
        fig.add_scatter(x=[min(xs_all), max(xs_all)], y=[limit_ms, limit_ms], mode="lines",
                        name=f"p99 limit {fmt_us(wl.p99_limit_us)}", hoverinfo="skip",
                        line={"color": "#444", "dash": "dash", "width": 1.5})
    return _layout(fig, f"{wl.name}: achieved rate vs p99 per step", height=420,
                   xaxis={"type": "log", "title": "achieved requests/s", **log_ticks(xs_all, _si)},
                   yaxis={"type": "log", "title": "p99 latency", **log_ticks(ys_all)})


def _timeline(g: Group) -> list[dict[str, Any]]:
    rep = g.representative()
    return list(((rep.loadgen or {}).get("timeline") or []) if rep else [])


def _rates(tl: list[dict[str, Any]]) -> list[float]:
    out, prev = [], 0.0
    for row in tl:
        t = float(row.get("t") or 0)
        dt = (t - prev) or 1.0
        out.append((row.get("completed") or 0) / dt)
        prev = t
    return out


def timeline_chart(wl: WorkloadData, pt: PointData, styles: Styles) -> go.Figure:
    """Ramp workloads: throughput, p90, timeouts and active users over time, per server."""
    fig = make_subplots(rows=4, cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        subplot_titles=("completed requests/s", "p90 latency (ms)", "timeouts/s", "active users"))
    p90s: list[float | None] = []
    for g in pt.measured:
        tl = _timeline(g)
        if not tl:
            continue
        ts = [row.get("t") for row in tl]
        p90s += [_ms(r.get("p90_us")) for r in tl]
        common = {"x": ts, "mode": "lines", "line": styles.line(g.server), "legendgroup": g.server,
                  "name": g.server}
        fig.add_scatter(**common, y=_rates(tl), row=1, col=1,
                        hovertemplate=f"{g.server} t=%{{x}} s: %{{y:,.0f}} req/s<extra></extra>")
        fig.add_scatter(**common, y=[_ms(r.get("p90_us")) for r in tl], row=2, col=1, showlegend=False,
                        hovertemplate=f"{g.server} t=%{{x}} s: p90 %{{y:.3g}} ms<extra></extra>")
        fig.add_scatter(**common, y=[(r.get("errors") or {}).get("timeout", 0) for r in tl], row=3, col=1,
                        showlegend=False, hovertemplate=f"{g.server} t=%{{x}} s: %{{y}} timeouts<extra></extra>")
        fig.add_scatter(**common, y=[r.get("active_users") or r.get("active_connections") for r in tl],
                        row=4, col=1, showlegend=False,
                        hovertemplate=f"{g.server} t=%{{x}} s: %{{y:,}} active<extra></extra>")
    fig.update_yaxes(type="log", row=2, col=1, **log_ticks(p90s))
    fig.update_xaxes(title_text="time (s)", row=4, col=1)
    return _layout(fig, f"{wl.name} {pt.label}: over time", height=780, margin={"t": 80})


# -- HTML pieces ----------------------------------------------------------------------------------
def esc(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def table(headers: list[str], rows: list[list[Any]], numeric_from: int = 1, cls: str = "") -> str:
    """An HTML table; columns from `numeric_from` on are right-aligned numbers. Cells are pre-escaped HTML."""
    head = "".join(f'<th class="{"num" if i >= numeric_from else ""}">{esc(h)}</th>' for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td class="{"num" if i >= numeric_from else ""}">{c}</td>'
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f'<div class="tablewrap"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _srv(g: Group) -> str:
    dot = f'<span class="dot" style="background:{model_color(g.model)}"></span>'
    flag = ' <span class="flag" title="see warnings">⚠</span>' if g.warnings else ""
    return f"{dot}{esc(g.server)}{flag}"


def warnings_html(warns: list[tuple[str, Warning_]]) -> str:
    """One callout listing (prefix, warning) pairs; the prefix names the point in sweeps."""
    if not warns:
        return ""
    items = "".join(f'<li class="w-{esc(w.kind)}"><b>{esc(w.kind)}</b> {esc(prefix)}{esc(w.text)}</li>'
                    for prefix, w in warns)
    return f'<div class="warnings"><ul>{items}</ul></div>'


def throughput_table(pt: PointData, capacity: bool) -> str:
    rows = []
    for i, g in enumerate(pt.measured, 1):
        t = g.throughput
        rows.append([str(i), _srv(g), esc(g.model), fmt_num(t.median), fmt_num(t.min), fmt_num(t.max),
                     f"{t.cv:.1%}" if t.n > 1 else "—", f"{t.n}" + (f" (+{len(g.bad)} failed)" if g.bad else "")])
    what = "capacity req/s" if capacity else "req/s"
    return table(["#", "server", "model", f"{what} median", "min", "max", "CV", "reps"], rows, numeric_from=3)


def latency_table(groups: list[Group]) -> str:
    rows = [[_srv(g)] + [fmt_us(g.latency[k]) for k in ("p50", "p90", "p99", "p999", "p9999", "max")]
            + [fmt_num(g.histogram.get_total_count()) if g.histogram else "—"] for g in groups]
    return table(["server", "p50", "p90", "p99", "p99.9", "p99.99", "max", "samples"], rows)


def resources_table(groups: list[Group]) -> str:
    rows = []
    for g in groups:
        rm = g.median("rss_mean_bytes")
        client = g.median("client_cpu_percent")
        rows.append([_srv(g), fmt_cpu(g), fmt_num(g.median("cpu_user_s"), 2), fmt_num(g.median("cpu_sys_s"), 2),
                     fmt_num(g.rss_peak_mib, 1), fmt_num(rm / 2**20 if rm is not None else None, 1),
                     fmt_num(g.median("threads_peak")),
                     (fmt_num(client, 0) + " %" if client is not None else "—")
                     + (' <span class="flag">client-bound</span>' if g.client_saturated else "")])
    return table(["server", "CPU (% / s)", "user s", "sys s", "peak RSS MiB", "mean RSS MiB", "threads",
                  "load generator CPU"], rows)


def errors_table(groups: list[Group]) -> str:
    rows = []
    for g in groups:
        classes: Counter[str] = Counter()
        for c in g.ok:
            classes.update({k: int(v) for k, v in (c.metrics.get("error_classes") or {}).items() if v})
        rows.append([_srv(g), fmt_num(g.total("requests")), fmt_num(g.errors), fmt_num(g.timeouts),
                     esc(", ".join(f"{k} {v:,}" for k, v in sorted(classes.items())) or "—"),
                     fmt_num(g.total("missed_sends")), fmt_num(g.total("unanswered"))])
    return table(["server", "requests", "errors", "timeouts", "by class", "missed sends",
                  "unanswered at end"], rows)


def sweep_table(wl: WorkloadData) -> str:
    servers = list(dict.fromkeys(g.server for g in wl.groups))
    rows = []
    for s in servers:
        cells = []
        first = None
        for pt in wl.points:
            g = next((x for x in pt.groups if x.server == s), None)
            first = first or g
            if g is None or g.throughput is None:
                cells.append("—" if g is None or not g.bad else f'<span class="bad">{esc(g.bad[0].status)}</span>')
                continue
            flag = ' <span class="flag">⚠</span>' if g.warnings else ""
            cells.append(f"{g.throughput.median:,.0f}{flag}<br><small>p99 {fmt_us(g.latency['p99'])}</small>")
        rows.append([_srv(first) if first else esc(s)] + cells)
    return table(["server"] + [pt.label for pt in wl.points], rows)


def capacity_table(wl: WorkloadData) -> str:
    rows = []
    for pt in wl.points:
        for g in pt.measured:
            rep = g.representative()
            steps = (rep.metrics.get("steps") if rep else None) or []
            held = [s for s in steps if s.get("held", (s.get("p99_us") or 0) <= wl.p99_limit_us and not s.get("errors"))]
            broke = next((s for s in steps if s not in held), None)
            rows.append([_srv(g), fmt_num(g.throughput.median), str(len(steps)),
                         fmt_us(held[-1].get("p99_us")) if held else "—",
                         (f"{broke.get('rate', 0):,} req/s → p99 {fmt_us(broke.get('p99_us'))}"
                          + (f", {broke.get('errors'):,} errors" if broke.get("errors") else "")) if broke else "—"])
    return table(["server", "capacity req/s", "steps", "p99 at capacity", "first step over the limit"], rows)


def timeline_table(pt: PointData) -> str:
    rows = []
    for g in pt.measured:
        tl = _timeline(g)
        if not tl:
            continue
        rates = _rates(tl)
        p90 = [r.get("p90_us") for r in tl if r.get("p90_us") is not None]
        tos = [(r.get("errors") or {}).get("timeout", 0) for r in tl]
        first_to = next((r.get("t") for r, n in zip(tl, tos) if n), None)
        rows.append([_srv(g), fmt_num(max(rates)), fmt_num(sum(rates) / len(rates)),
                     fmt_us(p90[-1] if p90 else None), fmt_us(max(p90) if p90 else None), fmt_num(sum(tos)),
                     f"{first_to} s" if first_to is not None else "—"])
    return table(["server", "peak req/s", "mean req/s", "p90 at end", "worst p90", "timeouts", "first timeout"],
                 rows)


# -- page assembly ---------------------------------------------------------------------------------
class Page:
    """Collects sections, figures and the table of contents while the report is written."""

    def __init__(self) -> None:
        self.figures: dict[str, str] = {}  # div id -> figure JSON
        self.toc: list[tuple[int, str, str]] = []
        self.parts: list[str] = []

    def anchor(self, text: str) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "s"
        n, base = 1, slug
        while any(a == slug for _, a, _ in self.toc):
            n += 1
            slug = f"{base}-{n}"
        return slug

    def heading(self, level: int, text: str, toc: bool = True) -> None:
        a = self.anchor(text)
        if toc:
            self.toc.append((level, a, text))
        self.parts.append(f'<h{level} id="{a}">{esc(text)}</h{level}>')

    def chart(self, fig: go.Figure, table_html: str, caption: str = "") -> None:
        div = f"chart-{len(self.figures) + 1}"
        self.figures[div] = pio.to_json(fig, validate=False, pretty=False)
        cap = f'<p class="caption">{caption}</p>' if caption else ""
        h = int(fig.layout.height or 400)
        self.parts.append(f'<figure class="chart"><div id="{div}" class="plot" style="height:{h}px"></div>'
                          f"{cap}{table_html}</figure>")

    def add(self, raw_html: str) -> None:
        self.parts.append(raw_html)


def _point_section(page: Page, wl: WorkloadData, pt: PointData, styles: Styles, heavy_note: str = "") -> None:
    groups = pt.measured
    if not groups:
        page.add('<p class="muted">No server produced a result for this point.</p>')
        return
    what = f"{wl.name} {pt.label}"
    if not wl.is_sweep or heavy_note:
        title = (f"capacity: highest rate with p99 ≤ {fmt_us(wl.p99_limit_us)}" if wl.is_capacity
                 else "requests/s (median; whiskers min–max over repetitions)")
        page.chart(throughput_chart(pt, f"{what}: {title}"), throughput_table(pt, wl.is_capacity))
    page.chart(latency_chart(groups, styles, f"{what}: latency by percentile{heavy_note}"), latency_table(groups),
               "Percentiles from the repetitions' HdrHistograms merged exactly; both axes logarithmic.")
    page.chart(resources_chart(groups, f"{what}: server CPU and memory{heavy_note}"), resources_table(groups),
               "Medians over repetitions. CPU % counts 100 per core; the server is pinned to its CPU(s).")
    if any(g.errors or g.timeouts for g in groups):
        page.chart(errors_chart(groups, f"{what}: errors and timeouts{heavy_note}"), errors_table(groups))
    else:
        page.add(f'<p class="ok">✓ No errors or timeouts at {esc(pt.label)}.</p>')


def _workload_section(page: Page, wl: WorkloadData) -> None:
    page.heading(2, wl.name)
    if wl.description:
        page.add(f'<p class="desc">{esc(wl.description)}</p>')
    styles = Styles(wl.groups)
    if wl.is_sweep:
        page.add(warnings_html([(f"{pt.label} · ", w) for pt in wl.points for g in pt.groups for w in g.warnings]))
        page.chart(sweep_chart(wl, styles), sweep_table(wl),
                   "Each point: median requests/s (whiskers min–max) and p99 from merged histograms.")
    if wl.is_capacity:
        page.chart(capacity_chart(wl, styles), capacity_table(wl),
                   "The capacity is the achieved rate of the last step whose p99 stayed under the limit "
                   "without errors.")
    detail = wl.points if len(wl.points) <= 3 else wl.points[-1:]
    for pt in detail:
        if wl.is_sweep:
            page.heading(3, f"{wl.name} · {pt.label}", toc=False)
        else:
            page.add(warnings_html([("", w) for g in pt.groups for w in g.warnings]))
        note = f" (heaviest point {pt.label})" if len(wl.points) > 3 else ""
        if wl.is_ramp:
            page.chart(timeline_chart(wl, pt, styles), timeline_table(pt),
                       "From the loadgen's per-second timeline of the median repetition.")
        _point_section(page, wl, pt, styles, note)


def _environment(run: Any) -> str:
    fp = normalize(run.fingerprint)
    opts = run.options or {}
    commit = str(fp.get("git_commit") or "?")
    items = [
        ("CPU", f"{fp.get('cpu_model', '?')} · {fp.get('cores', '?')} cores"),
        ("pinning", f"server on CPU {_cpus(fp.get('server_cpus'))}, load generator on CPU {_cpus(fp.get('client_cpus'))}"),
        ("system", f"{fp.get('os', '?')} · kernel {fp.get('kernel', '?')} · host {fp.get('hostname', '?')}"),
        ("versions", f"Python {fp.get('python', '?')} · {fp.get('loadgen_version') or 'loadgen ?'}"),
        ("commit", commit[:12] + (" (uncommitted changes)" if fp.get("git_dirty") else "")),
        ("run", f"#{run.id} · {run.status} · started {run.started_at or '?'} · finished {run.finished_at or '—'}"),
        ("options", ", ".join(f"{k}={v}" for k, v in sorted(opts.items())) or "—"),
    ]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
    servers = fp.get("servers") or {}
    rows = [[f'<span class="dot" style="background:{model_color(i.get("model") or "")}"></span>{esc(s)}',
             esc(i.get("language")), esc(i.get("model")), esc(i.get("framework")), esc(i.get("runtime")),
             esc(i.get("version") or "—")] for s, i in sorted(servers.items())]
    stable = table(["server", "language", "model", "framework", "runtime", "version"], rows, numeric_from=99)
    return f'<dl class="env">{dl}</dl>{stable if rows else ""}'


def _cpus(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v) or "?"
    return "?" if v is None else str(v)


def _failures(workloads: list[WorkloadData]) -> str:
    rows = []
    for wl in workloads:
        for g in wl.groups:
            for c in sorted(g.bad, key=lambda c: c.repetition):
                tail = (f"<details><summary>log tail</summary><pre>{esc(c.log_tail)}</pre></details>"
                        if c.log_tail else "")
                rows.append([esc(c.server), esc(wl.name), esc(c.point), str(c.repetition),
                             f'<span class="bad">{esc(c.status)}</span>', esc(c.error or "—") + tail])
    if not rows:
        return '<p class="ok">✓ Every cell completed.</p>'
    return table(["server", "workload", "point", "rep", "status", "error"], rows, numeric_from=99, cls="failures")


def _overview(workloads: list[WorkloadData]) -> str:
    """One line per workload point: who came first, by how much, and the field."""
    rows = []
    for wl in workloads:
        pts = wl.points if len(wl.points) <= 3 else [wl.points[-1]]
        for pt in pts:
            m = pt.measured
            if not m:
                continue
            best = m[0]
            second = m[1].throughput.median if len(m) > 1 else None
            lead = f"{best.throughput.median / second:.2f}× the next" if second else "—"
            rows.append([esc(wl.name), esc(pt.label), _srv(best), esc(best.model), fmt_num(best.throughput.median),
                         lead, str(len(m)), str(sum(1 for g in pt.groups if g.warnings))])
    return table(["workload", "point", "fastest", "model", "req/s", "lead", "servers", "with warnings"],
                 rows, numeric_from=4)


CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#e3e6ec;--bg:#fff;--soft:#f6f7f9;--warn:#fff7e0;--warnline:#f0c24b}
*{box-sizing:border-box}
body{margin:0;font-family:%(font)s;color:var(--fg);background:var(--bg);line-height:1.5;font-size:15px}
.layout{display:grid;grid-template-columns:250px minmax(0,1fr);max-width:1500px;margin:0 auto}
nav{position:sticky;top:0;height:100vh;overflow:auto;padding:24px 16px;border-right:1px solid var(--line);background:var(--soft);font-size:14px}
nav ul{list-style:none;padding-left:0;margin:0} nav li{margin:3px 0} nav li.l3{padding-left:14px}
nav a{color:var(--fg);text-decoration:none} nav a:hover{text-decoration:underline}
main{padding:24px 36px 80px}
h1{font-size:26px;margin:0 0 4px} h2{font-size:21px;margin:44px 0 8px;padding-top:12px;border-top:2px solid var(--line)}
h3{font-size:17px;margin:28px 0 8px}
.sub,.desc,.caption,.muted{color:var(--muted)} .caption{font-size:13px;margin:4px 0 8px}
dl.env{display:grid;grid-template-columns:110px 1fr;gap:4px 16px;margin:12px 0 16px;padding:14px 18px;background:var(--soft);border-radius:8px}
dl.env dt{font-weight:600;color:var(--muted)} dl.env dd{margin:0}
figure.chart{margin:18px 0 30px;padding:12px 14px;border:1px solid var(--line);border-radius:10px;background:#fff}
.plot{width:100%%}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;width:100%%;font-size:13.5px;margin:6px 0;font-variant-numeric:tabular-nums}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap} td.num,th.num{text-align:right;white-space:nowrap}
tbody tr:hover{background:#fafbfd}
.dot{display:inline-block;width:10px;height:10px;border-radius:50%%;margin-right:7px;vertical-align:baseline}
.flag{color:#b7791f;font-weight:600} .bad{color:#c53030;font-weight:600} .ok{color:#2f855a}
.warnings{background:var(--warn);border-left:4px solid var(--warnline);border-radius:6px;padding:8px 14px;margin:12px 0}
.warnings ul{margin:0;padding-left:18px} .warnings li{margin:3px 0} .warnings b{text-transform:uppercase;font-size:11px;letter-spacing:.04em;margin-right:6px;color:#8a5a00}
.warnings li.w-errors b,.warnings li.w-failed b,.warnings li.w-stalls b{color:#c53030}
details summary{cursor:pointer;color:var(--muted)} pre{background:var(--soft);padding:8px;border-radius:6px;overflow-x:auto;font-size:12px}
@media (max-width:900px){.layout{display:block} nav{position:static;height:auto}}
""" % {"font": FONT}

BOOT = """
(function () {
  var figs = JSON.parse(document.getElementById('sb-figures').textContent);
  var config = {responsive: true, displaylogo: false, modeBarButtonsToRemove: ['lasso2d', 'select2d']};
  // Resolves with the number of charts once plotly has drawn every one (the browser test waits on it).
  window.serverbenchReady = Promise.all(Object.keys(figs).map(function (id) {
    return Plotly.newPlot(id, figs[id].data, figs[id].layout, config);
  })).then(function () { return Object.keys(figs).length; });
})();
"""


def render_html(run: Any, workloads: list[WorkloadData]) -> str:
    """The whole report page as one self-contained HTML string."""
    page = Page()
    page.heading(2, "Environment")
    page.add(_environment(run))
    page.heading(2, "At a glance")
    page.add(_overview(workloads))
    for wl in workloads:
        _workload_section(page, wl)
    page.heading(2, "Failed and skipped cells")
    page.add(_failures(workloads))

    toc = "".join(f'<li class="l{lvl}"><a href="#{a}">{esc(t)}</a></li>' for lvl, a, t in page.toc)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    figures = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in page.figures.items()) + "}"
    figures = figures.replace("</", "<\\/")  # a "</script>" inside a string must not end the block
    title = f"serverbench run {run.id}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style>
<script>window.PlotlyConfig = {{MathJaxConfig: 'local'}};</script>
<script>{get_plotlyjs()}</script>
</head><body><div class="layout">
<nav><p><b>{esc(title)}</b></p><ul>{toc}</ul></nav>
<main><h1>{esc(title)}</h1>
<p class="sub">{len(workloads)} workloads · generated {generated} · requests/s are medians over repetitions;
whiskers show min–max; latency percentiles come from merged HdrHistograms.</p>
{''.join(page.parts)}
</main></div>
<script type="application/json" id="sb-figures">{figures}</script>
<script>{BOOT}</script>
</body></html>
"""


__all__ = ["render_html", "model_color", "throughput_chart", "latency_chart", "resources_chart", "errors_chart",
           "sweep_chart", "capacity_chart", "timeline_chart"]
