"""CLI commands of the measuring pipeline: run (and --resume), workloads, results, bench.

Thin: they parse options, call the runner with a RunView listening, and print the summary
from the aggregation. Heavy imports stay inside commands so `serverbench --help` is quick.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from .common import cpus_option, fail, open_store, run_row, selected
from .console import console, err_console as err
from .steps import measure, ready_rows, run_profiles


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
    split: str = typer.Option("auto", "--split", help="Without --server-cpus/--client-cpus: auto (calibrate "
                              "the load generator against c-epoll for a few seconds and give the client enough "
                              "CPUs to drive 1.3× the server's top rate) or half (two halves)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="$WORKERS for every server."),
    server_memory_limit: Optional[str] = typer.Option(
        None, "--server-memory-limit", help="Memory ceiling for each server's process tree, e.g. 512M: "
        "cgroup v2 where the machine allows it, else an RSS watchdog that kills the tree past it."),
    allow_unverified: bool = typer.Option(False, "--allow-unverified",
                                          help="Also run servers that failed a measurement check of verify or "
                                               "never ran it (a failed feature check still skips the "
                                               "workloads using that feature)."),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", help="Split each point's load over Dask workers with the resource loadgen: "
        "local:N (N worker processes on 127.0.0.1, on the client CPUs) or a scheduler address tcp://HOST:PORT "
        "(tls://… with --cluster-tls-*)."),
    target: Optional[str] = typer.Option(
        None, "--target", help="Measure a server that is already running at this http:// URL (not built, "
        "verified or started here; no CPU/memory figures). --servers ID labels it as that catalog row."),
    server_on_cluster: bool = typer.Option(
        False, "--server-on-cluster", help="Build, verify, start and sample the server on the --cluster's worker "
        "with the resource server (local:N adds that worker on this machine); it listens on that worker's address."),
    cluster_tls_ca: Optional[Path] = typer.Option(None, "--cluster-tls-ca", help="Dask TLS: CA file."),
    cluster_tls_cert: Optional[Path] = typer.Option(None, "--cluster-tls-cert", help="Dask TLS: client certificate."),
    cluster_tls_key: Optional[Path] = typer.Option(None, "--cluster-tls-key", help="Dask TLS: client key."),
    db_url: Optional[str] = typer.Option(
        None, "--db-url", help="Database workloads: an existing PostgreSQL with TechEmpower's schema "
        "(postgres://USER:PASSWORD@HOST:PORT/DB; stored with its password masked) instead of the harness's own."),
    db_cpus: Optional[str] = typer.Option(
        None, "--db-cpus", help="Database workloads: the CPUs of the harness's own PostgreSQL, e.g. 1 (default: "
        "the load generator's, whose headroom then counts the database's CPU)."),
    resume: bool = typer.Option(False, "--resume",
                                help="Continue an interrupted run: `--resume [RUN_ID]`, its own options."),
    db: Optional[Path] = typer.Option(None, "--db", help="Results database."),
) -> None:
    """Measure servers × workloads × repetitions and store every cell."""
    from ..model import DEFAULT_REPEAT, RunOptions
    from ..database.schema import mask_url
    store = open_store(db)
    if run_id is not None and not resume:
        raise fail(f"RUN_ID {run_id} is only meaningful with --resume; use `serverbench run --resume {run_id}`")
    if resume:
        _resume(store, run_id, db_url)
    tls = {k: str(v) for k, v in (("ca_file", cluster_tls_ca), ("cert", cluster_tls_cert),
                                   ("key", cluster_tls_key)) if v is not None} or None
    _check_options(split, duration, server_memory_limit, cluster, tls, server_on_cluster, target)
    ids = [x for s in servers or [] for x in s.split(",") if x] or None
    _check_target(target, ids)
    names = [x for s in workload or ["quick"] for x in s.split(",") if x]
    chosen = _chosen_workloads(names)
    manifests = selected(ids) if ids or target is None else None
    opts = RunOptions(servers=[m.id for m in manifests] if manifests is not None else None, workloads=names,
                      repeat=repeat or (1 if quick else DEFAULT_REPEAT), duration=duration, full=full,
                      server_cpus=cpus_option(server_cpus, "server"), client_cpus=cpus_option(client_cpus, "client"),
                      allow_unverified=allow_unverified, workers=workers, server_memory_limit=server_memory_limit,
                      cluster=cluster, cluster_tls=tls, target=target, server_on_cluster=server_on_cluster,
                      split=split, db_url=mask_url(db_url) if db_url else None,
                      db_cpus=cpus_option(db_cpus, "db"))
    result = measure(store, opts, manifests=manifests, workloads=chosen, db_url=db_url)
    if result.status == "interrupted":
        raise typer.Exit(130)
    _measured_something(store, result)


def _resume(store: Any, run_id: Optional[int], db_url: Optional[str] = None) -> None:
    """`run --resume [RUN_ID]`: continue a stored run with its own options; exits when done. A run that
    used --db-url needs it again (its password is not stored); the harness's own database starts afresh."""
    from ..model import RunOptions
    resume_id = run_id if run_id is not None else store.latest_run_id()
    if resume_id is None:
        raise fail(f"no run to resume in {store.path}")
    row = run_row(store, resume_id)
    if row.shown_status == "running":
        raise fail(f"run {resume_id} is still being measured by process {(row.owner or '?').split('@')[0]}; "
                    "wait for it or stop that process before resuming")
    stored = RunOptions.from_dict(store.run(resume_id).options).db_url
    if stored and not db_url:
        raise fail(f"run {resume_id} used --db-url {stored}; pass it again (with its password) to resume")
    result = measure(store, RunOptions(), resume=resume_id, db_url=db_url)
    if result.status == "interrupted":
        raise typer.Exit(130)
    _measured_something(store, result)
    raise typer.Exit(0)


def _measured_something(store: Any, result: Any) -> None:
    """Exit 1 with one line naming why when every cell of the finished run was skipped (never verified,
    not built…): "0 ok, 0 failed, 12 skipped" is not a result, and a script must not take it for one."""
    from .views import nothing_measured
    line = nothing_measured(result, store.cells(result.run_id))
    if line is not None:
        raise fail(line, 1)


def _check_options(split: str, duration: Optional[str], server_memory_limit: Optional[str], cluster: Optional[str],
                   tls: Optional[dict], server_on_cluster: bool, target: Optional[str]) -> None:
    """One clear line for the first option that cannot work, before anything is measured."""
    from ..catalog.workloads import parse_duration
    if split not in ("auto", "half"):
        raise fail(f"--split: {split!r} is not auto or half; fix: use one of them (or give --server-cpus)")
    if duration is not None:
        try:
            parse_duration(duration)
        except ValueError as e:
            raise fail(f"--duration: {e}") from None
    if server_memory_limit is not None:
        from ..processes.memlimit import MemoryLimitError, parse_size
        try:
            parse_size(server_memory_limit)
        except MemoryLimitError as e:
            raise fail(f"--server-memory-limit: {e}") from None
    if cluster is not None:
        from ..cluster.load_cluster import check_spec
        try:
            check_spec(cluster, tls)
        except ValueError as e:
            raise fail(f"--cluster: {e}") from None
    if server_on_cluster and cluster is None:
        raise fail("--server-on-cluster needs --cluster (local:N, or the scheduler your server machine's worker joined)")
    if server_on_cluster and target is not None:
        raise fail("--server-on-cluster starts the server itself; --target measures one already running: give one")


def _check_target(target: Optional[str], ids: Optional[list[str]]) -> None:
    if target is None:
        return
    from ..processes.target import parse
    try:
        parse(target)
    except ValueError as e:
        raise fail(str(e)) from None
    if ids and len(ids) != 1:
        raise fail("--target measures one server: give at most one --servers ID to label it")


def _chosen_workloads(names: list[str]) -> list:
    """The named workloads (the broken files in workloads/ are warnings, an unknown name fails)."""
    from ..catalog import workloads as wl
    errors: list[str] = []
    all_w = wl.load_workloads(errors=errors)
    for e in errors:
        err.print(f"warning: {e}", style="yellow", markup=False, highlight=False)
    try:
        return wl.select(all_w, names)
    except wl.WorkloadError as e:
        raise fail(str(e)) from None


# ------------------------------------------------------------------------------ workloads
def workloads_cmd() -> None:
    """List the workloads with their sizes."""
    from ..catalog import workloads as wl
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
            # a cores sweep runs its point once per server CPU count (1, 2, 4 …) of the machine
            per = "/count" if any(p.server_cores is not None for p in w.size(False).points) else ""
            t.add_row(w.name, w.origin, ", ".join(p.label for p in w.size(False).points),
                      f"{w.size(False).planned_seconds():.0f} s{per}", f"{w.size(True).planned_seconds():.0f} s{per}",
                      w.description)
    console.print(t)
    console.print("[dim]≈ planned load seconds per server and repetition (warm-up included); /count: per server "
                  "CPU count a cores sweep measures[/]")
    for e in errors:
        err.print(f"warning: {e}", style="yellow", markup=False, highlight=False)


# -------------------------------------------------------------------------------- results
def results_cmd(db: Optional[Path] = typer.Option(None, "--db", help="Results database.")) -> None:
    """List the stored runs."""
    store = open_store(db)
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
    for r in rows:
        if r.status == "failed" and r.error:
            err.print(f"run {r.id} failed: {r.error}", style="red", markup=False, highlight=False)


# ---------------------------------------------------------------------------------- bench
# What `make bench` measures: the headline throughput table, judged (issue 25): 3 repetitions, each a
# fresh start warmed to a steady rate, in alternating order. With ~30 rows on the 2-core machine a
# judged run of every quick workload would take over an hour; `serverbench run` (quick) has the rest.
BENCH_WORKLOADS = ["prantl-wrk"]
BENCH_REPEAT = 3


def bench_cmd(full: bool = typer.Option(False, "--full/--quick", help="Full sizes (slow) or quick."),
              repeat: int = typer.Option(BENCH_REPEAT, "--repeat", min=1,
                                         help="Repetitions per row (3 or more: judged against noise)."),
              cold: bool = typer.Option(False, "--cold/--no-cold",
                                        help="Also time cold builds in the profile (tens of minutes more)."),
              db: Optional[Path] = typer.Option(None, "--db", help="Results database.")) -> None:
    """What `make bench` runs: install, build, verify, run prantl-wrk 3 times on every verified server
    (judged: leaders beyond noise, or ties), profile them (`serverbench profile`, cold builds skipped unless --cold, warm rebuilds unless --full), report."""
    from .. import paths
    from ..catalog import workloads as wl
    from ..model import RunOptions
    from ..exporters.report import write_report
    store = open_store(db)
    chosen = wl.select(wl.load_workloads(), BENCH_WORKLOADS)
    ready = ready_rows(selected(None), store, chosen)
    passed = [m.id for m in ready]
    opts = RunOptions(servers=passed, workloads=BENCH_WORKLOADS, repeat=repeat, full=full, split="auto")
    result = measure(store, opts, manifests=ready, workloads=chosen)
    if result.status == "interrupted":
        raise typer.Exit(130)
    # The quick profile: 1,000 idle connections only (the 10,000 level of `serverbench profile`
    # costs minutes on thread-per-connection rows), no warm rebuild (the build step above has just
    # built every row), and the start-up of the run's own starts (probed as the profile probes them):
    # the rows are not started again to time what the run just timed.
    from ..cost.idle_cost import startups_of
    levels = None if full else (1000,)
    run_profiles(passed, store, cold=cold, warm=full, only_changed=True, levels=levels, starts=5 if full else 3,
                 startups=startups_of(store.cells(result.run_id)))
    console.print(f"results DB: {store.path}")
    rp = write_report(store, result.run_id, paths.REPORTS)
    console.print(f"HTML:     {rp.html}\nMarkdown: {rp.markdown}\nCSV:      {rp.csv}")


def register(app: typer.Typer) -> None:
    """Add the run-pipeline commands to the main Typer app."""
    app.command("run")(run_cmd)
    app.command("workloads")(workloads_cmd)
    app.command("results")(results_cmd)
    app.command("bench")(bench_cmd)
