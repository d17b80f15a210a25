"""What the HTML and Markdown reports print for the over-time workloads (kinds overload, soak and
db-outage): the rules behind the verdict and the figures, one table row per server, the memory limit.
Plain text cells; each exporter escapes and lays them out."""
from __future__ import annotations

from ..results.aggregate import Group, WorkloadData
from ..results.formatting import fmt_num, fmt_us
from ..overtime import outage
from ..overtime.figures import during_text, verdict_text
from ..overtime.overload import RULES, RULES_INTRO

OVERLOAD_HEADERS = ["place", "server", "model", "peak successful responses/s", "verdict", "why", "p90 at peak",
                    "p90 at end", "timeouts", "peak RSS MiB", "died at", "other processes on its CPU %"]
SOAK_HEADERS = ["place", "server", "model", "worst 1-s p99", "spread of 1-s p99s", "median 1-s p99",
                "p99 (all due)", "timeouts", "successful req/s", "RSS first → last second MiB",
                "other processes on its CPU %"]
OUTAGE_HEADERS = ["place", "server", "model", "verdict", "recovered after", "during the outage", "why",
                  "successful req/s before", "failed from the outage on", "worst 1-s p99 until recovery",
                  "database away (s)", "acknowledged writes lost"]
SOAK_RULES = ("Each second's p99 covers the responses and timeouts that ended in it. Worst 1-s p99 = the "
              "highest of them (a pause's imprint); spread = their 90th minus 10th percentile (how much the "
              "seconds differ beyond the worst one); rows that did not hold the rate or had more than 1 % "
              "errors rank after the others.")


def headers(kind: str) -> list[str]:
    return {"overload": OVERLOAD_HEADERS, "db-outage": OUTAGE_HEADERS}.get(kind, SOAK_HEADERS)


def rules(kind: str) -> list[str]:
    """The rules a reader needs to read the table, first line an introduction."""
    if kind == "overload":
        return [RULES_INTRO] + [f"{verdict}: {text}" for verdict, text in RULES]
    if kind == "db-outage":
        return ([outage.RULES_INTRO] + [f"{verdict}: {text}" for verdict, text in outage.RULES]
                + [f"during the outage, {verdict}: {text}" for verdict, text in outage.DURING]
                + [ACKED_NOTE])
    return [SOAK_RULES]


ACKED_NOTE = ("Acknowledged writes: during the restart the harness writes through the row itself, one "
              "GET /updates?queries=1 at a time (about 20 a second, beside the load on /db), and afterwards "
              "looks up every row a 200 acknowledged: lost = rows whose last acknowledged value the table does "
              "not hold (a sample, summed over the repetitions).")


def _outage_cells(g: Group) -> list[str]:
    t = g.figures.over_time
    rec = f"{t.recovered_after_s:.1f} s" if t.recovered_after_s is not None else "—"
    away = (f"{t.outage_start_s:.1f}–{t.outage_end_s:.1f}" if t.outage_start_s is not None
            and t.outage_end_s is not None else "—")
    lost = f"{t.lost_writes} of {t.acknowledged_writes}" if t.acknowledged_writes is not None else "—"
    return [verdict_text(t) or "—", rec, during_text(t) or "—", t.verdict_reason or "—",
            fmt_num(t.rate_before_ok_rps), fmt_num(t.failed_after_outage, 0), fmt_us(t.worst_p99_during_us), away,
            lost]


def _mib(b: float | None) -> str:
    return fmt_num(b / 2**20, 0) if b is not None else "—"


def cells(g: Group, kind: str) -> list[str]:
    """One server's row (plain text)."""
    f = g.figures
    head = [g.place_text, g.server + (" ⚠" if g.warnings else ""), g.model]
    if g.throughput is None:
        status = g.bad[0].status if g.bad else "no data"
        return head + [status] + ["—"] * (len(headers(kind)) - 4)
    t = f.over_time
    if kind == "db-outage":
        return head + _outage_cells(g)
    if kind == "overload":
        died = f"{t.server_died_at_s:.1f} s" if t.server_died_at_s is not None else "—"
        return head + [fmt_num(t.peak_ok_rps), verdict_text(t) or "—", t.verdict_reason or "—", fmt_us(t.p90_at_peak_us),
                       fmt_us(t.p90_end_us), fmt_num(f.counts.timeouts), fmt_num(f.usage.rss_peak_mib, 0), died,
                       fmt_num(t.others_cpu_percent)]
    rate = fmt_num(f.rate.rps_median) + (" (did not hold)" if f.standing.held is False else "")
    rss_start, rss_end = g.median(lambda m: m.over_time.rss_start_bytes), g.median(lambda m: m.over_time.rss_end_bytes)
    return head + [fmt_us(t.worst_second_p99_us), fmt_us(t.second_p99_spread_us), fmt_us(t.median_second_p99_us),
                   fmt_us(f.latency.p99_us), fmt_num(f.counts.timeouts), rate, f"{_mib(rss_start)} → {_mib(rss_end)}",
                   fmt_num(t.others_cpu_percent)]


def memory_note(wl: WorkloadData) -> str:
    """How the servers' memory was bounded in this workload's cells, in one sentence."""
    cells = [c for g in wl.groups for c in g.ok + g.bad]
    limited = [c for c in cells if c.metrics.memory.memory_limit_bytes]
    if not limited:
        return ("No memory limit was set for the servers (serverbench run --server-memory-limit 512M sets one): "
                "a row that runs out of memory here exhausts the machine's memory, not a ceiling.")
    m = limited[0].metrics
    methods = sorted({c.metrics.memory.memory_limit_method or "?" for c in limited})
    how = " and ".join(methods)
    # a watchdog's detail says why cgroup v2 was not used (a cgroup's is only its path)
    details = sorted({c.metrics.memory.memory_limit_detail for c in limited if c.metrics.memory.memory_limit_detail
                      and c.metrics.memory.memory_limit_method == "rss-watchdog"})
    limit_mib = (m.memory.memory_limit_bytes or 0) / 2**20
    text = f"Memory limit per server process tree: {limit_mib:,.0f} MiB, enforced by {how}"
    if "rss-watchdog" in methods:
        text += (" (the tree's RSS summed 5 times a second while a measured run is sampled; SIGKILL of the "
                 "whole tree the first time it passes the limit)")
    return text + (f"; {'; '.join(details)}" if details else "") + "."


__all__ = ["headers", "rules", "cells", "memory_note", "OVERLOAD_HEADERS", "SOAK_HEADERS", "OUTAGE_HEADERS"]
