"""`serverbench verify`: the conformance suite per server, rendered check by check (verify/show.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import cpus_option, fail, open_store, selected
from .console import console, err_console
from ..database.schema import DatabaseError
from ..verify.show import verify_twice

AGAIN = ("verifying again, each in a fresh start, the checks that failed (a moment of load is not a verdict; "
         "a check that passes now keeps its first failure in its detail)")


def verify_cmd(ids: Optional[list[str]] = typer.Argument(None, help="Server ids; default: all."),
               allow_unavailable: bool = typer.Option(
                   False, "--allow-unavailable", help="Skip servers whose toolchain is missing."),
               server_cpus: Optional[str] = typer.Option(None, "--server-cpus", help="e.g. 0 or 0-1"),
               db: Optional[Path] = typer.Option(None, "--db", help="Results database."),
               db_url: Optional[str] = typer.Option(
                   None, "--db-url", metavar="URL",
                   help="An existing PostgreSQL with TechEmpower's data for the db rows' checks (default: the "
                        "harness starts its own); counting queries needs pg_stat_statements_reset rights there.")
               ) -> None:
    """Check each server against SPEC.md and store the verdict: a failed measurement check keeps a row out
    of every run, a failed feature check out of the workloads using that feature; deviations are shown."""
    store = open_store(db)
    why: dict[str, str] = {}
    try:
        passed, failed = verify_twice(selected(ids), store, server_cpus=cpus_option(server_cpus, "server"),
                                      allow_unavailable=allow_unavailable, why=why, db_url=db_url,
                                      out=console, err=err_console, note=AGAIN)
    except DatabaseError as e:
        raise fail(str(e)) from None
    # The failed checks are named on this last line too: a CI log often keeps only its tail.
    console.print(f"verified: {len(passed)} passed, {len(failed)} failed"
                  + (f" ({'; '.join(f'{s}: {why[s]}' for s in failed)})" if failed else ""))
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_cmd)
