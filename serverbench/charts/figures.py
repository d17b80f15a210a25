"""Plotly figures of a run report, one function per chart, all drawn from aggregate.Group.

The HTML exporter (exporters/to_html.py) places them on the page with a table of exact figures.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Callable

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..results.aggregate import Group, PointData, WorkloadData
from ..results.formatting import fmt_num, fmt_us

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
    """Median bar per server, whiskers the median's interval over repetitions (stats.median_ci: the
    min–max range up to 5 repetitions); one trace (legend entry) per model."""
    ranked = pt.measured
    fig = go.Figure()
    for model in dict.fromkeys(g.model for g in ranked):
        gs = [g for g in ranked if g.model == model]
        ts = [g.throughput for g in gs]
        fig.add_bar(name=model, x=[g.server for g in gs], y=[t.median for t in ts],
                    marker_color=model_color(model), legendgroup=model,
                    error_y={"type": "data", "symmetric": False, "array": [t.ci_high - t.median for t in ts],
                             "arrayminus": [t.median - t.ci_low for t in ts], "thickness": 1.5, "width": 6,
                             "color": "#333"},
                    text=[f"{t.median:,.0f}" for t in ts], textposition="inside", insidetextanchor="end",
                    customdata=[[t.ci_low, t.ci_high, t.n, t.ci_level * 100] for t in ts],
                    hovertemplate="%{x}: %{y:,.0f} req/s<br>interval %{customdata[0]:,.0f} – "
                                  "%{customdata[1]:,.0f} (%{customdata[2]} reps, %{customdata[3]:.0f} %)<extra></extra>")
    return _layout(fig, title, yaxis_title="requests/s", legend_title_text="model",
                   xaxis={"categoryorder": "array", "categoryarray": [g.server for g in ranked]})


def p99_chart(pt: PointData, title: str) -> go.Figure:
    """Fixed-load points: p99 over every due request per server, in ranked order (lower is better)."""
    ranked = pt.measured
    fig = go.Figure()
    for model in dict.fromkeys(g.model for g in ranked):
        gs = [g for g in ranked if g.model == model]
        fig.add_bar(name=model, x=[g.server for g in gs], y=[_ms(g.latency["p99"]) for g in gs],
                    marker_color=model_color(model), legendgroup=model,
                    text=[fmt_us(g.latency["p99"]) for g in gs], textposition="outside",
                    hovertemplate="%{x}: p99 %{y:.3g} ms<extra></extra>")
    vals = [_ms(g.latency["p99"]) for g in ranked]
    return _layout(fig, title, legend_title_text="model",
                   yaxis={"type": "log", "title": "p99 over all due requests", **log_ticks(vals)},
                   xaxis={"categoryorder": "array", "categoryarray": [g.server for g in ranked]})


VERDICT_COLORS = {"unaffected": "#2ca02c", "slowed": "#ff7f0e", "starved": "#d62728", "down": "#7f0000"}


def noise_chart(cells: dict[str, dict[str, tuple[float | None, str | None]]], servers: list[str],
                title: str) -> go.Figure:
    """Noisy workloads: each row's legitimate p99 under each noise shape as a multiple of its quiet twin's
    (log axis, 1 = unaffected); `cells[shape][server]` = (ratio, verdict), bars coloured by shape, the
    verdict in the hover and above each bar."""
    fig = go.Figure()
    shape_colors = ["#1f77b4", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    for i, (shape, by_server) in enumerate(cells.items()):
        ys = [by_server.get(s, (None, None))[0] for s in servers]
        verdicts = [by_server.get(s, (None, None))[1] or "not judged" for s in servers]
        fig.add_bar(name=shape, x=servers, y=ys, marker_color=shape_colors[i % len(shape_colors)],
                    customdata=verdicts, text=[v if v != "unaffected" else "" for v in verdicts],
                    textposition="outside", textfont={"size": 9},
                    hovertemplate=f"%{{x}} · {shape}: p99 ×%{{y:.3g}} its quiet twin's, %{{customdata}}<extra></extra>")
    fig.add_hline(y=1, line_dash="dot", line_color="#888")
    vals = [r for by in cells.values() for r, _ in by.values()]
    return _layout(fig, title, height=440, barmode="group", legend_title_text="noise shape",
                   yaxis={"type": "log", "title": "p99 under noise ÷ quiet p99",
                          **log_ticks(vals, fmt=lambda v: f"×{v:g}")},
                   xaxis={"categoryorder": "array", "categoryarray": servers})


def cpu_per_request_chart(groups: list[Group], title: str) -> go.Figure:
    """Server CPU per successful request, user and sys stacked: what each answer costs."""
    fig = go.Figure()
    xs = [g.server for g in groups]
    for part, pick in (("user", lambda u: u.cpu_user_us_per_request), ("sys", lambda u: u.cpu_sys_us_per_request)):
        fig.add_bar(x=xs, y=[pick(g.figures.usage) for g in groups],
                    name=f"CPU {part}", marker_color=CPU_COLORS[part],
                    hovertemplate=f"%{{x}}: %{{y:.1f}} µs {part} per request<extra></extra>")
    return _layout(fig, title, barmode="stack", yaxis_title="µs of server CPU per successful request",
                   xaxis={"categoryorder": "array", "categoryarray": xs})


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
    for part, pick in (("user", lambda m: m.usage.cpu_user_s), ("sys", lambda m: m.usage.cpu_sys_s)):
        fig.add_bar(x=xs, y=[g.median(pick) for g in groups], name=f"CPU {part}",
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
    cores = g.median(lambda m: m.setup.server_cores)  # a cores sweep's points differ in CPUs, not connections
    if cores:
        return cores
    if g.connections:
        return g.connections
    m = re.search(r"(\d+(?:\.\d+)?)", pt.label)
    return float(m.group(1)) if m else None


def sweep_chart(wl: WorkloadData, styles: Styles) -> go.Figure:
    """rps, p99, CPU and memory against the swept level (connections, or server cores), log x."""
    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.14, horizontal_spacing=0.1,
                        subplot_titles=("requests/s", "p99 latency (ms)", "server CPU (%, 100 = one core)",
                                        "peak RSS (MiB)"))
    servers = list(dict.fromkeys(g.server for g in wl.groups if g.ok))
    for s in servers:
        series = [(pt, g) for pt in wl.load_points for g in pt.groups if g.server == s and g.throughput is not None]
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
        fig.add_scatter(**common, y=[g.median(lambda m: m.usage.cpu_percent) for _, g in series], row=2, col=1,
                        showlegend=False, hovertemplate=f"{s} %{{customdata}}: %{{y:.0f}} %<extra></extra>")
        fig.add_scatter(**common, y=[g.rss_peak_mib for _, g in series], row=2, col=2, showlegend=False,
                        hovertemplate=f"{s} %{{customdata}}: %{{y:.1f}} MiB<extra></extra>")
    xs_all = [_x_of(pt, g) for pt in wl.load_points for g in pt.measured]
    if xs_all and all(x is not None for x in xs_all):
        levels = sorted(set(xs_all))
        fig.update_xaxes(type="log", title_text="server cores" if wl.kind == "cores" else "connections",
                         tickvals=levels, ticktext=[f"{x:g}" for x in levels])
    else:
        fig.update_xaxes(type="category", title_text="point")
    p99s = [_ms(g.latency["p99"]) for pt in wl.load_points for g in pt.measured]
    fig.update_yaxes(type="log", row=1, col=2, **log_ticks(p99s))
    return _layout(fig, f"{wl.name}: concurrency sweep", height=740, margin={"t": 80})


def scaling_chart(lines: list[Any], styles: Styles, title: str) -> go.Figure:
    """Req/s against server cores, both axes logarithmic (x at 1, 2, 4 …), one line per row (cores_section.Line:
    server, model, points of (cores, req/s, shared CPU)); a grey dotted line shows linear scaling from the
    fastest 1-core figure: on log axes every perfectly scaling row runs parallel to it. Counts at which the
    server shared a CPU with the load generator are drawn as open crosses."""
    fig = go.Figure()
    for ln in lines:
        ks = [k for k, _, _ in ln.points]
        fig.add_scatter(x=ks, y=[r for _, r, _ in ln.points], mode="lines+markers", name=ln.server,
                        line=styles.line(ln.server),
                        marker={"symbol": ["x-open" if o else "circle" for _, _, o in ln.points], "size": 8},
                        customdata=[" (shared a CPU with the load generator)" if o else "" for _, _, o in ln.points],
                        hovertemplate=f"{ln.server}: %{{y:,.0f}} req/s at %{{x}} cores%{{customdata}}"
                                      f"<extra>{ln.model}</extra>")
    ks = sorted({k for ln in lines for k, _, _ in ln.points})
    ones = [(r, ln.server) for ln in lines for k, r, _ in ln.points if k == 1]
    ys = [r for ln in lines for _, r, _ in ln.points]
    if ones and len(ks) > 1:
        base, who = max(ones)
        ys += [base * k for k in ks]
        fig.add_scatter(x=ks, y=[base * k for k in ks], mode="lines", name=f"linear (×k from {who} at 1 core)",
                        line={"color": "#999999", "dash": "dot", "width": 1.5}, hoverinfo="skip")
    if ks:
        fig.update_xaxes(type="log", title_text="server cores", tickvals=ks, ticktext=[str(k) for k in ks])
    fig.update_yaxes(type="log", title_text="successful requests/s", **log_ticks(ys, _si))
    return _layout(fig, title, height=520)


def hol_cores_chart(lines: list[tuple[str, str, list[tuple[int, float, bool]]]], styles: Styles,
                    title: str) -> go.Figure:
    """head-of-line over a cores sweep: the light p99 beside the heavy requests ÷ alone (1 = unaffected) against
    server cores, one line per row (hol_section.lines: server, model, (cores, ratio, shared a CPU)); a pool,
    a work-stealing runtime or a preempting scheduler should fall toward 1 with cores, a single loop should not.
    Counts at which the server shared a CPU with the load generator are open crosses."""
    fig = go.Figure()
    for server, model, pts in lines:
        fig.add_scatter(x=[k for k, _, _ in pts], y=[r for _, r, _ in pts], mode="lines+markers", name=server,
                        line=styles.line(server),
                        marker={"symbol": ["x-open" if o else "circle" for _, _, o in pts], "size": 8},
                        hovertemplate=f"{server}: light p99 ×%{{y:.2f}} at %{{x}} cores<extra>{model}</extra>")
    ks = sorted({k for _, _, pts in lines for k, _, _ in pts})
    if ks:
        fig.update_xaxes(type="log", title_text="server cores", tickvals=ks, ticktext=[str(k) for k in ks])
    ys = [r for _, _, pts in lines for _, r, _ in pts] + [1.0]
    fig.add_hline(y=1, line={"color": "#999999", "dash": "dot", "width": 1})
    fig.update_yaxes(type="log", title_text="light p99 beside heavy ÷ alone", **log_ticks(ys, lambda x: f"{x:g}×"))
    return _layout(fig, title, height=480)


def capacity_chart(wl: WorkloadData, styles: Styles) -> go.Figure:
    """Achieved rate against p99 for every step, with the p99 limit; the last held step is the capacity."""
    fig = go.Figure()
    limit_ms = wl.p99_limit_us / 1000
    xs_all: list[float] = []
    ys_all: list[float | None] = [limit_ms]
    for pt in wl.points:
        for g in pt.measured:
            rep = g.representative()
            steps = [s.model_dump() for s in ((rep.metrics.capacity.steps if rep else None) or [])]
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


def representative_timeline(g: Group) -> list[dict[str, Any]]:
    rep = g.representative()
    return list(rep.loadgen.timeline) if rep and rep.loadgen else []


def timeline_rates(tl: list[dict[str, Any]]) -> list[float]:
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
        tl = representative_timeline(g)
        if not tl:
            continue
        ts = [row.get("t") for row in tl]
        p90s += [_ms(r.get("p90_us")) for r in tl]
        common = {"x": ts, "mode": "lines", "line": styles.line(g.server), "legendgroup": g.server,
                  "name": g.server}
        fig.add_scatter(**common, y=timeline_rates(tl), row=1, col=1,
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




__all__ = ["model_color", "Styles", "throughput_chart", "p99_chart", "cpu_per_request_chart", "latency_chart", "resources_chart", "errors_chart",
           "sweep_chart", "capacity_chart", "timeline_chart", "timeline_rates", "representative_timeline",
           "log_ticks"]
