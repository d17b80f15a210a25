"""Run report: self-contained HTML (plotly inlined), a Markdown summary and a CSV.

Aggregation rules (the same in all three outputs):
- throughput: median of the repetitions' rps (capacity points: capacity_rps), with min–max;
- latency percentiles: from the repetitions' HdrHistograms merged exactly (fallback: median of
  the per-repetition figures when a cell has no histogram);
- CPU, memory, client CPU: median across repetitions; errors, timeouts, requests: summed.
"""
from __future__ import annotations

import csv
import io
import re
import statistics
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

from hdrh.histogram import HdrHistogram

from .fingerprint import normalize
from .stats import NOISE_CV, Stats, noisy, summarize

RAMP_WORKLOADS = {"stressgrid", "locust-users"}
DEFAULT_P99_LIMIT_US = 10_000.0
# Percentiles reported in tables/CSV, keyed by the name used in metrics (…_us).
PCTS = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99}


@dataclass(frozen=True)
class ReportPaths:
    html: Path
    markdown: Path
    csv: Path


@dataclass(frozen=True)
class Warning_:
    kind: str  # noisy | client-bound | lower-bound | errors | stalls | unanswered | failed | missed-sends | histogram
    server: str
    text: str


def point_key(label: str) -> tuple:
    """Natural order for point labels: c=4 before c=16 before c=1024."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", label))


def merge_histograms(encoded: Iterable[str]) -> HdrHistogram | None:
    """Decode base64 V2 histograms and add them exactly; None when there are none."""
    merged: HdrHistogram | None = None
    for enc in encoded:
        h = HdrHistogram.decode(enc)
        if merged is None:
            merged = h
        else:
            merged.add(h)
    return merged


def hist_percentiles(h: HdrHistogram, percentiles: list[float]) -> dict[float, float]:
    # One pass over the counts (get_value_at_percentile would rescan per call).
    return {p: float(v) for p, v in h.get_percentile_to_value_dict(percentiles).items()}


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


@dataclass
class Group:
    """All repetitions of one (workload, point, server)."""

    workload: str
    point: str
    server: str
    info: dict[str, Any]  # fingerprint["servers"][server]: language, model, framework, ...
    ok: list[Any] = field(default_factory=list)  # CellRecord with status 'ok'
    bad: list[Any] = field(default_factory=list)  # failed / skipped CellRecords

    # -- plain figures ----------------------------------------------------------------------
    @property
    def model(self) -> str:
        return self.info.get("model") or "unknown"

    @property
    def language(self) -> str:
        return self.info.get("language") or ""

    def values(self, key: str) -> list[float]:
        return [float(c.metrics[key]) for c in self.ok
                if isinstance(c.metrics.get(key), (int, float)) and not isinstance(c.metrics.get(key), bool)]

    def stat(self, key: str) -> Stats | None:
        vs = self.values(key)
        return summarize(vs) if vs else None

    def median(self, key: str) -> float | None:
        return _median(self.values(key))

    def total(self, key: str) -> int:
        return int(sum(self.values(key)))

    @property
    def is_capacity(self) -> bool:
        return any("capacity_rps" in c.metrics for c in self.ok)

    @cached_property
    def rps(self) -> Stats | None:
        return self.stat("rps")

    @cached_property
    def throughput(self) -> Stats | None:
        """What the server is ranked by: capacity_rps for capacity points, else rps."""
        return self.stat("capacity_rps") if self.is_capacity else self.rps

    @property
    def client_saturated(self) -> bool:
        return any(bool(c.metrics.get("client_saturated")) for c in self.ok)

    @property
    def connections(self) -> float | None:
        return self.median("connections") or self.median("users")

    @property
    def bound(self) -> int | None:
        b = self.median("bound")
        return int(b) if b else None

    @property
    def errors(self) -> int:
        return self.total("errors")

    @property
    def timeouts(self) -> int:
        return self.total("timeouts")

    @property
    def cpu_s(self) -> float | None:
        u, s = self.median("cpu_user_s"), self.median("cpu_sys_s")
        return None if u is None and s is None else (u or 0) + (s or 0)

    @property
    def rss_peak_mib(self) -> float | None:
        r = self.median("rss_peak_bytes")
        return r / 2**20 if r is not None else None

    # -- latency ----------------------------------------------------------------------------
    @cached_property
    def histogram(self) -> HdrHistogram | None:
        encoded = [((c.loadgen or {}).get("histograms") or {}).get("latency") for c in self.ok]
        if not encoded or not all(encoded):
            return None  # mixing histogram and no-histogram reps would not be exact
        try:
            return merge_histograms(encoded)
        except Exception:  # corrupt payload: fall back to the per-repetition figures
            return None

    @cached_property
    def latency(self) -> dict[str, float | None]:
        """p50…p99.99 and max in µs: exact from the merged histogram when available."""
        h = self.histogram
        if h is not None and h.get_total_count() > 0:
            at = hist_percentiles(h, list(PCTS.values()))
            out: dict[str, float | None] = {k: at[p] for k, p in PCTS.items()}
            out["max"] = float(h.get_max_value())
            return out
        out = {k: self.median(f"{k}_us") for k in PCTS}
        out["max"] = max(self.values("max_us"), default=None)
        return out

    def curve(self, points: int = 64) -> tuple[list[float], list[float]]:
        """Percentile curve: x = 1/(1-p) from 2 (p50) to 10^4 (p99.99), y = latency µs.

        Stops where the sample count no longer resolves the percentile (x > count)."""
        h = self.histogram
        if h is None or h.get_total_count() == 0:
            pairs = [(1 / (1 - p / 100), self.latency[k]) for k, p in PCTS.items()]
            pairs = [(x, y) for x, y in pairs if y is not None]
            return [x for x, _ in pairs], [y for _, y in pairs]
        top = min(10_000.0, float(h.get_total_count()))
        xs = sorted({2 * (top / 2) ** (i / (points - 1)) for i in range(points)} | {2.0, 10.0, 100.0, 1000.0, 10000.0})
        xs = [x for x in xs if x <= top]
        pcts = [100 * (1 - 1 / x) for x in xs]
        at = hist_percentiles(h, pcts)
        return xs, [at[p] for p in pcts]

    # -- representative repetition (for timelines and capacity steps) ------------------------
    def representative(self) -> Any | None:
        """The repetition whose throughput is closest to the median."""
        if not self.ok:
            return None
        key = "capacity_rps" if self.is_capacity else "rps"
        med = self.median(key) or 0.0
        return min(self.ok, key=lambda c: abs(float(c.metrics.get(key) or 0) - med))

    # -- warnings -----------------------------------------------------------------------------
    @cached_property
    def warnings(self) -> list[Warning_]:
        w: list[Warning_] = []
        s = self.server
        t = self.throughput
        if t is not None and noisy(t):
            w.append(Warning_("noisy", s, f"{s}: noisy — requests/s varies by CV {t.cv:.1%} across "
                                          f"{t.n} repetitions (> {NOISE_CV:.0%}); treat its place as uncertain"))
        if self.client_saturated:
            cpu = self.median("client_cpu_percent")
            w.append(Warning_("client-bound", s, f"{s}: client-bound — the load generator was saturated"
                                                 + (f" ({cpu:.0f} % CPU)" if cpu is not None else "")
                                                 + "; the server may be faster than shown"))
        if self.is_capacity and any(c.metrics.get("capacity_ceiling") for c in self.ok):
            w.append(Warning_("lower-bound", s, f"{s}: capacity is a lower bound — every step of the schedule "
                                                "held; raise the workload's max_steps to find the limit"))
        elif (self.is_capacity and not self.client_saturated
              and any(c.metrics.get("capacity_client_bound") for c in self.ok)):
            w.append(Warning_("client-bound", s, f"{s}: capacity is a lower bound — the load generator was "
                                                 "saturated at the step that failed"))
        bound, conns = self.bound, self.connections
        if bound and conns and bound < conns:
            w.append(Warning_("stalls", s, f"{s}: stalls expected: model holds at most {bound} connections "
                                           f"({conns:.0f} offered)"))
        if self.errors or self.timeouts:
            req = self.total("requests")
            share = f" in {req:,} requests ({self.errors / req:.2%})" if req else ""
            w.append(Warning_("errors", s, f"{s}: {self.errors:,} errors ({self.timeouts:,} timeouts){share}"))
        unanswered = self.total("unanswered")
        if unanswered:
            oldest = max((c.metrics.get("unanswered_oldest_us") or 0) for c in self.ok) / 1e6
            w.append(Warning_("unanswered", s, f"{s}: {unanswered:,} requests still unanswered when the run "
                                               f"ended, the oldest after {oldest:.1f} s (stalled connections)"))
        missed = self.total("missed_sends")
        if missed:
            w.append(Warning_("missed-sends", s, f"{s}: {missed:,} requests not sent on schedule "
                                                 "(connection pool exhausted)"))
        if self.bad:
            first = self.bad[0]
            w.append(Warning_("failed", s, f"{s}: {len(self.bad)} of {len(self.ok) + len(self.bad)} repetitions "
                                           f"{first.status} — {first.error or 'no error message'}"))
        if self.ok and self.histogram is None and any((c.loadgen or {}).get("histograms") for c in self.ok):
            w.append(Warning_("histogram", s, f"{s}: latency histograms missing or unreadable; "
                                              "percentiles are medians of the repetitions"))
        return w


@dataclass
class PointData:
    label: str
    groups: list[Group]  # ranked: best throughput first, servers without results last

    @property
    def measured(self) -> list[Group]:
        return [g for g in self.groups if g.throughput is not None]


@dataclass
class WorkloadData:
    name: str
    description: str
    points: list[PointData]
    p99_limit_us: float = DEFAULT_P99_LIMIT_US

    @property
    def groups(self) -> list[Group]:
        return [g for p in self.points for g in p.groups]

    @property
    def is_capacity(self) -> bool:
        return any(g.is_capacity for g in self.groups)

    @property
    def is_ramp(self) -> bool:
        if self.name in RAMP_WORKLOADS:
            return True
        for g in self.groups:
            for c in g.ok:
                cfg = (c.loadgen or {}).get("config") or {}
                if (cfg.get("mode") == "sessions" or cfg.get("stages")) and len((c.loadgen or {}).get("timeline") or []) > 2:
                    return True
        return False

    @property
    def is_sweep(self) -> bool:
        return len(self.points) > 1

    @property
    def warnings(self) -> list[Warning_]:
        return [w for g in self.groups for w in g.warnings]


def _workload_catalog() -> dict[str, Any]:
    """Workload definitions for descriptions and p99 limits; the report works without them."""
    try:
        from .workloads import load_workloads
        return load_workloads(errors=[])
    except Exception:
        return {}


def _p99_limit_us(name: str, groups: list[Group], catalog: dict[str, Any]) -> float:
    for g in groups:
        for c in g.ok:
            if c.metrics.get("p99_limit_us"):
                return float(c.metrics["p99_limit_us"])
    wl = catalog.get(name)
    if wl is not None:
        try:
            from .workloads import parse_duration
            for size in (wl.quick, wl.full):
                for p in (size.points if size else []):
                    if p.mode == "capacity" and p.p99_limit:
                        return parse_duration(p.p99_limit) * 1e6
        except Exception:
            pass
    return DEFAULT_P99_LIMIT_US


def _rank_key(g: Group) -> tuple:
    t = g.throughput
    return (t is None, -(t.median if t else 0.0), g.server)


def collect(cells: list[Any], fingerprint: dict[str, Any],
            catalog: dict[str, Any] | None = None) -> list[WorkloadData]:
    """Group cells into workloads → points → servers, in the order the run measured them."""
    servers_info = (fingerprint or {}).get("servers") or {}
    catalog = _workload_catalog() if catalog is None else catalog
    by_key: dict[tuple[str, str, str], Group] = {}
    order: list[str] = []
    for c in cells:
        if c.workload not in order:
            order.append(c.workload)
        key = (c.workload, c.point, c.server)
        g = by_key.get(key)
        if g is None:
            g = by_key[key] = Group(c.workload, c.point, c.server, servers_info.get(c.server) or {})
        (g.ok if c.status == "ok" else g.bad).append(c)
    out: list[WorkloadData] = []
    for name in order:
        groups = [g for (w, _, _), g in by_key.items() if w == name]
        labels = sorted({g.point for g in groups}, key=point_key)
        points = [PointData(lbl, sorted((g for g in groups if g.point == lbl), key=_rank_key)) for lbl in labels]
        wl = catalog.get(name)
        out.append(WorkloadData(name, getattr(wl, "description", "") or "", points,
                                _p99_limit_us(name, groups, catalog)))
    return out


# -- formatting shared by HTML and Markdown -----------------------------------------------------
def fmt_us(us: float | None) -> str:
    if us is None:
        return "—"
    if us < 1000:
        return f"{us:.0f} µs"
    if us < 1_000_000:
        return f"{us / 1000:.3g} ms"
    return f"{us / 1e6:.3g} s"


def fmt_num(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def fmt_cpu(g: Group) -> str:
    pct, secs = g.median("cpu_percent"), g.cpu_s
    if pct is None and secs is None:
        return "—"
    parts = [f"{pct:.0f} %" if pct is not None else None, f"{secs:.1f} s" if secs is not None else None]
    return " / ".join(p for p in parts if p)


# -- Markdown ----------------------------------------------------------------------------------
MD_COLUMNS = ["place", "server", "language", "model", "requests/s (median)", "p50", "p99", "errors",
              "CPU (% / user+sys s)", "memory (peak RSS MiB)"]


def markdown(run: Any, workloads: list[WorkloadData]) -> str:
    fp = normalize(run.fingerprint)
    lines = [f"# serverbench run {run.id}", "",
             f"{fp.get('cpu_model', '?')}, {fp.get('cores', '?')} cores, kernel {fp.get('kernel', '?')}; "
             f"server on CPU {_cpus(fp.get('server_cpus'))}, load generator on CPU {_cpus(fp.get('client_cpus'))}; "
             f"commit {str(fp.get('git_commit') or '?')[:12]}{' (dirty)' if fp.get('git_dirty') else ''}.", "",
             "Throughput is the median of the repetitions; percentiles come from their merged histograms; "
             "errors are summed over repetitions. Capacity points rank by the highest rate that held the p99 limit.",
             ""]
    for wl in workloads:
        lines += [f"## {wl.name}", ""]
        if wl.description:
            lines += [wl.description, ""]
        for pt in wl.points:
            if wl.is_sweep:
                lines += [f"### {wl.name} · {pt.label}", ""]
            cols = list(MD_COLUMNS)
            if wl.is_capacity:
                cols[4] = "capacity req/s (median)"
            lines += ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
            place = 0
            for g in pt.groups:
                t = g.throughput
                if t is None:
                    status = g.bad[0].status if g.bad else "no data"
                    row = ["—", g.server, g.language, g.model, status, "—", "—", "—", "—", "—"]
                else:
                    place += 1
                    mark = " ⚠" if g.warnings else ""
                    row = [str(place), g.server + mark, g.language, g.model, fmt_num(t.median),
                           fmt_us(g.latency["p50"]), fmt_us(g.latency["p99"]),
                           f"{g.errors:,}" + (f" ({g.timeouts:,} timeouts)" if g.timeouts else ""),
                           fmt_cpu(g), fmt_num(g.rss_peak_mib, 1)]
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
            warns = [w.text for g in pt.groups for w in g.warnings]
            if warns:
                lines += [""] + [f"- ⚠ {w}" for w in warns]
            lines.append("")
    return "\n".join(lines)


def _cpus(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v) or "?"
    return "?" if v is None else str(v)


# -- CSV -----------------------------------------------------------------------------------------
CSV_COLUMNS = ["run_id", "workload", "point", "server", "language", "model", "framework", "runtime",
               "place", "reps_ok", "reps_failed", "rps_median", "rps_mean", "rps_stdev", "rps_min", "rps_max",
               "rps_cv", "noisy", "capacity_rps", "p50_us", "p90_us", "p99_us", "p999_us", "p9999_us", "max_us",
               "requests", "errors", "timeouts", "cpu_user_s", "cpu_sys_s", "cpu_percent", "rss_peak_mib",
               "rss_mean_mib", "threads_peak", "client_cpu_percent", "client_saturated", "connections", "bound",
               "missed_sends", "unanswered", "warnings"]


def csv_text(run: Any, workloads: list[WorkloadData]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for wl in workloads:
        for pt in wl.points:
            place = 0
            for g in pt.groups:
                r, t = g.rps, g.throughput
                place += t is not None
                rss_mean = g.median("rss_mean_bytes")
                w.writerow({
                    "run_id": run.id, "workload": wl.name, "point": pt.label, "server": g.server,
                    "language": g.language, "model": g.model, "framework": g.info.get("framework", ""),
                    "runtime": g.info.get("runtime", ""), "place": place if t is not None else "",
                    "reps_ok": len(g.ok), "reps_failed": len(g.bad),
                    "rps_median": _c(r and r.median), "rps_mean": _c(r and r.mean), "rps_stdev": _c(r and r.stdev),
                    "rps_min": _c(r and r.min), "rps_max": _c(r and r.max), "rps_cv": _c(r and r.cv, 4),
                    "noisy": bool(t and noisy(t)), "capacity_rps": _c(t.median if g.is_capacity and t else None),
                    **{f"{k}_us": _c(g.latency[k]) for k in PCTS}, "max_us": _c(g.latency["max"]),
                    "requests": g.total("requests"), "errors": g.errors, "timeouts": g.timeouts,
                    "cpu_user_s": _c(g.median("cpu_user_s"), 3), "cpu_sys_s": _c(g.median("cpu_sys_s"), 3),
                    "cpu_percent": _c(g.median("cpu_percent"), 1), "rss_peak_mib": _c(g.rss_peak_mib, 1),
                    "rss_mean_mib": _c(rss_mean / 2**20 if rss_mean is not None else None, 1),
                    "threads_peak": _c(g.median("threads_peak")),
                    "client_cpu_percent": _c(g.median("client_cpu_percent"), 1),
                    "client_saturated": g.client_saturated, "connections": _c(g.connections),
                    "bound": g.bound or "", "missed_sends": g.total("missed_sends"),
                    "unanswered": g.total("unanswered"), "warnings": " | ".join(x.text for x in g.warnings),
                })
    return buf.getvalue()


def _c(x: float | None, digits: int = 1) -> str:
    return "" if x is None else f"{x:.{digits}f}"


# -- entry point ---------------------------------------------------------------------------------
def write_report(store: Any, run_id: int, out_dir: Path) -> ReportPaths:
    """Write run-<id>.html/.md/.csv into out_dir and return their paths."""
    from .charts import render_html  # plotly import is heavy; only needed here

    run = store.run(run_id)
    workloads = collect(store.cells(run_id), normalize(run.fingerprint))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(out_dir / f"run-{run_id}.html", out_dir / f"run-{run_id}.md", out_dir / f"run-{run_id}.csv")
    paths.html.write_text(render_html(run, workloads), encoding="utf-8")
    paths.markdown.write_text(markdown(run, workloads), encoding="utf-8")
    paths.csv.write_text(csv_text(run, workloads), encoding="utf-8")
    return paths


__all__ = ["ReportPaths", "write_report", "collect", "Group", "WorkloadData", "PointData", "merge_histograms",
           "markdown", "csv_text", "fmt_us"]
