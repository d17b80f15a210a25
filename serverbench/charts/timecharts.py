"""Behaviour over time, row by row: small multiples on one shared time axis.

One panel row per server (ranked order), one column per figure — demand, successful
responses/s, p90 and p99, timeouts/s, server CPU, RSS — with each column's y axis shared by
every row, so rows compare at a glance. Drawn from each group's representative repetition
(aggregate.Group.representative): the loadgen's per-second timeline and the server's own series,
aligned by timeline.py. A process death is a red line across the row.
"""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..overtime import timeline
from ..overtime.figures import verdict_text
from ..results.aggregate import Group, PointData
from .figures import FONT, log_ticks, model_color

COLUMNS = ("demand", "successful responses/s", "p90 / p99 (ms)", "timeouts/s", "server CPU (%)", "RSS (MiB)")
ROW_PX = 150
HEAD_PX = 200
GREY = "#9aa1ad"
LIMIT_SHOWN = 0.5  # the memory limit is drawn in rows whose RSS reached this share of it
DIED = "#c53030"


def cell_view(g: Group) -> dict[str, Any]:
    """The representative cell's timelines on one axis, and what marks its row."""
    rep = g.representative()
    if rep is None:
        return {"load": [], "server": []}
    m = rep.metrics
    return {"load": timeline.load_seconds(rep.loadgen),
            "server": timeline.server_seconds(rep.usage, m.over_time.series_offset_s),
            "demand_label": timeline.demand_label(rep.loadgen), "died": m.over_time.server_died_at_s,
            "limit_mib": m.memory.memory_limit_bytes / 2**20 if m.memory.memory_limit_bytes else None,
            "repetition": rep.repetition,
            "outage": (m.outage.outage_start_s, m.outage.outage_end_s) if m.outage.outage_start_s is not None
            and m.outage.outage_end_s is not None else None}


def _label(g: Group, view: dict[str, Any]) -> str:
    f = g.figures
    parts = [f"<b>{g.place or '–'}. {g.server}</b>"]
    if f.over_time.verdict:
        parts.append(f"<b>{verdict_text(f.over_time)}</b>")
    if f.over_time.peak_ok_rps is not None:
        parts.append(f"peak {f.over_time.peak_ok_rps:,.0f} req/s")
    if f.over_time.worst_second_p99_us is not None:
        parts.append(f"worst 1-s p99 {f.over_time.worst_second_p99_us / 1000:,.3g} ms")
    if view.get("died") is not None:
        parts.append(f"died at {view['died']:.1f} s")
    if f.over_time.recovered_after_s is not None:
        parts.append(f"back {f.over_time.recovered_after_s:.1f} s after the database")
    if g.figures.standing.reps_ok > 1:
        parts.append(f"(repetition {view.get('repetition')})")
    return " · ".join(parts)


def over_time_chart(pt: PointData, title: str) -> go.Figure:
    """The small multiples of one point's measured groups."""
    groups = [g for g in pt.measured if cell_view(g)["load"]]
    n = max(1, len(groups))
    height = HEAD_PX + ROW_PX * n
    fig = make_subplots(rows=n, cols=len(COLUMNS), shared_xaxes="all", shared_yaxes="columns",
                        column_titles=list(COLUMNS), horizontal_spacing=0.035,
                        vertical_spacing=min(0.3 / n, 45 / height))
    for a in fig.layout.annotations:  # the column titles, above the first row's own label
        a.update(yshift=20, font={"size": 12})
    lat: list[float | None] = []
    for r, g in enumerate(groups, start=1):
        v = cell_view(g)
        load, srv = v["load"], v["server"]
        color = model_color(g.model)
        ts = [s.t for s in load]
        first = r == 1

        def line(col: int, x: list[Any], y: list[Any], name: str, legend: bool = False, **style: Any) -> None:
            fig.add_scatter(x=x, y=y, mode="lines", name=name, legendgroup=name, showlegend=first and legend,
                            line={"width": 1.6, "color": color, **style}, row=r, col=col,
                            hovertemplate=f"{g.server} t=%{{x}} s: %{{y:,.3~f}} {name}<extra></extra>")

        line(1, ts, [s.demand for s in load], v.get("demand_label") or "demand")
        line(2, ts, [s.ok for s in load], "successful responses/s")
        p90 = [s.p90_us / 1000 if s.p90_us else None for s in load]
        p99 = [s.p99_us / 1000 if s.p99_us else None for s in load]
        lat += p90 + p99
        line(3, ts, p90, "p90 ms", legend=True)
        line(3, ts, p99, "p99 ms", legend=True, dash="dot")
        line(4, ts, [s.timeouts for s in load], "timeouts/s", legend=True)
        line(4, ts, [s.errors - s.timeouts for s in load], "other errors/s", legend=True, dash="dot", color=GREY)
        xs = [s.t for s in srv]
        line(5, xs, [s.cpu_percent for s in srv], "server CPU %", legend=True)
        if any(s.others_percent is not None for s in srv):
            line(5, xs, [s.others_percent for s in srv], "other processes on its CPUs %", legend=True,
                 dash="dot", color=GREY)
        line(6, xs, [s.rss_bytes / 2**20 for s in srv], "RSS MiB")
        # a limit far above every row's RSS would flatten the column; the memory note states it
        if v.get("limit_mib") and max((s.rss_bytes for s in srv), default=0) / 2**20 >= LIMIT_SHOWN * v["limit_mib"]:
            line(6, [0, max(ts or [1])], [v["limit_mib"]] * 2, "memory limit", legend=True, dash="dash", color=DIED)
        if v.get("outage") is not None:  # the database away: a grey band across the row
            for c in range(1, len(COLUMNS) + 1):
                fig.add_vrect(x0=v["outage"][0], x1=v["outage"][1], fillcolor=GREY, opacity=0.25, line_width=0,
                              row=r, col=c)
        if v.get("died") is not None:
            for c in range(1, len(COLUMNS) + 1):
                fig.add_vline(x=v["died"], line={"color": DIED, "width": 1.5, "dash": "dash"}, row=r, col=c)
        dom = fig.get_subplot(r, 1).yaxis.domain
        fig.add_annotation(text=_label(g, v), x=0, xref="paper", y=dom[1], yref="paper", xanchor="left",
                           yanchor="bottom", showarrow=False, font={"size": 12}, align="left")
    fig.update_yaxes(type="log", col=3, **log_ticks(lat))
    for c in (1, 2, 4, 5, 6):
        fig.update_yaxes(rangemode="tozero", col=c)
    fig.update_xaxes(title_text="time (s)", row=n)
    fig.update_layout(template="plotly_white", height=height, title={"text": title, "x": 0, "font": {"size": 15}},
                      margin={"l": 55, "r": 20, "t": 110, "b": 110}, font={"family": FONT, "size": 11},
                      legend={"orientation": "h", "x": 0, "y": -60 / height, "yanchor": "top"}, hovermode="closest")
    return fig


def outage_chart(pt: PointData, title: str) -> go.Figure:
    """Every row's successful responses/s on one time axis (the outage workload), the database's
    absence shaded from the representative cells' times."""
    fig = go.Figure()
    spans = []
    for g in pt.measured:
        v = cell_view(g)
        if not v["load"]:
            continue
        fig.add_scatter(x=[s.t for s in v["load"]], y=[s.ok for s in v["load"]], mode="lines", name=g.server,
                        line={"width": 1.6, "color": model_color(g.model)},
                        hovertemplate=f"{g.server} t=%{{x}} s: %{{y:,}} successful/s<extra></extra>")
        if v.get("outage") is not None:
            spans.append(v["outage"])
    if spans:
        start, end = min(a for a, _ in spans), max(b for _, b in spans)
        fig.add_vrect(x0=start, x1=end, fillcolor=GREY, opacity=0.25, line_width=0,
                      annotation_text="database away", annotation_position="top left")
    fig.update_xaxes(title_text="time (s)")
    fig.update_yaxes(title_text="successful responses/s", rangemode="tozero")
    fig.update_layout(template="plotly_white", height=460, title={"text": title, "x": 0, "font": {"size": 15}},
                      margin={"l": 60, "r": 20, "t": 70, "b": 60}, font={"family": FONT, "size": 11},
                      hovermode="closest")
    return fig


__all__ = ["over_time_chart", "outage_chart", "cell_view", "COLUMNS"]
