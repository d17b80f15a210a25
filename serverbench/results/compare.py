"""Compare two runs cell by cell: throughput and p99 ratios, judged against the noise.

The rule (per server × workload × point, on throughput = rps, or capacity_rps for capacity points):
a difference is *significant* when BOTH
  1. the min–max ranges of the two runs' repetitions do not overlap, and
  2. |B/A − 1| exceeds the noise threshold T = max(2 × max(CV_A, CV_B), MIN_EFFECT),
where CV is the coefficient of variation over a run's repetitions. MIN_EFFECT = 5 % keeps very
tight runs from flagging trivia. Significant and B < A is a regression, B > A an improvement;
otherwise "within noise".
A side with a single repetition shows no noise to judge by, so such rows are "not judged" (the
ratio is still shown). Assuming a CV instead proved wrong here: two single-repetition runs of
unchanged go-tcp on the 2-core machine differed by 19–29 % (runs 3 and 4, 2026-11-23).
Both sides are aggregate.Group figures, so the ratios are of the same numbers the report prints.
p99: the ratio of the groups' p99 (merged histograms), judged by the same rule on the spread of
the per-repetition p99s (for latency, higher is worse).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import aggregate
from .aggregate import Group
from .stats import CV_FACTOR, IMPROVEMENT, MIN_EFFECT, REGRESSION, UNJUDGED, WITHIN_NOISE, Stats, judge

ONLY_A, ONLY_B = "only in A", "only in B"


@dataclass(frozen=True)
class CompareRow:
    server: str
    workload: str
    point: str
    a: Stats | None  # throughput over run A's repetitions
    b: Stats | None
    ratio: float | None  # median B / median A
    threshold: float | None  # T of the rule above
    verdict: str  # regression | improvement | within noise | not judged | only in A | only in B
    p99_a: float | None = None  # µs, the group's p99 (merged histograms), as every output shows it
    p99_b: float | None = None
    p99_ratio: float | None = None
    p99_verdict: str | None = None  # regression (slower) | improvement | within noise

    @property
    def significant(self) -> bool:
        return self.verdict in (REGRESSION, IMPROVEMENT)


def _groups(store: Any, run_id: int) -> dict[tuple[str, str, str], Group]:
    _, results = aggregate.load(store, run_id)
    return {(g.server, g.workload, g.point): g for g in results.groups}


def _judge_p99(a: Group, b: Group) -> tuple[float | None, str | None]:
    """Ratio of the groups' p99 (the one every output shows) judged by the repetitions' spread."""
    pa, pb = a.latency["p99"], b.latency["p99"]
    sa, sb = a.stat(lambda m: m.latency.p99_us), b.stat(lambda m: m.latency.p99_us)
    if not pa or pb is None or sa is None or sb is None:
        return None, None
    ratio = pb / pa
    _, threshold, verdict = judge(sa, sb, higher_is_better=False)
    if verdict in (REGRESSION, IMPROVEMENT) and abs(ratio - 1) <= threshold:
        verdict = WITHIN_NOISE
    return ratio, verdict


def compare(store: Any, run_a: int, run_b: int) -> list[CompareRow]:
    """One row per server × workload × point present in either run, in A's order then B's extras."""
    ga, gb = _groups(store, run_a), _groups(store, run_b)
    rows: list[CompareRow] = []
    for key in list(ga) + [k for k in gb if k not in ga]:
        a_g, b_g = ga.get(key), gb.get(key)
        a = a_g.throughput if a_g else None
        b = b_g.throughput if b_g else None
        p99_a = a_g.latency["p99"] if a_g and a is not None else None
        p99_b = b_g.latency["p99"] if b_g and b is not None else None
        if a is None or b is None:
            verdict = ONLY_B if a is None and b is not None else ONLY_A if b is None and a is not None else "no data"
            rows.append(CompareRow(*key, a, b, None, None, verdict, p99_a, p99_b))
            continue
        assert a_g is not None and b_g is not None
        ratio, threshold, verdict = judge(a, b)
        p99_ratio, p99_verdict = _judge_p99(a_g, b_g)
        rows.append(CompareRow(*key, a, b, ratio, threshold, verdict, p99_a, p99_b, p99_ratio, p99_verdict))
    return rows


__all__ = ["CompareRow", "compare", "judge", "MIN_EFFECT", "CV_FACTOR", "UNJUDGED", "REGRESSION", "IMPROVEMENT",
           "WITHIN_NOISE"]
