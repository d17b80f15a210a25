"""HTTP/2 beside HTTP/1.1 (issue 47), shared by Markdown and HTML: per row, from the same run, its HTTP/2 point
with one stream per connection beside its own HTTP/1.1 point at the same demand (`h2-json`'s `h2-1` beside
`h1`, both over TLS; `h2c-json`'s `h2c-1` beside its plaintext `h1`): server CPU per request, p99, and the
ratio of CPU per request; then what 100 streams a connection do (the `h2`/`h2c` point: requests per second
and p99), and `h2-streams`' three shapes of the same 1,000 requests in flight (1000x1, 100x10, 10x100).
Per concurrency model, the median ratios. Rows left out of the HTTP/2 workloads (`http2_out`, no
`http2_library`, a failed h2/h2c check) are listed with the stored reason. Reads stored results only.
"""
from __future__ import annotations

import html
import statistics
from dataclasses import dataclass
from typing import Any

from . import section_table
from ..results.formatting import fmt_num, fmt_us

TITLE = "HTTP/2 beside HTTP/1.1"
# (workload, HTTP/1.1 twin, HTTP/2 at the same demand, HTTP/2 with 100 streams a connection)
PAIRS = (("h2-json", "h1", "h2-1", "h2"), ("h2c-json", "h1", "h2c-1", "h2c"))
STREAMS_WORKLOAD, SHAPES = "h2-streams", ("1000x1", "100x10", "10x100")
HEADERS = ["server", "model", "workload", "CPU/request HTTP/1.1", "CPU/request HTTP/2", "HTTP/2 ÷ HTTP/1.1",
           "p99 HTTP/1.1", "p99 HTTP/2", "req/s at 100 streams", "p99 at 100 streams"]
SHAPE_HEADERS = ["server", "model", *(f"{s}: req/s · p99 · CPU/request" for s in SHAPES)]
NOTE = ("Each row's HTTP/2 beside its own HTTP/1.1 from the same run, with the stack's own HTTP/2 server. h2-json: "
        "256 keep-alive connections on /json over TLS 1.3 (RSA-2048), first HTTP/1.1, then the server restarted "
        "with $HTTP2=h2 and 256 connections of one stream each (the same 256 requests in flight: the cost of the "
        "framing, HPACK and flow control), then 100 streams each (HttpArena's h2load -c 256 -m 100). h2c-json: the "
        "same in cleartext (prior knowledge). CPU/request: the server's CPU (user + system, its process tree) per "
        "successful request. h2-streams: the same 1,000 requests in flight as 1,000 connections of 1 stream, 100 of "
        "10 and 10 of 100. Medians over the repetitions; — where the row has no result there.")


@dataclass(frozen=True)
class Figure:
    rps: float | None
    p99_us: float | None
    cpu_us: float | None


@dataclass(frozen=True)
class PairRow:
    server: str
    model: str
    workload: str
    h1: Figure | None
    h2: Figure | None
    many: Figure | None

    @property
    def ratio(self) -> float | None:
        """Server CPU per request over HTTP/2 ÷ over HTTP/1.1 at the same demand."""
        a, b = self.h1, self.h2
        return b.cpu_us / a.cpu_us if a and b and a.cpu_us and b.cpu_us else None


@dataclass(frozen=True)
class RowOut:
    server: str
    model: str
    reason: str


def _figure(g: Any | None) -> Figure | None:
    if g is None or not g.ok:
        return None
    return Figure(g.median(lambda m: m.counts.rps), g.median(lambda m: m.latency.p99_us), g.cpu_us_per_request)


def _groups(results: Any, workload: str) -> dict[str, dict[str, Any]]:
    """point -> server -> group, for one workload."""
    for wl in results.workloads:
        if wl.name == workload:
            return {pt.label: {g.server: g for g in pt.groups} for pt in wl.points}
    return {}


def rows(results: Any) -> tuple[list[PairRow], dict[str, tuple[str, list[Figure | None]]], list[RowOut]]:
    """The HTTP/1.1-HTTP/2 pairs (cheapest HTTP/2 first), h2-streams' shapes per server (model, figures), and the
    rows left out with the reason."""
    pairs: list[PairRow] = []
    out: dict[str, RowOut] = {}
    for workload, h1, h2, many in PAIRS:
        gs = _groups(results, workload)
        for s in dict.fromkeys(s for by in gs.values() for s in by):
            mine = {p: by[s] for p, by in gs.items() if s in by}
            any_g = next(iter(mine.values()))
            if not any(g.ok for g in mine.values()):
                skipped = [c for g in mine.values() for c in g.bad if c.status == "skipped" and c.error]
                if skipped:
                    out.setdefault(s, RowOut(s, any_g.model, skipped[0].error))
                continue
            pairs.append(PairRow(s, any_g.model, workload, _figure(mine.get(h1)), _figure(mine.get(h2)),
                                 _figure(mine.get(many))))
    pairs.sort(key=lambda r: (r.workload, r.ratio is None, r.ratio or 0.0, r.server))
    shapes: dict[str, tuple[str, list[Figure | None]]] = {}
    gs = _groups(results, STREAMS_WORKLOAD)
    for s in dict.fromkeys(s for by in gs.values() for s in by):
        figs = [_figure(gs.get(shape, {}).get(s)) for shape in SHAPES]
        model = next(by[s].model for by in gs.values() if s in by)
        if any(figs):
            shapes[s] = (model, figs)
        else:
            skipped = [c for by in gs.values() if s in by for c in by[s].bad if c.status == "skipped" and c.error]
            if skipped:
                out.setdefault(s, RowOut(s, model, skipped[0].error))
    return pairs, shapes, [o for s, o in out.items() if s not in {p.server for p in pairs} | set(shapes)]


def _ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def cells(r: PairRow) -> list[str]:
    return [r.server, r.model, r.workload, fmt_us(r.h1.cpu_us if r.h1 else None),
            fmt_us(r.h2.cpu_us if r.h2 else None), _ratio(r.ratio), fmt_us(r.h1.p99_us if r.h1 else None),
            fmt_us(r.h2.p99_us if r.h2 else None), fmt_num(r.many.rps if r.many else None),
            fmt_us(r.many.p99_us if r.many else None)]


def shape_cells(server: str, model: str, figs: list[Figure | None]) -> list[str]:
    return [server, model, *("—" if f is None else f"{fmt_num(f.rps)} · {fmt_us(f.p99_us)} · {fmt_us(f.cpu_us)}"
                             for f in figs)]


def by_model(pairs: list[PairRow]) -> list[str]:
    """Per workload and concurrency model: the median HTTP/2 ÷ HTTP/1.1 CPU per request, and how many rows."""
    models: dict[tuple[str, str], list[float]] = {}
    for r in pairs:
        if r.ratio is not None:
            models.setdefault((r.workload, r.model), []).append(r.ratio)
    return [f"{w}, {m} ({len(v)} row{'s' if len(v) != 1 else ''}): HTTP/2 ÷ HTTP/1.1 CPU per request "
            f"{_ratio(statistics.median(v))}" for (w, m), v in sorted(models.items())]


def markdown(results: Any) -> list[str]:
    """The section as Markdown lines (none when the run measured no HTTP/2 workload)."""
    pairs, shapes, out = rows(results)
    if not pairs and not shapes and not out:
        return []
    lines = [f"## {TITLE}", "", NOTE, ""]
    if pairs:
        lines += section_table.markdown(HEADERS, [cells(r) for r in pairs]) + [""]
        lines += [f"- {n}" for n in by_model(pairs)] + [""]
    if shapes:
        lines += section_table.markdown(SHAPE_HEADERS, [shape_cells(s, m, f) for s, (m, f) in sorted(shapes.items())])
        lines += [""]
    if out:
        lines += ["Left out of the HTTP/2 workloads:", ""] + [f"- {o.server} ({o.model}): {o.reason}" for o in out]
        lines += [""]
    return lines


def to_page(page: Any, results: Any) -> None:
    """The section on the HTML report's page (its `heading(level, text)` and `add(html)`)."""
    pairs, shapes, out = rows(results)
    if not pairs and not shapes and not out:
        return
    esc = html.escape
    page.heading(2, TITLE)
    page.add(f'<p class="desc">{esc(NOTE)}</p>')
    if pairs:
        items = "".join(f"<li>{esc(n)}</li>" for n in by_model(pairs))
        page.add(section_table.to_html(HEADERS, [cells(r) for r in pairs]) + (f"<ul>{items}</ul>" if items else ""))
    if shapes:
        page.add(section_table.to_html(SHAPE_HEADERS, [shape_cells(s, m, f) for s, (m, f) in sorted(shapes.items())]))
    if out:
        page.add("<p>Left out of the HTTP/2 workloads:</p><ul>"
                 + "".join(f"<li>{esc(o.server)} ({esc(o.model)}): {esc(o.reason)}</li>" for o in out) + "</ul>")


__all__ = ["TITLE", "NOTE", "HEADERS", "PairRow", "RowOut", "rows", "cells", "by_model", "markdown", "to_page"]
