"""`serverbench crosscheck`: one workload through several load tools, against the server's count. Thin:
parses options, runs the session, prints from the aggregation (the load-tools table is views.py's)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .common import cpus_option, fail, open_store, selected
from .console import console, err_console as err


def _tool_list(spec: str) -> list[str]:
    from ..rules.tools import get
    names = [x.strip() for x in spec.split(",") if x.strip()]
    for n in names:
        try:
            get(n)
        except ValueError as e:
            raise fail(f"--tools: {e}") from None
    return list(dict.fromkeys(names))


def crosscheck_cmd(
    server: list[str] = typer.Option(..., "--server", "-s", help="Server id(s), repeatable or comma-separated."),
    workload: str = typer.Option(..., "--workload", "-w", help="The workload to translate (e.g. prantl-wrk)."),
    tools_spec: str = typer.Option("loadgen,wrk,ab,oha,hey,k6,drill,locust", "--tools",
                                   help="Comma-separated: loadgen, wrk, ab, oha, hey, k6, drill, locust."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write one object per tool (and server) here."),
    repeat: int = typer.Option(1, "--repeat", "-r", min=1, help="Repetitions (tool order reversed on even ones)."),
    full: bool = typer.Option(False, "--full", help="The workload's full size."),
    duration: Optional[str] = typer.Option(None, "--duration", "-d", help="Override every point's duration."),
    server_cpus: Optional[str] = typer.Option(None, "--server-cpus", help="CPUs for servers, e.g. 0"),
    client_cpus: Optional[str] = typer.Option(None, "--client-cpus", help="CPUs for the tools, e.g. 1"),
    allow_unverified: bool = typer.Option(False, "--allow-unverified", help="Also servers that failed a measurement check of "
                                          "verify (a failed feature check still skips the tools using it)."),
    db: Optional[Path] = typer.Option(None, "--db", help="Results database."),
) -> None:
    """Drive servers with one workload through established load tools and loadgen; compare each tool's
    own figures with what the server counted (/tenth?ms=0 counter) and explain the largest disagreement."""
    from ..results import aggregate
    from ..catalog import workloads as wl
    from ..crosscheck.session import CrosscheckError, CrosscheckOptions, run_crosscheck
    from ..exporters import to_markdown
    from .views import RunView
    from ..catalog.workloads import parse_duration
    if duration is not None:
        try:
            parse_duration(duration)
        except ValueError as e:
            raise fail(f"--duration: {e}") from None
    names = _tool_list(tools_spec)
    ids = [x for s in server for x in s.split(",") if x]
    manifests = selected(ids)
    try:
        chosen = wl.select(wl.load_workloads(), [workload])
    except wl.WorkloadError as e:
        raise fail(str(e)) from None
    if len(chosen) != 1:
        raise fail(f"workload {workload!r} includes {len(chosen)} workloads; cross-check one of: "
                   f"{', '.join(w.name for w in chosen)}")
    store = open_store(db)
    opts = CrosscheckOptions(servers=[m.id for m in manifests], workload=chosen[0].name, tools=names, repeat=repeat,
                             full=full, duration=duration, server_cpus=cpus_option(server_cpus, "server"),
                             client_cpus=cpus_option(client_cpus, "client"), allow_unverified=allow_unverified)
    try:
        result = run_crosscheck(store, opts, manifests, chosen[0], on_event=RunView(console))
    except CrosscheckError as e:
        raise fail(str(e)) from None
    _, results = aggregate.load(store, result.run_id)
    console.print("\n".join(to_markdown.tools_compared(results)), markup=False, highlight=False, soft_wrap=True)
    if json_out is not None:
        rows = [r.json_object() for tc in results.tools for r in tc.rows]
        json_out.write_text(json.dumps(rows, indent=1) + "\n")
        console.print(f"JSON: {json_out}")
    console.print(f"run {result.run_id} ({result.status}); report: `serverbench report {result.run_id}`")
    if result.status == "interrupted":
        err.print("interrupted: the tool in flight was stopped", style="yellow")
        raise typer.Exit(130)


def register(app: typer.Typer) -> None:
    app.command("crosscheck")(crosscheck_cmd)


__all__ = ["register"]
