"""CLI commands of the measuring pipeline: verify, run, workloads, results, export, bench.

`serverbench.cli` calls `register(app)` at import; every heavy import stays inside a command
so `serverbench --help` is quick and the modules are independent.
"""
from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from .console import console, err_console as err  # noqa: E402


def _fail(msg: str, code: int = 2) -> typer.Exit:
    err.print(f"error: {msg}", style="red", markup=False, highlight=False)
    return typer.Exit(code)


def _store(db: Optional[Path], must_exist: bool = False) -> Any:
    """Open the results database, or exit with one line; `must_exist` for read-only commands."""
    from . import paths
    from .store import Store, StoreError
    path = db or paths.DB_PATH
    if must_exist and not path.exists():
        raise _fail(f"no results database at {path}; run `serverbench run` first or pass --db")
    try:
        return Store(path)
    except StoreError as e:
        raise _fail(str(e)) from None


def _run_row(store: Any, run_id: int) -> Any:
    """The stored run, or exit with the store's one-line error (it lists recent runs)."""
    from .store import StoreError
    try:
        return store.run(run_id)
    except StoreError as e:
        raise _fail(str(e)) from None


def _manifests(ids: Optional[list[str]]) -> list[Any]:
    from . import cli
    return cli.selected(ids)


def _cpus(spec: Optional[str], what: str) -> list[int] | None:
    if spec is None:
        return None
    from . import supervisor
    try:
        return supervisor.parse_cpus(spec)
    except ValueError as e:
        raise _fail(f"--{what}-cpus {spec!r}: {e}") from None


# --------------------------------------------------------------------------------- verify
def verify_servers(manifests: list[Any], store: Any, *, server_cpus: list[int] | None,
                   allow_unavailable: bool, out: Console = console) -> tuple[list[str], list[str]]:
    """Verify each available, built server; store verdicts. Returns (passed ids, failed ids)."""
    from . import build, doctor, supervisor
    from . import verify as vf
    passed: list[str] = []
    failed: list[str] = []
    if server_cpus is None:
        server_cpus = supervisor.default_cpu_split()[0]
    for m in manifests:
        a = doctor.check(m)
        if not a.available:
            msg = f"{m.id}: unavailable ({a.reason or 'missing ' + ', '.join(a.missing)})"
            if a.install_hint:
                msg += f"; install with: {a.install_hint}"
            if allow_unavailable:
                out.print(f"[dim]skip {msg}[/]")
                continue
            err.print(f"[red]✗[/] {msg}")
            failed.append(m.id)
            continue
        if not build.is_built(m):
            err.print(f"[red]✗[/] {m.id}: not built; run `serverbench build {m.id}`")
            failed.append(m.id)
            continue
        fh = build.folder_hash(m)
        results: list[Any] = []
        srv = None
        try:
            with supervisor.run_server(m, cpus=server_cpus) as srv:
                results = list(vf.verify(srv.url, m, workers=srv.workers, pid=srv.pid))
        except supervisor.ServerStartError as e:
            results.append(vf.CheckResult("starts", False, str(e).splitlines()[0]))
        if srv is not None:
            clean = bool(srv.stopped_cleanly)
            results.append(vf.CheckResult(
                "sigterm", clean,
                "exited within 5 s of SIGTERM" if clean else "did not exit within 5 s of SIGTERM (killed)"))
        ok = all(r.passed or r.skipped for r in results)
        checks = [{"name": r.name, "passed": r.passed, "detail": r.detail, "skipped": r.skipped}
                  for r in results]
        store.record_verdict(m.id, ok, checks, fh)
        t = Table(title=f"{m.id}: {'[green]PASS[/]' if ok else '[red]FAIL[/]'}", title_justify="left")
        t.add_column("check")
        t.add_column("result")
        t.add_column("detail", overflow="fold")
        for r in results:
            res = "[dim]skip[/]" if r.skipped else "[green]pass[/]" if r.passed else "[red]FAIL[/]"
            t.add_row(r.name, res, r.detail)
        out.print(t)
        (passed if ok else failed).append(m.id)
    return passed, failed


def verify_cmd(ids: Optional[list[str]] = typer.Argument(None, help="Server ids; default: all."),
               allow_unavailable: bool = typer.Option(
                   False, "--allow-unavailable", help="Skip servers whose toolchain is missing."),
               server_cpus: Optional[str] = typer.Option(None, "--server-cpus", help="e.g. 0 or 0-1"),
               db: Optional[Path] = typer.Option(None, "--db", help="Results database.")) -> None:
    """Check each server against SPEC.md and store the verdict (run refuses unverified servers)."""
    store = _store(db)
    passed, failed = verify_servers(_manifests(ids), store, server_cpus=_cpus(server_cpus, "server"),
                                    allow_unavailable=allow_unavailable)
    console.print(f"verified: {len(passed)} passed, {len(failed)} failed"
                  + (f" ({', '.join(failed)})" if failed else ""))
    if failed:
        raise typer.Exit(1)


# ------------------------------------------------------------------------------------ run
def run_cmd(
    run_id: Optional[int] = typer.Argument(None, metavar="[RUN_ID]", show_default=False,
                                           help="With --resume: the run to continue (default: the latest)."),
    servers: Optional[list[str]] = typer.Option(None, "--servers", "-s",
                                                help="Server ids (repeatable or comma-separated)."),
    workload: Optional[list[str]] = typer.Option(None, "--workload", "-w",
                                                 help="Workload name (repeatable); default: quick."),
    repeat: Optional[int] = typer.Option(None, "--repeat", "-r", min=1,
                                         help="Repetitions per cell (default 3; 1 with --quick)."),
    quick: bool = typer.Option(False, "--quick", help="One repetition (a fast look)."),
    full: bool = typer.Option(False, "--full", help="Use the workloads' full sizes."),
    duration: Optional[str] = typer.Option(None, "--duration", "-d", help="Override every point's duration."),
    server_cpus: Optional[str] = typer.Option(None, "--server-cpus", help="CPUs for servers, e.g. 0"),
    client_cpus: Optional[str] = typer.Option(None, "--client-cpus", help="CPUs for loadgen, e.g. 1"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="$WORKERS for every server."),
    allow_unverified: bool = typer.Option(False, "--allow-unverified",
                                          help="Also run servers that failed or never ran verify."),
    resume: bool = typer.Option(False, "--resume",
                                help="Continue an interrupted run: `--resume [RUN_ID]`, its own options."),
    db: Optional[Path] = typer.Option(None, "--db", help="Results database."),
) -> None:
    """Measure servers × workloads × repetitions and store every cell."""
    from . import workloads as wl
    from .runner import DEFAULT_REPEAT, RunOptions, run_matrix
    from .workloads import parse_duration
    store = _store(db)
    if run_id is not None and not resume:
        raise _fail(f"RUN_ID {run_id} is only meaningful with --resume; use `serverbench run --resume {run_id}`")
    if resume:
        resume_id = run_id if run_id is not None else store.latest_run_id()
        if resume_id is None:
            raise _fail(f"no run to resume in {store.path}")
        row = _run_row(store, resume_id)
        if row.shown_status == "running":
            raise _fail(f"run {resume_id} is still being measured by process {(row.owner or '?').split('@')[0]}; "
                        "wait for it or stop that process before resuming")
        result = run_matrix(store, RunOptions(), resume=resume_id, console=console)
        raise typer.Exit(130 if result.status == "interrupted" else 0)
    if duration is not None:
        try:
            parse_duration(duration)
        except ValueError as e:
            raise _fail(f"--duration: {e}") from None
    ids = [x for s in servers or [] for x in s.split(",") if x] or None
    names = [x for s in workload or ["quick"] for x in s.split(",") if x]
    errors: list[str] = []
    all_w = wl.load_workloads(errors=errors)
    for e in errors:
        err.print(f"warning: {e}", style="yellow", markup=False, highlight=False)
    try:
        chosen = wl.select(all_w, names)
    except wl.WorkloadError as e:
        raise _fail(str(e)) from None
    manifests = _manifests(ids)
    opts = RunOptions(servers=[m.id for m in manifests], workloads=names,
                      repeat=repeat or (1 if quick else DEFAULT_REPEAT), duration=duration, full=full,
                      server_cpus=_cpus(server_cpus, "server"), client_cpus=_cpus(client_cpus, "client"),
                      allow_unverified=allow_unverified, workers=workers)
    result = run_matrix(store, opts, manifests=manifests, workloads=chosen, console=console)
    if result.status == "interrupted":
        raise typer.Exit(130)


# ------------------------------------------------------------------------------ workloads
def workloads_cmd() -> None:
    """List the workloads with their sizes."""
    from . import workloads as wl
    errors: list[str] = []
    ws = wl.load_workloads(errors=errors)
    t = Table(header_style="bold")
    for c in ("name", "origin", "points", "quick ≈", "full ≈", "description"):
        t.add_column(c, overflow="fold" if c == "description" else "ellipsis")
    for w in ws.values():
        if w.includes:
            subs = wl.select(ws, [w.name])
            q = sum(s.size(False).planned_seconds() for s in subs)
            f = sum(s.size(True).planned_seconds() for s in subs)
            t.add_row(w.name, w.origin, "+".join(w.includes), f"{q:.0f} s", f"{f:.0f} s", w.description)
        else:
            t.add_row(w.name, w.origin, ", ".join(p.label for p in w.size(False).points),
                      f"{w.size(False).planned_seconds():.0f} s", f"{w.size(True).planned_seconds():.0f} s",
                      w.description)
    console.print(t)
    console.print("[dim]≈ planned load seconds per server and repetition (warm-up included)[/]")
    for e in errors:
        err.print(f"warning: {e}", style="yellow", markup=False, highlight=False)


# -------------------------------------------------------------------------------- results
def results_cmd(db: Optional[Path] = typer.Option(None, "--db", help="Results database.")) -> None:
    """List the stored runs."""
    store = _store(db)
    rows = store.runs()
    if not rows:
        console.print(f"no runs in {store.path} yet; start one with `serverbench run`")
        return
    t = Table(header_style="bold")
    for c in ("run", "started (UTC)", "status", "ok/failed/skipped", "×", "workloads", "servers"):
        t.add_column(c, no_wrap=c not in ("servers", "workloads"))
    for r in rows:
        o = r.options
        status = r.shown_status
        colour = {"finished": "green", "interrupted": "yellow", "abandoned": "yellow",
                  "running": "cyan"}.get(status, "red")
        t.add_row(str(r.id), r.started_at[:16].replace("T", " "), f"[{colour}]{status}[/]",
                  f"{r.cells_ok}/{r.cells_failed}/{r.cells_skipped}", str(o.get("repeat", "")),
                  ", ".join(o.get("workloads") or []), ", ".join(o.get("servers") or ["all"]))
    console.print(t)


# --------------------------------------------------------------------------------- export
CSV_FIELDS = ["run_id", "server", "workload", "point", "repetition", "status", "error", "started_at",
              "finished_at", "rps", "requests", "ok", "errors", "timeouts", "p50_us", "p75_us", "p90_us",
              "p99_us", "p999_us", "p9999_us", "max_us", "mean_us", "cpu_user_s", "cpu_sys_s",
              "cpu_percent", "rss_peak_bytes", "rss_mean_bytes", "threads_peak", "ctx_voluntary",
              "ctx_involuntary", "client_cpu_percent", "client_saturated", "missed_sends", "target_rate",
              "connections", "workers", "bound", "capacity_rps", "overhead_s"]


def export_rows(store: Any, run_id: int) -> list[dict[str, Any]]:
    return [{"run_id": run_id, "server": c.server, "workload": c.workload, "point": c.point,
             "repetition": c.repetition, "status": c.status, "error": c.error,
             "started_at": c.started_at, "finished_at": c.finished_at,
             **{k: c.metrics.get(k) for k in CSV_FIELDS[9:]}} for c in store.cells(run_id)]


def export_cmd(run: str = typer.Argument(..., help="Run id, or 'latest'."),
               fmt: str = typer.Option("json", "--format", "-f", help="json | csv"),
               out: Optional[Path] = typer.Option(None, "--out", "-o", help="File (default: stdout)."),
               db: Optional[Path] = typer.Option(None, "--db", help="Results database.")) -> None:
    """Export a run's cells (JSON: everything incl. loadgen output; CSV: the flat figures)."""
    from dataclasses import asdict
    store = _store(db)
    run_id = store.latest_run_id() if run == "latest" else int(run) if run.isdigit() else None
    if run_id is None:
        raise _fail(f"run {run!r}: give a run id or 'latest' (see `serverbench results`)")
    row = _run_row(store, run_id)
    if fmt == "json":
        text = json.dumps({"run": asdict(row), "cells": [asdict(c) for c in store.cells(run_id)]}, indent=1)
    elif fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(export_rows(store, run_id))
        text = buf.getvalue()
    else:
        raise _fail(f"--format {fmt!r}: use json or csv")
    if out is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        out.write_text(text)
        err.print(f"wrote {out}")


# ---------------------------------------------------------------------------------- bench
def bench_cmd(full: bool = typer.Option(False, "--full/--quick", help="Full sizes (slow) or quick."),
              db: Optional[Path] = typer.Option(None, "--db", help="Results database.")) -> None:
    """What `make bench` runs: install, build, verify, run `quick` on every verified server, report."""
    from . import build, doctor, install, paths
    from . import workloads as wl
    from .runner import RunOptions, run_matrix
    store = _store(db)
    manifests = _manifests(None)
    if doctor.is_root():
        for line in install.install_missing(manifests, dry_run=False):
            console.print(line)
        doctor.clear_cache()
    else:
        for line in install.install_missing(manifests, dry_run=True):
            console.print(f"[yellow]not root; to install run:[/] {line}")
    avail = [m for m in manifests if doctor.check(m).available]
    for m in manifests:
        if m not in avail:
            console.print(f"[yellow]skip {m.id}: toolchain unavailable[/]")
    built = {r.id for r in build.build(avail, console=err) if r.status in ("built", "cached")}
    for m in avail:
        if m.id not in built:
            console.print(f"[yellow]skip {m.id}: build failed (see `serverbench build {m.id}`)[/]")
    passed, failed = verify_servers([m for m in avail if m.id in built], store, server_cpus=None,
                                    allow_unavailable=True)
    if failed:
        console.print(f"[yellow]not measured (failed verify): {', '.join(failed)}[/]")
    if not passed:
        raise _fail("no server passed verify; nothing to measure", 1)
    chosen = wl.select(wl.load_workloads(), ["quick"])
    opts = RunOptions(servers=passed, workloads=["quick"], repeat=1, full=full)
    result = run_matrix(store, opts, manifests=[m for m in avail if m.id in passed], workloads=chosen,
                        console=console)
    if result.status == "interrupted":
        raise typer.Exit(130)
    console.print(f"results DB: {store.path}")
    try:
        from .report import write_report
    except ImportError as e:
        console.print(f"[yellow]report module unavailable ({e}); export with "
                      f"`serverbench export {result.run_id} --format csv`[/]")
        return
    rp = write_report(store, result.run_id, paths.REPORTS)
    console.print(f"HTML:     {rp.html}\nMarkdown: {rp.markdown}\nCSV:      {rp.csv}")


def register(app: typer.Typer) -> None:
    """Add the run-pipeline commands to the main Typer app."""
    app.command("verify")(verify_cmd)
    app.command("run")(run_cmd)
    app.command("workloads")(workloads_cmd)
    app.command("results")(results_cmd)
    app.command("export")(export_cmd)
    app.command("bench")(bench_cmd)
