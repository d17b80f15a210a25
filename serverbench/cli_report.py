"""CLI commands `report`, `export` and `compare`: thin views of the one aggregation; `seeds` (and `make
seeds`): the published studies beside stored runs, and with --measure the runs they need, one per
workload through the one runner (cli_run._measure, as `serverbench run`), resumable; the needs come
from seeds/plan.py, the runs read from seeds/runs.py."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from . import exporters, paths
from .cli_common import fail, open_store, run_row, selected
from .console import console, err_console
from .formatting import fmt_us


def _fmt(x: float | None, spec: str = ",.0f") -> str:
    return "—" if x is None else format(x, spec)


def _formats(spec: Optional[str]) -> list[str]:
    names = [x for x in (spec or ",".join(exporters.DEFAULT_REPORT_FORMATS)).split(",") if x]
    for n in names:
        try:
            exporters.get(n)
        except ValueError as e:
            raise fail(f"--format: {e}") from None
    return names


def report(run: Optional[int] = typer.Argument(None, help="run id (default: the latest run)"),
           out: Optional[Path] = typer.Option(None, "--out", help="output directory (default: results/reports)"),
           fmt: Optional[str] = typer.Option(None, "--format", "-f",
                                             help=f"comma-separated, of: {', '.join(exporters.EXPORTERS)} "
                                                  "(default: html,markdown,csv)"),
           db: Optional[Path] = typer.Option(None, "--db", help="results database")) -> None:
    """Write a run's report files (HTML, Markdown, CSV, JSON: the same aggregated figures)."""
    from .exporters.report import write_report

    formats = _formats(fmt)
    store = open_store(db, must_exist=True)
    run_id = run if run is not None else store.latest_run_id()
    if run_id is None:
        raise fail(f"no runs in {store.path}; run `serverbench run` first")
    run_row(store, run_id)
    result = write_report(store, run_id, out or paths.REPORTS, formats)
    for p in result.files.values():
        print(p)


def export_cmd(run: str = typer.Argument(..., help="Run id, or 'latest'."),
               fmt: str = typer.Option("json", "--format", "-f", help=" | ".join(exporters.EXPORTERS)),
               out: Optional[Path] = typer.Option(None, "--out", "-o", help="File (default: stdout)."),
               db: Optional[Path] = typer.Option(None, "--db", help="Results database.")) -> None:
    """Export one run in one format (JSON: groups, warnings and every cell with its loadgen output)."""
    from .results import aggregate
    try:
        exporter = exporters.get(fmt)
    except ValueError as e:
        raise fail(f"--format: {e}") from None
    store = open_store(db, must_exist=True)
    run_id = store.latest_run_id() if run == "latest" else int(run) if run.isdigit() else None
    if run_id is None:
        raise fail(f"run {run!r}: give a run id or 'latest' (see `serverbench results`)")
    run_row(store, run_id)
    row, results = aggregate.load(store, run_id)
    data = exporter.render(row, results)
    if out is None:
        sys.stdout.buffer.write(data if data.endswith(b"\n") else data + b"\n")
        sys.stdout.flush()
    else:
        out.write_bytes(data)
        err_console.print(f"wrote {out}")


VERDICT_STYLE = {"regression": "red", "improvement": "green", "within noise": "dim"}


def compare_cmd(run_a: int = typer.Argument(..., help="baseline run id"),
                run_b: int = typer.Argument(..., help="run to compare with the baseline"),
                db: Optional[Path] = typer.Option(None, "--db", help="results database"),
                show_all: bool = typer.Option(False, "--all", help="also list cells measured in only one run")) -> None:
    """Throughput and p99 of run B relative to run A, judged against the repetitions' noise."""
    from .results.compare import MIN_EFFECT, UNJUDGED, compare
    store = open_store(db, must_exist=True)
    run_row(store, run_a), run_row(store, run_b)
    rows = compare(store, run_a, run_b)
    one_sided = [r for r in rows if r.a is None or r.b is None]
    if not show_all:
        rows = [r for r in rows if r.a is not None and r.b is not None]
    t = Table(title=f"run {run_b} vs run {run_a}", caption=(
        "significant = min–max ranges apart and |B/A−1| > max(2×CV, "
        f"{MIN_EFFECT:.0%}); a run of 1 repetition is not judged (--repeat 3 gives the noise); "
        "capacity points compare capacity req/s"))
    for col in ("server", "workload", "point"):
        t.add_column(col)
    for col in ("req/s A", "req/s B", "B/A", "p99 A", "p99 B", "p99 B/A"):
        t.add_column(col, justify="right")
    t.add_column("verdict")
    for r in rows:
        p99_style = VERDICT_STYLE.get(r.p99_verdict or "", "")
        p99_ratio = _fmt(r.p99_ratio, ".3f")
        t.add_row(r.server, r.workload, r.point,
                  _fmt(r.a.median if r.a else None), _fmt(r.b.median if r.b else None), _fmt(r.ratio, ".3f"),
                  fmt_us(r.p99_a), fmt_us(r.p99_b),
                  f"[{p99_style}]{p99_ratio}[/]" if p99_style else p99_ratio,
                  r.verdict, style=VERDICT_STYLE.get(r.verdict, "yellow"))
    console.print(t)
    regressions = sum(r.verdict == "regression" for r in rows)
    improvements = sum(r.verdict == "improvement" for r in rows)
    unjudged = sum(r.verdict == UNJUDGED for r in rows)
    console.print(f"{regressions} regressions, {improvements} improvements, "
                  f"{len(rows) - regressions - improvements - unjudged} within noise, {unjudged} not judged"
                  + (f"; {len(one_sided)} measured in only one run (--all lists them)"
                     if one_sided and not show_all else ""))


# ---------------------------------------------------------------------------------- seeds
BUDGET_MIN = 90  # what `make seeds` is meant to take on the 2-core machine (issue 39)


def _plan_table(store: Any, needs: list[Any], planned: dict[str, float]) -> Table:
    from .seeds import plan
    t = Table(title="what the published studies need", title_justify="left")
    for h in ("workload", "rows", "repetitions", "memory ceiling", "planned load", "stored", "for"):
        t.add_column(h, overflow="fold")
    runs = store.runs()
    for n in needs:
        done, stopped = plan.stored_for(runs, n)
        state = (f"met by run {done.id}" if done else f"resume run {stopped.id}" if stopped else "to measure")
        t.add_row(n.workload, ", ".join(n.rows), str(n.repeat), n.memory_limit or "—",
                  f"{planned[n.workload] / 60:.1f} min", state, "; ".join(n.why))
    return t


def _planned(needs: list[Any], full: bool) -> dict[str, float]:
    """Planned load seconds per need: the workload's warm-up and points × rows × repetitions (server
    starts and warm-up rounds to a steady rate come on top)."""
    from .catalog import workloads as wl
    ws = wl.load_workloads()
    return {n.workload: ws[n.workload].size(full).planned_seconds() * len(n.rows) * n.repeat for n in needs}


def measure(store: Any, needs: list[Any]) -> list[int]:
    """Measure every need not yet met by a stored run (resuming one interrupted for it); the run ids
    used, in the needs' order. Ctrl-C stops after storing the finished cells: the same command resumes."""
    from .catalog import workloads as wl
    from .cli_run import _measure, prepare
    from .model import RunOptions
    from .seeds import plan
    rows = list(dict.fromkeys(r for n in needs for r in n.rows))
    ready = {m.id: m for m in prepare(selected(rows), store)}
    used = []
    for n in needs:
        have = tuple(r for r in n.rows if r in ready)
        if not have:
            console.print(f"[yellow]{n.workload}: none of {', '.join(n.rows)} passed verify; not measured[/]")
            continue
        need = plan.Need(n.workload, have, n.repeat, n.memory_limit, n.why)
        if (busy := plan.in_flight(store.runs(), need)) is not None:
            raise fail(f"{n.workload}: run {busy.id} is being measured by process "
                       f"{(busy.owner or '?').split('@')[0]}; wait for it or stop that process, then run this again", 1)
        done, stopped = plan.stored_for(store.runs(), need)
        if done is not None:
            console.print(f"{n.workload}: already measured in run {done.id}")
            used.append(done.id)
            continue
        t0 = time.monotonic()
        if stopped is not None:
            console.print(f"{n.workload}: resuming run {stopped.id}")
            result = _measure(store, RunOptions(), resume=stopped.id)
        else:
            opts = RunOptions.from_dict(need.options())
            result = _measure(store, opts, manifests=[ready[r] for r in have],
                              workloads=wl.select(wl.load_workloads(), [n.workload]))
        console.print(f"{n.workload}: run {result.run_id} {result.status} in {(time.monotonic() - t0) / 60:.1f} min")
        if result.status == "interrupted":
            console.print("[yellow]interrupted[/]: `serverbench seeds --measure` (or `make seeds`) continues it")
            raise typer.Exit(130)
        used.append(result.run_id)
    return used


def seeds_cmd(run: Optional[int] = typer.Option(None, "--run", help="one run id (default: for each workload "
                                                "a study reads, the run that measured the most of its rows)"),
              do_measure: bool = typer.Option(False, "--measure", help="first measure what the studies need "
                                              "and no stored run has (build, verify, one run per workload, "
                                              "3 repetitions; resumable: run it again after an interruption)"),
              plan_only: bool = typer.Option(False, "--plan", help="print what --measure would measure, and its "
                                             "planned load time, and stop"),
              repeat: int = typer.Option(3, "--repeat", min=1, help="repetitions per row for --measure"),
              db: Optional[Path] = typer.Option(None, "--db", help="results database")) -> None:
    """The published studies' tables (seeds/*.toml) beside stored runs: pairs kept and flipped, Kendall's
    tau, each flip's measured cause or "unexplained", each claim answered from the measurements."""
    from .results import aggregate
    from .seeds import plan, runs, section, studies
    try:
        loaded = studies.load_all()
    except studies.SeedsError as e:
        raise fail(str(e)) from None
    if do_measure or plan_only:
        store = open_store(db)
        needs = plan.needs(loaded, repeat)
        planned = _planned(needs, False)
        console.print(_plan_table(store, needs, planned))
        total = sum(planned.values()) / 60
        console.print(f"planned load {total:.0f} min (server starts and warm-ups to a steady rate come on top); "
                      f"the budget on the 2-core machine is {BUDGET_MIN} min")
        if plan_only:
            return
        t0 = time.monotonic()
        measure(store, needs)
        console.print(f"measured in {(time.monotonic() - t0) / 60:.1f} min")
    store = open_store(db, must_exist=True)
    if run is not None:
        row, results = aggregate.load(store, run_row(store, run).id)
        print("\n".join(section.markdown(row, results, loaded, everything=True)))
        return
    found = runs.latest(store, plan.needs(loaded, repeat))
    if found.newest is None:
        raise fail(f"no run in {store.path} measured a study's workload; run `serverbench seeds --measure` "
                   "(or `make seeds`) first")
    print("\n".join(section.markdown(found.newest, found, loaded, everything=True)))


def register(app: typer.Typer) -> None:
    """Add `report`, `export`, `compare` and `seeds` to the main app."""
    app.command("report")(report)
    app.command("export")(export_cmd)
    app.command("compare")(compare_cmd)
    app.command("seeds")(seeds_cmd)
