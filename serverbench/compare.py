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
p99 gets the same rule on the per-repetition p99 figures (for latency, higher is worse).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .stats import Stats, summarize

MIN_EFFECT = 0.05
CV_FACTOR = 2.0
REGRESSION, IMPROVEMENT, WITHIN_NOISE = "regression", "improvement", "within noise"
UNJUDGED = "not judged (1 repetition)"
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
    p99_a: Stats | None = None  # µs
    p99_b: Stats | None = None
    p99_ratio: float | None = None
    p99_verdict: str | None = None  # regression (slower) | improvement | within noise

    @property
    def significant(self) -> bool:
        return self.verdict in (REGRESSION, IMPROVEMENT)


def judge(a: Stats, b: Stats, higher_is_better: bool = True) -> tuple[float | None, float, str]:
    """(ratio B/A, threshold, verdict) for two samples under the module's noise rule."""
    threshold = max(CV_FACTOR * max(a.cv, b.cv), MIN_EFFECT)
    if min(a.n, b.n) < 2:
        return (b.median / a.median if a.median else None), threshold, UNJUDGED
    if a.median == 0:
        return None, threshold, WITHIN_NOISE if b.median == 0 else (IMPROVEMENT if higher_is_better else REGRESSION)
    ratio = b.median / a.median
    overlap = a.min <= b.max and b.min <= a.max
    if overlap or abs(ratio - 1) <= threshold:
        return ratio, threshold, WITHIN_NOISE
    better = ratio > 1 if higher_is_better else ratio < 1
    return ratio, threshold, IMPROVEMENT if better else REGRESSION


def _samples(cells: list[Any]) -> dict[tuple[str, str, str], tuple[list[float], list[float]]]:
    """(server, workload, point) -> (throughputs, p99s) of the ok repetitions."""
    out: dict[tuple[str, str, str], tuple[list[float], list[float]]] = {}
    for c in cells:
        key = (c.server, c.workload, c.point)
        tput, p99 = out.setdefault(key, ([], []))
        if c.status != "ok":
            continue
        m = c.metrics or {}
        value = m.get("capacity_rps", m.get("rps"))
        if isinstance(value, (int, float)):
            tput.append(float(value))
        if isinstance(m.get("p99_us"), (int, float)):
            p99.append(float(m["p99_us"]))
    return out


def _stats(xs: list[float]) -> Stats | None:
    return summarize(xs) if xs else None


def compare(store: Any, run_a: int, run_b: int) -> list[CompareRow]:
    """One row per server × workload × point present in either run, in A's order then B's extras."""
    sa, sb = _samples(store.cells(run_a)), _samples(store.cells(run_b))
    rows: list[CompareRow] = []
    for key in list(sa) + [k for k in sb if k not in sa]:
        ta, pa = sa.get(key, ([], []))
        tb, pb = sb.get(key, ([], []))
        a, b, p99_a, p99_b = _stats(ta), _stats(tb), _stats(pa), _stats(pb)
        if a is None or b is None:
            verdict = ONLY_B if a is None and b is not None else ONLY_A if b is None and a is not None else "no data"
            rows.append(CompareRow(*key, a, b, None, None, verdict, p99_a, p99_b))
            continue
        ratio, threshold, verdict = judge(a, b)
        p99_ratio = p99_verdict = None
        if p99_a and p99_b:
            p99_ratio, _, p99_verdict = judge(p99_a, p99_b, higher_is_better=False)
        rows.append(CompareRow(*key, a, b, ratio, threshold, verdict, p99_a, p99_b, p99_ratio, p99_verdict))
    return rows


__all__ = ["CompareRow", "compare", "judge", "MIN_EFFECT", "CV_FACTOR", "UNJUDGED", "REGRESSION", "IMPROVEMENT", "WITHIN_NOISE"]
