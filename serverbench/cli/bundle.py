"""`serverbench bundle OUT.tar.zst`: write the tree that runs the built rows on a bench machine (bundle.py),
with the harness's Python packages as wheels for the bench machine's Python (wheels.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import fail, selected
from .console import console


def bundle_cmd(
    out: Path = typer.Argument(..., help="The bundle to write, e.g. bench.tar.zst."),
    servers: Optional[list[str]] = typer.Option(
        None, "--servers", "-s", help="Rows to include (repeatable or comma-separated); default: every built row."),
    python: Optional[str] = typer.Option(
        None, "--python", help="The bench machine's CPython as MAJOR.MINOR, e.g. 3.12, for the wheels; "
                               "default: this interpreter's version."),
    platforms: Optional[list[str]] = typer.Option(
        None, "--platform", help="A wheel platform tag the bench machine runs (repeatable), e.g. "
                                 "manylinux2014_x86_64; default: the manylinux tags of this machine's glibc."),
    with_wheels: bool = typer.Option(
        True, "--wheels/--no-wheels", help="Ship the harness's Python packages as wheels, so the bench machine "
                                           "needs no package index (fetching them needs one here)."),
) -> None:
    """Write the harness, the loadgen, the built rows (no caches) and the wheels of the harness's Python
    packages as OUT.tar.zst, to run them on a machine without their build toolchains or a package index
    (README: "On a bench machine"; BUNDLE.md inside says how)."""
    from ..catalog.bundle import BundleError, write_bundle
    from ..catalog.wheels import WheelError, target
    ids = [x for s in servers or [] for x in s.split(",") if x] or None
    ms = selected(ids)
    try:
        tgt = target(python, [p for s in platforms or [] for p in s.split(",") if p]) if with_wheels else None
        summary = write_bundle(out, ms, tgt, progress=lambda line: console.print(line, style="dim", markup=False,
                                                                                 highlight=False))
    except (BundleError, WheelError) as e:
        raise fail(str(e), 1) from None
    for sid, why in summary.left_out.items():
        console.print(f"[yellow]left out {sid}[/]: {why}")
    needs = sorted({r for m in ms if m.id in summary.rows for r in m.run_requires})
    size = out.stat().st_size
    if tgt is not None:
        got = f"{summary.wheels} wheels, "
        there = f"Python {tgt.python}, no package index"
        then = "`pip install --no-index --find-links wheels -e .` there, as BUNDLE.md inside says"
    else:
        got, there, then = "", "Python ≥ 3.11 and a package index", "`pip install -e .` there"
    console.print(f"{out}: {len(summary.rows)} row(s), {got}{summary.files} files, {summary.bytes_in / 1e6:.1f} MB "
                  f"→ {size / 1e6:.1f} MB; the bench machine needs {there}"
                  + (f", {', '.join(needs)}" if needs else "") + f" ({then}, then `serverbench doctor`)")


def register(app: typer.Typer) -> None:
    app.command("bundle")(bundle_cmd)
