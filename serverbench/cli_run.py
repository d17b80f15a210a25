"""CLI commands of the measuring pipeline: verify, run, workloads, results, export, bench."""
from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the run-pipeline commands to the main Typer app (filled in below)."""
    return None
