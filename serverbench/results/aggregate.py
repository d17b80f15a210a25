"""One aggregation of a run's cells: (workload, point, server) → a Group of its repetitions.

The rules, used by every output (console summary, HTML, Markdown, CSV, JSON, compare):
- throughput: median of the repetitions' rps (capacity points: capacity_rps), with min/max/CV;
- latency percentiles: from the repetitions' HdrHistograms merged exactly (fallback, flagged:
  the median of the per-repetition figures when a cell has no histogram);
- CPU, memory, client CPU: median across repetitions; requests, errors, error classes: summed;
- warnings (noise, client saturation, stalls, errors) are judged here and nowhere else.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import Callable
from typing import Any, Iterable

from hdrh.histogram import HdrHistogram

from ..rules import fairness
from ..rules import admission, machine_speed, warmup
from . import ranking
from . import outliers as cpu_outliers  # stats.outliers is the repetitions' rule
from .aggregate_tools import ToolsCompared, compare_tools
from . import group_warnings, noisy
from .group_figures import PCTS, GroupFigures, flat_figures
from .group_warnings import Caveat
from ..model import FIXED_RATE_NEAR, FIXED_RATE_SHARE, CellMetrics, CellRecord, FixedRatePlan
from ..store import ServerProfile
from ..rules.shards import merge_encoded
from .stats import Stats, summarize
from ..catalog.kinds import TWINNED
from ..catalog.workloads import load_workloads
DEFAULT_P99_LIMIT_US = 10_000.0
DEGRADED_SHARE = 0.01  # a cell with more failed requests than this ranks after the clean ones
HELD_SHARE = 0.95  # an open-load point held its rate when successful responses reached this share
RSS_PER_CONNECTION_MIN = 100  # RSS per connection is only meaningful with many connections
ERROR_CLASSES = ("connect", "read", "write", "timeout", "status", "malformed")
# One figure of a cell, read through its typed record (`lambda m: m.usage.cpu_percent`).
Pick = Callable[[CellMetrics], Any]
# Each PCTS percentile in a cell's latency: the per-repetition fallback when histograms are missing.
LATENCY_PICKS: dict[str, Pick] = {"p50": lambda m: m.latency.p50_us, "p90": lambda m: m.latency.p90_us,
                                  "p99": lambda m: m.latency.p99_us, "p999": lambda m: m.latency.p999_us,
                                  "p9999": lambda m: m.latency.p9999_us}


def point_key(label: str) -> tuple:
    """Natural order for point labels: c=4 before c=16 before c=1024."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", label))


def merge_histograms(encoded: Iterable[str]) -> HdrHistogram | None:
    """Decode base64 V2 histograms and add them exactly; None when there are none."""
    return merge_encoded(encoded)


def hist_percentiles(h: HdrHistogram, percentiles: list[float]) -> dict[float, float]:
    # One pass over the counts (get_value_at_percentile would rescan per call).
    return {p: float(v) for p, v in h.get_percentile_to_value_dict(percentiles).items()}


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@dataclass
class Group:
    """All repetitions of one (workload, point, server)."""

    workload: str
    point: str
    server: str
    info: dict[str, Any]  # fingerprint["servers"][server]: language, model, framework, ...
    run_id: int = 0
    ok: list[CellRecord] = field(default_factory=list)
    bad: list[CellRecord] = field(default_factory=list)  # failed / skipped
    place: int | None = None  # the first place of the range it shares with the rows its figure cannot order
    place_to: int | None = None  # the last place of that range (== place when it is alone)
    kind: str = "throughput"
    deviations: list[str] = field(default_factory=list)  # the row's verify deviations (RunResults.deviations)
    tied_with_leader: bool = False  # set by collect(): within noise of its point's first row
    client_bound_group: bool = False  # set by collect(): in its point's client-bound block
    cpu_findings: list[cpu_outliers.Finding] = field(default_factory=list)  # set by collect(): outliers.judge
    noise_effect: noisy.NoiseEffect | None = None  # set by collect() in a noisy workload: against its quiet twin

    # -- plain figures ----------------------------------------------------------------------
    @property
    def model(self) -> str:
        return self.info.get("model") or "unknown"

    @property
    def language(self) -> str:
        return self.info.get("language") or ""

    @property
    def place_text(self) -> str:
        """The place as a reader sees it: "3", or "1–7" for a range the figure cannot order."""
        if self.place is None:
            return "—"
        return str(self.place) if self.place_to in (None, self.place) else f"{self.place}–{self.place_to}"

    def values(self, pick: Pick) -> list[float]:
        """The repetitions' values of one CellMetrics figure (non-numbers skipped)."""
        return [float(v) for c in self.ok if _num(v := pick(c.metrics))]

    def stat(self, pick: Pick) -> Stats | None:
        vs = self.values(pick)
        return summarize(vs) if vs else None

    def median(self, pick: Pick) -> float | None:
        vs = self.values(pick)
        return statistics.median(vs) if vs else None

    def total(self, pick: Pick) -> int:
        return int(sum(self.values(pick)))

    @property
    def is_capacity(self) -> bool:
        return any(c.metrics.capacity.capacity_rps is not None for c in self.ok)

    @cached_property
    def rps(self) -> Stats | None:
        return self.stat(lambda m: m.counts.rps)

    @cached_property
    def throughput(self) -> Stats | None:
        """What the server is ranked by: capacity_rps for capacity points, peak_ok_rps for overload, else rps."""
        if self.kind == "overload":
            return self.stat(lambda m: m.overload.peak_ok_rps)
        return self.stat(lambda m: m.capacity.capacity_rps) if self.is_capacity else self.rps

    @property
    def not_steady(self) -> bool:
        """Some repetition was measured before its warm-up became steady (warmup.py)."""
        return warmup.not_steady(self.ok) > 0

    @property
    def interval(self) -> dict[str, Any]:
        """The Rate figures of the ranked figure's interval and the point's judgement, by name."""
        st = ranking.figure_stats(self, self.kind)
        ci = {"ci_low": st.ci_low, "ci_high": st.ci_high, "ci_level": st.ci_level} if st and st.n > 1 else {}
        return {**ci, "tied_with_leader": self.tied_with_leader, "client_bound_group": self.client_bound_group}

    @property
    def mostly_client_bound(self) -> bool:
        """The load generator saturated in more than half the repetitions (ranking.client_block): one
        saturated repetition of a noisy row does not make its median the client's limit."""
        return sum(1 for c in self.ok if c.metrics.client.client_saturated) * 2 > len(self.ok) > 0

    @property
    def client_saturated(self) -> bool:
        return any(c.metrics.client.client_saturated for c in self.ok)

    @property
    def connections(self) -> float | None:
        return self.median(lambda m: m.offered.connections) or self.median(lambda m: m.offered.users)

    @property
    def bound(self) -> int | None:
        b = self.median(lambda m: m.setup.bound)
        return int(b) if b else None

    @property
    def errors(self) -> int:
        return self.total(lambda m: m.counts.errors)

    @property
    def timeouts(self) -> int:
        return self.total(lambda m: m.counts.timeouts)

    @cached_property
    def error_classes(self) -> dict[str, int]:
        out = dict.fromkeys(ERROR_CLASSES, 0)
        for c in self.ok:
            for k, v in c.metrics.counts.error_classes.items():
                out[k] = out.get(k, 0) + int(v)
        return out

    @property
    def cpu_s(self) -> float | None:
        u, s = self.median(lambda m: m.usage.cpu_user_s), self.median(lambda m: m.usage.cpu_sys_s)
        return None if u is None and s is None else (u or 0) + (s or 0)

    @property
    def rss_peak_mib(self) -> float | None:
        r = self.median(lambda m: m.usage.rss_peak_bytes)
        return r / 2**20 if r is not None else None

    # -- honesty: errors, held rates, cost per request ----------------------------------------
    @property
    def error_share(self) -> float | None:
        """Failed share of all requests that ended, over the repetitions."""
        req = self.total(lambda m: m.counts.requests)
        return (req - self.total(lambda m: m.counts.ok)) / req if req else None

    @property
    def degraded(self) -> bool:
        share = self.error_share
        return bool(share is not None and share > DEGRADED_SHARE)

    @property
    def target_rate(self) -> float | None:
        return self.median(lambda m: m.offered.target_rate)

    @property
    def held(self) -> bool | None:
        """Open load at a set rate: did successful responses keep up? (None: not a rate point)."""
        target = self.target_rate
        if not target or self.is_capacity or self.rps is None:
            return None
        return self.rps.median >= HELD_SHARE * target

    def per_request(self, *picks: Pick, scale: float = 1.0) -> float | None:
        """Median over repetitions of sum(picks) / successful responses."""
        vals = []
        for c in self.ok:
            parts = [pick(c.metrics) for pick in picks]
            if c.metrics.counts.ok and all(_num(p) for p in parts):
                vals.append(scale * sum(parts) / c.metrics.counts.ok)
        return statistics.median(vals) if vals else None

    @property
    def cpu_us_per_request(self) -> float | None:
        return self.per_request(lambda m: m.usage.cpu_user_s, lambda m: m.usage.cpu_sys_s, scale=1e6)

    @cached_property
    def cpu_per_request_stats(self) -> Stats | None:
        """The repetitions' server CPU µs per successful request (what efficiency points rank by)."""
        vals = [1e6 * (c.metrics.usage.cpu_user_s + c.metrics.usage.cpu_sys_s) / c.metrics.counts.ok for c in self.ok
                if c.metrics.counts.ok and _num(c.metrics.usage.cpu_user_s) and _num(c.metrics.usage.cpu_sys_s)]
        return summarize(vals) if vals else None

    # -- fairness: every connection served (rules/fairness.py) ---------------------------------------
    @cached_property
    def unfair(self) -> bool:
        """More than 5 % of the connections waited beyond the timeout in the median repetition."""
        return fairness.unfair(self.ok)

    def served_text(self) -> str:
        """"served 64 of 400 connections" (medians over the repetitions)."""
        f = fairness.figures(self.ok)
        return (fairness.served_text(f.slots, f.slots_served or 0) if f.slots is not None
                else "was not judged for fairness")

    @property
    def rss_per_connection_bytes(self) -> float | None:
        conns = self.connections or self.median(lambda m: m.offered.max_connections)
        rss = self.median(lambda m: m.usage.rss_peak_bytes)
        return rss / conns if conns and conns > RSS_PER_CONNECTION_MIN and rss else None

    @cached_property
    def answered_p99_us(self) -> float | None:
        encoded = [c.loadgen.histograms.answered if c.loadgen else None for c in self.ok]
        if encoded and all(encoded):
            h = merge_histograms(e for e in encoded if e)
            if h is not None and h.get_total_count():
                return float(h.get_value_at_percentile(99))
        return self.median(lambda m: m.latency.answered_p99_us)

    # -- latency ----------------------------------------------------------------------------
    @cached_property
    def histogram(self) -> HdrHistogram | None:
        encoded = [c.loadgen.histograms.latency if c.loadgen else None for c in self.ok]
        if not encoded or not all(encoded):
            return None  # mixing histogram and no-histogram reps would not be exact
        try:
            return merge_histograms(e for e in encoded if e)
        except Exception:  # corrupt payload: fall back to the per-repetition figures (flagged)
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
        out = {k: self.median(LATENCY_PICKS[k]) for k in PCTS}
        out["max"] = max(self.values(lambda m: m.latency.max_us), default=None)
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

    def representative(self) -> CellRecord | None:
        """The repetition whose throughput is closest to the median (timelines, capacity steps)."""
        if not self.ok:
            return None
        pick: Pick = (lambda m: m.capacity.capacity_rps) if self.is_capacity else (lambda m: m.counts.rps)
        med = self.median(pick) or 0.0
        return min(self.ok, key=lambda c: abs(float(pick(c.metrics) or 0) - med))

    # -- what a reader must see, and the flat figures (their own modules, for size) ----------
    @cached_property
    def warnings(self) -> list[Caveat]:
        return group_warnings.judge(self)

    @cached_property
    def figures(self) -> GroupFigures:
        return flat_figures(self)


@dataclass
class PointData:
    label: str
    groups: list[Group]  # ranked (ranking.rank_key): best first, servers without results last
    kind: str = "throughput"
    # a throughput point whose client-bound block the fixed-rate step measured (run/fixed_rate.py):
    # that step's point, whose order the glance reads
    efficiency: "PointData | None" = None
    # an efficiency point: the rows measured at its rate that are outside the top it orders (_fixed_rate_point)
    outside: list[str] = field(default_factory=list)

    @property
    def measured(self) -> list[Group]:
        return [g for g in self.groups if g.throughput is not None]

    @property
    def glance(self) -> ranking.Glance:
        return ranking.glance(self.groups, self.kind, self.efficiency.groups if self.efficiency else None)

    @property
    def outside_text(self) -> str | None:
        """The sentence naming the rows measured at an efficiency point's rate but not ranked there."""
        if not self.outside:
            return None
        return (f"Also measured at this rate in their own starts while near the top, and outside it at the end "
                f"(not ranked here): {', '.join(self.outside)}")


@dataclass
class WorkloadData:
    name: str
    description: str
    points: list[PointData]
    p99_limit_us: float = DEFAULT_P99_LIMIT_US
    kind: str = "throughput"
    ramp: bool = False  # the workload's load ramps (its stored facts: sessions of users started over time)

    @property
    def groups(self) -> list[Group]:
        return [g for p in self.points for g in p.groups]

    @property
    def is_capacity(self) -> bool:
        return any(g.is_capacity for g in self.groups)

    @property
    def is_ramp(self) -> bool:
        if self.ramp:
            return True
        for g in self.groups:
            for c in g.ok:
                if c.loadgen is None:
                    continue
                cfg = c.loadgen.config
                if (cfg.get("mode") == "sessions" or cfg.get("stages")) and len(c.loadgen.timeline) > 2:
                    return True
        return False

    @property
    def load_points(self) -> list[PointData]:
        """The workload's own points (without the fixed-rate step's, which order a block of one of them)."""
        return [p for p in self.points if p.kind != ranking.EFFICIENCY]

    @property
    def is_sweep(self) -> bool:
        return len(self.load_points) > 1

    @property
    def warnings(self) -> list[Caveat]:
        return [w for g in self.groups for w in g.warnings]


@dataclass
class RunResults:
    """A run's groups, workload by workload, in the order the run measured them."""

    run_id: int
    workloads: list[WorkloadData]
    tools: list[ToolsCompared] = field(default_factory=list)  # cross-check cells (aggregate_tools)
    # the latest `serverbench profile` of each server in the run (cost of ownership; cost.py)
    profiles: dict[str, ServerProfile] = field(default_factory=dict)
    # each row's verify deviations (robustness/security failures; rules/admission.py), one line each
    deviations: dict[str, list[str]] = field(default_factory=dict)
    # the profile table across kinds of work (results/profile.py's Profile; it imports this module),
    # gathered from the store by exporters/report.py's load before the exporters render; None until then
    profile: Any = None
    # the machine's own speed moved during the run (rules/machine_speed.py), else None
    speed: machine_speed.SpeedMoved | None = None

    @property
    def groups(self) -> list[Group]:
        return [g for wl in self.workloads for g in wl.groups]

    def group(self, workload: str, point: str, server: str) -> Group | None:
        return next((g for g in self.groups if (g.workload, g.point, g.server) == (workload, point, server)), None)


def _p99_limit_us(groups: list[Group], facts: dict[str, Any]) -> float:
    for g in groups:
        for c in g.ok:
            if c.metrics.capacity.p99_limit_us:
                return float(c.metrics.capacity.p99_limit_us)
    return float(facts.get("p99_limit_us") or DEFAULT_P99_LIMIT_US)


def _kind(groups: list[Group], facts: dict[str, Any]) -> str:
    """The kind stored with the cells, else the workload's stored facts, else throughput."""
    for g in groups:
        for c in g.ok + g.bad:
            if c.metrics.kind:
                return c.metrics.kind
    return facts.get("kind") or "throughput"


def workload_facts(fingerprint: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each workload's facts as the run stored them (Workload.facts); a run stored before they were
    kept falls back to today's workloads/*.toml, as its reports always did."""
    stored = (fingerprint or {}).get("workloads")
    if stored is not None:
        return stored
    return {name: w.facts() for name, w in load_workloads(errors=[]).items()}


def collect(run_id: int, cells: list[CellRecord], fingerprint: dict[str, Any],
            facts: dict[str, dict[str, Any]] | None = None) -> RunResults:
    """Group cells into workloads → points → servers and rank each point; cross-check cells
    (those with `metrics.tool`) go to `RunResults.tools` instead (aggregate_tools). `facts`: each
    workload's stored facts (default: the fingerprint's, see workload_facts)."""
    tools = compare_tools([c for c in cells if c.metrics.tool is not None])
    speed = machine_speed.judge(cells)  # the machine's, so every cell's probes (the cross-check's too)
    cells = [c for c in cells if c.metrics.tool is None]
    servers_info = (fingerprint or {}).get("servers") or {}
    if facts is None:
        facts = workload_facts(fingerprint)
    by_key: dict[tuple[str, str, str], Group] = {}
    order: list[str] = []
    for c in cells:
        if c.workload not in order:
            order.append(c.workload)
        key = (c.workload, c.point, c.server)
        g = by_key.get(key)
        if g is None:
            g = by_key[key] = Group(c.workload, c.point, c.server, servers_info.get(c.server) or {}, run_id)
        (g.ok if c.status == "ok" else g.bad).append(c)
    out: list[WorkloadData] = []
    for name in order:
        groups = [g for (w, _, _), g in by_key.items() if w == name]
        wl = facts.get(name) or {}
        kind = _kind(groups, wl)
        for g in groups:
            g.kind = kind
        labels = sorted({g.point for g in groups}, key=point_key)
        at = {lbl: [g for g in groups if g.point == lbl] for lbl in labels}
        base = {lbl: _point(lbl, at[lbl], kind, by_key) for lbl in labels if _fixed_rate_of(at[lbl]) is None}
        points = [base.get(lbl) or _fixed_rate_point(lbl, at[lbl], base, by_key) for lbl in labels]
        if kind in TWINNED:  # noise or heavy requests beside a quiet twin
            noisy.attach(groups)
        out.append(WorkloadData(name, wl.get("description") or "", points, _p99_limit_us(groups, wl), kind,
                                bool(wl.get("ramp"))))
    return RunResults(run_id, out, tools=tools, speed=speed)


def _point(label: str, at_point: list[Group], kind: str, by_key: dict[tuple[str, str, str], Group]) -> PointData:
    """One point's groups ranked; the fixed-rate step's cells (metrics.fixed_rate_of) form a point of
    kind efficiency."""
    if any(c.metrics.fixed_rate_of for g in at_point for c in g.ok + g.bad):
        kind = ranking.EFFICIENCY
    for g in at_point:
        g.kind = kind
    for f in cpu_outliers.judge(at_point):
        by_key[(at_point[0].workload, label, f.server)].cpu_findings.append(f)
    ranked, places = ranking.order(at_point, kind)
    block = ranking.client_block(ranked, kind)
    for g, span in zip(ranked, places):
        g.place, g.place_to = span if span is not None else (None, None)
        g.client_bound_group = g in block
        # within the first row's place range: the figure does not order it against the leader
        g.tied_with_leader = g is not ranked[0] and span is not None and span == places[0]
    return PointData(label, ranked, kind)


def _fixed_rate_of(at_point: list[Group]) -> str | None:
    """The point a fixed-rate step's point orders (its cells' metrics.fixed_rate_of); None for other points."""
    return next((c.metrics.fixed_rate_of for g in at_point for c in g.ok + g.bad if c.metrics.fixed_rate_of), None)


def _fixed_rate_point(label: str, at_point: list[Group], base: dict[str, PointData],
                      by_key: dict[tuple[str, str, str], Group]) -> PointData:
    """A fixed-rate step's point, attached to the point whose top it orders and ranked over the rows that
    top holds at the end (ranking.unordered_top, or its client-bound block): a row measured at the rate
    in its own starts while it was near the tie (run/fixed_rate.InStart) and outside it at the end has
    too few repetitions and nothing to be ordered against, so it is named (`outside`), not ranked."""
    of = base.get(_fixed_rate_of(at_point) or "")
    if of is None:
        return _point(label, at_point, ranking.EFFICIENCY, by_key)
    top = {g.server for g in ranking.unordered_top(of.groups, of.kind) + ranking.client_block(of.groups, of.kind)}
    pt = _point(label, [g for g in at_point if g.server in top], ranking.EFFICIENCY, by_key)
    pt.outside = sorted(g.server for g in at_point if g.server not in top)
    for g in at_point:
        g.kind = ranking.EFFICIENCY
    of.efficiency = pt
    return pt


def fixed_rate_plans(cells: list[CellRecord]) -> list[FixedRatePlan]:
    """The fixed-rate step's plan (run/fixed_rate.py), by this aggregation's own rules: every
    throughput point whose top its own figure cannot order (ranking.unordered_top: a client-bound
    block, or rows tied with the first), those rows, and one common rate, FIXED_RATE_SHARE of the
    lowest median among them and the clean rows up to FIXED_RATE_NEAR below them (which may join the
    tie in a later repetition: the rate must be one they hold too)."""
    out = []
    for wl in collect(0, cells, {}).workloads:
        for pt in wl.points:
            block = ranking.unordered_top(pt.groups, pt.kind) if pt.kind == "throughput" else []
            if block:
                floor = min(g.throughput.median for g in block if g.throughput is not None)
                members = {g.server for g in block}
                near = [g for g in pt.groups if g.throughput is not None and g.server not in members
                        and not (g.degraded or g.not_steady or g.unfair)
                        and g.throughput.median >= (1 - FIXED_RATE_NEAR) * floor]
                rate = FIXED_RATE_SHARE * min([floor, *(g.throughput.median for g in near)])
                out.append(FixedRatePlan(wl.name, pt.label, tuple(sorted(g.server for g in block)),
                                         float(round(rate)), tuple(sorted(g.server for g in near)), floor))
    return out


def load(store: Any, run_id: int) -> tuple[Any, RunResults]:
    """(run row, its aggregated results) from the store."""
    from ..rules.fingerprint import normalize
    run = store.run(run_id)
    results = collect(run_id, store.cells(run_id), normalize(run.fingerprint))
    results.profiles = store.latest_profiles(sorted({g.server for g in results.groups}))
    results.deviations = run_deviations(store, sorted({g.server for g in results.groups}), run.finished_at)
    for g in results.groups:
        g.deviations = results.deviations.get(g.server, [])
    return run, results


def run_deviations(store: Any, servers: Iterable[str], until: str | None) -> dict[str, list[str]]:
    """Each server's deviations (robustness and security failures), one line each, from the latest
    verdict checked by `until` (a run's end): what the report marks beside its rows."""
    out: dict[str, list[str]] = {}
    for sid in servers:
        v = store.verdict_before(sid, until)
        devs = admission.admission(v.checks, v.passed).deviations if v is not None else []
        if devs:
            out[sid] = [f"{'security deviation' if f.kind.security else 'deviation'}: {f.line()}" for f in devs]
    return out


__all__ = ["fixed_rate_plans", "Group", "GroupFigures", "ToolsCompared", "PointData", "WorkloadData", "RunResults", "Caveat", "collect", "load",
           "merge_histograms", "hist_percentiles", "point_key", "PCTS", "workload_facts"]
