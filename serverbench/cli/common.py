"""What every CLI module shares: one-line failures, the store, the catalog, CPU options."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .. import paths
from ..processes import supervisor
from ..catalog.manifests import Catalog, CatalogError, Manifest, load_catalog, select
from .console import err_console
from ..store import Store, StoreError


def fail(msg: str, code: int = 2) -> typer.Exit:
    """Print `error: msg` on stderr and return the Exit to raise."""
    err_console.print(f"error: {msg}", style="red", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(code)


def open_store(db: Optional[Path], must_exist: bool = False) -> Store:
    """Open the results database, or exit with one line; `must_exist` for read-only commands."""
    path = db or paths.DB_PATH
    if must_exist and not path.exists():
        raise fail(f"no results database at {path}; run `serverbench run` first or pass --db")
    try:
        return Store(path)
    except StoreError as e:
        raise fail(str(e)) from None


def run_row(store: Store, run_id: int) -> Any:
    """The stored run, or exit with the store's one-line error (it lists recent runs)."""
    try:
        return store.run(run_id)
    except StoreError as e:
        raise fail(str(e)) from None


def load_catalog_warn() -> Catalog:
    """Load the catalog and print each broken manifest as one yellow line."""
    cat = load_catalog(paths.SERVERS)
    for line in cat.errors:
        err_console.print(f"warning: {line}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    return cat


def selected(ids: Optional[list[str]]) -> list[Manifest]:
    """Manifests for `ids` (all when empty); exits 2 with one line on an unknown id."""
    cat = load_catalog_warn()
    try:
        return select(cat, ids)
    except CatalogError as e:
        raise fail(str(e)) from None


def cpus_option(spec: Optional[str], what: str) -> list[int] | None:
    if spec is None:
        return None
    try:
        return supervisor.parse_cpus(spec)
    except ValueError as e:
        raise fail(f"--{what}-cpus {spec!r}: {e}") from None
