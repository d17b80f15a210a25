"""`serverbench bundle OUT.tar.zst`: write the tree that runs the built rows on a bench machine (bundle.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .cli_common import fail, selected
from .console import console


def bundle_cmd(
    out: Path = typer.Argument(..., help="The bundle to write, e.g. bench.tar.zst."),
    servers: Optional[list[str]] = typer.Option(
        None, "--servers", "-s", help="Rows to include (repeatable or comma-separated); default: every built row."),
) -> None:
    """Write the harness, the loadgen and the built rows (no caches) as OUT.tar.zst, to run them on a
    machine without their build toolchains (README: "On a bench machine")."""
    from .catalog.bundle import BundleError, write_bundle
    ids = [x for s in servers or [] for x in s.split(",") if x] or None
    ms = selected(ids)
    try:
        summary = write_bundle(out, ms)
    except BundleError as e:
        raise fail(str(e), 1) from None
    for sid, why in summary.left_out.items():
        console.print(f"[yellow]left out {sid}[/]: {why}")
    needs = sorted({r for m in ms if m.id in summary.rows for r in m.run_requires})
    size = out.stat().st_size
    console.print(f"{out}: {len(summary.rows)} row(s), {summary.files} files, {summary.bytes_in / 1e6:.1f} MB "
                  f"→ {size / 1e6:.1f} MB; the bench machine needs Python ≥ 3.11"
                  + (f" and {', '.join(needs)}" if needs else "") + " (then `serverbench doctor` there)")


def register(app: typer.Typer) -> None:
    app.command("bundle")(bundle_cmd)
