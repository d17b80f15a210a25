"""Each tool's own output → the figures serverbench keeps: counts, its rate, its percentiles.

A tool's figures are taken as it prints them (its rate is its definition of a rate); what a tool
does not print stays None. Units become µs and seconds. Tests: tests/test_crosscheck_parsers.py
on outputs recorded from real runs here (tests/fixtures/crosscheck/).
"""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..model import LoadgenFormatError, LoadgenReport


class ToolOutputError(Exception):
    """A tool's output holds no result (one line: the tool's own message)."""


@dataclass
class ToolFigures:
    reported_rps: float | None = None  # the tool's own rate, as it defines it
    requests: int | None = None  # requests the tool counted as completed (its own figure)
    ok: int | None = None  # 2xx/3xx responses
    errors: int | None = None  # non-2xx responses + transport errors, where it tells them
    timeouts: int | None = None
    duration_s: float | None = None  # the run time the tool printed
    p50_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None
    max_us: float | None = None
    error_classes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    loadgen: LoadgenReport | None = None  # loadgen's whole result, kept with its cell


_UNIT_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


def _us(value: str, unit: str) -> float:
    return float(value) * _UNIT_US[unit]


def _grab(pattern: str, text: str, cast: Callable[[str], Any] = float, default: Any = None) -> Any:
    m = re.search(pattern, text, re.M)
    return cast(m.group(1).replace(",", "")) if m else default


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


# -- h2load ---------------------------------------------------------------------------------------
def parse_h2load(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    m = re.search(r"^finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", stdout, re.M)
    r = re.search(r"^requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", stdout, re.M)
    if not m or not r:
        raise ToolOutputError(f"h2load printed no summary: {_last_line(stdout + chr(10) + stderr)}")
    done, succeeded, failed, errored, timeout = (int(r.group(k)) for k in (2, 3, 4, 5, 6))
    f = ToolFigures(requests=done, ok=succeeded, duration_s=_us(m.group(1), m.group(2)) / 1e6,
                    reported_rps=float(m.group(3)), timeouts=timeout)
    codes = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", stdout, re.M)
    status = int(codes.group(3)) + int(codes.group(4)) if codes else 0
    f.error_classes = {k: v for k, v in (("status", status), ("failed", failed - errored - timeout),
                                         ("errored", errored), ("timeout", timeout)) if v > 0}
    f.errors = failed + status
    lat = re.search(r"^time for request:\s+[\d.]+(us|ms|s)\s+([\d.]+)(us|ms|s)", stdout, re.M)
    if lat:
        f.max_us = _us(lat.group(2), lat.group(3))
    f.notes.append("h2load prints no percentiles (min, max, mean, sd only); its req/s counts the requests done "
                   "over its whole run, connections included")
    return f


# -- wrk ------------------------------------------------------------------------------------------
def parse_wrk(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h),", stdout, re.M)
    if not m:
        raise ToolOutputError(f"wrk printed no summary: {_last_line(stdout + chr(10) + stderr)}")
    f = ToolFigures(requests=int(m.group(1)), duration_s=_us(m.group(2), m.group(3)) / 1e6)
    f.reported_rps = _grab(r"^Requests/sec:\s+([\d.]+)", stdout)
    for pct, key in (("50", "p50_us"), ("90", "p90_us"), ("99", "p99_us")):
        hit = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m)\s*$", stdout, re.M)
        if hit:
            setattr(f, key, _us(hit.group(1), hit.group(2)))
    lat = re.search(r"^\s+Latency\s+\S+?(?:us|ms|s|m)\s+\S+?(?:us|ms|s|m)\s+([\d.]+)(us|ms|s|m)", stdout, re.M)
    if lat:
        f.max_us = _us(lat.group(1), lat.group(2))
    non2xx = _grab(r"^\s+Non-2xx or 3xx responses:\s+(\d+)", stdout, int, 0)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", stdout)
    classes = dict(zip(("connect", "read", "write", "timeout"), map(int, sock.groups()))) if sock else {}
    classes["status"] = non2xx
    f.error_classes = {k: v for k, v in classes.items() if v}
    f.timeouts = classes.get("timeout", 0)
    f.errors = sum(classes.values())
    f.ok = f.requests - non2xx
    f.notes.append("wrk's Requests/sec counts responses of any status; socket errors are not requests to it")
    return f


# -- ab -------------------------------------------------------------------------------------------
def parse_ab(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    text = stdout + "\n" + stderr
    aborted = re.search(r"^Total of (\d+) requests completed", text, re.M)
    complete = _grab(r"^Complete requests:\s+(\d+)", text, int)
    if complete is None:
        if aborted:
            why = next((ln.split("...")[-1].strip() for ln in text.splitlines() if "(be patient)" in ln
                        and ln.split("...")[-1].strip()), "aborted")
            return ToolFigures(requests=int(aborted.group(1)),
                               notes=[f"ab aborted after {int(aborted.group(1)):,} requests: {why}; it prints no "
                                      "rate or percentiles then"])
        raise ToolOutputError(f"ab printed no summary: {_last_line(text)}")
    f = ToolFigures(requests=complete, duration_s=_grab(r"^Time taken for tests:\s+([\d.]+) seconds", text))
    f.reported_rps = _grab(r"^Requests per second:\s+([\d.]+)", text)
    failed = _grab(r"^Failed requests:\s+(\d+)", text, int, 0)
    detail = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", text)
    non2xx = _grab(r"^Non-2xx responses:\s+(\d+)", text, int, 0)
    classes = {"status": non2xx}
    if detail:
        c, r, ln, e = map(int, detail.groups())
        classes.update(connect=c, read=r + e, malformed=ln)
    f.error_classes = {k: v for k, v in classes.items() if v}
    f.errors = failed + non2xx
    f.ok = max(0, complete - failed - non2xx)
    f.timeouts = 0
    for pct, key in (("50", "p50_us"), ("90", "p90_us"), ("99", "p99_us"), ("100", "max_us")):
        hit = re.search(rf"^\s+{pct}%\s+(\d+)", text, re.M)
        if hit:
            setattr(f, key, float(hit.group(1)) * 1e3)
    if not f.ok:  # ab prints 0 ms for requests that never got an answer
        f.p50_us = f.p90_us = f.p99_us = f.max_us = None
    f.notes.append("ab's percentiles are whole milliseconds; 'Complete requests' includes failed ones")
    ka = _grab(r"^Keep-Alive requests:\s+(\d+)", text, int)
    if ka is not None and complete and ka < complete:
        f.notes.append(f"only {ka:,} of {complete:,} requests reused a connection (HTTP/1.0 keep-alive)")
    if aborted:
        f.notes.append(f"ab stopped early after {int(aborted.group(1)):,} requests")
    return f


# -- hey ------------------------------------------------------------------------------------------
def parse_hey(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    total = _grab(r"^\s+Total:\s+([\d.]+) secs", stdout)
    if total is None:
        raise ToolOutputError(f"hey printed no summary: {_last_line(stdout + chr(10) + stderr)}")
    f = ToolFigures(duration_s=total, reported_rps=_grab(r"^\s+Requests/sec:\s+([\d.]+)", stdout))
    codes = {int(c): int(n) for c, n in re.findall(r"^\s+\[(\d{3})\]\s+(\d+) responses", stdout, re.M)}
    errs = re.findall(r"^\s+\[(\d+)\]\s+(.+)$", stdout.split("Error distribution:")[1], re.M) \
        if "Error distribution:" in stdout else []
    responses = sum(codes.values())
    n_err = sum(int(n) for n, _ in errs)
    f.timeouts = sum(int(n) for n, msg in errs if "Timeout" in msg or "deadline exceeded" in msg)
    refused = sum(int(n) for n, msg in errs if "connection refused" in msg)
    non2xx = sum(n for c, n in codes.items() if not 200 <= c < 400)
    f.requests, f.ok = responses + n_err, responses - non2xx
    f.errors = n_err + non2xx
    f.error_classes = {k: v for k, v in {"timeout": f.timeouts, "connect": refused, "status": non2xx,
                                         "read": n_err - f.timeouts - refused}.items() if v}
    if responses:
        for pct, key in (("50", "p50_us"), ("90", "p90_us"), ("99", "p99_us")):
            hit = re.search(rf"^\s+{pct}%+ in ([\d.]+) secs", stdout, re.M)
            if hit:
                setattr(f, key, float(hit.group(1)) * 1e6)
        f.max_us = _grab(r"^\s+Slowest:\s+([\d.]+) secs", stdout) * 1e6
    f.notes.append("hey's Requests/sec counts errors as well as responses; latencies to 0.1 ms")
    return f


# -- oha ------------------------------------------------------------------------------------------
def parse_oha(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    try:
        data = json.loads(stdout[stdout.index("{"):]) if "{" in stdout else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or "summary" not in data:
        raise ToolOutputError(f"oha printed no JSON summary: {_last_line(stdout + chr(10) + stderr)}")
    s = data["summary"]
    f = ToolFigures(reported_rps=s.get("requestsPerSec"), duration_s=s.get("total"))
    codes = {int(k): int(v) for k, v in (data.get("statusCodeDistribution") or {}).items()}
    errs = {str(k): int(v) for k, v in (data.get("errorDistribution") or {}).items()}
    responses = sum(codes.values())
    n_err = sum(errs.values())
    # oha counts requests cut off by the deadline (-z) among its errors; they are not failures
    cut = sum(v for k, v in errs.items() if "aborted due to deadline" in k)
    f.timeouts = sum(v for k, v in errs.items() if "timeout" in k.lower() and "deadline" not in k)
    refused = sum(v for k, v in errs.items() if "refused" in k.lower())
    non2xx = sum(n for c, n in codes.items() if not 200 <= c < 400)
    f.requests, f.ok = responses + n_err - cut, responses - non2xx
    f.errors = n_err - cut + non2xx
    f.error_classes = {k: v for k, v in {"timeout": f.timeouts, "connect": refused, "status": non2xx,
                                         "read": n_err - cut - f.timeouts - refused}.items() if v}
    pct = data.get("latencyPercentiles") or {}
    for src, key in (("p50", "p50_us"), ("p90", "p90_us"), ("p99", "p99_us")):
        if pct.get(src) is not None:
            setattr(f, key, float(pct[src]) * 1e6)
    if s.get("slowest") is not None:
        f.max_us = float(s["slowest"]) * 1e6
    if cut:
        f.notes.append(f"{cut:,} requests cut off at the deadline (oha lists them as errors; not counted here)")
    f.notes.append("oha's requestsPerSec counts every request it ended: errors and deadline cut-offs included")
    return f


# -- k6 -------------------------------------------------------------------------------------------
def parse_k6(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    text = (files or {}).get("result")
    if not text:
        raise ToolOutputError(f"k6 wrote no summary: {_last_line(stdout + chr(10) + stderr)}")
    m = json.loads(text).get("metrics") or {}
    state = json.loads(text).get("state") or {}

    def val(metric: str, key: str) -> Any:
        return ((m.get(metric) or {}).get("values") or {}).get(key)

    count = int(val("http_reqs", "count") or 0)
    failed = int(val("http_req_failed", "passes") or 0)
    f = ToolFigures(reported_rps=val("http_reqs", "rate"), requests=count, ok=count - failed, errors=failed,
                    duration_s=(state.get("testRunDurationMs") or 0) / 1e3 or None)
    for src, key in (("med", "p50_us"), ("p(90)", "p90_us"), ("p(99)", "p99_us"), ("max", "max_us")):
        v = val("http_req_duration", src)
        if v is not None and count:
            setattr(f, key, float(v) * 1e3)
    f.timeouts = len(re.findall(r"request timeout", stdout + stderr))
    f.error_classes = {k: v for k, v in {"timeout": f.timeouts, "read": failed - f.timeouts}.items() if v > 0}
    dropped = val("dropped_iterations", "count")
    if dropped:
        f.notes.append(f"{int(dropped):,} iterations dropped (no free VU when due): never sent, not in its latency")
    f.notes.append("k6's http_reqs rate counts failed requests too; timeouts counted from its warning lines")
    return f


# -- drill ----------------------------------------------------------------------------------------
def parse_drill(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    text = stdout + "\n" + stderr
    total = _grab(r"^Total requests\s+(\d+)", text, int)
    if total is None:
        raise ToolOutputError(f"drill printed no statistics: {_last_line(text)}")
    f = ToolFigures(requests=total, ok=_grab(r"^Successful requests\s+(\d+)", text, int),
                    errors=_grab(r"^Failed requests\s+(\d+)", text, int),
                    reported_rps=_grab(r"^Requests per second\s+([\d.]+)", text))
    # it prints its run time to 0.1 s only: requests ÷ its own rate is its run time, exactly
    printed = _grab(r"^Time taken for tests\s+([\d.]+) seconds", text)
    f.duration_s = total / f.reported_rps if f.reported_rps else printed
    if f.ok:  # drill times failed requests too (to the failure): no latency when nothing succeeded
        for label, key in (("Median time per request", "p50_us"), ("99.0'th percentile", "p99_us"),
                           ("Max time per request", "max_us")):
            hit = re.search(rf"^{label}\s+([\d.]+)(ms|us|ns|s)\s*$", text, re.M)
            if hit:
                setattr(f, key, _us(hit.group(1), hit.group(2)))
    if f.errors:
        f.error_classes = {"read": f.errors}
    f.notes.append("drill counts non-2xx responses and timeouts alike as failed, without telling which")
    return f


# -- Locust ---------------------------------------------------------------------------------------
def parse_locust(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    files = files or {}
    stats = files.get("result_stats.csv")
    if not stats:
        raise ToolOutputError(f"Locust wrote no statistics: {_last_line(stdout + chr(10) + stderr)}")
    rows = list(csv.DictReader(io.StringIO(stats)))
    agg = next((r for r in rows if r.get("Name") == "Aggregated"), None)
    if agg is None:
        raise ToolOutputError("Locust's statistics have no 'Aggregated' row")
    count, fails = int(agg["Request Count"]), int(agg["Failure Count"])
    f = ToolFigures(reported_rps=float(agg["Requests/s"]), requests=count, ok=count - fails, errors=fails)
    if count:
        for src, key in (("50%", "p50_us"), ("90%", "p90_us"), ("99%", "p99_us"), ("Max Response Time", "max_us")):
            if agg.get(src) not in (None, "", "N/A"):
                setattr(f, key, float(agg[src]) * 1e3)
    timeouts = 0
    for r in csv.DictReader(io.StringIO(files.get("result_failures.csv", ""))):
        if "timed out" in r.get("Error", "") or "Timeout" in r.get("Error", ""):
            timeouts += int(r.get("Occurrences") or 0)
    f.timeouts = timeouts
    f.error_classes = {k: v for k, v in {"timeout": timeouts, "read": fails - timeouts}.items() if v > 0}
    f.notes.append("Locust's percentiles are rounded to two significant digits; its Requests/s spans "
                   "its first to its last request")
    return f


# -- loadgen --------------------------------------------------------------------------------------
def parse_loadgen(stdout: str, stderr: str = "", files: dict[str, str] | None = None) -> ToolFigures:
    text = (files or {}).get("result")
    if not text:
        raise ToolOutputError(f"loadgen wrote no JSON: {_last_line(stderr)}")
    try:
        r = LoadgenReport.parse(json.loads(text), "loadgen result")
    except (LoadgenFormatError, ValueError) as e:
        raise ToolOutputError(str(e).splitlines()[0]) from None
    s, lat = r.summary, r.summary.latency_us
    return ToolFigures(reported_rps=s.rps, requests=s.requests, ok=s.ok, errors=s.errors,
                       timeouts=r.error_classes.get("timeout", 0), duration_s=r.duration_s,
                       p50_us=lat.p50, p90_us=lat.p90, p99_us=lat.p99, max_us=lat.max,
                       error_classes={k: v for k, v in r.error_classes.items() if v}, loadgen=r,
                       notes=["loadgen's rps counts responses of any status"])


PARSERS: dict[str, Callable[..., ToolFigures]] = {
    "h2load": parse_h2load, "wrk": parse_wrk, "ab": parse_ab, "hey": parse_hey, "oha": parse_oha, "k6": parse_k6,
    "drill": parse_drill, "locust": parse_locust, "loadgen": parse_loadgen}


def parse(tool: str, stdout: str, stderr: str, files: dict[str, str]) -> ToolFigures:
    """The figures in `tool`'s output; ToolOutputError when it printed no result."""
    return PARSERS[tool](stdout, stderr, files)


__all__ = ["ToolFigures", "ToolOutputError", "parse", "PARSERS"]
