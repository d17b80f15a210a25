"""The warm-up section shared by Markdown and HTML: per row, how long its first start took to reach
a steady rate (warmup.py) and how cold its first second was, and the chart of the rates over the
warm-up (one line per row). Autoscaled and serverless deployments pay this on every new instance."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from ..results.aggregate import Group, RunResults
from ..charts.figures import FONT, model_color
from ..rules.warmup import TOLERANCE, WINDOW

NOTE = (f"Before a server start's first point the harness loads it with that point's own load in one-second "
        f"rounds until the mean successful rate of the last {WINDOW} seconds is no more than {TOLERANCE:.0%} above "
        f"that of the {WINDOW} before (it stopped rising; at least {2 * WINDOW} s, at most the size's steady_max: "
        "quick 20 s, full 60 s); "
        "only then is the point measured. 'Time to steady' is that many seconds of load, 'first second' the "
        "first round's rate as a share of the steady rate (medians over repetitions). A row still changing at "
        "the maximum is 'not steady': measured anyway, flagged, and ranked after the steady rows.")
HEADERS = ["server", "model", "time to steady (s)", "first second (share of steady)", "steady rate req/s",
           "not steady", "repetitions"]


@dataclass(frozen=True)
class SteadyRow:
    workload: str
    point: str
    group: Group
    rates: list[float]  # the representative repetition's warm-up, one rate per second

    @property
    def server(self) -> str:
        return self.group.server


def rows(results: RunResults) -> list[SteadyRow]:
    """One row per server of the first workload point whose cells were warmed to steady state."""
    for wl in results.workloads:
        for pt in wl.points:
            # warm-ups judged by their rate only: an open load at a fixed rate is judged by its requests per
            # server CPU-second (warmup.CPU_BASIS), not a rate this section's columns could show
            out = [SteadyRow(wl.name, pt.label, g, _rates(g)) for g in pt.groups
                   if any(c.metrics.warmup.warmup_steady is not None and not c.metrics.warmup.warmup_basis
                          for c in g.ok)]
            if out:
                return sorted(out, key=lambda r: (r.group.figures.warmup.steady_s is None,
                                                  r.group.figures.warmup.steady_s or 0, r.server))
    return []


def _rates(g: Group) -> list[float]:
    rep = g.representative()
    return list(rep.metrics.warmup.warmup_rates or []) if rep else []


def cells(r: SteadyRow) -> list[str]:
    f = r.group.figures
    warmed = sum(1 for c in r.group.ok if c.metrics.warmup.warmup_steady is not None)
    steady_rate = sum(r.rates[-WINDOW:]) / len(r.rates[-WINDOW:]) if r.rates else None
    return [r.server, r.group.model, "—" if f.warmup.steady_s is None else f"{f.warmup.steady_s:g}",
            "—" if f.warmup.first_second_share is None else f"{f.warmup.first_second_share:.0%}",
            "—" if steady_rate is None else f"{steady_rate:,.0f}",
            f"{f.warmup.not_steady} (max {f.warmup.warmup_max_s:g} s)" if f.warmup.not_steady else "0", str(warmed)]


def title(rs: list[SteadyRow]) -> str:
    return f"warm-up: {rs[0].workload} {rs[0].point}" if rs else "warm-up"


def chart(rs: list[SteadyRow]) -> go.Figure:
    """Each second's successful rate as a share of the row's steady rate (the mean of its last 3 s),
    one line per row (its median repetition): rows of every speed on one scale, so a JIT's ramp from
    10 % shows beside a native row that starts at 100 %. The hover gives the rate itself."""
    fig = go.Figure()
    for r in rs:
        steady = sum(r.rates[-WINDOW:]) / len(r.rates[-WINDOW:]) if r.rates else 0.0
        if not steady:
            continue
        fig.add_trace(go.Scatter(x=list(range(1, len(r.rates) + 1)), y=[100 * x / steady for x in r.rates],
                                 customdata=r.rates, mode="lines+markers", name=r.server,
                                 line={"color": model_color(r.group.model), "width": 1.5}, marker={"size": 4},
                                 hovertemplate=f"{r.server}<br>second %{{x}}: %{{customdata:,.0f}} req/s "
                                               "(%{y:.0f} % of steady)<extra></extra>"))
    fig.update_layout(title=f"{title(rs)}: each second's rate as a share of the row's steady rate", height=460,
                      font={"family": FONT}, xaxis_title="second of warm-up load", yaxis_title="% of steady rate",
                      yaxis={"rangemode": "tozero"}, margin={"l": 70, "r": 20, "t": 50, "b": 50},
                      legend={"font": {"size": 11}})
    return fig


__all__ = ["NOTE", "HEADERS", "SteadyRow", "rows", "cells", "chart", "title"]
