"""The report of over-time workloads, from synthetic cells put through the runner's per-cell figures
and the one aggregation: overload ranked by peak with the verdict beside it, soak by the worst
one-second p99 then the spread, the rules written out, and one small-multiple row per server."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

from serverbench.results import aggregate
from serverbench.exporters import to_csv, to_html, to_markdown
from serverbench.model import CellRecord
from serverbench.run.measure import over_time_metrics

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
SERVERS = {"fast": "event-loop", "queue": "thread-pool", "shed": "actor", "dies": "process-pool",
           "steady": "async-work-stealing", "gc": "virtual-threads", "slow": "thread-per-connection"}
FP = {"servers": {s: {"language": "X", "model": m, "framework": "f"} for s, m in SERVERS.items()}}


def cell(server: str, workload: str, kind: str, rows: list[dict], mode: str, died: float | None = None,
         target_rate: float | None = None, others: float = 10.0) -> CellRecord:
    n = len(rows)
    ok = sum(r["ok"] for r in rows)
    errors = sum(sum(r["errors"].values()) for r in rows)
    report = {"schema": "loadgen/1", "config": {"mode": mode, "rate": target_rate}, "duration_s": float(n),
              "started_at": (START + timedelta(seconds=0.5)).isoformat(),
              "summary": {"requests": ok + errors, "responses": ok, "ok": ok, "errors": errors, "rps": ok / n,
                          "latency_us": {"p50": 1000.0, "p99": 9000.0}},
              "error_classes": {"timeout": errors}, "timeline": rows}
    # the server's series: 50 % CPU, RSS growing 1 MiB a second, rows 0.5 s before the loadgen's;
    # `others` % of its CPU busy with other processes
    series = {"started_unix": START.timestamp(), "columns": ["t_s", "dt_s", "cpu_user_s", "cpu_sys_s", "rss_bytes",
                                                             "threads", "processes", "ctx_voluntary", "ctx_involuntary",
                                                             "others_cpu_s"],
              "rows": [[t + 0.5, 1.0, 0.3, 0.2, (10 + t) * 2**20, 4, 1, 10, 1, others / 100]
                       for t in range(1, n + 1)]}
    usage = {"series": series, "died_at_s": died + 0.5 if died is not None else None, "rss_limit_hit_s": None}
    lg = SimpleNamespace(report=CellRecord("x", "x", "x", 1, "ok", loadgen=report).loadgen)
    srv = SimpleNamespace(memory=None, returncode=lambda: -9 if died is not None else None)
    metrics = {"kind": kind, "rps": ok / n, "requests": ok + errors, "ok": ok, "errors": errors, "timeouts": errors,
               "target_rate": target_rate, "p99_us": 9000.0, "rss_peak_bytes": (10 + n) * 2**20,
               **over_time_metrics(kind, lg, usage, srv)}
    return CellRecord(server, workload, "p", 1, "ok", loadgen=lg.report, usage=usage, metrics=metrics)


def row(t: int, ok: float, p50_ms: float, failed: int = 0, demand: float | None = None,
        p99_ms: float | None = None) -> dict[str, Any]:
    return {"t": t, "completed": int(ok) + failed, "ok": int(ok), "errors": {"timeout": failed},
            "p50_us": p50_ms * 1000, "p90_us": p50_ms * 2000, "p99_us": (p99_ms or p50_ms * 3) * 1000,
            "max_us": p50_ms * 5000, "active_users": int(demand or 0), "target_users": demand}


def overload_cells() -> list[CellRecord]:
    T = range(1, 41)
    return [
        cell("fast", "ovl", "overload", [row(t, 1000 * t, 11, demand=250 * t) for t in T], "sessions"),
        cell("queue", "ovl", "overload", [row(t, min(1000 * t, 20_000), 11 if t < 20 else 11 * (t - 18), demand=250 * t)
                                          for t in T], "sessions"),
        cell("shed", "ovl", "overload", [row(t, min(1000 * t, 15_000), 11 if t < 15 else 250,
                                             failed=0 if t < 15 else 800, demand=250 * t) for t in T], "sessions"),
        cell("dies", "ovl", "overload", [row(t, min(2000 * t, 30_000) if t < 25 else 0, 11, demand=250 * t)
                                         for t in T], "sessions", died=25.2),
    ]


def soak_cells() -> list[CellRecord]:
    T = range(1, 61)
    return [
        cell("steady", "soak", "soak", [row(t, 2000, 1, p99_ms=2 + (t % 3) * 0.5) for t in T], "open", target_rate=2000,
             others=35.0),
        cell("gc", "soak", "soak", [row(t, 2000, 1, p99_ms=60 if t % 20 == 0 else 2) for t in T], "open",
             target_rate=2000),
        cell("slow", "soak", "soak", [row(t, 1500, 1, p99_ms=1.5) for t in T], "open", target_rate=2000),
    ]


def results() -> tuple[Any, aggregate.RunResults]:
    run = SimpleNamespace(id=9, fingerprint=FP, options={}, status="finished", started_at="2026-01-01T00:00:00",
                          finished_at=None)
    return run, aggregate.collect(9, overload_cells() + soak_cells(), FP, facts={})


def test_cells_carry_the_verdict_and_the_aligned_death() -> None:
    cells = {c.server: c for c in overload_cells()}
    assert {s: c.metrics.overload.overload_verdict for s, c in cells.items()} == {
        "fast": "kept up", "queue": "holds", "shed": "sheds", "dies": "crashes"}
    assert cells["dies"].metrics.over_time.server_died_at_s == 25.2 and cells["dies"].metrics.over_time.server_exit_code == -9
    assert cells["dies"].metrics.over_time.series_offset_s == 0.5
    assert cells["queue"].metrics.overload.peak_ok_rps == 20_000 and cells["queue"].metrics.over_time.rss_start_bytes == 11 * 2**20


def test_overload_ranks_by_peak_with_the_verdict_beside_it_and_states_the_rules() -> None:
    run, res = results()
    ovl = next(w for w in res.workloads if w.name == "ovl")
    assert [(g.server, g.place, g.figures.over_time.verdict) for g in ovl.points[0].groups] == [
        ("fast", 1, "kept up"), ("dies", 2, "crashes"), ("queue", 3, "holds"), ("shed", 4, "sheds")]
    md = to_markdown.render(run, res).decode()
    assert "Ranked by **peak successful responses/s, with the overload verdict beside it**" in md
    for verdict in ("crashes:", "degrades:", "sheds:", "slows:", "holds:", "kept up:"):
        assert f"- {verdict}" in md
    line = next(x for x in md.splitlines() if x.startswith("| 2 | dies"))
    assert "| 30,000 | crashes | its process died at t=25.2 s |" in line and line.endswith("| 25.2 s | 10 |")
    shed = next(x for x in md.splitlines() if x.startswith("| 4 | shed"))
    assert "| 15,000 | sheds |" in shed
    assert "crashed in repetition 1 — its process died at t=25.2 s (exit code -9)" in md


def test_soak_ranks_held_rates_by_worst_second_then_spread() -> None:
    run, res = results()
    soak = next(w for w in res.workloads if w.name == "soak")
    groups = soak.points[0].groups
    assert [g.server for g in groups] == ["steady", "gc", "slow"]  # slow did not hold 2,000 req/s
    f = {g.server: g.figures.over_time for g in groups}
    assert f["steady"].worst_second_p99_us == 3000 and f["gc"].worst_second_p99_us == 60_000
    assert f["steady"].second_p99_spread_us > 0 and f["gc"].median_second_p99_us == 2000
    assert soak.points[0].glance.verdict.startswith("steady first (worst 1-s p99 3,000 µs vs 60,000 µs)")
    md = to_markdown.render(run, res).decode()
    slow = next(x for x in md.splitlines() if x.startswith("| 3 | slow"))
    assert "1,500 (did not hold)" in slow and "11 → 70" in slow  # RSS first → last second, MiB
    # other processes on the server's CPU: a figure in every row, a warning past 20 %
    assert f["steady"].others_cpu_percent == 35.0 and f["gc"].others_cpu_percent == 10.0
    assert [w.kind for w in groups[0].warnings] == ["shared-cpu"] and not groups[1].warnings
    assert "other processes used 35 % of its CPUs" in md


def test_csv_has_the_over_time_columns() -> None:
    run, res = results()
    rows = {r["server"]: r for r in csv.DictReader(io.StringIO(to_csv.render(run, res).decode()))}
    assert rows["dies"]["verdict"] == "crashes" and float(rows["dies"]["peak_ok_rps"]) == 30_000
    assert rows["dies"]["server_died_at_s"] == "25.2" and rows["gc"]["worst_second_p99_us"] == "60000.0"


def test_html_draws_one_small_multiple_row_per_server_on_one_axis() -> None:
    run, res = results()
    html = to_html.render(run, res).decode()
    figs = json.loads(re.search(r'<script type="application/json" id="sb-figures">(.*?)</script>', html, re.S)
                      .group(1).replace("<\\/", "</"))
    over = [f for f in figs.values() if "over time, one row per server" in f["layout"]["title"]["text"]]
    assert len(over) == 2  # overload and soak
    ovl = next(f for f in over if "ovl" in f["layout"]["title"]["text"])
    labels = [a["text"] for a in ovl["layout"]["annotations"] if a["text"].startswith("<b>")]
    assert [x.split("</b>")[0] for x in labels] == ["<b>1. fast", "<b>2. dies", "<b>3. queue", "<b>4. shed"]
    assert "died at 25.2 s" in labels[1]
    assert sum(1 for k in ovl["layout"] if k.startswith("yaxis")) == 4 * 6  # rows × columns
    xaxes = {ovl["layout"][k].get("matches") for k in ovl["layout"] if k.startswith("xaxis")}
    assert len(xaxes - {None}) == 1  # every panel matches one time axis
    died_lines = [s for s in ovl["layout"].get("shapes", []) if s.get("x0") == 25.2]
    assert len(died_lines) == 6  # across the crashed row's six panels
    rss = [t for t in ovl["data"] if t["name"] == "RSS MiB"]
    assert rss[0]["x"][0] == 1.0 and rss[0]["y"][0] == 11.0  # the server's series, shifted onto the loadgen's axis
    assert "other processes on the server" in html and "Verdict: the first rule that matches" in html


def test_a_report_reads_the_workload_facts_stored_with_the_run() -> None:
    facts = {"ovl": {"description": "stored words", "kind": "overload", "p99_limit_us": 2500.0, "ramp": True}}
    wl, = aggregate.collect(9, overload_cells(), {**FP, "workloads": facts}).workloads
    assert (wl.description, wl.p99_limit_us, wl.kind, wl.ramp) == ("stored words", 2500.0, "overload", True)
    wl, = aggregate.collect(9, overload_cells(), {**FP, "workloads": {}}).workloads
    assert (wl.description, wl.p99_limit_us, wl.ramp) == ("", aggregate.DEFAULT_P99_LIMIT_US, False)


def test_a_run_stored_before_the_facts_reads_the_workload_files() -> None:
    facts = aggregate.workload_facts({})  # no "workloads" in the fingerprint: today's workloads/*.toml
    assert {n for n, f in facts.items() if f["ramp"]} == {"stressgrid", "locust-users", "stressgrid-overload"}
    assert facts["latency-at-rate"]["kind"] == "fixed-load" and facts["prantl-wrk"]["description"]
    assert [f["p99_limit_us"] for f in facts.values() if f["p99_limit_us"]]  # a capacity workload declares one


def _repetitions(server: str, timelines: list[list[dict]]) -> list[CellRecord]:
    """One cell per repetition of `server`, repetition i with the i-th timeline."""
    return [dataclasses.replace(cell(server, "ovl", "overload", rows, "sessions"), repetition=i)
            for i, rows in enumerate(timelines, 1)]


def test_repetitions_that_disagree_give_a_split_verdict_with_the_counts_and_agreeing_ones_their_verdict() -> None:
    T = range(1, 41)
    sheds = [row(t, min(1000 * t, 15_000), 11 if t < 15 else 250, failed=0 if t < 15 else 800, demand=250 * t)
             for t in T]
    # past the peak the answered requests' latency keeps growing with the failures: slows
    slows = [row(t, min(1000 * t, 15_000), 11 if t < 15 else 11 * (t - 13), failed=0 if t < 15 else 800,
                 demand=250 * t) for t in T]
    cells = _repetitions("shed", [sheds, sheds, slows]) + _repetitions("queue", [sheds, sheds, sheds])
    assert [c.metrics.overload.overload_verdict for c in cells] == ["sheds", "sheds", "slows"] + ["sheds"] * 3
    run = SimpleNamespace(id=9, fingerprint=FP, options={}, status="finished", started_at="2026-01-01T00:00:00",
                          finished_at=None)
    res = aggregate.collect(9, cells, FP, facts={})
    f = {g.server: g.figures.over_time for g in res.workloads[0].points[0].groups}
    assert (f["shed"].verdict, f["shed"].verdict_counts) == ("split", "sheds 2 of 3, slows 1")
    assert f["shed"].verdict_reason.startswith("repetition 1: sheds — ") and "; repetition 3: slows — " in f["shed"].verdict_reason
    assert (f["queue"].verdict, f["queue"].verdict_counts) == ("sheds", "sheds 3 of 3")
    md = to_markdown.render(run, res).decode()
    shed = next(x for x in md.splitlines() if re.match(r"\| [\d–]+ \| shed ", x))
    assert "| split (sheds 2 of 3, slows 1) | repetition 1: sheds" in shed
    queue = next(x for x in md.splitlines() if re.match(r"\| [\d–]+ \| queue ", x))
    assert "| sheds | " in queue and "split" not in queue
    assert "never the most common one" in md  # the rule is written beside the table
    rows = {r["server"]: r for r in csv.DictReader(io.StringIO(to_csv.render(run, res).decode()))}
    assert (rows["shed"]["verdict"], rows["shed"]["verdict_counts"]) == ("split", "sheds 2 of 3, slows 1")
