"""Plotly figures of the cost-of-ownership section, drawn from cost.CostRow (charts.py's style)."""
from __future__ import annotations

from typing import Callable

import plotly.graph_objects as go
from plotly.subplots import make_subplots

# charts' layout helper, so the section looks like the rest of the report
from .figures import _layout, log_ticks, model_color
from ..cost.table import CostRow, THROUGHPUT_WORKLOAD

Value = Callable[[CostRow], float | None]


def bounded_label(r: CostRow) -> str:
    """The server, with its bound when it holds at most N connections (its slope is over ≤ N)."""
    return f"{r.server} (≤{r.profile.bound:,})" if r.profile.bound else r.server


def cost_bar(rows: list[CostRow], value: Value, title: str, axis: str, fmt: str = ",.0f",
             log: bool = False, label: Callable[[CostRow], str] = lambda r: r.server) -> go.Figure:
    """One bar per server (grouped by model, coloured by it); servers without the figure are left out."""
    fig = go.Figure()
    shown = [r for r in rows if value(r) is not None]
    for model in dict.fromkeys(r.model for r in shown):
        rs = [r for r in shown if r.model == model]
        fig.add_bar(name=model, x=[label(r) for r in rs], y=[value(r) for r in rs], marker_color=model_color(model),
                    legendgroup=model, text=[format(value(r), fmt) for r in rs], textposition="outside",
                    cliponaxis=False, hovertemplate=f"%{{x}}: %{{y:{fmt}}} {axis}<extra>{model}</extra>")
    yaxis: dict = {"title": axis}
    if log:
        yaxis.update(type="log", **log_ticks([value(r) for r in shown], lambda v: f"{v:g}"))
    return _layout(fig, title, legend_title_text="model", yaxis=yaxis, margin={"b": 110},
                   xaxis={"categoryorder": "array", "categoryarray": [label(r) for r in shown], "tickangle": -40})


def lines_chart(rows: list[CostRow]) -> go.Figure:
    """Code lines stacked: the row's own, then the _shared code it declares."""
    fig = go.Figure()
    shown = [r for r in rows if r.profile.source_lines is not None]
    xs = [r.server for r in shown]
    fig.add_bar(name="own code", x=xs, y=[r.profile.own_source_lines for r in shown],
                marker_color=[model_color(r.model) for r in shown],
                hovertemplate="%{x}: %{y:,} lines of its own<extra></extra>")
    fig.add_bar(name="shared code (servers/_shared)", x=xs, y=[r.profile.shared_source_lines for r in shown],
                marker={"color": [model_color(r.model) for r in shown], "opacity": 0.45, "pattern": {"shape": "/"}},
                text=[f"{r.profile.source_lines:,}" for r in shown], textposition="outside", cliponaxis=False,
                hovertemplate="%{x}: %{y:,} shared lines<extra></extra>")
    return _layout(fig, "source lines (code only, pygount; blank, comment, lock and generated files excluded)",
                   barmode="stack", yaxis_title="code lines", margin={"b": 110},
                   xaxis={"categoryorder": "array", "categoryarray": xs, "tickangle": -40})


def tradeoff_chart(rows: list[CostRow]) -> go.Figure:
    """Requests/s against source lines and against RSS per connection: the trade-off in one picture."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("requests/s vs source lines", "requests/s vs RSS per 1,000 idle connections"))
    for model in dict.fromkeys(r.model for r in rows):
        rs = [r for r in rows if r.model == model and r.rps is not None]
        common = {"mode": "markers+text", "marker": {"color": model_color(model), "size": 11},
                  "textposition": "top center", "textfont": {"size": 10}, "legendgroup": model}
        left = [r for r in rs if r.profile.source_lines is not None]
        fig.add_scatter(**common, x=[r.profile.source_lines for r in left], y=[r.rps for r in left], name=model,
                        text=[r.server for r in left], row=1, col=1,
                        hovertemplate="%{text}: %{x:,} lines, %{y:,.0f} req/s<extra></extra>")
        right = [r for r in rs if r.rss_per_1000_mib is not None]
        fig.add_scatter(**common, x=[r.rss_per_1000_mib for r in right], y=[r.rps for r in right], name=model,
                        text=[bounded_label(r) for r in right], showlegend=not left, row=1, col=2,
                        hovertemplate="%{text}: %{x:.1f} MiB per 1,000 connections, %{y:,.0f} req/s<extra></extra>")
    fig.update_xaxes(title_text="code lines (own + shared)", row=1, col=1)
    fig.update_xaxes(title_text="MiB per 1,000 idle keep-alive connections", row=1, col=2)
    fig.update_yaxes(title_text=f"{THROUGHPUT_WORKLOAD} successful requests/s (median)", row=1, col=1)
    return _layout(fig, f"the trade-off: {THROUGHPUT_WORKLOAD} throughput against code size and memory per "
                        "connection", height=480, legend_title_text="model", margin={"t": 80})


__all__ = ["cost_bar", "lines_chart", "tradeoff_chart", "bounded_label"]
