"""What the HTML and Markdown reports print for a cores workload (kind `cores`): one scaling table,
a row per server with its successful requests/s at each server core count and the speedup over 1
core, ranked by requests/s at the most cores measured on CPUs of its own (kinds.RANKED_BY).
Counts at which the server shared CPUs with the load generator are marked ⚠ and never ranked by.
Plain text cells; each exporter escapes and lays them out."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..results import ranking
from ..results.aggregate import Group, PointData, WorkloadData
from ..results.formatting import fmt_num
from ..results.model_notes import note

KIND = "cores"
MARK = "⚠"


@dataclass(frozen=True)
class Scaling:
    intro: str
    headers: list[str]
    rows: list[list[str]]
    ranked_at: int | None  # the core count rows are ranked at (None: no count measured)


def point_cores(pt: PointData) -> int | None:
    """The server core count of a point: stored with its cells, else the label's `=k`."""
    for g in pt.groups:
        for c in g.ok + g.bad:
            if c.metrics.setup.server_cores is not None:
                return c.metrics.setup.server_cores
    m = re.search(r"=(\d+)$", pt.label)
    return int(m.group(1)) if m else None


def _overlapped(pt: PointData) -> bool:
    return any(c.metrics.setup.cpu_overlap for g in pt.groups for c in g.ok + g.bad)


def _cell(g: Group | None, shared: bool) -> str:
    if g is None:
        return "—"
    if g.throughput is None:
        return g.bad[0].status if g.bad else "no data"
    return fmt_num(g.throughput.median) + (f" {MARK}" if shared else "")


def scaling(wl: WorkloadData) -> Scaling:
    """The scaling table of a cores workload."""
    pts = sorted(((k, pt) for pt in wl.points if (k := point_cores(pt)) is not None), key=lambda x: x[0])
    shared = {k for k, pt in pts if _overlapped(pt)}
    clean = [k for k, _ in pts if k not in shared]
    at = max(clean) if clean else (pts[-1][0] if pts else None)
    by_k = {k: {g.server: g for g in pt.groups} for k, pt in pts}
    servers = list(dict.fromkeys(g.server for g in wl.groups))

    def key(s: str) -> tuple:
        g = by_k.get(at, {}).get(s) if at is not None else None
        return ranking.rank_key(g, "throughput") if g is not None else (2, s)

    rows, place = [], 0
    for s in sorted(servers, key=key):
        gs = [by_k[k].get(s) for k, _ in pts]
        top = by_k.get(at, {}).get(s) if at is not None else None
        one = by_k.get(1, {}).get(s)
        ranked = top is not None and top.throughput is not None
        place += ranked
        speedup = "—"
        if ranked and at != 1 and one is not None and one.throughput is not None and one.throughput.median:
            speedup = f"×{top.throughput.median / one.throughput.median:.2f}"  # type: ignore[union-attr]
        first = next((g for g in gs if g is not None), None)
        # the overlap is marked on its figure; other warnings on the server (see the points' lists)
        flag = f" {MARK}" if any(w.kind != "cpu-overlap" for g in gs if g is not None for w in g.warnings) else ""
        rows.append([str(place) if ranked else "—", s + flag, first.model if first else ""]
                    + [_cell(g, k in shared) for g, (k, _) in zip(gs, pts)] + [speedup])
    headers = (["place", "server", "model"]
               + [f"req/s, {k} core{'s' if k > 1 else ''}" + (f" {MARK}" if k in shared else "") for k, _ in pts]
               + [f"speedup, {at} vs 1 core" if at and at > 1 else "speedup over 1 core"])
    return Scaling(_intro(at, shared, clean), headers, rows, at)


def _intro(at: int | None, shared: set[int], clean: list[int]) -> str:
    text = ("Successful requests/s (median of the repetitions) at each server core count; each count is its own "
            "server start, pinned to the first k of the server's CPUs with $WORKERS = k.")
    if at is None:
        return text + " No count was measured."
    if clean:
        text += (f" Ranked by requests/s at {at} core{'s' if at > 1 else ''}, the most measured without sharing a "
                 "CPU with the load generator")
        text += (f"; speedup = that ÷ requests/s at 1 core (×{at} would be perfect scaling)." if at > 1 else
                 "; no count above 1 core had CPUs of its own here, so no speedup is given.")
    else:
        text += (f" Every count shared CPUs with the load generator: ranked by requests/s at {at} cores, "
                 "a mixed figure.")
    if shared:
        ks = ", ".join(str(k) for k in sorted(shared))
        text += (f" {MARK} = at {ks} core{'s' if max(shared) > 1 else ''} the server shared CPU(s) with the load "
                 "generator (the machine has too few CPUs for both), so the figure mixes both sides' work: shown, "
                 "not ranked by.")
    return text


@dataclass(frozen=True)
class Line:
    """One row's figures across the counts, for the scaling chart: (cores, req/s median, shared a CPU)."""
    server: str
    model: str
    points: list[tuple[int, float, bool]]


def lines(wl: WorkloadData) -> list[Line]:
    """Each server's measured req/s at each core count, servers in the scaling table's order."""
    pts = sorted(((k, pt) for pt in wl.points if (k := point_cores(pt)) is not None), key=lambda x: x[0])
    order = [r[1].removesuffix(f" {MARK}") for r in scaling(wl).rows]
    out = []
    for s in order:
        got = [(k, g.throughput.median, _overlapped(pt)) for k, pt in pts for g in pt.groups
               if g.server == s and g.throughput is not None]
        model = next((g.model for g in wl.groups if g.server == s), "")
        if got:
            out.append(Line(s, model, got))
    return out


def model_notes(wl: WorkloadData) -> list[tuple[str, str]]:
    """(model, what it predicts: model_notes.NOTES) for each model in the sweep, in table order."""
    return [(m, n) for m in dict.fromkeys(ln.model for ln in lines(wl)) if (n := note(m))]


def per_core(wl: WorkloadData) -> Scaling:
    """Req/s per server core at each count (req/s ÷ cores: flat = linear scaling, falling = less);
    the exporters print each model's note under it (model_notes)."""
    ls = lines(wl)
    ks = sorted({k for ln in ls for k, _, _ in ln.points})
    shared = {k for ln in ls for k, _, o in ln.points if o}
    rows = []
    for ln in ls:
        by_k = {k: (rps, o) for k, rps, o in ln.points}
        cells = [fmt_num(by_k[k][0] / k) + (f" {MARK}" if by_k[k][1] else "") if k in by_k else "—" for k in ks]
        rows.append([ln.server, ln.model] + cells)
    headers = (["server", "model"]
               + [f"{k} core{'s' if k > 1 else ''}" + (f" {MARK}" if k in shared else "") for k in ks])
    intro = ("Requests/s per server core at each count (req/s at k cores ÷ k): a row that scales linearly keeps its "
             "figure across the counts; one that falls uses each added core less (a single loop, a lock, a runtime "
             "that does not spread).")
    return Scaling(intro, headers, rows, max(ks) if ks else None)


__all__ = ["KIND", "MARK", "Line", "Scaling", "scaling", "point_cores", "lines", "per_core", "model_notes"]
