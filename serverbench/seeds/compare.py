"""A study's published table beside a stored run: pure functions over loaded results.

For each compared column (studies.Compare) the entries are the (published row, serverbench row)
pairs that have a figure on both sides. Two entries of different published rows form a pair; it
*keeps* its order when both tables order it the same way, *flips* when they order it opposite ways,
and is *unordered* when either side does not order it (here: two requests/s medians within their
repetitions' noise, stats.judge; in the study: one published row standing for several
servers, overlapping published ranges, equal figures). Kendall's tau-b over the same pairs.

A flip's cause is chosen only from what the study published or the run read stored, each with its
figure, and only for the row the study placed worse (each cause can only have made the study
under-rate a row): its error count of the order of its requests (broken keep-alive), its figure at
the study's stated client ceiling (a client-bound study), or this run's warm-up of that row showing
a ramp while the published method names no warm-up (measured cold). None applies: "unexplained". Hardware and versions are facts beside the
table (section.py), never a cause.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..results import stats
from .reading import reading
from .studies import Compare, Figure, Row, Study

BROKEN_SHARE = 0.1  # errors "of the order of" the requests: at least a tenth of them
AT_CEILING = 0.9  # a published rate within 10 % of the study's stated client ceiling is at it
COLD_SHARE = 0.5  # a warm-up whose first second gave at most half the steady rate is a ramp
UNEXPLAINED = "unexplained"


@dataclass(frozen=True)
class Entry:
    """One published row beside one serverbench row, at one compared column."""
    row: Row
    server: str
    published: Figure
    ours: float
    group: Any  # the aggregation's Group (figures.warmup is read for the cold cause)


@dataclass(frozen=True)
class Flip:
    study_better: Entry
    study_worse: Entry
    causes: list[str]


@dataclass
class Comparison:
    study: Study
    compare: Compare
    point: str | None  # the run's point used; None when the run did not measure the workload
    entries: list[Entry] = field(default_factory=list)
    kept: list[tuple[Entry, Entry]] = field(default_factory=list)  # (better, worse) in both tables
    flips: list[Flip] = field(default_factory=list)
    unordered: list[tuple[Entry, Entry, str]] = field(default_factory=list)  # a, b, which side does not order them
    tau: float | None = None


def _interval(f: Figure) -> tuple[float, float]:
    return (float(f[0]), float(f[1])) if isinstance(f, tuple) else (float(f), float(f))


def published_order(a: Entry, b: Entry, better: str) -> int:
    """+1 when the study puts a ahead of b, -1 behind, 0 when it does not order them (one row for
    both, overlapping ranges, equal figures)."""
    if a.row.name == b.row.name:
        return 0
    (alo, ahi), (blo, bhi) = _interval(a.published), _interval(b.published)
    sign = 1 if alo > bhi else -1 if ahi < blo else 0
    return sign if better == "higher" else -sign


def our_order(a: Entry, b: Entry, better: str, ours: str = "requests/s") -> int:
    """+1 when this run puts a ahead of b, -1 behind, 0 when it does not: equal figures, or two
    requests/s medians within their repetitions' noise (stats.judge, the rule every comparison of
    repetitions here uses: overlapping intervals or a gap inside the noise)."""
    ta, tb = (getattr(e.group, "throughput", None) for e in (a, b))
    if ours == "requests/s" and min(getattr(ta, "n", 1), getattr(tb, "n", 1)) >= 2 and \
            stats.judge(ta, tb)[2] == stats.WITHIN_NOISE:
        return 0
    sign = (a.ours > b.ours) - (a.ours < b.ours)
    return sign if better == "higher" else -sign


def our_figure(group: Any, ours: str) -> float | None:
    """The run's figure for a group: the median requests/s the point ranks by (an overload point's
    peak), or a percentile of the merged histogram (µs)."""
    if ours == "requests/s":
        return group.throughput.median if group.throughput is not None else None
    return (group.latency or {}).get(ours)


def find_point(results: Any, workload: str, points: list[str]) -> Any | None:
    """The run's first point of `points` (in their order) in `workload`; None when it has none."""
    wl = next((w for w in results.workloads if w.name == workload), None)
    by_label = {p.label: p for p in (wl.points if wl else [])}
    return next((by_label[p] for p in points if p in by_label), None)


def entries(study: Study, cmp: Compare, point: Any) -> list[Entry]:
    groups = {g.server: g for g in point.groups}
    out = []
    for r in study.row:
        f = r.figures.get(cmp.column)
        if f is None or isinstance(f, str):
            continue
        for sid in r.maps_to:
            g = groups.get(sid)
            v = our_figure(g, cmp.ours) if g is not None else None
            if v is not None:
                out.append(Entry(r, sid, f, float(v), g))
    return out


def _fmt(f: Figure) -> str:
    lo, hi = _interval(f)
    return f"{lo:,.0f}–{hi:,.0f}" if lo != hi else f"{lo:,.10g}"


def causes(study: Study, cmp: Compare, worse: Entry) -> list[str]:
    """Why the study may have placed `worse` behind where this run puts it: only causes with a
    published or stored figure; ["unexplained"] when there is none."""
    out = []
    e, r = study.errors, worse.row
    if e is not None and isinstance(err := r.figures.get(e.column), float) and isinstance(
            rate := r.figures.get(e.rate_column), float):
        requests = rate * e.duration_s
        if err >= BROKEN_SHARE * requests:
            out.append(f"broken keep-alive in the study: its {r.name} row had {err:,.0f} socket errors against "
                       f"about {requests:,.0f} requests ({rate:,.0f} req/s × {e.duration_s:g} s)")
    c = study.client_ceiling
    if c is not None and c.column == cmp.column and cmp.better == "higher":
        top = _interval(worse.published)[1]
        if top >= AT_CEILING * c.value:
            out.append(f"client-bound study: its {r.name} row's {_fmt(worse.published)} {c.column} is at the "
                       f"ceiling the study gives its client (near {c.value:,.0f})")
    w = getattr(getattr(worse.group, "figures", None), "warmup", None)
    share, steady = getattr(w, "first_second_share", None), getattr(w, "steady_s", None)
    if study.warmup is None and share is not None and steady is not None and share <= COLD_SHARE:
        out.append(f"measured cold: here {worse.server} reached a steady rate after {steady:g} s of load, its first "
                   f"second at {share:.0%} of it, and the published method names no warm-up")
    return out or [UNEXPLAINED]


def kendall_tau_b(pairs: list[tuple[int, int]]) -> float | None:
    """Kendall's tau-b of two orders given as each pair's signs (published, ours): ties on either side
    are left out of the numerator and correct the denominator; None when either side orders nothing."""
    n0 = len(pairs)
    n1 = sum(1 for p, _ in pairs if p == 0)
    n2 = sum(1 for _, o in pairs if o == 0)
    concordant = sum(1 for p, o in pairs if p * o > 0)
    discordant = sum(1 for p, o in pairs if p * o < 0)
    denom = math.sqrt((n0 - n1) * (n0 - n2))
    return (concordant - discordant) / denom if denom else None


def compare(study: Study, cmp: Compare, results: Any) -> Comparison:
    """One compared column against `results` (a runs.Read, or one run's aggregated results)."""
    read = reading(results)
    point = find_point(read, cmp.workload, cmp.points)
    if point is None:
        return Comparison(study, cmp, None)
    out = Comparison(study, cmp, point.label, entries(study, cmp, point))
    signs = []
    for i, a in enumerate(out.entries):
        for b in out.entries[i + 1:]:
            p, o = published_order(a, b, cmp.better), our_order(a, b, cmp.better, cmp.ours)
            signs.append((p, o))
            better, worse = (a, b) if p > 0 else (b, a)
            if p == 0 or o == 0:
                out.unordered.append((a, b, "the study" if p == 0 else read.label(cmp.workload)))
            elif p == o:
                out.kept.append((better, worse))
            else:
                out.flips.append(Flip(better, worse, causes(study, cmp, worse)))
    out.tau = kendall_tau_b(signs)
    return out


def comparisons(studies: list[Study], results: Any) -> list[Comparison]:
    """Every compared column of every study, in file order; a study without figures has none."""
    return [compare(s, c, results) for s in studies for c in s.compare]


__all__ = ["Entry", "Flip", "Comparison", "compare", "comparisons", "causes", "find_point", "kendall_tau_b",
           "published_order", "our_figure", "BROKEN_SHARE", "AT_CEILING", "COLD_SHARE", "UNEXPLAINED"]
