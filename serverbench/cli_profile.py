"""`serverbench profile`: measure and store what each contestant costs to build, ship and run idle.

Thin: options → profiler.profile_servers → a console table (and `--json FILE`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from .cli_common import cpus_option, fail, open_store, selected
from .console import console, err_console as err
from .formatting import fmt_num

# The figures `--json` writes per contestant id (the whole profile follows them).
JSON_KEYS = ("source_lines", "dependencies", "build_cold_s", "build_warm_s", "artifact_bytes", "startup_ms",
             "idle_rss_bytes", "rss_per_connection_bytes")


def _mib(b: float | None) -> str:
    return "—" if b is None else f"{b / 2**20:,.1f}"


def profile_table(profiles: list[Any]) -> Table:
    t = Table(title="cost of ownership", header_style="bold")
    for c in ("server", "lines", "deps", "cold build s", "warm build s", "artifact MiB", "start-up ms",
              "idle RSS MiB", "RSS KiB/conn", "problems"):
        t.add_column(c, justify="left" if c in ("server", "problems") else "right",
                     overflow="fold" if c == "problems" else "ellipsis")
    for p in profiles:
        per_conn = p.rss_per_connection_bytes
        cold = fmt_num(p.build_cold_s, 1) + (" ↓" if p.build_download_s is not None else "")
        t.add_row(p.server, fmt_num(p.source_lines), fmt_num(p.dependencies), cold, fmt_num(p.build_warm_s, 1),
                  _mib(p.artifact_bytes), fmt_num(p.startup_ms, 1), _mib(p.idle_rss_bytes),
                  fmt_num(per_conn / 1024 if per_conn is not None else None, 1), "; ".join(p.errors))
    return t


def profiles_json(profiles: list[Any]) -> dict[str, Any]:
    """An object per contestant id: the headline figures first, then the whole profile."""
    out: dict[str, Any] = {}
    for p in profiles:
        d = p.dump()
        out[p.server] = {**{k: d[k] for k in JSON_KEYS}, **d}
    return out


def run_profiles(ids: list[str] | None, store: Any, *, cold: bool, warm: bool = True, starts: int = 5,
                 levels: tuple[int, ...] | None = None, server_cpus: list[int] | None = None,
                 client_cpus: list[int] | None = None, workers: int | None = None,
                 only_changed: bool = False, out: Console = console) -> list[Any]:
    """Profile `ids` (all when None), print each step and the table; the profiles (stored)."""
    from .cost.profiler import ProfileOptions, profile_servers
    opts = ProfileOptions(cold=cold, warm=warm, starts=starts, server_cpus=server_cpus or [], client_cpus=client_cpus or [],
                          workers=workers, only_changed=only_changed)
    if levels:
        opts.levels = levels
    profiles = []
    for p in profile_servers(selected(ids), store, opts, on_step=lambda s: err.print(f"[dim]· {s}[/]")):
        profiles.append(p)
        for e in p.errors:
            err.print(f"{p.server}: {e}", style="yellow", markup=False, highlight=False)
    out.print(profile_table(profiles))
    if not cold:
        out.print("[dim]--no-cold: cold builds skipped (an earlier cold figure of the same code is kept)[/]")
    if not warm:
        out.print("[dim]warm rebuilds skipped (an earlier figure of the same code is kept); "
                  "`serverbench profile` measures them[/]")
    out.print("[dim]↓ = dependency download timed apart before the cold build; elsewhere it is included[/]")
    return profiles


def profile_cmd(
    ids: Optional[list[str]] = typer.Argument(None, help="Server ids; default: all.", show_default=False),
    no_cold: bool = typer.Option(False, "--no-cold", help="Skip cold builds (empty caches; slow)."),
    only_changed: bool = typer.Option(False, "--only-changed",
                                      help="Keep a server's latest profile when it is complete and of the same code."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the figures to this JSON file."),
    starts: int = typer.Option(5, "--starts", min=1, help="Starts whose start-up median is taken."),
    levels: str = typer.Option("1000,10000", "--levels",
                               help="Idle keep-alive connections to hold (bounded models: up to their bound)."),
    server_cpus: Optional[str] = typer.Option(None, "--server-cpus", help="CPUs for servers, e.g. 0"),
    client_cpus: Optional[str] = typer.Option(None, "--client-cpus", help="CPUs for the idle clients, e.g. 1"),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="$WORKERS for every server."),
    db: Optional[Path] = typer.Option(None, "--db", help="Results database."),
) -> None:
    """Measure what each contestant costs: source lines, dependencies, cold/warm build, artifact,
    start-up, idle memory and memory per connection; stored for the report."""
    try:
        counts = tuple(int(x) for x in levels.split(",") if x.strip())
        if not counts or min(counts) < 1:
            raise ValueError
    except ValueError:
        raise fail(f"--levels {levels!r}: not a list of positive integers; fix: write it like 1000,10000") from None
    store = open_store(db)
    profiles = run_profiles(ids, store, cold=not no_cold, starts=starts, levels=counts,
                            server_cpus=cpus_option(server_cpus, "server"),
                            client_cpus=cpus_option(client_cpus, "client"), workers=workers,
                            only_changed=only_changed)
    if json_out is not None:
        try:
            json_out.write_text(json.dumps(profiles_json(profiles), indent=1) + "\n")
        except OSError as e:
            raise fail(f"--json {json_out}: cannot write ({e.strerror}); fix: choose a writable path") from None
        console.print(f"JSON: {json_out}")


def register(app: typer.Typer) -> None:
    app.command("profile")(profile_cmd)


__all__ = ["profile_cmd", "run_profiles", "profile_table", "profiles_json", "JSON_KEYS", "register"]
