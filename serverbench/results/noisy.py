"""The noisy workload's verdicts (part of the one aggregation): what bad clients on connections of
their own cost a row's legitimate traffic. Each noise point is compared with its quiet twin (the same
fixed open load in the same server start, without noise): the legitimate p99 over every due request
and the successful rate as ratios of the twin's (medians over the repetitions, each noise cell against the
twin of its own start), and a verdict from the rules below, judged per repetition: the row's verdict is the
one they all gave, or split with how many gave each (rules/agreement.py), never the most common one. Every
output reads the result through GroupFigures.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from ..model import FigureGroup
from ..rules.agreement import SPLIT, agree

DOWN_RATE = 0.10  # served under 10 % of its quiet rate: the legitimate traffic is not being served
STARVED_RATE = 0.90  # under 90 %: some of the fixed demand went unserved or failed
SLOWED_P99 = 2.0  # the p99 at least doubled …
SLOWED_MIN_US = 1_000.0  # … and grew by at least 1 ms (a 100 µs → 250 µs p99 is not a reader's "slowed")

RULES: list[tuple[str, str]] = [
    ("down", f"successful legitimate requests/s under {DOWN_RATE:.0%} of the quiet twin's: the bad clients took "
             "the server away from the good ones"),
    ("starved", f"under {STARVED_RATE:.0%} of the quiet twin's: part of the fixed demand went unserved, failed or "
                "timed out"),
    ("slowed", f"the rate held, but the p99 over every due request is at least {SLOWED_P99:g}× the twin's and "
               f"{SLOWED_MIN_US / 1000:g} ms above it (medians over the repetitions)"),
    ("unaffected", "neither: the noise cost the legitimate traffic nothing a reader would notice"),
]
INTRO = ("Each noise shape beside the same fixed legitimate load as the quiet twin, measured in the same server "
         "start. Ratios are noise ÷ quiet within each repetition (p99 over every due request: higher is worse; "
         "successful rate: lower is worse), the median over the repetitions; the verdict is the first rule that "
         "applies, judged in each repetition: the row's is the one they all gave, or split with how many gave "
         "each (\"slowed 2 of 3, unaffected 1\"), never the most common one. A quiet twin that did not hold the offered rate is marked: its row is compared with a starved "
         "baseline.")
VERDICTS = [v for v, _ in RULES]
# How a row ended the noise connections (loadgen's counters): shown beside the verdicts.
ENDED = ("closed", "reset", "timeout", "open_at_end")


@dataclass(frozen=True)
class NoiseEffect:
    shape: str
    twin: str
    p99_ratio: float | None  # median over the repetitions of (noise p99 ÷ its start's quiet p99)
    rate_ratio: float | None  # the same for the successful rate
    verdict: str | None  # the one every judged repetition gave, SPLIT, None: no repetition has both sides
    twin_held: bool | None  # the quiet twin itself held the offered rate (False: a starved baseline)
    verdict_counts: str | None = None  # how many repetitions gave each verdict: "slowed 2 of 3, unaffected 1"
    heavy_cpu_ms: float | None = None  # head-of-line: server CPU per heavy request (heavy_cpu_ms_per_request)


def verdict(p99_ratio: float | None, rate_ratio: float | None, p99_added_us: float | None) -> str | None:
    """The first rule of RULES that applies (None without a rate ratio)."""
    if rate_ratio is None:
        return None
    if rate_ratio < DOWN_RATE:
        return "down"
    if rate_ratio < STARVED_RATE:
        return "starved"
    if p99_ratio is None or p99_added_us is None:
        return None
    if p99_ratio >= SLOWED_P99 and p99_added_us >= SLOWED_MIN_US:
        return "slowed"
    return "unaffected"


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _pairs(noise: list[Any], quiet: list[Any]) -> list[tuple[float | None, float | None, float | None]]:
    """(p99 ratio, rate ratio, p99 added in µs) of each noise cell against the quiet twin of its own
    repetition (the same server start), in the noise cells' order; cells without a twin left out."""
    twin = {c.repetition: c.metrics for c in quiet}
    out = []
    for c in noise:
        q, m = twin.get(c.repetition), c.metrics
        if q is None:
            continue
        rate = m.counts.rps / q.counts.rps if m.counts.rps is not None and q.counts.rps else None
        both = m.latency.p99_us is not None and q.latency.p99_us
        out.append((m.latency.p99_us / q.latency.p99_us if both else None, rate,
                    m.latency.p99_us - q.latency.p99_us if both else None))
    return out


def paired(noise: list[Any], quiet: list[Any]) -> tuple[float | None, float | None, float | None]:
    """(p99 ratio, rate ratio, p99 added in µs): medians over the repetitions, each noise cell against
    the quiet twin of its own repetition (the same server start), so a repetition disturbed by something
    else weighs one vote, not the merged histogram's tail."""
    pairs = _pairs(noise, quiet)

    def med(i: int) -> float | None:
        return _median([v for p in pairs if (v := p[i]) is not None])
    return med(0), med(1), med(2)


def heavy_cpu_ms_per_request(noise: list[Any], quiet: list[Any]) -> float | None:
    """head-of-line: the server CPU a heavy request cost, in ms (median over the repetitions): the server's
    CPU per second beside the heavy class minus its quiet twin's in the same start, over the heavy requests
    served per second. The light load is the same in both, so what is left is the heavy class's; None
    outside head-of-line or without a served heavy request."""
    twin = {c.repetition: c.metrics for c in quiet}
    out = []
    for c in noise:
        q, m, n = twin.get(c.repetition), c.metrics, c.metrics.noisy.noise or {}
        if q is None or n.get("shape") != "heavy" or not n.get("rps"):
            continue
        if m.usage.cpu_percent is None or q.usage.cpu_percent is None:
            continue
        out.append(1000 * (m.usage.cpu_percent - q.usage.cpu_percent) / 100 / float(n["rps"]))
    return _median(out)


def repetition_verdicts(noise: list[Any], quiet: list[Any]) -> list[str | None]:
    """Each repetition's verdict, by the same rules on its own ratios (None: it cannot be judged)."""
    return [verdict(p99, rate, added) for p99, rate, added in _pairs(noise, quiet)]


def attach(groups: list[Any]) -> None:
    """Set `noise_effect` on every noise group of one noisy workload (aggregate.Group, loosely typed:
    aggregate imports this module), against its twin group of the same server."""
    by_point = {(g.point, g.server): g for g in groups}
    for g in groups:
        shape, twin = shape_of(g), twin_of(g)
        if shape is None or twin is None:
            continue
        q = by_point.get((twin, g.server))
        quiet = q.ok if q is not None else []
        p99_ratio, rate_ratio, _ = paired(g.ok, quiet)
        agreement = agree(repetition_verdicts(g.ok, quiet), VERDICTS)
        g.noise_effect = NoiseEffect(shape, twin, p99_ratio, rate_ratio, agreement.verdict,
                                     q.held if q is not None else None, agreement.text(),
                                     heavy_cpu_ms_per_request(g.ok, quiet))


def shape_of(g: Any) -> str | None:
    return next((c.metrics.noisy.noise.get("shape") for c in g.ok if c.metrics.noisy.noise), None)


def twin_of(g: Any) -> str | None:
    return next((c.metrics.noisy.noise_twin for c in g.ok + g.bad if c.metrics.noisy.noise_twin), None)


def counters(cells: list[Any]) -> dict[str, float | None]:
    """Medians over the repetitions of what the noise did: connections held at the peak, answers by
    class and how the server ended them (GroupNoise's figures of the same names)."""
    noise = [c.metrics.noisy.noise for c in cells if c.metrics.noisy.noise]

    def med(get: Any) -> float | None:
        vals = [float(v) for n in noise if (v := get(n)) is not None]
        return statistics.median(vals) if vals else None
    out: dict[str, float | None] = {
        "noise_held_peak": med(lambda n: n.get("held_peak")),
        "noise_opened": med(lambda n: n.get("opened")),
        "noise_4xx": med(lambda n: (n.get("responses") or {}).get("4xx")),
    }
    for k in ENDED:
        out[f"noise_{k}"] = med(lambda n, k=k: (n.get("ended") or {}).get(k))
    # head-of-line's heavy requests (run/heavy_run.py): their rate and latency, a class of their own
    out.update(noise_heavy_rps=med(lambda n: n.get("rps") if n.get("shape") == "heavy" else None),
               noise_heavy_p99_us=med(lambda n: n.get("p99_us") if n.get("shape") == "heavy" else None),
               noise_heavy_errors=med(lambda n: n.get("errors") if n.get("shape") == "heavy" else None))
    return out


class GroupNoise(FigureGroup):
    """A noisy group's figures (GroupFigures.noise): the noise shape, its quiet twin, the ratios to it and
    the verdict; what the noise did (medians over the repetitions of loadgen's noise counters)."""

    noise_shape: str | None = None
    noise_twin: str | None = None
    noise_p99_ratio: float | None = None
    noise_rate_ratio: float | None = None
    noise_verdict: str | None = None  # the one every repetition gave, "split" where they differ
    noise_verdict_counts: str | None = None  # how many repetitions gave each: "slowed 2 of 3, unaffected 1"
    noise_twin_held: bool | None = None  # False: the quiet twin itself did not hold the rate
    noise_held_peak: float | None = None
    noise_opened: float | None = None
    noise_4xx: float | None = None
    noise_closed: float | None = None
    noise_reset: float | None = None
    noise_timeout: float | None = None
    noise_open_at_end: float | None = None
    noise_heavy_rps: float | None = None  # head-of-line: the heavy requests' successful rate …
    noise_heavy_p99_us: float | None = None  # … their own p99 over every due one …
    noise_heavy_errors: float | None = None  # … and how many failed
    noise_heavy_cpu_ms: float | None = None  # … and the server CPU each cost (heavy_cpu_ms_per_request)


def verdict_text(f: GroupNoise) -> str | None:
    """The verdict as a reader sees it: "split (slowed 2 of 3, unaffected 1)" where the repetitions differ."""
    return f"{f.noise_verdict} ({f.noise_verdict_counts})" if f.noise_verdict == SPLIT else f.noise_verdict


def figures(g: Any) -> GroupNoise:
    """The noisy figures of one group (all None outside a noisy workload)."""
    e: NoiseEffect | None = getattr(g, "noise_effect", None)
    if e is None and shape_of(g) is None:
        return GroupNoise()
    return GroupNoise(noise_shape=e.shape if e else shape_of(g), noise_twin=e.twin if e else twin_of(g),
                      noise_p99_ratio=e.p99_ratio if e else None, noise_rate_ratio=e.rate_ratio if e else None,
                      noise_verdict=e.verdict if e else None, noise_verdict_counts=e.verdict_counts if e else None,
                      noise_twin_held=e.twin_held if e else None, noise_heavy_cpu_ms=e.heavy_cpu_ms if e else None,
                      **counters(g.ok))
