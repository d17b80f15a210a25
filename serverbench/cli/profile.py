"""`serverbench profile`: measure and store what each contestant costs to build, ship and run idle.

Thin: options → steps.run_profiles (profiler.profile_servers, a console table) and `--json FILE`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .common import cpus_option, fail, open_store
from .console import console
from .steps import run_profiles
from .views import profiles_json

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


__all__ = ["profile_cmd", "register"]
