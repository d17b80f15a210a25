"""The lifecycle commands: doctor, list, install, build, version (the catalog and its rows' state)."""
from __future__ import annotations

import resource
import shutil
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from .. import __version__, paths
from ..catalog import build as build_mod, doctor as doctor_mod, left_out
from ..catalog.install import install_missing
from ..catalog.manifests import Manifest, select
from ..catalog.workloads import load_workloads
from ..processes import supervisor
from ..rules import admission
from ..store import Store
from .common import load_catalog_warn, selected
from .console import console, err_console

IdsArg = typer.Argument(None, help="Server ids (folder names under servers/); default: all.",
                        show_default=False)


def _yes(flag: bool | None) -> str:
    if flag is None:
        return "?"
    return "[green]yes[/]" if flag else "[red]no[/]"


def _verified(ms: list[Manifest]) -> dict[str, str]:
    """Conformance column per server: yes / no / stale (code changed since) / – (never verified)."""
    out: dict[str, str] = {}
    with Store(paths.DB_PATH) as store:
        for m in ms:
            v = store.verdict(m.id)
            if v is None:
                out[m.id] = "–"
            elif v.folder_hash not in (None, build_mod.folder_hash(m)):
                out[m.id] = "[yellow]stale[/]"
            else:
                a = admission.admission(v.checks, v.passed)
                out[m.id] = _yes(a.admitted) + (" [yellow]*[/]" if a.admitted and (a.deviations or a.features) else "")
    return out


def _verdict_lines(ms: list[Manifest]) -> None:
    """Per row with a current verdict: each deviation and each workload it cannot run, one line each."""
    workloads = list(load_workloads(errors=[]).values())
    with Store(paths.DB_PATH) as store:
        for m in ms:
            v = store.verdict(m.id)
            if v is None or v.folder_hash not in (None, build_mod.folder_hash(m)):
                continue
            a = admission.admission(v.checks, v.passed)
            if a.admitted:
                for line in admission.reader_lines(a, workloads):
                    console.print(f"* {m.id}: {line}", markup=False, highlight=False, soft_wrap=True)


def doctor(ids: Optional[list[str]] = IdsArg) -> None:
    """Show which contestants can be built here (build toolchain), which can run here (built, with their
    run-time needs), their versions and how to install the rest."""
    ms = selected(ids)
    table = Table(title="servers")
    for col in ("server", "language", "builds here", "missing", "runs here", "version", "install hint", "database", "compress",
                "TLS; HTTP/2"):
        table.add_column(col, overflow="fold")
    for m, a, r in zip(ms, doctor_mod.check_all(ms), doctor_mod.check_all(ms, "run")):
        built = build_mod.is_built(m)
        runs = (_yes(True) if r.available and built else
                f"[red]no[/] (missing: {', '.join(r.missing)})" if not r.available else "[red]no[/] (not built)")
        shown = a if a.available else r
        version = shown.version or (f"[yellow]{shown.reason}[/]" if shown.available and shown.reason else "")
        table.add_row(m.id, m.language, _yes(a.available), ", ".join(a.missing), runs, version,
                      a.install_hint or "", escape(doctor_mod.db_text(m)),
                      escape(doctor_mod.compress_text(m)),
                      escape(f"{doctor_mod.tls_text(m)}; HTTP/2: {doctor_mod.http2_text(m)}"))
    console.print(table)
    _verdict_lines(ms)

    rows, problem = left_out.load()
    if problem:
        err_console.print(f"warning: {problem}", style="yellow", markup=False, highlight=False)
    if rows and not ids:
        missing = Table(title="compared by the published benchmarks, not measured here")
        for col in ("row", "what", "seed", "why not"):
            missing.add_column(col, overflow="fold")
        for r in rows:
            missing.add_row(r.id, r.what, r.seed, r.reason)
        console.print(missing)

    tools = Table(title="harness")
    tools.add_column("check")
    tools.add_column("ok")
    tools.add_column("detail", overflow="fold")
    lg = paths.loadgen_binary()
    lg_ok = lg.is_file()
    tools.add_row("loadgen binary", _yes(lg_ok),
                  str(lg) if lg_ok else f"{lg} missing; fix: cd loadgen && cargo build --release")
    ts = shutil.which("taskset")
    tools.add_row("taskset", _yes(ts is not None),
                  ts or "missing; fix: apt-get install -y util-linux (CPU pinning is off without it)")
    pg_ok, pg_detail = doctor_mod.postgres_check()
    tools.add_row("postgres (initdb, postgres)", _yes(pg_ok), pg_detail)
    server_cpus, client_cpus = supervisor.default_cpu_split()
    tools.add_row("CPUs", _yes(len(supervisor.online_cpus()) > 1),
                  f"online {supervisor.online_cpus()}; server {server_cpus}, loadgen {client_cpus}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    tools.add_row("open files limit", _yes(hard >= 20000 or hard == resource.RLIM_INFINITY),
                  f"soft {soft}, hard {hard} (servers get the hard limit)")
    console.print(tools)
    from .views import tools_table
    console.print(tools_table())


def list_servers() -> None:
    """List the contestants: language, concurrency model, whether available, built, verified, their database,
    /compress, TLS and HTTP/2."""
    cat = load_catalog_warn()
    ms = select(cat, None)
    verified = _verified(ms)
    table = Table(title=f"{len(ms)} servers")
    for col in ("id", "language", "model", "framework", "available here", "built", "verified", "database", "compress", "TLS",
                "HTTP/2"):
        table.add_column(col, overflow="fold")
    for m, a in zip(ms, doctor_mod.check_all(ms)):
        table.add_row(m.id, m.language, m.model, m.framework, _yes(a.available),
                      _yes(build_mod.is_built(m)), verified[m.id], escape(doctor_mod.db_text(m)),
                      escape(doctor_mod.compress_text(m)), escape(doctor_mod.tls_text(m)),
                      escape(doctor_mod.http2_text(m)))
    console.print(table)
    _verdict_lines(ms)


def install(ids: Optional[list[str]] = IdsArg,
            dry_run: bool = typer.Option(False, "--dry-run", help="Print the commands only.")) -> None:
    """Install missing toolchains from each server.toml's \\[install] table (apt/npm; root only)."""
    for msg in install_missing(selected(ids), dry_run=dry_run):
        console.print(msg, markup=False, highlight=False)


def build(ids: Optional[list[str]] = IdsArg,
          force: bool = typer.Option(False, "--force", help="Rebuild even when up to date."),
          jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1,
                                             help="Builds at a time (default: half the CPUs, at least 2).")) -> None:
    """Build contestants (cached by a hash of each server folder); logs in results/logs/."""
    results = build_mod.build(selected(ids), force=force, console=err_console, jobs=jobs)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    console.print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing to build")
    failed = [r for r in results if r.status == "failed"]
    for r in results:
        if r.status == "unavailable":
            err_console.print(f"skipped {r.id}: {r.error}", style="yellow", markup=False,
                              highlight=False)
    if failed:
        err_console.print(f"{len(failed)} build(s) failed:", style="red")
        for r in failed:
            err_console.print(f"  {r.id}: {r.error}", style="red", markup=False, highlight=False)
        raise typer.Exit(1)


def version() -> None:
    """Print serverbench's version."""
    console.print(f"serverbench {__version__}")


def register(app: typer.Typer) -> None:
    """Add doctor, list, install, build and version to the main app."""
    app.command()(doctor)
    app.command("list")(list_servers)
    app.command()(install)
    app.command()(build)
    app.command()(version)
