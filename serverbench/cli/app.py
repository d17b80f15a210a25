"""The `serverbench` app: one Typer app, each command module adding its commands, and `main`.

The only module that knows every command module; the command modules know none of each other.
"""
from __future__ import annotations

import typer

from ..processes import supervisor
from . import bundle, crosscheck, database, lifecycle, profile, report, run, seeds, study, verify
from .console import err_console

app = typer.Typer(
    help="Reproducible benchmark of HTTP servers' concurrency models (see SPEC.md).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)

for _commands in (lifecycle, verify, run, report, seeds, study, profile, crosscheck, bundle, database):
    _commands.register(app)


def main() -> None:
    # SIGTERM/SIGHUP → KeyboardInterrupt, so servers are stopped as on Ctrl-C (see supervisor)
    supervisor.install_signal_handlers()
    try:
        app()
    except KeyboardInterrupt:
        supervisor.stop_all()
        err_console.print("interrupted", style="red")
        raise SystemExit(130) from None
