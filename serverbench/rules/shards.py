"""Merge the loadgen/1 reports of N shards of one point into one report, exactly.

Counts and error classes add; the latency histograms (HdrHistogram V2, one fixed configuration
in every loadgen process) add exactly, and the summary percentiles are read from the sums;
timelines add second by second, each second's percentiles from its merged `hist`. Every shard
starts its measured window at the same planned instant (`--start-at`), so second t of one shard
is second t of the others. The start skew is the spread of the shards' actual starts. Fairness
(per-slot counts) merges by fairness.merge: each shard held slots of its own.
"""
from __future__ import annotations

from typing import Any, Iterable

from hdrh.histogram import HdrHistogram

from . import fairness

# Start skew above this is a warning stored with the cell: the shards' windows did not line up.
SKEW_WARN_MS = 5.0

_SUM_SUMMARY = ("requests", "responses", "ok", "errors", "bytes_read", "connections_opened", "missed_sends",
                "due", "in_flight", "never_sent", "dropped", "unanswered")
_TIMELINE_SUM = ("completed", "ok", "active_connections", "active_users", "target_rate", "target_users")
_QUANTILES = {"p50": 50.0, "p75": 75.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9, "p99_99": 99.99}


def merge_encoded(encoded: Iterable[str | None]) -> HdrHistogram | None:
    """Decode base64 V2 HdrHistograms and add them exactly (None entries skipped); None when none."""
    out: HdrHistogram | None = None
    for enc in encoded:
        if not enc:
            continue
        h = HdrHistogram.decode(enc)
        if out is None:
            out = h
        else:
            out.add(h)
    return out


def _summary(h: HdrHistogram | None) -> dict[str, float]:
    """loadgen's latency summary keys, read from a merged histogram (all 0 when empty)."""
    if h is None or h.get_total_count() == 0:
        return {"min": 0, "mean": 0.0, "stdev": 0.0, **{k: 0 for k in _QUANTILES}, "max": 0}
    q = h.get_percentile_to_value_dict(list(_QUANTILES.values()))
    return {"min": h.get_min_value(), "mean": round(h.get_mean_value(), 2), "stdev": round(h.get_stddev(), 2),
            **{k: q[p] for k, p in _QUANTILES.items()}, "max": h.get_max_value()}


def _add_dicts(dicts: Iterable[dict[str, int] | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in (d or {}).items():
            out[k] = out.get(k, 0) + int(v)
    return out


def _sum(values: Iterable[Any]) -> Any:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def merge_timelines(timelines: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Second t of every shard added into second t of the result."""
    n = max((len(t) for t in timelines), default=0)
    out = []
    for i in range(n):
        secs = [t[i] for t in timelines if i < len(t)]
        row: dict[str, Any] = {"t": i + 1}
        for k in _TIMELINE_SUM:
            row[k] = _sum(s.get(k) for s in secs)
        row["errors"] = _add_dicts(s.get("errors") for s in secs)
        h = merge_encoded(s.get("hist") for s in secs)
        s = _summary(h)
        row.update(p50_us=s["p50"], p90_us=s["p90"], p99_us=s["p99"], max_us=s["max"])
        row["hist"] = h.encode().decode() if h is not None else None
        out.append(row)
    return out


def actual_start_s(report: dict[str, Any]) -> float | None:
    """When a shard's load really started (Unix seconds): the planned start + its lateness."""
    planned = report.get("started_at_unix_s")
    if planned is None:
        return None
    return float(planned) + float(report.get("start_late_us") or 0) / 1e6


def start_skew_ms(reports: list[dict[str, Any]]) -> float | None:
    """Spread of the shards' actual starts, ms (None when a shard does not say)."""
    starts = [actual_start_s(r) for r in reports]
    if not starts or any(s is None for s in starts):
        return None
    return round((max(starts) - min(starts)) * 1000.0, 3)  # type: ignore[type-var]


def merge(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One loadgen/1 report from the shards' reports (dicts as loadgen wrote them)."""
    if not reports:
        raise ValueError("no shard reports to merge")
    first = reports[0]
    duration = max(float(r.get("duration_s") or 0.0) for r in reports)
    sums = {k: _sum(r["summary"].get(k) for r in reports) for k in _SUM_SUMMARY}
    summary: dict[str, Any] = {k: v for k, v in sums.items() if v is not None}  # absent stays absent
    summary["unanswered_oldest_us"] = max(float(r["summary"].get("unanswered_oldest_us") or 0) for r in reports)
    per_s = (lambda n: round(n / duration, 1) if duration > 0 else 0.0)
    summary["rps"] = per_s(summary.get("responses", 0))
    summary["bytes_per_s"] = per_s(summary.get("bytes_read", 0))
    hists: dict[str, str | None] = {}
    for name, key in (("latency", "latency_us"), ("answered", "answered_latency_us"), ("service", "service_us")):
        h = merge_encoded((r.get("histograms") or {}).get(name) for r in reports)
        hists[name] = h.encode().decode() if h is not None else None
        summary[key] = _summary(h) if h is not None or name != "service" else None
    config = {**(first.get("config") or {}), "shard": None, "shards": len(reports)}
    starts = [r.get("started_at_unix_s") for r in reports if r.get("started_at_unix_s") is not None]
    return {
        "schema": first["schema"], "loadgen_version": first.get("loadgen_version"), "config": config,
        "started_at": min((r.get("started_at") or "" for r in reports), default=None) or None,
        "started_at_unix_s": min(starts) if starts else None,
        "duration_s": duration,
        "interrupted": any(r.get("interrupted") for r in reports),
        "summary": summary,
        "error_classes": _add_dicts(r.get("error_classes") for r in reports),
        "status_codes": _add_dicts(r.get("status_codes") for r in reports),
        "histograms": hists,
        "timeline": merge_timelines([r.get("timeline") or [] for r in reports]),
        **({"noise": merge_noise([r["noise"] for r in reports if r.get("noise")])}
           if any(r.get("noise") for r in reports) else {}),
        **({"fairness": fairness.merge(r["fairness"] for r in reports if r.get("fairness"))}
           if any(r.get("fairness") for r in reports) else {}),
    }


def merge_noise(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The shards' noise counters: every count adds (each shard held its share of the connections, so
    the peaks add to an upper bound of the peak held at once); the shape is the first shard's."""
    out: dict[str, Any] = {"shape": parts[0].get("shape")}
    for p in parts:
        for k, v in p.items():
            if isinstance(v, dict):
                out[k] = _add_dicts([out.get(k), v])
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = out.get(k, 0) + v
    return out
