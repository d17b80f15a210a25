"""How a point's groups are ordered, and the one-line verdict "at a glance" gives, by workload kind.

- throughput / sweep: successful requests/s, clean cells before degraded ones (> 1 % errors);
- fixed-load: rates held before rates not held, clean before degraded, then p99 over every due
  request, then timeouts, then server CPU per successful request — never requests/s;
- capacity: the highest rate that held the p99 limit;
- overload: peak successful responses/s (the verdict is shown beside it, not ranked: Stressgrid
  ranked by peak, and a row that crashed past its peak still reached it);
- soak: rates held before rates not held, clean before degraded, then the worst one-second p99,
  then the spread of the per-second p99s.
A leader is named only when it is ahead of the next row beyond the repetitions' noise
(stats.judge); otherwise the verdict says the rows are within noise, or that one repetition
cannot be judged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .stats import IMPROVEMENT, REGRESSION, UNJUDGED, Stats, judge
from .workloads import RANKED_BY


class Group(Protocol):
    """What ranking reads of an aggregate.Group (which imports this module, not the reverse)."""

    server: str
    throughput: Stats | None
    latency: dict[str, float | None]
    held: bool | None
    degraded: bool
    timeouts: int
    cpu_us_per_request: float | None

    def stat(self, key: str) -> Stats | None: ...

INF = float("inf")


def rank_key(g: Group, kind: str) -> tuple:
    """Sort key: smaller is better; groups without a result last."""
    t = g.throughput
    if t is None:
        return (1, 0, 0, 0.0, 0.0, 0.0, g.server)
    if kind == "fixed-load":
        cpu = g.cpu_us_per_request
        return (0, g.held is False, g.degraded, g.latency["p99"] if g.latency["p99"] is not None else INF,
                g.timeouts, cpu if cpu is not None else INF, g.server)
    if kind == "capacity" or kind == "overload":
        return (0, 0, 0, -t.median, 0.0, 0.0, g.server)
    if kind == "soak":
        worst, spread = g.stat("worst_second_p99_us"), g.stat("second_p99_spread_us")
        return (0, g.held is False, g.degraded, worst.median if worst else INF, spread.median if spread else INF,
                0.0, g.server)
    return (0, 0, g.degraded, -t.median, 0.0, 0.0, g.server)


def rank_metric(kind: str) -> tuple[str, str]:
    """(what a point of this kind is ranked by, why that fits)."""
    return RANKED_BY.get(kind, RANKED_BY["throughput"])


def _p99_stats(g: Group, kind: str = "fixed-load") -> Stats | None:
    return g.stat("worst_second_p99_us" if kind == "soak" else "p99_us")


@dataclass(frozen=True)
class Glance:
    metric: str  # what the point is ranked by
    why: str
    leader: Any | None  # the first group, when a result exists
    verdict: str  # one sentence: a named leader, "within noise", or "not judged"
    decided: bool  # True when the leader is ahead beyond noise


def glance(groups: list[Group], kind: str) -> Glance:
    """The verdict for one point's ranked groups."""
    metric, why = rank_metric(kind)
    measured = [g for g in groups if g.throughput is not None]
    if not measured:
        return Glance(metric, why, None, "no server produced a result", False)
    first = measured[0]
    if len(measured) == 1:
        return Glance(metric, why, first, f"{first.server} is the only row measured", False)
    second = measured[1]
    if kind in ("fixed-load", "soak"):
        if (first.held, first.degraded) != (second.held, second.degraded):
            reason = "held the rate" if first.held and not second.held else "answered without errors"
            return Glance(metric, why, first, f"{first.server} first: it {reason} and {second.server} did not", True)
        a, b = _p99_stats(second, kind), _p99_stats(first, kind)  # B = the leader: is its p99 lower beyond noise?
        if a is None or b is None:
            return Glance(metric, why, first, "no latency figures to judge by", False)
        ratio, _, verdict = judge(a, b, higher_is_better=False)
        lead = (f"worst 1-s p99 {b.median:,.0f} µs vs {a.median:,.0f} µs" if kind == "soak" else
                f"p99 {first.latency['p99'] or 0:,.0f} µs vs {second.latency['p99'] or 0:,.0f} µs")
    else:
        if kind not in ("capacity", "overload") and first.degraded != second.degraded:
            return Glance(metric, why, first, f"{first.server} first: {second.server} had more than 1 % errors", True)
        a, b = second.throughput, first.throughput
        assert a is not None and b is not None
        ratio, _, verdict = judge(a, b, higher_is_better=True)
        lead = f"{b.median / a.median:.2f}× {second.server}" if a.median else "ahead"
    if verdict == UNJUDGED:
        return Glance(metric, why, first, f"{first.server} first ({lead}); 1 repetition: not judged against "
                                          "noise — run with --repeat 3", False)
    if verdict in (IMPROVEMENT, REGRESSION):
        return Glance(metric, why, first, f"{first.server} leads beyond noise ({lead})", True)
    tied = [first.server, second.server]
    return Glance(metric, why, first, f"no winner: {' and '.join(tied)} are within noise ({lead})", False)


__all__ = ["rank_key", "rank_metric", "glance", "Glance"]
