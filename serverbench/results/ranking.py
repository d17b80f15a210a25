"""How a point's groups are ordered, and the one-line verdict "at a glance" gives, by workload kind.

- throughput / sweep: successful requests/s, clean cells before degraded ones (> 1 % errors);
- every kind: unfair rows (more than 5 % of their connections left waiting beyond the timeout,
  rules/fairness.py) after the fair ones, and never in a tie or the client-bound block;
- efficiency (the fixed-rate step, run/fixed_rate.py, that orders the rows the throughput figure
  cannot: a client-bound block, or the first row and the rows tied with it): rates held first, then
  server CPU per successful request; the block's or the tie's verdict reads this point's;
- fixed-load and noisy (the legitimate traffic): rates held before rates not held, clean before degraded, then p99 over every due
  request, then timeouts, then server CPU per successful request; the rows that did not hold, after, by
  the rate they answered (their p99 is the run's length whatever they served);
- capacity: the highest rate that held the p99 limit;
- overload: peak successful responses/s (the verdict is shown beside it, not ranked: Stressgrid
  ranked by peak, and a row that crashed past its peak still reached it);
- soak: rates held before rates not held, clean before degraded, then the worst one-second p99,
  then the spread of the per-second p99s;
- db-outage: the outage verdict (recovers, recovers slowly, stays broken, crashes; the repetitions'
  median), then the seconds to recover, then the requests that failed; tied: the same verdict and
  recovery times within noise (or none recovered).
Rows measured before their rate was steady (warmup.py, `not steady`) rank after the steady ones.
A leader is named only when no other row is within the repetitions' noise of it (stats.judge: the
medians' intervals overlap, or the difference is under max(2 × CV, 5 %)); otherwise the verdict
names the rows tied with it, or says that one repetition cannot be judged. Where two or more rows
of a throughput table saturated the load generator in most repetitions, they are one block "at least
X req/s" (X: the
lowest of their medians), listed by name, sharing one place: the client's noise does not order them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .stats import IMPROVEMENT, REGRESSION, Stats, judge
from ..catalog.kinds import CLIENT_BOUND_KINDS, FIXED_DEMAND, P99_KINDS, RANKED_BY


class Group(Protocol):
    """What ranking reads of an aggregate.Group (which imports this module, not the reverse)."""

    server: str
    throughput: Stats | None
    latency: dict[str, float | None]
    held: bool | None
    degraded: bool
    unfair: bool
    timeouts: int
    cpu_us_per_request: float | None
    client_saturated: bool
    mostly_client_bound: bool
    not_steady: bool

    def stat(self, key: str) -> Stats | None: ...

    def served_text(self) -> str: ...

    @property
    def cpu_per_request_stats(self) -> Stats | None: ...

INF = float("inf")
# Kinds whose demand is fixed (every healthy row answers the same requests/s, catalog/kinds.py's
# FIXED_DEMAND) are ranked by the p99 over every due request; soak by its worst one-second p99.


def rank_key(g: Group, kind: str) -> tuple:
    """Sort key: smaller is better; groups without a result last."""
    t = g.throughput
    if t is None:
        return (1, 0, 0, 0, 0, 0.0, 0.0, 0.0, g.server)
    return (0, g.unfair, g.not_steady, *_measured_key(g, t, kind))


def _measured_key(g: Group, t: Stats, kind: str) -> tuple:
    if kind in FIXED_DEMAND:
        cpu, p99 = g.cpu_us_per_request, g.latency["p99"] if g.latency["p99"] is not None else INF
        if g.held is False:
            # a row that fell behind has a p99 near the run's length whatever it served: the rate it
            # did answer is what tells two such rows apart (tfb-queries q=20: 957 vs 227 req/s, 3.9 s vs 3.8 s)
            return (True, g.degraded, -t.median, p99, g.timeouts, g.server)
        return (False, g.degraded, p99, g.timeouts, cpu if cpu is not None else INF, g.server)
    if kind == EFFICIENCY:
        cpu = g.cpu_us_per_request
        return (g.held is False, g.degraded, cpu if cpu is not None else INF,
                g.latency["p99"] if g.latency["p99"] is not None else INF, 0.0, g.server)
    if kind == "capacity" or kind == "overload":
        return (0, 0, -t.median, 0.0, 0.0, g.server)
    if kind == OUTAGE:
        rec, failed = g.stat(_recovered), g.stat(lambda m: m.outage.failed_after_outage)
        return (_severity(g), 0, rec.median if rec else INF, failed.median if failed else INF, 0.0, g.server)
    if kind == "soak":
        worst, spread = g.stat(lambda m: m.soak.worst_second_p99_us), g.stat(lambda m: m.soak.second_p99_spread_us)
        return (g.held is False, g.degraded, worst.median if worst else INF, spread.median if spread else INF,
                0.0, g.server)
    return (0, g.degraded, -t.median, 0.0, 0.0, g.server)


EFFICIENCY = "efficiency"
OUTAGE = "db-outage"
# the outage verdicts, best first (overtime/outage.py's SEVERITY reversed): a row's place is its median
# repetition's, then the seconds to recover
_OUTAGE_ORDER = {"recovers": 0, "recovers slowly": 1, "stays broken": 2, "crashes": 3}


def _recovered(m: Any) -> float | None:
    return m.outage.recovered_after_s


def _severity(g: Group) -> float:
    s = g.stat(lambda m: _OUTAGE_ORDER.get(m.outage.outage_verdict or "", None))
    return s.median if s is not None else INF


def client_block(groups: list[Group], kind: str) -> list[Group]:
    """The rows shown together as "limited by the load generator": ≥ 2 clean, steady rows whose
    load generator saturated in most repetitions, in a throughput table (empty otherwise)."""
    if kind not in CLIENT_BOUND_KINDS:
        return []
    block = [g for g in groups if g.throughput is not None and g.mostly_client_bound and not g.degraded
             and not g.not_steady and not g.unfair]
    return block if len(block) >= 2 else []


def _arranged(groups: list[Group], kind: str) -> tuple[list[Group], list[Group]]:
    """(groups best first by rank_key, with a client-bound block where its best row would be, listed by
    name; the block)."""
    ranked = sorted(groups, key=lambda g: rank_key(g, kind))
    block = client_block(ranked, kind)
    if block:
        at = ranked.index(block[0])
        rest = [g for g in ranked if g not in block]
        ranked = rest[:at] + sorted(block, key=lambda g: g.server) + rest[at:]
    return ranked, block


def _span_end(measured: list[Group], i: int, kind: str, block: list[Group]) -> int:
    """The index of the last row sharing row i's place: the end of a client-bound block row i starts,
    or further, the last row after it tied with row i (or with a member of its block). The rows in
    between share it too: a row ranked between two rows the figure cannot order is not ordered either."""
    heads = [measured[i]]
    end = i
    if measured[i] in block:
        end = max(j for j, g in enumerate(measured) if g in block)
        heads = list(block)
    for j in range(end + 1, len(measured)):
        if any(tied(h, measured[j], kind) for h in heads):
            end = j
    return end


def unordered_top(groups: list[Group], kind: str) -> list[Group]:
    """The rows at the top of a throughput table that its own figure cannot order, which the
    fixed-rate step measures again and the glance judges together: the client-bound block when the
    first row is in it, or the first row (in a block or not), with every row down to the last one tied
    with it (or with a block member) within the repetitions' noise (a clean, fair, steady first row; `tied` keeps
    degraded, unfair and unsteady rows out). Empty when the first row leads alone. On the 2-core VM
    the block never formed (the client at 85 % of its CPU) while 7 rows tied at the top; later three
    rows formed the block while seven more overlapped the leader's interval (java-undertow
    156.8k–161.2k req/s) and were neither named nor measured at the fixed rate: a tie is a tie, block
    or not."""
    if kind not in CLIENT_BOUND_KINDS:
        return []
    measured, block = _arranged([g for g in groups if g.throughput is not None], kind)
    if len(measured) < 2:
        return []
    first = measured[0]
    # a first row outside the block (it saturated the client in fewer repetitions) still leads only as
    # far as the noise lets it: the block rows tied with it share its place and its judgement (the
    # study's prantl-wrk, 2026-11-29: rust-tokio first, c-epoll and cpp-asio the block, 10 rows placed
    # 1–10 and none of them measured at the fixed rate while this returned [])
    if first not in block and (first.degraded or first.not_steady or first.unfair or first.throughput.n < 2):
        return []
    top = measured[:_span_end(measured, 0, kind, block) + 1]
    return top if len(top) >= 2 else []


def order(groups: list[Group], kind: str) -> tuple[list[Group], list[tuple[int, int] | None]]:
    """(groups best first, their places as (first, last) ranges): rank_key's order, except that a
    client-bound block (client_block) sits where its best row would, listed by name. Rows the figure
    cannot order share one place range (_span_end): a block and the rows tied with its members, a row
    and the rows down to the last one tied with it. A place inside a range is never an order."""
    ranked, block = _arranged(groups, kind)
    measured = [g for g in ranked if g.throughput is not None]
    spans: dict[int, tuple[int, int]] = {}
    i = 0
    while i < len(measured):
        end = _span_end(measured, i, kind, block)
        for j in range(i, end + 1):
            spans[id(measured[j])] = (i + 1, end + 1)
        i = end + 1
    return ranked, [spans.get(id(g)) for g in ranked]


def figure_stats(g: Group, kind: str) -> Stats | None:
    """The figure a point's rows are told apart by: p99 for fixed-load and soak, CPU per request for
    efficiency, the seconds to recover for db-outage, else throughput."""
    if kind == EFFICIENCY:
        return g.cpu_per_request_stats
    if kind == OUTAGE:  # the seconds to recover (none for a row that never did: its verdict says so)
        return g.stat(_recovered)
    return _p99_stats(g, kind) if kind in P99_KINDS else g.throughput


def _lower_is_better(kind: str) -> bool:
    return kind in P99_KINDS or kind in (EFFICIENCY, OUTAGE)


def tied(first: Group, other: Group, kind: str) -> bool:
    """Whether `other` is within the repetitions' noise of `first` (same held/degraded/steady class)."""
    if kind == OUTAGE:  # the same verdict, and recovery times within noise (or neither recovered)
        if _severity(first) != _severity(other):
            return False
        ra, rb = other.stat(_recovered), first.stat(_recovered)
        if ra is None or rb is None:
            return ra is None and rb is None
        if min(ra.n, rb.n) < 2:
            return False
        return judge(ra, rb, higher_is_better=False)[2] not in (IMPROVEMENT, REGRESSION)
    if (first.held, first.degraded, first.not_steady, first.unfair) != \
            (other.held, other.degraded, other.not_steady, other.unfair) and kind != "overload":
        return False
    a, b = figure_stats(other, kind), figure_stats(first, kind)
    if a is None or b is None or min(a.n, b.n) < 2:
        return False
    return judge(a, b, higher_is_better=not _lower_is_better(kind))[2] not in (IMPROVEMENT, REGRESSION)


def rank_metric(kind: str) -> tuple[str, str]:
    """(what a point of this kind is ranked by, why that fits)."""
    return RANKED_BY.get(kind, RANKED_BY["throughput"])


def _p99_stats(g: Group, kind: str = "fixed-load") -> Stats | None:
    return g.stat((lambda m: m.soak.worst_second_p99_us) if kind == "soak" else (lambda m: m.latency.p99_us))


@dataclass(frozen=True)
class Glance:
    metric: str  # what the point is ranked by
    why: str
    leader: Any | None  # the first group, when a result exists
    verdict: str  # one sentence: a named leader, "within noise", or "not judged"
    decided: bool  # True when the leader is ahead beyond noise


def glance(groups: list[Group], kind: str, efficiency: list[Group] | None = None) -> Glance:
    """The verdict for one point's ranked groups: a leader beyond noise, the rows tied with the
    first, a client-bound block (ordered by `efficiency`, the fixed-rate step's ranked groups, when
    it ran), or why nothing can be judged."""
    metric, why = rank_metric(kind)
    measured = [g for g in groups if g.throughput is not None]
    if not measured:
        return Glance(metric, why, None, "no server produced a result", False)
    first = measured[0]
    if len(measured) == 1:
        return Glance(metric, why, first, f"{first.server} is the only row measured", False)
    if kind == OUTAGE:
        return _outage_glance(measured, metric, why)
    block = client_block(measured, kind)
    top = unordered_top(measured, kind)
    if block and first in block:
        floor = min(g.throughput.median for g in block if g.throughput is not None)
        head = (f"{_names([g.server for g in block])} each served at least {floor:,.0f} req/s, limited by the "
                "load generator on this machine")
        near = [g.server for g in top if g not in block]
        if near:
            head += f", and {_names(near)} {'is' if len(near) == 1 else 'are'} within the noise of that block"
        ordered = _block_order(top or block, efficiency or [])
        if ordered is None:
            return Glance(metric, why, first, f"no order at the top: {head}", False)
        return Glance(metric, why, first, f"{head}; {ordered[0]}", ordered[1])
    second = measured[1]
    split = _class_split(first, second, kind)
    if split is not None:
        return Glance(metric, why, first, split, True)
    a, b = figure_stats(second, kind), figure_stats(first, kind)
    if a is None or b is None:
        return Glance(metric, why, first, "no latency figures to judge by", False)
    lead = _lead_text(first, second, a, b, kind)
    if min(a.n, b.n) < 2:
        return Glance(metric, why, first, f"{first.server} first ({lead}); 1 repetition: not judged against "
                                          "noise — run with --repeat 3", False)
    # the rows the figure cannot order against the first: the top's place range where the fixed-rate
    # step measures it (every one of them judged there), else the rows tied with the first
    ties = top[1:] if top else [g for g in measured[1:] if tied(first, g, kind)]
    if not ties:
        return Glance(metric, why, first, f"{first.server} leads beyond noise ({lead})", True)
    tie = (f"no single leader: {_names([first.server, *(g.server for g in ties)])} are tied "
           f"(their intervals overlap; {lead})")
    ordered = _block_order([first, *ties], efficiency or [])
    if ordered is None:
        return Glance(metric, why, first, tie, False)
    return Glance(metric, why, first, f"{tie}; {ordered[0]}", ordered[1])


def _outage_glance(measured: list[Group], metric: str, why: str) -> Glance:
    """The rows by their outage verdict, best first ("recovers: a (0.3 s), b (1.1 s); stays broken: c");
    decided when the first row is not tied with the second."""
    names = {v: k for k, v in _OUTAGE_ORDER.items()}
    parts: dict[str, list[str]] = {}
    for g in measured:
        rec = g.stat(_recovered)
        label = names.get(_severity(g), "split between repetitions")
        parts.setdefault(label, []).append(g.server + (f" ({rec.median:.1f} s)" if rec is not None else ""))
    text = "; ".join(f"{label}: {', '.join(rows)}" for label, rows in parts.items())
    return Glance(metric, why, measured[0], text, not tied(measured[0], measured[1], OUTAGE))


def _class_split(first: Group, second: Group, kind: str) -> str | None:
    """The verdict when the first two rows differ in class (fair, held, clean, steady), else None."""
    if first.unfair != second.unfair:
        return f"{first.server} first: {second.server} {second.served_text()}"
    if kind in P99_KINDS or kind == EFFICIENCY:
        if (first.held, first.degraded) != (second.held, second.degraded):
            reason = "held the rate" if first.held and not second.held else "answered without errors"
            return f"{first.server} first: it {reason} and {second.server} did not"
        return None
    if kind not in ("capacity", "overload") and (first.degraded, first.not_steady) != \
            (second.degraded, second.not_steady):
        why_not = "had more than 1 % errors" if second.degraded else "was not steady"
        return f"{first.server} first: {second.server} {why_not}"
    return None


def _lead_text(first: Group, second: Group, a: Stats, b: Stats, kind: str) -> str:
    """How far the first row is ahead of the second, in the point's own figure."""
    if kind == "soak":
        return f"worst 1-s p99 {b.median:,.0f} µs vs {a.median:,.0f} µs"
    if kind in P99_KINDS:
        return f"p99 {first.latency['p99'] or 0:,.0f} µs vs {second.latency['p99'] or 0:,.0f} µs"
    if kind == EFFICIENCY:
        return f"{b.median:.2f} µs vs {a.median:.2f} µs of server CPU per request"
    return f"{b.median / a.median:.2f}× {second.server}" if a.median else "ahead"


def _block_order(block: list[Group], efficiency: list[Group]) -> tuple[str, bool] | None:
    """(the order of a client-bound block or a tie by the fixed-rate step, whether its first row
    leads beyond the noise of that figure); None when the step did not measure two of its rows."""
    names = {g.server for g in block}
    rows = [g for g in efficiency if g.server in names and g.cpu_us_per_request is not None]
    if len(rows) < 2:
        return None
    rate = rows[0].target_rate or 0.0
    parts = []
    for g in rows:
        held = "" if g.held is not False else " (did not hold the rate)"
        p99 = g.latency["p99"]
        parts.append(f"{g.server} {g.cpu_us_per_request:.2f}{' µs' if not parts else ''}"
                     + (f" (p99 {p99:,.0f} µs)" if p99 is not None else "") + held)
    text = f"at {rate:,.0f} req/s each row used, of server CPU per request: " + ", ".join(parts)
    first, second = rows[0], rows[1]
    split = _class_split(first, second, EFFICIENCY)
    a, b = first.cpu_per_request_stats, second.cpu_per_request_stats
    if split is not None:
        return f"{text} — {split}", True
    if a is None or b is None or min(a.n, b.n) < 2:
        return f"{text} — 1 repetition: not judged against noise", False
    ties = [g.server for g in rows[1:] if tied(first, g, EFFICIENCY)]
    if not ties:
        return f"{text} — {first.server} leads beyond that figure's noise", True
    return f"{text} — {_names([first.server, *ties])} are tied within that figure's noise", False


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


__all__ = ["EFFICIENCY", "rank_key", "rank_metric", "glance", "Glance", "order", "client_block", "unordered_top", "tied",
           "figure_stats"]
