"""Statistics across repetitions: summary figures, noise flag, outliers (hyperfine's manners).

Outliers use the modified z-score (Iglewicz & Hoaglin): 0.6745 * |x - median| / MAD,
flagged above 3.5. With MAD = 0 the mean absolute deviation stands in (x 1.2533).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

NOISE_CV = 0.05
OUTLIER_Z = 3.5


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    mean: float
    stdev: float  # sample standard deviation (n-1); 0 for n = 1
    min: float
    max: float
    cv: float  # stdev / mean; 0 when mean is 0
    # the median's distribution-free interval (median_ci) and the probability that it covers the
    # true median; with n < 6 it is [min, max] at less than 95 % (3 values: 75 %, 5 values: 94 %)
    ci_low: float = 0.0
    ci_high: float = 0.0
    ci_level: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(values: Iterable[float]) -> Stats:
    """Median/mean/stdev/min/max/CV of the finite values; ValueError when none."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        raise ValueError("summarize needs at least one finite value")
    mean = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    cv = sd / abs(mean) if mean else 0.0
    lo, hi, level = median_ci(xs)
    return Stats(len(xs), statistics.median(xs), mean, sd, min(xs), max(xs), cv, lo, hi, level)


CI_LEVEL = 0.95


def median_ci(values: Sequence[float], level: float = CI_LEVEL) -> tuple[float, float, float]:
    """(low, high, coverage): the narrowest order-statistic interval [x_(k), x_(n+1-k)] that covers
    the median with probability ≥ `level` — 1 − 2·P(Binomial(n, ½) < k), exact for any continuous
    distribution — or [min, max] with its own lower coverage when n is too small for `level`.
    Why not a bootstrap: with 3–5 repetitions a bootstrap of the median gives [min, max] too, but
    claims 95 % for it; this states the coverage it really has (DESIGN.md, "Judged by default")."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        raise ValueError("median_ci needs at least one value")
    if n == 1:
        return xs[0], xs[0], 0.0

    def coverage(k: int) -> float:  # P(x_(k) ≤ median ≤ x_(n+1-k))
        return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2 ** n

    k = 1
    while k + 1 <= (n + 1) // 2 and coverage(k + 1) >= level:
        k += 1
    return xs[k - 1], xs[n - k], coverage(k)


def noisy(stats: Stats, threshold: float = NOISE_CV) -> bool:
    """True when the coefficient of variation exceeds `threshold` (needs >= 2 values)."""
    return stats.n >= 2 and stats.cv > threshold


def modified_z_scores(values: Sequence[float]) -> list[float]:
    xs = [float(v) for v in values]
    if len(xs) < 3:
        return [0.0] * len(xs)
    med = statistics.median(xs)
    dev = [abs(x - med) for x in xs]
    mad = statistics.median(dev)
    if mad > 0:
        return [0.6745 * d / mad for d in dev]
    meanad = statistics.fmean(dev)
    if meanad == 0:
        return [0.0] * len(xs)
    return [d / (1.253314 * meanad) for d in dev]


def outliers(values: Sequence[float], threshold: float = OUTLIER_Z) -> list[int]:
    """Indices of values whose modified z-score exceeds `threshold` (needs >= 3 values)."""
    return [i for i, z in enumerate(modified_z_scores(values)) if z > threshold]


# -- judging a difference against the noise (compare, "at a glance") -------------------------
MIN_EFFECT = 0.05
CV_FACTOR = 2.0
REGRESSION, IMPROVEMENT, WITHIN_NOISE = "regression", "improvement", "within noise"
UNJUDGED = "not judged (1 repetition)"


def judge(a: Stats, b: Stats, higher_is_better: bool = True) -> tuple[float | None, float, str]:
    """(ratio B/A, threshold, verdict): B differs from A when the medians' intervals (median_ci;
    [min, max] for up to 5 repetitions) do not overlap AND |B/A − 1| > max(2 × max(CV_A, CV_B), 5 %). One repetition: not judged."""
    threshold = max(CV_FACTOR * max(a.cv, b.cv), MIN_EFFECT)
    if min(a.n, b.n) < 2:
        return (b.median / a.median if a.median else None), threshold, UNJUDGED
    if a.median == 0:
        return None, threshold, WITHIN_NOISE if b.median == 0 else (IMPROVEMENT if higher_is_better else REGRESSION)
    ratio = b.median / a.median
    overlap = a.ci_low <= b.ci_high and b.ci_low <= a.ci_high  # the medians' intervals
    if overlap or abs(ratio - 1) <= threshold:
        return ratio, threshold, WITHIN_NOISE
    better = ratio > 1 if higher_is_better else ratio < 1
    return ratio, threshold, IMPROVEMENT if better else REGRESSION
