"""The steps several commands take, written once: measure a run with its progress on the console and
its summary after, profile rows and print their table. Not commands: `run`, `bench`, `seeds --measure`
and `profile` call these; no command module imports another (the build-then-verify step is
verify/prepare.py's).
"""
from __future__ import annotations

from typing import Any

from rich.console import Console

from .common import fail, selected
from .console import console, err_console as err


def ready_rows(manifests: list[Any], store: Any) -> list[Any]:
    """verify/prepare.py's build-then-verify on the CLI's consoles: the rows that may be measured;
    exits 1 in one line when none passed."""
    from ..verify.prepare import NothingPassed, prepare
    try:
        return prepare(manifests, store, console, err)
    except NothingPassed as e:
        raise fail(str(e), 1) from None


def finish(store: Any, result: Any) -> None:
    """The summary of a run the runner just ended, from the one aggregation."""
    from ..results import aggregate
    from .views import print_summary
    _, results = aggregate.load(store, result.run_id)
    print_summary(console, results, result.status, (result.ok, result.failed, result.skipped))
    if result.status == "interrupted":
        from .. import paths
        db = "" if store.path == paths.DB_PATH else f" --db {store.path}"
        console.print(f"[yellow]interrupted[/]: the cell in flight was abandoned; continue with "
                      f"`serverbench run --resume {result.run_id}{db}`")


def measure(store: Any, opts: Any, **kw: Any) -> Any:
    """run_matrix with the console view; a run that fails is reported in one line, exit 1. Client-bound
    blocks the plan leaves are ordered by the fixed-rate step (run/fixed_rate.py) with the
    aggregation's own rule for what a block is (handed to the runner here: run/ never imports results/)."""
    from .views import RunView
    from ..run.runner import run_matrix
    from ..results.aggregate import fixed_rate_plans
    from ..database.schema import DatabaseError
    view = RunView(console)
    try:
        result = run_matrix(store, opts, on_event=view, order_blocks=fixed_rate_plans, **kw)
    except KeyboardInterrupt:
        raise
    except DatabaseError as e:  # before anything was measured: the database could not be started or used
        raise fail(f"the database workloads need PostgreSQL: {e}", 1) from None
    except Exception as e:
        rid = store.latest_run_id()
        raise fail(f"run {rid} failed: {type(e).__name__}: {e}; its finished cells are kept — "
                   f"continue with `serverbench run --resume {rid}`", 1) from None
    finish(store, result)
    return result


def run_profiles(ids: list[str] | None, store: Any, *, cold: bool, warm: bool = True, starts: int = 5,
                 levels: tuple[int, ...] | None = None, server_cpus: list[int] | None = None,
                 client_cpus: list[int] | None = None, workers: int | None = None,
                 only_changed: bool = False, out: Console = console) -> list[Any]:
    """Profile `ids` (all when None), print each step and the table; the profiles (stored)."""
    from ..cost.profiler import ProfileOptions, profile_servers
    from .views import profile_table
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


__all__ = ["finish", "measure", "ready_rows", "run_profiles"]
