"""CLI commands `report`, `export` and `compare`: thin views of the one aggregation."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from .. import exporters, paths
from .common import fail, open_store, run_row
from .console import console, err_console
from ..results.formatting import fmt_us


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
                                                  "(default: html,markdown,csv,profile-csv; "
                                                  "profile-csv only with several kinds of work)"),
           db: Optional[Path] = typer.Option(None, "--db", help="results database")) -> None:
    """Write a run's report files (HTML, Markdown, CSV, JSON: the same aggregated figures)."""
    from ..exporters.report import write_report

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
    from ..exporters.report import load
    try:
        exporter = exporters.get(fmt)
    except ValueError as e:
        raise fail(f"--format: {e}") from None
    store = open_store(db, must_exist=True)
    run_id = store.latest_run_id() if run == "latest" else int(run) if run.isdigit() else None
    if run_id is None:
        raise fail(f"run {run!r}: give a run id or 'latest' (see `serverbench results`)")
    run_row(store, run_id)
    row, results = load(store, run_id)
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
    from ..results.compare import MIN_EFFECT, UNJUDGED, compare
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


def register(app: typer.Typer) -> None:
    """Add `report`, `export` and `compare` to the main app."""
    app.command("report")(report)
    app.command("export")(export_cmd)
    app.command("compare")(compare_cmd)
