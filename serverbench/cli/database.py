"""`serverbench database`: a PostgreSQL with TechEmpower's schema and data for a row's author, kept
until Ctrl-C; `--check URL`: is an existing one ready for the database workloads?

Thin: options → database.cluster / schema / facts → a few lines on the console.
"""
from __future__ import annotations

import json
import subprocess
from types import ModuleType
from typing import Any, Optional

import typer

from .common import fail
from .console import console, err_console
from ..processes import supervisor

POLL_S = 1.0


def _print_facts(facts: dict[str, Any]) -> None:
    for key, value in facts.items():
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value
        console.print(f"{key}: {shown}", markup=False, highlight=False, soft_wrap=True)


def database_cmd(
    check: Optional[str] = typer.Option(None, "--check", metavar="URL",
                                        help="Check an existing PostgreSQL instead of starting one: reachable, "
                                             "TechEmpower's World and Fortune tables and data, "
                                             "pg_stat_statements."),
    max_connections: int = typer.Option(100, "--pg-max-connections", min=1,
                                        help="Postgres' max_connections (the harness's own included)."),
    cpus: Optional[str] = typer.Option(None, "--cpus", help="CPUs Postgres is pinned to, e.g. '0' or '0-1' "
                                                            "(default: all this process may use)."),
    seed: int = typer.Option(1, "--seed", help="Seed of the World table's random numbers."),
) -> None:
    """Start a PostgreSQL of the harness's own with TechEmpower's schema and data, print its DATABASE_URL
    and facts, and keep it until Ctrl-C (then stop it and remove its folder); or --check URL."""
    from ..database import cluster, facts as facts_mod, schema  # psycopg only for this command

    try:
        if check is not None:
            schema.check(check)
            console.print(f"{schema.mask_url(check)}: ready (TechEmpower's schema and data, pg_stat_statements)",
                          markup=False, highlight=False, soft_wrap=True)
            _print_facts(facts_mod.external_facts(check))
            return
        pinned = supervisor.parse_cpus(cpus) if cpus else None
    except (schema.DatabaseError, ValueError) as e:
        raise fail(str(e), 1 if isinstance(e, schema.DatabaseError) else 2) from None
    _serve(cluster, facts_mod, max_connections, pinned, seed)


def _serve(cluster: ModuleType, facts_mod: ModuleType, max_connections: int, cpus: list[int] | None,
           seed: int) -> None:
    """Run the cluster until Ctrl-C / SIGTERM (KeyboardInterrupt) or its own exit; always stopped."""
    try:
        pg = cluster.start(max_connections, cpus=cpus, seed=seed)
    except cluster.DatabaseError as e:
        raise fail(str(e), 1) from None
    try:
        console.print(f"DATABASE_URL={pg.url}", markup=False, highlight=False, soft_wrap=True)
        try:
            _print_facts(facts_mod.managed_facts(pg))
        except cluster.DatabaseError as e:
            raise fail(str(e), 1) from None
        err_console.print(f"PostgreSQL pid {pg.pid}, log {pg.log}; Ctrl-C stops it and removes {pg.folder}",
                          markup=False, highlight=False, soft_wrap=True)
        while True:
            try:
                code = pg.process.wait(POLL_S)
            except subprocess.TimeoutExpired:
                continue
            tail = cluster.log_tail(pg.log)
            raise fail(f"PostgreSQL (pid {pg.pid}) exited with code {code}: {tail}", 1)
    except KeyboardInterrupt:
        pass
    finally:
        pg.stop()
    err_console.print(f"stopped PostgreSQL (pid {pg.pid}) and removed {pg.folder}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("database")(database_cmd)
